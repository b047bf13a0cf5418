"""``make run`` suits one local player (issue 33): bots fill matchmaking after 15 s and no per-address quota
locks that player out; the banner says both, and any value set in the environment wins."""

from __future__ import annotations

import pytest

from tooling.stack import LOCAL_PLAYER_ENV, local_player_env


def test_make_run_turns_on_bot_fill_and_lifts_the_per_address_quota_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in LOCAL_PLAYER_ENV:
        monkeypatch.delenv(name, raising=False)
    env, notes = local_player_env()
    assert env["MEEPLE_BOT_FILL_S"] == "15" and env["MEEPLE_MAX_ACTIVE_MATCHES_PER_IP"] == "0"
    assert any("bots after 15 s" in note for note in notes)
    assert any("no per-address match quota" in note for note in notes)


def test_a_deployment_or_user_setting_wins_over_the_local_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEEPLE_BOT_FILL_S", "0")
    monkeypatch.setenv("MEEPLE_MAX_ACTIVE_MATCHES_PER_IP", "20")
    env, notes = local_player_env()
    assert "MEEPLE_BOT_FILL_S" not in env and "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP" not in env
    assert any("people only" in note for note in notes) and any("at most 20" in note for note in notes)
