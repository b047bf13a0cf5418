"""The browser client at /play in a real headless Chromium: whole games against bots, an invite link between
two people, a reload that resumes, and never another seat's hidden information in what the page receives."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from services.rules.games.base import leaked_secrets
from tests.replaying import engine_states

from .conftest import Stack

SHOTS = os.environ.get("MEEPLE_SCREENSHOTS")  # a folder: save a screenshot of each board there (docs/)
# (game, players, options): the smallest tables, so a whole game through the page stays short.
GAMES_VS_BOTS = [("clash", 2, {"match": "single"}), ("sideboards", 2, {}), ("fierce-women", 2, {}),
                 ("they-who-were-8", 4, {})]


class Received:
    """Every API answer the page receives (JSON bodies) and every WebSocket message, to check them for hidden
    information."""

    def __init__(self, page: Any) -> None:
        self.responses: list[Any] = []
        self.frames: list[Any] = []
        page.on("response", lambda r: self.responses.append(r) if "/v1/" in r.url else None)
        page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: self.frames.append(payload)))

    def bodies(self) -> list[Any]:
        out = []
        for response in self.responses:
            try:
                out.append(json.loads(response.body()))
            except Exception:  # an aborted long-poll (page left) has no body
                continue
        for frame in self.frames:
            doc = json.loads(frame)
            out.append(doc.get("body", doc) if doc.get("type") == "reply" else doc)
        return out

    def socket_updates(self) -> int:
        return sum(1 for frame in self.frames if json.loads(frame).get("type") == "update")


def states_by_version(stack: Stack, match_id: str) -> tuple[Any, dict[int, Any]]:
    """Every state of a finished match, rebuilt from its seed and move log with the engine."""
    import httpx

    return engine_states(httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json())


def assert_no_hidden_information(stack: Stack, match_id: str, seat: int, bodies: list[Any]) -> int:
    """No body the page got while the match ran holds an id that ``seat`` must not see at that version."""
    game, states = states_by_version(stack, match_id)
    checked = 0
    for body in bodies:
        if not isinstance(body, dict) or "version" not in body or body.get("status") == "finished":
            continue
        version = max(v for v in states if v <= body["version"])
        leaked = leaked_secrets(game, states[version], seat, body)
        assert leaked == set(), f"seat {seat} received {leaked} at version {body['version']}"
        checked += 1
    return checked


def start_from_lobby(page: Any, game: str, players: int, options: dict[str, Any], vs: str = "easy") -> str:
    page.goto("/play")
    page.select_option("#game", game)
    page.fill("#players", str(players))
    page.select_option("#vs", vs)
    page.fill("#options", json.dumps(options))
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "lobby.png"))
    page.click("#create")
    page.wait_for_selector("#match-id")
    return str(page.inner_text("#match-id"))


def play_until_finished(page: Any, rng: random.Random, max_moves: int = 600, shot: str | None = None) -> int:
    """Click a legal move whenever the page offers some, until the result shows."""
    moves = 0
    for _ in range(max_moves):
        page.wait_for_selector("button.move, #result", timeout=60_000)
        if page.query_selector("#result"):
            return moves
        buttons = page.query_selector_all("button.move")
        if not buttons:
            continue
        if shot and moves == (3 if "clash" in shot else 9):
            page.screenshot(path=shot, full_page=True)
        version = page.inner_text("#version")
        try:
            rng.choice(buttons).click(timeout=5_000)
        except Exception:  # the list was redrawn under the click (a bot moved): pick again
            continue
        page.wait_for_function(f"document.getElementById('version')?.textContent !== '{version}' "
                               "|| document.getElementById('error')?.hidden === false", timeout=30_000)
        moves += 1
    raise AssertionError("the game did not finish")


@pytest.mark.parametrize(("game", "players", "options"), GAMES_VS_BOTS, ids=[g[0] for g in GAMES_VS_BOTS])
def test_a_whole_game_against_bots_through_the_page_without_hidden_information(
        new_page: Any, stack: Stack, game: str, players: int, options: dict[str, Any]) -> None:
    page = new_page()
    received = Received(page)
    match_id = start_from_lobby(page, game, players, options)
    assert page.query_selector(".board svg") is not None  # the board is drawn from the view
    page.wait_for_function("document.body.dataset.live === 'ws'")  # live updates over the match's socket
    shot = str(Path(SHOTS) / f"{game}.png") if SHOTS else None
    moves = play_until_finished(page, random.Random(1), shot=shot)
    assert moves > 0
    assert page.inner_text("#status") == "finished"
    assert "Winners" in page.inner_text("#result")
    assert page.is_visible("#rematch") and page.is_visible("#replay-link")
    assert not page.is_visible("#error"), page.inner_text("#error")
    assert assert_no_hidden_information(stack, match_id, 0, received.bodies()) > moves
    assert received.socket_updates() > 0
    if game == "clash":  # a rematch: the same seats in a new match, this browser in seat 0 again
        page.click("#rematch")
        page.wait_for_function(f"document.getElementById('match-id')?.textContent !== '{match_id}'")
        assert page.inner_text("#status") in ("active", "waiting") and "you are seat 0" in page.inner_text("main")


def test_an_invite_link_game_between_two_browser_contexts(new_page: Any, stack: Stack) -> None:
    host = new_page()
    start_from_lobby(host, "clash", 2, {"match": "single"}, vs="humans")
    link = host.input_value("#invite")
    assert "/play#/join/" in link
    guest = new_page({"width": 390, "height": 844})  # a phone
    guest_received = Received(guest)
    guest.goto(link)
    guest.wait_for_selector("#match-id")
    match_id = host.inner_text("#match-id")
    assert guest.inner_text("#match-id") == match_id and "you are seat 1" in guest.inner_text("main")
    rng = random.Random(2)
    for _ in range(400):
        if host.query_selector("#result") and guest.query_selector("#result"):
            break
        for page in (host, guest):
            buttons = page.query_selector_all("button.move")
            if buttons:
                if SHOTS and page is guest and int(page.inner_text("#version")) > 6:
                    page.screenshot(path=str(Path(SHOTS) / "phone.png"), full_page=True)
                version = page.inner_text("#version")
                rng.choice(buttons).click()
                page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
        host.wait_for_timeout(50)
    else:
        raise AssertionError("the invite game did not finish")
    assert "Winners" in host.inner_text("#result") and "Winners" in guest.inner_text("#result")
    # Phone-sized: nothing wider than the screen.
    assert guest.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    assert assert_no_hidden_information(stack, match_id, 1, guest_received.bodies()) > 0


def test_a_reload_mid_game_resumes_the_same_seat(new_page: Any) -> None:
    page = new_page()
    match_id = start_from_lobby(page, "fierce-women", 2, {})
    rng = random.Random(3)
    for _ in range(3):
        page.wait_for_selector("button.move")
        version = page.inner_text("#version")
        rng.choice(page.query_selector_all("button.move")).click()
        page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    before = int(page.inner_text("#version"))
    received = Received(page)
    page.reload()
    page.wait_for_selector("#match-id")
    assert page.inner_text("#match-id") == match_id
    page.wait_for_function("document.body.dataset.live === 'ws'")  # a new socket, hello after the version shown
    assert "you are seat 0" in page.inner_text("main")
    assert int(page.inner_text("#version")) >= before
    page.wait_for_selector("button.move")  # our turn again, with our seat's moves
    version = page.inner_text("#version")
    page.query_selector_all("button.move")[0].click()
    page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    assert not page.is_visible("#error")
    for _ in range(300):  # the update of that move comes over the new socket (bounded: 30 s)
        if received.socket_updates():
            break
        page.wait_for_timeout(100)
    assert received.socket_updates() > 0


def test_the_page_falls_back_to_long_polls_where_the_gateway_holds_no_websocket(new_page: Any,
                                                                              plain_stack: Stack) -> None:
    page = new_page(base_url=plain_stack.url)  # werkzeug's server: /ws answers 501
    start_from_lobby(page, "clash", 2, {"match": "single"})
    page.wait_for_function("document.body.dataset.live === 'long-poll'")
    rng = random.Random(6)
    for _ in range(3):  # the bot's answers still arrive
        page.wait_for_selector("button.move")
        version = page.inner_text("#version")
        rng.choice(page.query_selector_all("button.move")).click()
        page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    page.wait_for_selector("button.move, #result")
    assert not page.is_visible("#error"), page.inner_text("#error")


def finish_with_the_sdk(stack: Stack, game: str, players: int) -> tuple[str, str]:
    """A match of seat 0 (first legal move each time) against easy bots, played to the end; (id, token)."""
    from meeple_client import Client

    with Client(stack.url) as api:
        match = api.create_match(game, players, seed=8, seats=[{"kind": "human"}] + [
            {"kind": "bot", "level": "easy"}] * (players - 1))
        while not match.finished:
            match.wait_turn(timeout=60)
            if match.my_turn:
                match.move(match.legal_moves[0])
        return match.id, str(match.token)


@pytest.mark.parametrize("as_seat", [False, True], ids=["spectator", "seat"])
def test_the_replay_redraws_the_board_at_each_step_and_receives_nothing_hidden(
        new_page: Any, stack: Stack, as_seat: bool) -> None:
    match_id, token = finish_with_the_sdk(stack, "fierce-women", 2)
    page = new_page()
    if as_seat:  # this browser played seat 0: its replay shows seat 0's hand at each step
        page.goto("/play")
        page.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token}))",
                      [match_id, token])
    received = Received(page)
    page.goto(f"/play#/replay/{match_id}")
    page.wait_for_selector("#step-text")
    page.click("#first")
    assert page.get_attribute("#replay-board", "data-version") == "0"
    boards = [page.inner_html("#replay-board svg")]
    for step in range(1, 8):
        page.click("#next")
        assert page.get_attribute("#replay-board", "data-version") == str(step)
        assert page.inner_text("#step-text").startswith(f"v{step}")
        boards.append(page.inner_html("#replay-board svg"))
    assert len(set(boards)) > 2  # the board changes as the moves are stepped through
    page.keyboard.press("End")
    last = int(page.get_attribute("#replay-board", "data-version") or 0)
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute("#replay-board", "data-version") == str(last - 1)
    replays = [b for b in received.bodies() if isinstance(b, dict) and "log" in b]
    assert replays and all("view" in entry for entry in replays[0]["log"])
    game, states = states_by_version(stack, match_id)
    seat = 0 if as_seat else None
    for entry in replays[0]["log"][:-1]:  # while the match ran: nothing of what that seat could not see
        assert leaked_secrets(game, states[entry["version"]], seat, entry["view"]) == set(), entry["version"]
    if not as_seat:  # and the spectator's steps differ from the seat's: the hand is not the spectator's to see
        mine = [e["view"] for e in httpx_replay(stack, match_id, token)["log"]]
        assert mine != [e["view"] for e in replays[0]["log"]]


def httpx_replay(stack: Stack, match_id: str, token: str) -> Any:
    import httpx

    return httpx.get(f"{stack.url}/v1/matches/{match_id}/replay", params={"include": "views"},
                     headers={"Authorization": f"Bearer {token}"}, timeout=60).json()


def test_docs_page_is_swagger_ui_served_offline_and_try_it_out_works_with_a_bearer_token(
        new_page: Any, stack: Stack) -> None:
    import httpx

    created = httpx.post(f"{stack.url}/v1/matches", json={"game": "clash", "players": 2, "join": True, "seats": [
        {"kind": "human"}, {"kind": "bot", "level": "easy"}]}).json()
    page = new_page()
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(stack.url) else elsewhere.append(r.url))
    page.goto("/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    page.click("button.authorize")
    page.fill(".auth-container input", created["token"])
    page.click(".auth-btn-wrapper button.authorize")
    page.click("button.btn-done")
    block = page.locator(".opblock", has=page.locator("[data-path='/v1/matches/{match_id}/legal-moves']"))
    block.locator(".opblock-summary").click()
    block.locator("input[placeholder='match_id']").fill(created["id"])
    block.locator("button.execute").click()
    status = block.locator(".live-responses-table td.response-col_status:not(.col_header)")
    status.wait_for(timeout=30_000)
    assert status.inner_text().strip().startswith("200"), block.locator(".live-responses-table").inner_text()
    assert '"moves"' in block.locator(".live-responses-table").inner_text()
    assert elsewhere == [], elsewhere  # offline: nothing but this server


def test_matchmaking_from_the_lobby_then_a_spectator_follows_the_match_live(new_page: Any, stack: Stack) -> None:
    """Matchmaking seats the lone person with a bot (MEEPLE_BOT_FILL_S=1 here); a second browser watches."""
    player = new_page()
    player.goto("/play")
    player.select_option("#game", "clash")
    player.fill("#options", json.dumps({"match": "single"}))
    player.click("#matchmake")
    player.wait_for_selector("#match-id", timeout=60_000)
    match_id = player.inner_text("#match-id")
    assert "you are seat" in player.inner_text("main")
    watcher = new_page()
    watched = Received(watcher)
    watcher.goto("/play")
    watcher.fill("#watch-id", match_id)
    watcher.click("#watch button[type=submit]")
    watcher.wait_for_selector("#match-id")
    assert "spectating" in watcher.inner_text("main") and watcher.query_selector("button.move") is None
    start = int(watcher.inner_text("#version"))
    play_until_finished(player, random.Random(4))
    watcher.wait_for_selector("#result", timeout=60_000)  # the spectator's page followed to the end
    assert int(watcher.inner_text("#version")) > start
    bodies = watched.bodies()
    game, states = states_by_version(stack, match_id)
    for body in bodies:  # a spectator sees no seat's hidden ids while the match runs
        if isinstance(body, dict) and "version" in body and body.get("status") != "finished":
            version = max(v for v in states if v <= body["version"])
            assert leaked_secrets(game, states[version], None, body) == set()
    watcher.click("#replay-link")
    watcher.wait_for_selector("#step-text")
    watcher.click("#first")
    assert watcher.inner_text("#step-text").startswith("v0")


def test_keyboard_play_hint_key_board_field_filter_and_clock(new_page: Any) -> None:
    page = new_page({"width": 390, "height": 844})
    page.goto("/play")
    page.select_option("#game", "clash")
    page.select_option("#vs", "easy")
    page.select_option("#clock", "per_move:60")
    page.fill("#options", json.dumps({"match": "single"}))
    page.click("#create")
    page.wait_for_selector("button.move")
    assert "⏱" in page.inner_text(".seats")  # the seat clocks are shown
    page.keyboard.press("h")  # the hint key
    page.wait_for_function("document.getElementById('hint-text')?.textContent.trim().length > 0")
    empty = page.locator("[data-field][aria-label$='empty']").first
    field = empty.get_attribute("data-field")
    empty.focus()
    page.keyboard.press("Enter")  # a board field, by keyboard: only the moves placing there remain
    page.wait_for_selector(f"text=Field {field}")
    labels = [b.inner_text() for b in page.query_selector_all("button.move")]
    r, c = field.split(",")
    assert labels and all(f"field [{r},{c}]" in label for label in labels)
    version = page.inner_text("#version")
    page.evaluate("document.activeElement.blur()")  # focus away from the board, then play move 1
    page.keyboard.press("1")
    page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    assert not page.is_visible("#error")
