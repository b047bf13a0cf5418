"""The browser client at /play in a real headless Chromium, played as a person would: reading the screen and
choosing a move step by step in words, to the result screen, in every game; never another seat's hidden
information in what the page receives or shows; clocks that count down; matchmaking that a bot fills; a phone
whose move panel stays in reach; invites, leaving, "Your matches", replays with their exact seed."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.conftest import RulesProcess, gunicorn_stack
from tests.games.fixtures import leaked_secrets
from tests.replaying import engine_states
from tooling.stack import LOCAL_PLAYER_ENV

from .conftest import Stack

SHOTS = os.environ.get("MEEPLE_SCREENSHOTS")  # a folder: save the screenshots of docs/screenshots there
# (game, players, options): the smallest tables, so a whole game through the page stays short.
GAMES_VS_BOTS = [("clash", 2, {"match": "single"}), ("sideboards", 2, {}), ("fierce-women", 2, {}),
                 ("they-who-were-8", 4, {"max_rounds": 4})]
#: What a log line must never be: the old raw form ("v7 move seat 1 (bot)") or a bare code.
RAW_LINE = re.compile(r"^(move|joined|created|left) seat|^\{|\"type\"")


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
            except Exception:  # an aborted long-poll (page left) or a 304 has no body
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


def at(states: dict[int, Any], version: int) -> Any:
    return states[max(v for v in states if v <= version)]


def assert_no_hidden_information(stack: Stack, match_id: str, seat: int | None, bodies: list[Any]) -> int:
    """No body the page got while the match ran holds an id that ``seat`` must not see at that version, the
    words of every event included."""
    game, states = states_by_version(stack, match_id)
    checked = 0
    for body in bodies:
        if not isinstance(body, dict) or "version" not in body or body.get("status") == "finished":
            continue
        leaked = leaked_secrets(game, at(states, body["version"]), seat, body)
        assert leaked == set(), f"seat {seat} received {leaked} at version {body['version']}"
        for event in body.get("events") or []:  # each event's words, at the version it describes
            assert leaked_secrets(game, at(states, event["version"]), seat, event) == set(), event
        checked += 1
    return checked


def assert_log_lines_in_words_and_nothing_hidden(page: Any, stack: Stack, match_id: str, seat: int | None) -> int:
    """Every line of the page's log is words, and names nothing the seat could not see at its version."""
    game, states = states_by_version(stack, match_id)
    lines = page.eval_on_selector_all("#log li", "els => els.map(e => [Number(e.dataset.version), e.innerText])")
    assert lines, "the log is empty"
    for version, text in lines:
        words = re.sub(r"^v\d+\s*(bot\s*)?", "", text.strip())
        assert len(words) > 8 and not RAW_LINE.search(words), text
        assert leaked_secrets(game, at(states, version), seat, words) == set(), text
    return len(lines)


def start_from_lobby(page: Any, game: str, players: int, options: dict[str, Any], vs: str = "easy",
                     clock: str = "") -> str:
    """The lobby's form: the game, players, opponents, and each option through its own control."""
    page.goto("/play")
    page.select_option("#game", game)
    page.fill("#players", str(players))
    page.select_option("#vs", vs)
    if clock:
        page.select_option("#clock", clock)
    for name, value in options.items():
        control = page.locator(f"#opt-{name}")
        kind = control.get_attribute("data-kind")
        if kind == "bool":
            control.set_checked(bool(value))
        elif kind == "choice":
            control.select_option(json.dumps(value))
        else:
            control.fill(str(value) if kind == "int" else json.dumps(value))
    if SHOTS and game == "clash" and not clock:
        page.screenshot(path=str(Path(SHOTS) / "lobby.png"))
    page.click("#create")
    page.wait_for_selector("#match-id")
    return str(page.inner_text("#match-id"))


