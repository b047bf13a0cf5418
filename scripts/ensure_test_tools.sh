#!/usr/bin/env bash
# The system tools the client tests drive, installed when missing: tmux (`meeple play` is tested in a tmux
# pane) and Debian's chromium (tests/browser drive it with Playwright; no browser is ever downloaded).
set -euo pipefail
missing=()
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
[ -x "${MEEPLE_CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
  echo "make: installing ${missing[*]} with apt-get (for tests/clients and tests/browser)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  echo "make: installed ${missing[*]}"
fi
