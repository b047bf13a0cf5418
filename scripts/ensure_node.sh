#!/usr/bin/env bash
# Node.js and npm for the TypeScript client (clients/typescript: its generated types are checked and its tests
# run with `node --test` against a live stack), installed with apt-get when missing (Debian's nodejs, >= 20).
set -euo pipefail
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "make: installing nodejs and npm with apt-get (for clients/typescript)"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  echo "make: installed nodejs $(node --version) and npm $(npm --version)"
fi
major=$(node --version | sed -E 's/^v([0-9]+).*/\1/')
if [ "$major" -lt 20 ]; then
  echo "make: clients/typescript needs Node.js 20 or later (found $(node --version))" >&2
  exit 1
fi