def choose_one_step(page: Any, rng: random.Random) -> str:
    """One step of the chooser, read from the screen: a choice among those offered, or the confirm button.
    Returns "result", "moved", "step" or "waiting"."""
    try:
        page.wait_for_selector("button.choice, #confirm, #result", timeout=90_000)
    except Exception:
        raise AssertionError(f"nothing to choose after 90 s: {page.inner_text('main')[:3000]}") from None
    if page.query_selector("#result"):
        return "result"
    confirm = page.query_selector("#confirm")
    try:
        if confirm is not None:
            assert page.inner_text("#confirm-text").strip()  # the whole move in words before it is played
            version = page.inner_text("#version")
            confirm.click(timeout=5_000)
            page.wait_for_function(f"document.getElementById('version')?.textContent !== '{version}' "
                                   "|| document.getElementById('error')?.hidden === false", timeout=30_000)
            assert not page.is_visible("#error"), page.inner_text("#error")
            return "moved"
        prompt = page.inner_text("#prompt")
        choices = page.query_selector_all("button.choice")
        labels = [c.inner_text() for c in choices]
        assert prompt.endswith(("?", ")")) and all(len(label.strip()) > 1 for label in labels), (prompt, labels)
        assert not any(label.strip().startswith(("{", "[")) for label in labels), labels  # words, not JSON
        rng.choice(choices).click(timeout=5_000)
        return "step"
    except Exception as err:  # the panel was redrawn under the click (a bot moved): look again
        if "error" in str(err).lower() and page.is_visible("#error"):
            raise
        return "waiting"


