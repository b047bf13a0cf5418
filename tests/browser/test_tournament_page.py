"""The play page's tournament view in a real headless Chromium against the whole stack (gunicorn gateway, Redis,
rules service, bot worker; the timekeeper driven here with ``run_once``): the key form, the tenant's list, the
standings and the current round's tables, and the way into one's own match (the seat the tournament keeps for the
player, taken with the key, then played with its own token like any match)."""

from __future__ import annotations

import time
from typing import Any

import requests

from services.core.config import Config
from services.timekeeper.keeper import Timekeeper
from tests.clients.conftest import RulesProcess
from tests.gateway.test_backends import new_key

from .conftest import Stack


def test_a_player_finds_their_table_in_the_tournament_view_and_plays_their_own_seat(
        new_page: Any, stack: Stack, rules: RulesProcess) -> None:
    key = new_key(stack.redis_url, "browser-tournament")["key"]
    headers = {"X-API-Key": key}
    made = requests.post(f"{stack.url}/v1/tournaments", headers=headers, timeout=30, json={
        "name": "Browser Swiss", "game": "clash", "players_per_table": 2, "options": {"match": "single"},
        "clock": {"mode": "per_move", "seconds": 600, "on_timeout": "bot"}, "starts_at": time.time(),
        "format": {"kind": "swiss", "rounds": 1}})
    assert made.status_code == 201, made.text
    tid = made.json()["id"]
    for player in ("ann", "ben", "cat"):
        assert requests.post(f"{stack.url}/v1/tournaments/{tid}/players", headers=headers, timeout=30,
                             json={"player": player}).status_code == 201

    keeper = Timekeeper(stack.redis_url, lease_s=5, competitions_every_s=0,
                        config=Config(redis_url=stack.redis_url, rules_addr=f"127.0.0.1:{rules.port}"))
    mine = None
    for _ in range(100):  # the round is paired and its matches made
        keeper.run_once()
        view = requests.get(f"{stack.url}/v1/tournaments/{tid}", headers=headers, timeout=30).json()
        tables = view["tables"]
        if tables and all(requests.get(f"{stack.url}/v1/matches/{t['match_id']}", headers=headers,
                                       timeout=30).status_code == 200 for t in tables):
            mine = next(t for t in tables if any(s.get("player") == "ann" for s in t["seats"]))
            break
        time.sleep(0.1)
    assert mine is not None

    page = new_page()
    page.goto("/play#/tournaments")
    page.fill("#tk-key", key)
    page.fill("#tk-player", "ann")
    page.click("#tk-save")
    page.wait_for_selector(f"li[data-tournament='{tid}']")
    page.click(f"li[data-tournament='{tid}'] a")
    page.wait_for_selector(f"div.tournament[data-tournament='{tid}']")
    assert page.get_attribute("#t-status", "data-status") == "running"
    assert "round 1" in page.inner_text("#t-status")
    # the standings: everyone registered; the tables: the round's, with the bye's bot, ann's own marked
    standings = page.eval_on_selector_all("table.standings tbody tr", "rows => rows.map(r => r.dataset.player)")
    assert sorted(standings) == ["ann", "ben", "cat"]
    rows = page.eval_on_selector_all("table.tables tbody tr", "rows => rows.map(r => r.innerText)")
    assert len(rows) == 2 and sum("bot (" in r for r in rows) == 1
    assert page.get_attribute(f"tr[data-table='{mine['table']}']", "class") == "mine"
    # only ann's table offers her a way in: into her own seat of her own match
    buttons = page.query_selector_all("button.play-mine")
    assert [b.get_attribute("data-match") for b in buttons] == [mine["match_id"]]
    buttons[0].click()
    page.wait_for_selector("#match-id")
    assert page.inner_text("#match-id") == mine["match_id"]
    seat = next(i for i, s in enumerate(mine["seats"]) if s.get("player") == "ann")
    assert f"You are seat {seat}" in page.inner_text("#you")
    match = requests.get(f"{stack.url}/v1/matches/{mine['match_id']}", headers=headers, timeout=30).json()
    assert next(s for s in match["seats"] if s["seat"] == seat).get("player") == "ann"

    # another tenant's key: the page says so and asks again, showing nothing of the tournament
    other = new_key(stack.redis_url, "browser-rival")["key"]
    page.goto(f"/play#/tournament/{tid}")
    page.wait_for_selector("div.tournament")
    page.click("#tk-change")
    page.fill("#tk-key", other)
    page.click("#tk-save")
    page.wait_for_function("(document.querySelector('section.tournament-key') || {}).innerText"
                           "?.includes('tournament_not_found')")
    assert page.query_selector("table.standings") is None
