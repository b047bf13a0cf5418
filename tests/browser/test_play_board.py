"""The board tells more than the position (issue 50): what the last move changed is highlighted, CLASH tiles
draw the dots their texts refer to, and the move being chosen is drawn on the board before it is confirmed."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from .conftest import Stack

M0 = {"type": "place", "tile": "M0", "from": "start", "field": [1, 1], "supports": "blue", "effect": None}
TALIB = {"type": "place", "tile": "G5", "from": "own", "field": [2, 1], "supports": "green", "effect": None}
BANKER = {"type": "place", "tile": "B3", "from": "own", "field": [0, 1], "supports": "blue",
          "effect": {"pattern": "orthogonal"}}


def two_people_clash(stack: Stack) -> tuple[str, list[str]]:
    options = {"match": "single", "first_player": 0}
    created = httpx.post(f"{stack.url}/v1/matches", json={"game": "clash", "players": 2, "join": True, "seed": 5,
                                                         "options": options}).json()
    joined = httpx.post(f"{stack.url}/v1/matches/{created['id']}/join", json={}).json()
    return created["id"], [created["token"], joined["token"]]


def move(stack: Stack, match_id: str, token: str, body: dict[str, Any]) -> None:
    version = httpx.get(f"{stack.url}/v1/matches/{match_id}").json()["version"]
    reply = httpx.post(f"{stack.url}/v1/matches/{match_id}/moves", json={"move": body, "version": version},
                       headers={"Authorization": f"Bearer {token}"})
    assert reply.status_code == 200, reply.text


def open_as(new_page: Any, match_id: str, token: str) -> Any:
    page = new_page()
    page.goto("/play")
    page.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token, "
                  "game: 'clash'}))", [match_id, token])
    page.goto(f"/play#/m/{match_id}")
    page.wait_for_selector("#match-id")
    page.wait_for_function("document.body.dataset.live === 'ws'")
    return page


def choose(page: Any, wanted: dict[str, Any]) -> None:
    """Walk the step-wise chooser to ``wanted``, one offered value at a time, up to its confirm button."""
    values = [json.dumps(v, separators=(",", ":")) for v in wanted.values()]
    for _ in range(10):
        page.wait_for_selector("button.choice, #confirm")
        if page.query_selector("#confirm"):
            return
        offered = page.eval_on_selector_all("button.choice", "els => els.map(e => e.dataset.value)")
        pick = next(v for v in offered if v in values)
        page.locator("button.choice").nth(offered.index(pick)).click()
    raise AssertionError("the chooser never reached the confirm button")


def fields(page: Any, selector: str) -> list[str]:
    return sorted(page.eval_on_selector_all(selector, "els => els.map(e => e.dataset.field)"))


def dots(page: Any, field: str) -> list[str]:
    return sorted(page.eval_on_selector_all(f".cell[data-field='{field}'] [data-dot]", "els => els.map(e => "
                                                                                         "e.dataset.dot)"))


def test_the_last_move_is_highlighted_tiles_draw_their_dots_and_the_chosen_move_is_drawn_before_it_is_played(
        new_page: Any, stack: Stack) -> None:
    match_id, tokens = two_people_clash(stack)
    move(stack, match_id, tokens[0], M0)
    page = open_as(new_page, match_id, tokens[0])
    assert fields(page, ".cell.last") == []  # nothing to compare with on the first screen
    move(stack, match_id, tokens[1], TALIB)  # the opponent's placement arrives over the socket
    page.wait_for_selector(".cell.last")
    assert fields(page, ".cell.last") == ["2,1"]
    assert dots(page, "2,1") == ["coloured"] * 4  # the Talib destroys one of its 4 orthogonal neighbours
    assert dots(page, "1,1") == []  # Mustafa has no dots
    choose(page, BANKER)
    assert fields(page, ".cell.preview-field") == ["0,1"]  # where it goes
    assert fields(page, ".cell.preview-hit") == ["1,1"]  # what its effect flips: Mustafa, its only neighbour
    assert "flipped" in (page.text_content(".cell.preview-hit") or "")
    page.click("#confirm")
    page.wait_for_function("document.querySelectorAll('.cell.last').length === 2")
    assert fields(page, ".cell.last") == ["0,1", "1,1"]  # the Banker placed, and Mustafa flipped
    assert dots(page, "0,1") == ["black"] * 4 + ["white"] * 4
    assert not page.is_visible("#error")


def test_fierce_women_shows_each_seats_points_now_as_the_engine_scores_the_tables(new_page: Any,
                                                                                  stack: Stack) -> None:
    import random

    from .test_play_page import choose_one_step, start_from_lobby

    page = new_page()
    match_id = start_from_lobby(page, "fierce-women", 2, {})
    rng, moved = random.Random(5), 0
    while moved < 6:  # three turns: women on the tables, so some columns score
        moved += choose_one_step(page, rng) == "moved"
    page.wait_for_selector("button.choice, #confirm")
    token = page.evaluate(f"JSON.parse(localStorage.getItem('meeple.seat.{match_id}')).token")
    view = httpx.get(f"{stack.url}/v1/matches/{match_id}", headers={"Authorization": f"Bearer {token}"}).json()["view"]
    shown = page.eval_on_selector_all(".points-now", "els => els.map(e => [Number(e.dataset.seat), e.textContent])")
    assert shown == [[s, f"{p} points now"] for s, p in enumerate(view["points_now"])], (shown, view["points_now"])
    assert sum(view["points_now"]) > 0  # the tables hold scoring columns by now
    assert re.search(r"\b\d+ points?\b", page.inner_text(".column .meta"))  # "1 point", "3 points"


def test_on_a_390_px_phone_the_whole_clash_board_and_the_chooser_show_together(new_page: Any, stack: Stack) -> None:
    """A screenshot at 390 px: the board's three rows above the move panel, whose choices are in reach, and the
    nav on one line."""
    import os
    import random
    from pathlib import Path

    from .test_play_page import choose_one_step, start_from_lobby

    page = new_page({"width": 390, "height": 844})
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})
    rng, moved = random.Random(2), 0
    while moved < 2:
        moved += choose_one_step(page, rng) == "moved"
    page.wait_for_selector("button.choice, #confirm")
    page.evaluate("window.scrollTo(0, 0)")
    board = page.locator(".board svg").first.bounding_box()
    panel = page.locator("#move-panel").bounding_box()
    choice = (page.query_selector("button.choice") or page.query_selector("#confirm")).bounding_box()
    nav = page.locator("header").bounding_box()
    assert board and panel and choice and nav
    assert board["y"] >= 0 and board["y"] + board["height"] <= panel["y"] + 1, (board, panel)  # nothing covered
    assert panel["y"] <= choice["y"] and choice["y"] + choice["height"] <= 844, (panel, choice)
    assert nav["height"] < 50, nav  # the nav does not wrap
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.mouse.move(0, 0)  # no hover card over the picture
    page.evaluate("document.getElementById('card-info').hidden = true")
    shots = Path(os.environ.get("MEEPLE_SCREENSHOTS") or "/tmp")
    path = shots / "phone-clash.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 10_000


def test_a_rules_popup_opened_on_one_turn_closes_when_the_match_moves_on(new_page: Any, stack: Stack) -> None:
    match_id, tokens = two_people_clash(stack)
    move(stack, match_id, tokens[0], M0)
    page = open_as(new_page, match_id, tokens[0])
    page.locator(".cell[data-field='1,1']").click()  # Mustafa's rules text, while the opponent thinks
    page.wait_for_selector("#card-info:not([hidden])")
    page.mouse.move(0, 0)  # then on by keyboard: the pointer hovers nothing
    move(stack, match_id, tokens[1], TALIB)  # the opponent's move arrives: the next turn begins
    page.wait_for_selector(".cell.last")
    page.wait_for_selector("#card-info", state="hidden")
    assert page.is_hidden("#card-info")