#: What a player must never read: an identifier (snake_case), a JSON list or object, a bare seat number as a winner.
INTERNAL = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\[\s*[\d\"?]|\{\"|\b[Ww]inners?: \d")


def screen_text(page: Any) -> str:
    """Everything the page shows a player now: the visible text (without match ids, which are codes to copy),
    the tab's title and the tooltips."""
    return str(page.evaluate("""() => {
      let text = document.body.innerText;
      for (const code of document.querySelectorAll("code")) text = text.split(code.innerText).join("");
      const tips = [...document.querySelectorAll("[title]")].map(e => e.getAttribute("title"));
      return [document.title, text, ...tips].join("\\n");
    }"""))


def internal_words(texts: list[str]) -> set[str]:
    """Each internal word found, with the words around it (where the page says it)."""
    return {f"{m.group(0)}: ...{text[max(0, m.start() - 60):m.end() + 20]}..."
            for text in texts for m in INTERNAL.finditer(text)}


def play_until_finished(page: Any, rng: random.Random, max_steps: int = 3000, shot: str | None = None,
                        texts: list[str] | None = None) -> int:
    moves = 0
    for _ in range(max_steps):
        if texts is not None:
            with contextlib.suppress(Exception):  # redrawn while it was read: the next step reads it again
                texts.append(screen_text(page))
        outcome = choose_one_step(page, rng)
        if outcome == "result":
            return moves
        if outcome == "moved":
            moves += 1
            if shot and moves == 4:  # the pointer away, so no hover card covers the choices in the picture
                page.mouse.move(0, 0)
                page.evaluate("document.getElementById('card-info').hidden = true")
                page.wait_for_selector("button.choice, #confirm, #result")
                page.screenshot(path=shot, full_page=True)
    raise AssertionError("the game did not finish")


@pytest.mark.parametrize(("game", "players", "options"), GAMES_VS_BOTS, ids=[g[0] for g in GAMES_VS_BOTS])
def test_a_whole_game_read_from_the_screen_through_the_stepwise_chooser_to_an_explained_result(
        new_page: Any, stack: Stack, game: str, players: int, options: dict[str, Any]) -> None:
    page = new_page()
    received = Received(page)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    match_id = start_from_lobby(page, game, players, options)
    assert page.query_selector(".board svg, .board .card") is not None  # the board is drawn from the view
    assert "You are seat 0" in page.inner_text("#you")  # who you are, always shown
    if game == "clash":
        assert "Blue" in page.inner_text("#you")
    page.wait_for_function("document.body.dataset.live === 'ws'")  # live updates over the match's socket
    card = page.locator(".board [data-card]").first  # a card's rules text on tap
    card.click()
    page.wait_for_selector("#card-info:not([hidden])")
    assert len(page.inner_text("#card-info-text")) > 10
    page.click("#card-info-close")
    shot = str(Path(SHOTS) / f"{game}.png") if SHOTS else None
    texts = [screen_text(page)]
    moves = play_until_finished(page, random.Random(1), shot=shot, texts=texts)
    page.wait_for_selector("#result")
    texts.append(screen_text(page))
    page.goto("/play#/")  # the lobby too, with this game's options
    page.select_option("#game", game)
    texts.append(screen_text(page))
    page.go_back()
    page.wait_for_selector("#result")
    assert internal_words(texts) == set(), internal_words(texts)
    assert moves > 0 and page.inner_text("#status") == "finished"
    assert page.inner_text("#verdict") in ("You won!", "You lost.", "You share the win!")
    assert page.inner_text("#reason").startswith("Why it ended: ") and len(page.inner_text("#headline")) > 10
    rows = page.query_selector_all("table.breakdown tbody tr")
    assert len(rows) >= players and all(r.query_selector("li") for r in rows)  # each seat's breakdown
    if game == "clash":  # one game: its end is the headline, said once, and why it ended is the game's reason
        assert "Game 1 is over" in page.inner_text("#headline") and page.query_selector("#games") is None
        assert "single game" not in page.inner_text("#reason")
    if game == "they-who-were-8":  # each seat's team, as a chip beside the seat and in its result row
        assert "Team 0 (seats 0 and 2)" in page.inner_text("#result")
        chips = page.eval_on_selector_all(".seats li", "els => els.map(e => [e.dataset.seat, "
                                          "e.querySelector('.team-chip')?.textContent])")
        assert chips == [["0", "team 0"], ["1", "team 1"], ["2", "team 0"], ["3", "team 1"]], chips
        rows = page.eval_on_selector_all("table.breakdown tbody th", "els => els.map(e => [e.innerText.slice(0, 6), "
                                         "e.querySelector('.team-chip')?.textContent])")
        assert [[f"Seat {s}", f"team {s % 2}"] for s in range(4)] == [r for r in rows if r[0].startswith("Seat")]
        assert [r for r in rows if r[0].startswith("Team")] == [["Team 0", None], ["Team 1", None]], rows  # said once
        scores = page.eval_on_selector_all("table.breakdown tbody tr", "els => els.map(e => [e.querySelector('th')"
                                           ".innerText.slice(0, 6), e.querySelector('.score').innerText])")
        assert [s for w, s in scores if w.startswith("Seat")] == [f"for team {s % 2}" for s in range(4)], scores
    if game == "fierce-women":
        assert "Automa (seat 2)" in page.inner_text("#result")
    if SHOTS and game == "they-who-were-8":
        page.locator("#result").screenshot(path=str(Path(SHOTS) / "result.png"))
    assert page.is_visible("#rematch") and page.is_visible("#replay-link")
    assert not page.is_visible("#error"), page.inner_text("#error")
    assert assert_no_hidden_information(stack, match_id, 0, received.bodies()) > moves
    assert assert_log_lines_in_words_and_nothing_hidden(page, stack, match_id, 0) > 2
    assert received.socket_updates() > 0
    assert errors == []


def test_a_clash_best_of_3_tells_each_games_end_and_when_the_next_game_begins(new_page: Any, stack: Stack) -> None:
    """Game 2 of a best-of-3 is announced in the log (who won game 1 and why, then "Game 2 begins"), the choice of
    who starts next is a step in words, and the result lists every game with its winner and reason."""
    page = new_page()
    match_id = start_from_lobby(page, "clash", 2, {"match": "best_of_3"})
    play_until_finished(page, random.Random(12), max_steps=6000)
    log = page.inner_text("#log")
    assert "Game 1 is over: " in log and "Game 2 begins: " in log, log[-3000:]
    games = page.query_selector_all("#games li")
    assert len(games) >= 2 and all(re.match(r"Game \d is over: .+\. (Blue wins it|Green wins it|it is a draw)",
                                            g.inner_text()) for g in games), [g.inner_text() for g in games]
    assert "Why it ended: " in page.inner_text("#reason")
    assert assert_log_lines_in_words_and_nothing_hidden(page, stack, match_id, 0) > 10


def test_the_page_has_a_favicon(new_page: Any, stack: Stack) -> None:
    import httpx

    page = new_page()
    page.goto("/play")
    href = page.get_attribute("link[rel=icon]", "href")
    assert href
    icon = httpx.get(f"{stack.url}{href}")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert "<svg" in icon.text


def test_an_invite_with_a_copy_button_a_full_match_offers_to_watch_and_the_host_never_waits_for_itself(
        new_page: Any, stack: Stack) -> None:
    host = new_page()
    host.context.grant_permissions(["clipboard-read", "clipboard-write"])
    start_from_lobby(host, "clash", 2, {"match": "single"}, vs="humans")
    assert "seat 0" not in host.inner_text("#waiting") and "friend" in host.inner_text("#waiting")
    link = host.input_value("#invite")
    assert "/play#/join/" in link
    host.click("#copy-invite")
    host.wait_for_function("document.getElementById('copied')?.textContent === 'Copied!'")
    assert host.evaluate("navigator.clipboard.readText()") == link
    guest = new_page({"width": 390, "height": 844})  # a phone
    guest_received = Received(guest)
    guest.goto(link)
    guest.wait_for_selector("#match-id")
    match_id = host.inner_text("#match-id")
    assert guest.inner_text("#match-id") == match_id and "You are seat 1" in guest.inner_text("#you")
    late = new_page()  # a third person with the same link: no seat left, so watch instead
    late.goto(link)
    late.wait_for_selector("#watch-instead")
    late.click("#watch-instead")
    late.wait_for_selector("#match-id")
    assert "spectating" in late.inner_text("main") and late.query_selector("button.choice") is None
    rng = random.Random(2)
    for _ in range(600):
        if host.query_selector("#result") and guest.query_selector("#result"):
            break
        for page in (host, guest):
            if page.query_selector("button.choice, #confirm"):
                if SHOTS and page is guest and int(page.inner_text("#version")) > 6:
                    page.screenshot(path=str(Path(SHOTS) / "phone.png"))
                choose_one_step(page, rng)
        host.wait_for_timeout(30)
    else:
        raise AssertionError("the invite game did not finish")
    assert guest.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")  # nothing too wide
    assert assert_no_hidden_information(stack, match_id, 1, guest_received.bodies()) > 0
    late.wait_for_selector("#result", timeout=30_000)


def test_on_a_phone_the_move_panel_stays_on_screen(new_page: Any) -> None:
    page = new_page({"width": 390, "height": 844})
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})
    for _ in range(4):  # at the top of the page and after some steps, the choices are in reach without scrolling
        page.wait_for_selector("button.choice, #confirm")
        page.evaluate("window.scrollTo(0, 0)")
        target = page.query_selector("#confirm") or page.query_selector("button.choice")
        box = target.bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844, box
        choose_one_step(page, random.Random(5))
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_a_timed_games_clock_counts_down_between_updates(new_page: Any) -> None:
    """The seat's clock is read twice with no update in between, before and after live updates arrived."""
    page = new_page()
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0}, clock="per_move:60")
    page.wait_for_function("document.body.dataset.live === 'ws'")

    def seconds(seat: int) -> int:
        text = page.inner_text(f"[data-clock='{seat}']")
        minutes, secs = re.search(r"(\d+):(\d\d)", text).groups()  # type: ignore[union-attr]
        return int(minutes) * 60 + int(secs)

    for _ in range(3):
        page.wait_for_selector("button.choice, #confirm")
        version, first = page.inner_text("#version"), seconds(0)
        page.wait_for_timeout(2_300)
        assert page.inner_text("#version") == version  # no update in between: the page ticked by itself
        assert seconds(0) < first, (first, seconds(0))
        for _ in range(6):  # a whole move, then the bot's answer comes as a live update
            if choose_one_step(page, random.Random(8)) == "moved":
                break
    assert int(page.inner_text("#version")) >= 4


