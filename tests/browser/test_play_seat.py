"""Recovering a seat in the page (issue 50): a seat a bot took on a timeout is taken back from the game view,
the result says a bot played part of the game, resigning asks first, and the turn is announced (the tab's
title, a notification if allowed) with a warning when the clock runs low."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from services.timekeeper.keeper import Timekeeper

from .conftest import Stack
from .test_play_page import choose_one_step, start_from_lobby

CLASH_SINGLE = {"game": "clash", "players": 2, "options": {"match": "single", "first_player": 0}}


@pytest.fixture(scope="module")
def timekeeper(stack: Stack) -> Iterator[Timekeeper]:
    """The deployment's timekeeper on the stack's Redis: it acts on the seats' deadlines (timeouts)."""
    keeper = Timekeeper(stack.redis_url, lease_s=2.0, poll_s=0.05)
    thread = threading.Thread(target=keeper.run, daemon=True)
    thread.start()
    yield keeper
    keeper.stopping.set()
    thread.join(15)


def seated_page(new_page: Any, stack: Stack, clock: dict[str, Any] | None = None) -> tuple[Any, str, str]:
    """A CLASH match of seat 0 (who moves first) against an easy bot, opened in a page that holds its token."""
    body: dict[str, Any] = {**CLASH_SINGLE, "join": True,
                            "seats": [{"kind": "human"}, {"kind": "bot", "level": "easy"}]}
    if clock:
        body["clock"] = clock
    doc = httpx.post(f"{stack.url}/v1/matches", json=body).json()
    page = new_page()
    page.goto("/play")
    page.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token, "
                  "game: 'clash'}))", [doc["id"], doc["token"]])
    page.goto(f"/play#/m/{doc['id']}")
    page.wait_for_selector("#match-id")
    return page, doc["id"], doc["token"]


def log_kinds(stack: Stack, match_id: str) -> list[tuple[str, int | None]]:
    return [(e["kind"], e.get("seat")) for e in httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json()["log"]]


def test_a_seat_a_bot_took_on_timeout_is_taken_back_from_the_game_view_and_the_result_says_so(
        new_page: Any, stack: Stack, timekeeper: Timekeeper) -> None:
    page, match_id, _ = seated_page(new_page, stack, {"mode": "per_move", "seconds": 1.5})
    page.wait_for_selector("#reclaim", timeout=30_000)  # offered at once, not only "Waiting for seat 0 (bot)"
    assert "a bot is playing your seat" in page.inner_text("#takeover")
    # The bot plays both seats now and each of its moves draws the view anew, so Playwright's click (which waits for
    # the button to hold still) can wait past its timeout on a busy machine: the button is clicked in the page.
    page.evaluate("document.getElementById('reclaim').click()")
    page.wait_for_function("!document.getElementById('error') || document.getElementById('error').hidden")
    for _ in range(300):
        if ("reclaimed", 0) in log_kinds(stack, match_id):
            break
        page.wait_for_timeout(100)
    assert ("reclaimed", 0) in log_kinds(stack, match_id)
    # The clock runs again and nobody moves for seat 0: the bot takes it again and plays on to the end.
    page.wait_for_selector("#result", timeout=120_000)
    note = page.inner_text("#bot-played")
    assert "A bot played part of this game for you" in note, note
    assert not page.is_visible("#error"), page.inner_text("#error")


def test_resigning_from_the_game_view_asks_first(new_page: Any, stack: Stack) -> None:
    page, match_id, _ = seated_page(new_page, stack)
    page.wait_for_selector("#resign")
    page.click("#resign")
    assert "Resign this match?" in page.inner_text("[aria-label='confirm resigning']")
    page.click("#resign-no")  # nothing happens on "keep playing"
    page.wait_for_selector("#resign")
    assert httpx.get(f"{stack.url}/v1/matches/{match_id}").json()["status"] == "active"
    page.click("#resign")
    page.click("#resign-yes")
    page.wait_for_selector("#result")
    assert page.inner_text("#verdict") == "You lost."
    assert ("resigned", 0) in log_kinds(stack, match_id)
    # The resigned result: who won by name, why in words, and where everyone stood (not "Winners: 1").
    assert page.inner_text("#winners") == "Winner: Seat 1 (bot) (Green)"
    assert page.inner_text("#reason") == "Why it ended: You resigned, so the match is over."
    rows = page.eval_on_selector_all("table.breakdown tbody tr", "els => els.map(e => e.innerText)")
    assert len(rows) == 2 and all("tiles supporting it on the board" in r for r in rows), rows
    assert "remaining decisions" not in page.inner_text("#log")  # the match is over: no bot plays on
    assert " · over · " in page.inner_text(".board .meta")  # not "game 1 · play"


def test_the_tab_title_says_your_turn_and_a_hidden_tab_gets_a_notification(new_page: Any, stack: Stack) -> None:
    page = new_page()
    page.context.grant_permissions(["notifications"])
    # The tab is behind another (headless Chromium's always is in front), and every notification is counted.
    page.add_init_script("""
      Object.defineProperty(document, "visibilityState", { get: () => "hidden" });
      window.shown = [];
      const Real = window.Notification;
      window.Notification = class extends Real {
        constructor(title, options) { super(title, options); window.shown.push(title); } };
    """)
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})
    page.wait_for_selector("button.choice, #confirm")
    assert page.title().startswith("Your turn · CLASH"), page.title()
    rng, moved = random.Random(4), 0
    while moved < 1:
        moved += choose_one_step(page, rng) == "moved"
    page.wait_for_function("window.shown.length > 0", timeout=60_000)  # the bot moved: my turn again
    assert page.evaluate("window.shown")[0] == "Your turn"
    page.goto("/play#/")
    page.wait_for_selector("#new-game")
    assert "Your turn" not in page.title()


def test_the_clock_warns_when_my_time_runs_low(new_page: Any, stack: Stack) -> None:
    page, _, _ = seated_page(new_page, stack, {"mode": "per_move", "seconds": 8})
    page.wait_for_selector("[data-clock='0'] .low-time")
    assert "low on time" in page.inner_text("[data-clock='0']")
    assert page.query_selector("[data-clock='1'] .low-time") is None  # only the viewer's own clock warns


def test_each_games_rules_page_is_reachable_from_the_lobby_and_the_game_view_shows_the_goal(
        new_page: Any, stack: Stack) -> None:
    page = new_page()
    page.goto("/play")
    for game, title in [("clash", "CLASH"), ("sideboards", "Sideboards"), ("fierce-women", "Fierce Women"),
                        ("they-who-were-8", "They Who Were 8")]:
        page.goto("/play#/")
        page.select_option("#game", game)
        page.click("#rules-link")
        page.wait_for_selector("#rules")
        assert page.inner_text("#rules-h").startswith("How to play") and title.split()[0] in page.inner_text("#rules-h")
        text = page.inner_text("#rules")
        assert all(h in text for h in ("How to win", "A turn", "Components", "Scoring", "Example")), text[:500]
        assert page.inner_text("#rules-goal").startswith("Goal:")
    page, _, _ = seated_page(new_page, stack)
    assert page.inner_text("#goal").startswith("Goal: Have more tiles supporting you")
    page.click("#rules-link")  # from the game view, and back to the game
    page.wait_for_selector("#rules")
    assert "KABOOM" in page.inner_text("#rules")
    page.go_back()
    page.wait_for_selector("#match-id")