@pytest.fixture(scope="module")
def slow_fill_stack(rules: RulesProcess) -> Iterator[Stack]:
    """The page's matchmaking with the settings ``make run`` gives a local player (tooling/stack.py): bots fill
    after its wait (15 s), no per-address quota."""
    with gunicorn_stack(rules.port, **LOCAL_PLAYER_ENV) as stack:
        yield stack


def test_matchmaking_can_be_cancelled_and_is_filled_with_a_bot_after_make_runs_wait(new_page: Any,
                                                                               slow_fill_stack: Stack) -> None:
    page = new_page(base_url=slow_fill_stack.url)
    page.goto("/play")
    page.select_option("#game", "clash")
    page.locator("#opt-match").select_option(json.dumps("single"))
    page.click("#matchmake")
    page.wait_for_selector("#mm-cancel:not([hidden])")

    def late_answer(route: Any) -> None:
        """The DELETE's answer arrives after the ticket's long-poll has seen the cancellation (as on a busy
        server): what the page said last used to be the DELETE's "Cancelling…", for good."""
        if route.request.method != "DELETE":
            route.continue_()
            return
        answered = route.fetch()
        time.sleep(1.5)
        route.fulfill(response=answered)

    page.route("**/v1/matchmaking/*", late_answer)
    page.click("#mm-cancel")
    page.wait_for_function("document.getElementById('mm-status')?.textContent === 'Cancelled.'", timeout=30_000)
    page.wait_for_timeout(2_500)  # the DELETE's answer has come by now
    assert page.inner_text("#mm-status") == "Cancelled."
    page.unroute("**/v1/matchmaking/*")
    assert page.is_visible("#matchmake") and not page.is_visible("#mm-cancel")
    page.click("#matchmake")
    page.wait_for_function("document.getElementById('mm-status')?.textContent.includes('bots fill empty seats')")
    page.wait_for_selector("#match-id", timeout=90_000)  # nobody else came: after make run's wait, a bot sat down
    assert "bot" in page.inner_text(".seats") and "You are seat" in page.inner_text("#you")


def test_leaving_asks_first_and_your_matches_shows_state_and_lets_you_resign_or_leave(new_page: Any,
                                                                                     stack: Stack) -> None:
    """Leave and Resign each ask first ("No" changes nothing); a resigned 2-seat match ends at once as a forfeit
    (the server says so), a left match drops out of the list, and the others stay."""
    import httpx

    page = new_page()
    first = start_from_lobby(page, "fierce-women", 2, {})
    page.click("#leave")
    page.wait_for_selector("#leave-yes")
    page.click("#leave-no")
    assert page.is_visible("#leave") and page.inner_text("#status") == "active"
    second = start_from_lobby(page, "clash", 2, {"match": "single"}, vs="humans")
    third = start_from_lobby(page, "clash", 2, {"match": "single"})
    page.goto("/play#/")
    page.wait_for_selector(f"#mine li[data-match='{first}'] .state")
    assert page.inner_text(f"#mine li[data-match='{second}'] .state") == "waiting for players"
    assert page.inner_text(f"#mine li[data-match='{first}'] .state") in ("your turn", "running")
    assert page.inner_text(f"#mine li[data-match='{third}'] .state") in ("your turn", "running")
    assert page.is_visible(f"#mine li[data-match='{first}'] button.resign")
    page.click(f"#mine li[data-match='{third}'] button.resign")  # resign: asked first, "No" keeps it running
    page.wait_for_selector("#mine-no")
    assert "Resign this match?" in page.inner_text("#mine-confirm")
    page.click("#mine-no")
    assert page.query_selector("#mine-yes") is None
    assert httpx.get(f"{stack.url}/v1/matches/{third}").json()["status"] == "active"
    page.click(f"#mine li[data-match='{third}'] button.resign")
    page.click("#mine-yes")
    page.wait_for_function(f"document.querySelector(\"#mine li[data-match='{third}']\")?.dataset.state === 'finished'")
    assert page.inner_text(f"#mine li[data-match='{third}'] .state") == "finished"
    assert page.is_visible(f"#mine li[data-match='{third}'] button.forget")  # nothing left to resign or leave
    ended = httpx.get(f"{stack.url}/v1/matches/{third}").json()
    assert ended["outcome"]["ended_by"] == "forfeit" and ended["outcome"]["forfeited"] == [0], ended["outcome"]
    assert ended["outcome"]["winners"] == [1]
    page.click(f"#mine li[data-match='{first}'] button.leave")
    page.wait_for_selector("#mine-yes")
    assert "Leave this match?" in page.inner_text("#mine-confirm")
    page.click("#mine-yes")
    page.wait_for_function(f"!document.querySelector(\"#mine li[data-match='{first}']\")")
    assert page.query_selector(f"#mine li[data-match='{second}']") is not None
    left = httpx.get(f"{stack.url}/v1/matches/{first}").json()
    assert left["seats"][0]["left"] and left["seats"][0]["control"] == "bot", left["seats"][0]  # a bot plays on


#: Holds back the page's status reads (GET /v1/matches/{id}) while ``window.slowStatus`` is set, counting them:
#: the real server answers, later, so a test can leave the page while one is under way.
SLOW_STATUS = """
const realFetch = window.fetch;
window.slowStarted = 0; window.slowDone = 0;
window.fetch = async (...args) => {
  const url = String(args[0] instanceof Request ? args[0].url : args[0]);
  if (window.slowStatus && /\\/v1\\/matches\\/[^/?]+(\\?|$)/.test(url)) {
    window.slowStarted++;
    try { await new Promise(r => setTimeout(r, 2000)); return await realFetch(...args); } finally { window.slowDone++; }
  }
  return realFetch(...args);
};
"""


def test_leaving_a_match_while_its_update_loads_never_draws_the_match_over_the_lobby(new_page: Any) -> None:
    """Found by make test under load: a bot's update reloads the status; if the player went to the lobby in the
    meantime, the late answer used to redraw the match page over the lobby ("Your matches" vanished)."""
    page = new_page()
    page.add_init_script(SLOW_STATUS)
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})  # one move, then the bot's
    page.wait_for_function("document.body.dataset.live === 'ws'")
    page.evaluate("window.slowStatus = true")
    rng = random.Random(4)
    while choose_one_step(page, rng) != "moved":
        pass
    page.wait_for_function("window.slowStarted > window.slowDone", timeout=30_000)  # the bot's update is loading
    page.evaluate("location.hash = '#/'")
    page.wait_for_selector("#mine li")
    page.wait_for_function("window.slowStarted === window.slowDone", timeout=30_000)  # its answer came, late
    page.wait_for_timeout(300)
    assert page.query_selector("#mine li") is not None and page.query_selector("#match-id") is None


def test_a_reload_mid_game_resumes_the_same_seat(new_page: Any) -> None:
    page = new_page()
    match_id = start_from_lobby(page, "fierce-women", 2, {})
    rng, moved = random.Random(3), 0
    while moved < 2:
        moved += choose_one_step(page, rng) == "moved"
    before = int(page.inner_text("#version"))
    received = Received(page)
    page.reload()
    page.wait_for_selector("#match-id")
    assert page.inner_text("#match-id") == match_id
    page.wait_for_function("document.body.dataset.live === 'ws'")
    assert "You are seat 0" in page.inner_text("#you") and int(page.inner_text("#version")) >= before
    assert len(page.query_selector_all("#log li")) >= before  # the log so far, in words, after the reload
    while choose_one_step(page, rng) != "moved":
        pass
    for _ in range(300):  # the update of that move comes over the new socket (bounded: 30 s)
        if received.socket_updates():
            break
        page.wait_for_timeout(100)
    assert received.socket_updates() > 0


def test_the_page_sends_one_idempotency_key_with_every_write_a_retry_may_repeat(new_page: Any) -> None:
    """The page retries a 503; a create, join or rematch retried without a key would make a second match or
    lose the seat's one token (409 seat_taken). Every such POST carries a key, as the SDKs' do."""
    page = new_page()
    sent: list[tuple[str, str, str | None]] = []
    page.on("request", lambda r: sent.append((r.method, r.url.split("?")[0], r.headers.get("idempotency-key")))
            if "/v1/" in r.url else None)
    start_from_lobby(page, "clash", 2, {})
    repeatable = re.compile(r"/v1/(matches|matchmaking)$|/(moves|join|rematch)$")
    writes = [(url, key) for method, url, key in sent if method == "POST" and repeatable.search(url)]
    assert any(url.endswith("/v1/matches") for url, _ in writes), sent
    assert all(key for _, key in writes), writes


class MovesSent:
    """Every move the page sends: REST ``POST …/moves`` requests and ``move`` messages on its sockets."""

    def __init__(self, page: Any) -> None:
        self.rest: list[str] = []
        self.socket: list[dict[str, Any]] = []
        page.on("request", lambda r: self.rest.append(r.url) if r.method == "POST" and re.search(
            r"/v1/matches/[^/]+/moves(\?|$)", r.url) else None)
        page.on("websocket", lambda ws: ws.on("framesent", self.frame))

    def frame(self, payload: Any) -> None:
        msg = json.loads(payload)
        if msg.get("type") == "move":
            self.socket.append(msg)


def test_moves_go_over_the_open_socket_and_never_as_a_rest_post_while_it_is_open(new_page: Any) -> None:
    """One frame in per move, its reply and the bots' updates out: no HTTP request per move (issue 47)."""
    page = new_page()
    sent = MovesSent(page)
    start_from_lobby(page, "clash", 2, {"match": "single"})
    page.wait_for_function("document.body.dataset.live === 'ws'")
    rng, moved = random.Random(6), 0
    while moved < 3:
        moved += choose_one_step(page, rng) == "moved"
    assert sent.rest == [], sent.rest
    assert len(sent.socket) >= 3 and all(m["idempotency_key"] and m["include"] == "legal_moves" and "version" in m
                                         for m in sent.socket), sent.socket
    assert not page.is_visible("#error"), page.inner_text("#error")


def test_a_move_whose_socket_closes_before_its_reply_goes_over_rest_with_the_same_key_and_is_played_once(
        new_page: Any, stack: Stack) -> None:
    """The socket carries the move to the server, then dies before the reply: the page sends the same move over
    REST with the same idempotency key, and the server answers the first outcome (no error, no second move)."""
    import httpx

    page = new_page()
    sent = MovesSent(page)
    keys: list[str] = []
    page.on("request", lambda r: keys.append(r.headers.get("idempotency-key", "")) if r.method == "POST" and re.search(
        r"/moves(\?|$)", r.url) else None)
    dropped: list[dict[str, Any]] = []

    def route(ws: Any) -> None:  # the page's socket, passed through to the gateway; the first move cuts it
        server = ws.connect_to_server()

        def from_page(message: Any) -> None:
            server.send(message)
            msg = json.loads(message)
            if msg.get("type") == "move" and not dropped:
                dropped.append(msg)
                ws.close()
        ws.on_message(from_page)

    page.route_web_socket(re.compile(r".*/ws$"), route)
    match_id = start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})
    page.wait_for_function("document.body.dataset.live === 'ws'")
    rng, moved = random.Random(6), 0
    while moved < 2:
        moved += choose_one_step(page, rng) == "moved"
    assert not page.is_visible("#error"), page.inner_text("#error")
    assert dropped and keys[:1] == [dropped[0]["idempotency_key"]], (dropped, keys)  # the same key, over REST
    assert len(sent.rest) == 1 and len(sent.socket) >= 2  # only that one; the next went on the new socket
    log = httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json()["log"]
    mine = [e["version"] for e in log if e["kind"] == "move" and e["seat"] == 0]
    assert dropped[0]["version"] + 1 in mine and len(mine) == len(set(mine)) == moved, (mine, dropped)


def test_the_page_falls_back_to_long_polls_where_the_gateway_holds_no_websocket(new_page: Any,
                                                                              plain_stack: Stack) -> None:
    """And its moves go over REST: no socket is open."""
    page = new_page(base_url=plain_stack.url)  # werkzeug's server: /ws answers 501
    sent = MovesSent(page)
    start_from_lobby(page, "clash", 2, {"match": "single"})
    page.wait_for_function("document.body.dataset.live === 'long-poll'")
    rng, moved = random.Random(6), 0
    while moved < 3:  # the bot's answers still arrive
        moved += choose_one_step(page, rng) == "moved"
    page.wait_for_selector("button.choice, #confirm, #result")
    assert not page.is_visible("#error"), page.inner_text("#error")
    assert len(sent.rest) >= 3 and sent.socket == [], (sent.rest, sent.socket)


def finish_with_the_sdk(stack: Stack, game: str, players: int, seed: int = 8) -> tuple[str, str]:
    """A match of seat 0 (first legal move each time) against easy bots, played to the end; (id, token)."""
    from meeple_client import Client

    with Client(stack.url) as api:
        match = api.create_match(game, players, seed=seed, seats=[{"kind": "human"}] + [
            {"kind": "bot", "level": "easy"}] * (players - 1))
        while not match.finished:
            match.wait_turn(timeout=60)
            if match.my_turn:
                match.move(match.legal_moves[0])
        return match.id, str(match.token)


@pytest.mark.parametrize("as_seat", [False, True], ids=["spectator", "seat"])
def test_the_replay_redraws_the_board_tells_each_step_and_shows_the_seed_exactly(
        new_page: Any, stack: Stack, as_seat: bool) -> None:
    seed = 8748556023936606438  # past 2**53: a JSON number would show it rounded
    match_id, token = finish_with_the_sdk(stack, "fierce-women", 2, seed=seed)
    page = new_page()
    if as_seat:  # this browser played seat 0: its replay shows seat 0's hand at each step
        page.goto("/play")
        page.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token}))",
                      [match_id, token])
    received = Received(page)
    page.goto(f"/play#/replay/{match_id}")
    page.wait_for_selector("#step-text")
    assert page.inner_text("#seed") == str(seed)
    page.click("#first")
    assert page.get_attribute("#replay-board", "data-version") == "0"
    assert "The match was created" in page.inner_text("#step-text")
    boards = [page.inner_html("#replay-board")]
    for step in range(1, 8):
        page.click("#next")
        assert page.get_attribute("#replay-board", "data-version") == str(step)
        text = page.inner_text("#step-text")
        assert text.startswith(f"v{step}") and not RAW_LINE.search(text[3:]) and len(text) > 10
        boards.append(page.inner_html("#replay-board"))
    assert len(set(boards)) > 2  # the board changes as the moves are stepped through
    page.keyboard.press("End")
    last = int(page.get_attribute("#replay-board", "data-version") or 0)
    page.keyboard.press("ArrowLeft")
    assert page.get_attribute("#replay-board", "data-version") == str(last - 1)
    replays = [b for b in received.bodies() if isinstance(b, dict) and "log" in b]
    assert replays and all("view" in entry and entry["text"] for entry in replays[0]["log"])
    game, states = states_by_version(stack, match_id)
    seat = 0 if as_seat else None
    for entry in replays[0]["log"][:-1]:  # while the match ran: nothing of what that seat could not see
        assert leaked_secrets(game, states[entry["version"]], seat, entry["view"]) == set(), entry["version"]
        assert leaked_secrets(game, states[entry["version"]], seat, entry["text"]) == set(), entry["version"]


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
    sections = page.eval_on_selector_all(".opblock-tag", "els => els.map(e => e.dataset.tag)")
    assert "default" not in sections and {"games", "matches", "seats", "events"} <= set(sections), sections
    intro = page.inner_text(".information-container .description")
    assert 0 < len(intro.splitlines()) <= 16 and "MEEPLE_" not in intro, intro  # a short intro, no env wall
    games = page.locator(".opblock", has=page.locator("[data-path='/v1/games']"))
    assert games.count() >= 1 and games.first.locator(".authorization__btn").count() == 0  # public: no lock
    moves = page.locator(".opblock", has=page.locator("[data-path='/v1/matches/{match_id}/legal-moves']"))
    assert moves.first.locator(".authorization__btn").count() == 1  # a seat's route: the lock
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
    player.locator("#opt-match").select_option(json.dumps("single"))
    player.click("#matchmake")
    player.wait_for_selector("#match-id", timeout=60_000)
    match_id = player.inner_text("#match-id")
    watcher = new_page()
    watched = Received(watcher)
    watcher.goto("/play")
    watcher.fill("#watch-id", match_id)
    watcher.click("#watch button[type=submit]")
    watcher.wait_for_selector("#match-id")
    assert "spectating" in watcher.inner_text("main") and watcher.query_selector("button.choice") is None
    start = int(watcher.inner_text("#version"))
    play_until_finished(player, random.Random(4))
    watcher.wait_for_selector("#result", timeout=60_000)  # the spectator's page followed to the end
    assert int(watcher.inner_text("#version")) > start
    assert_no_hidden_information(stack, match_id, None, watched.bodies())
    watcher.click("#replay-link")
    watcher.wait_for_selector("#step-text")
    watcher.click("#first")
    assert watcher.inner_text("#step-text").startswith("v0")


def test_keyboard_play_hint_key_board_field_and_number_keys(new_page: Any) -> None:
    page = new_page({"width": 390, "height": 844})
    start_from_lobby(page, "clash", 2, {"match": "single", "first_player": 0})
    page.wait_for_selector("button.choice")  # the first move: Mustafa from the start spot, on which field?
    assert "field" in page.inner_text("#prompt") and "M0 Mustafa" in page.inner_text(".trail-list")
    empty = page.locator("[data-field].choosable").first
    field = empty.get_attribute("data-field")
    empty.focus()
    page.keyboard.press("Enter")  # a board field, by keyboard
    page.wait_for_function("document.getElementById('prompt')?.textContent.includes('side')")
    trail = page.inner_text(".trail-list")
    assert any(f"{name} field" in trail for name in ("top", "left", "right", "bottom", "centre")), trail
    assert field is not None
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("1")  # the first side offered
    page.wait_for_selector("#confirm")
    page.keyboard.press("Backspace")  # one step back: the sides are offered again
    page.wait_for_function("document.getElementById('prompt')?.textContent.includes('side')")
    page.keyboard.press("2")
    page.wait_for_selector("#confirm")
    assert "supporting Green" in page.inner_text("#confirm-text")
    version = page.inner_text("#version")
    page.keyboard.press("Enter")
    page.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    page.wait_for_selector("button.choice, #confirm")
    page.keyboard.press("h")  # the hint walks the chooser to the suggested move
    page.wait_for_function("document.getElementById('hint-text')?.textContent.trim().length > 0")
    assert page.inner_text("#hint-text").startswith("the normal bot would play: ")  # which level gave it
    page.wait_for_selector("#confirm")
    assert not page.is_visible("#error")
