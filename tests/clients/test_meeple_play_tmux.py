"""``meeple play`` like a person at a terminal: a tmux pane, keys typed with send-keys, the screen read back."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Stack

MEEPLE = str(Path(sys.executable).parent / "meeple")


class Pane:
    """One tmux server of the test's own (its own socket), one window, gone afterwards."""

    def __init__(self, command: list[str], width: int = 220) -> None:
        self.socket = f"meeple-test-{uuid.uuid4().hex[:8]}"
        self.tmux(["new-session", "-d", "-x", str(width), "-y", "60", "-s", "play", *command])
        self.tmux(["set-option", "-t", "play", "remain-on-exit", "on"])  # the last screen stays after its exit

    def tmux(self, args: list[str]) -> str:
        done = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def screen(self) -> str:
        return self.tmux(["capture-pane", "-p", "-t", "play", "-S", "-60"])

    def keys(self, text: str) -> None:
        self.tmux(["send-keys", "-t", "play", text, "Enter"])

    def wait_for(self, *needles: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if any(n in screen for n in needles):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"none of {needles} on screen:\n{self.screen()}")

    def wait_until_changed(self, before: str, typed: str, timeout: float = 30.0) -> None:
        """Until the screen shows more than ``before`` plus the typed line (the answer has been drawn)."""
        unchanged = {before.rstrip(), f"{before.rstrip()} {typed}"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.screen().rstrip() in unchanged:
            time.sleep(0.05)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture()
def pane_factory() -> Iterator[list[Pane]]:
    if shutil.which("tmux") is None:
        pytest.fail("tmux is missing: `make test` installs it (apt-get install tmux)")
    panes: list[Pane] = []
    yield panes
    for pane in panes:
        pane.close()


def play_ones_until(pane: Pane, *needles: str, limit: int = 40) -> str:
    """Type ``1`` (the first choice of each step, then "play this move") until one of ``needles`` shows."""
    for _ in range(limit):
        screen = pane.wait_for("your move>", *needles)
        if any(n in screen for n in needles):
            return screen
        pane.keys("1")
        pane.wait_until_changed(screen, "1", timeout=10)
    raise AssertionError(f"none of {needles} after {limit} choices:\n{pane.screen()}")


def latest(screen: str) -> str:
    """The last drawing of the match screen (the pane's history holds the earlier ones above it)."""
    starts = [m.start() for m in re.finditer(r"^match \S+  ", screen, re.M)]
    return screen[starts[-1]:] if starts else screen


def asking(pane: Pane, prompt: str, timeout: float = 30.0) -> str:
    """The latest screen once it asks ``prompt`` and waits for the answer."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = latest(pane.screen())
        if prompt in screen and screen.rstrip().endswith("your move>"):
            return screen
        time.sleep(0.05)
    raise AssertionError(f"not asked {prompt!r}:\n{pane.screen()}")


def choices(screen: str, prompt: str) -> list[str]:
    """The numbered choices listed under ``prompt`` on the latest screen, in words."""
    below = latest(screen).split(prompt, 1)[1].split("number = choose", 1)[0].splitlines()[1:]
    numbered = (re.match(r"^\s*\d+\. (.*)$", line) for line in below)
    return [m.group(1).strip() for m in numbered if m]


def test_meeple_play_chooses_a_clash_move_in_steps_only_legal_choices_in_words(stack: Stack,
                                                                              pane_factory: list[Pane]) -> None:
    """The terminal chooser is the page's: a move's parts one step at a time, each step listing exactly the values
    the legal moves still have (checked against the API's legal moves for this seat), in words, with a trail, a
    step back, and the whole move in words before it is played."""
    import httpx

    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--option", "first_player=0",
                 "--url", stack.url])
    pane_factory.append(pane)
    screen = asking(pane, "On which field?")
    match_id, _, token = screen.split("meeple play --resume ", 1)[1].split()[:3]
    legal = httpx.get(f"{stack.url}/v1/matches/{match_id}/legal-moves",
                      headers={"Authorization": f"Bearer {token}"}).json()["moves"]
    # The first move of a game: Mustafa from the start spot is the only tile, so the trail holds it already.
    assert "your move so far: Place a tile > M0 " in screen and "On which field?" in screen, screen
    fields = choices(screen, "On which field?")
    assert len(fields) == len({json.dumps(m["field"]) for m in legal}) > 1, fields
    assert all(f.startswith("the ") and f.endswith(" field") for f in fields), fields  # words, not [1,1]
    assert "[" not in "".join(fields)
    pane.keys("1")
    screen = asking(pane, "Which side does it support?")
    chosen = fields[0]
    assert f"> {chosen}" in screen
    sides = choices(screen, "Which side does it support?")
    assert sides == ["supporting Blue (you)", "supporting Green (your opponent)"], sides
    pane.keys("b")  # one step back: the fields again
    screen = asking(pane, "On which field?")
    assert choices(screen, "On which field?") == fields and f"> {chosen}" not in screen
    pane.keys("1")
    asking(pane, "Which side does it support?")
    pane.keys("2")
    asking(pane, "> supporting Green (your opponent)")  # the new screen, before any other key is typed
    screen = play_ones_until(pane, "the move: ")
    confirm = screen[screen.rindex("the move: "):].splitlines()[0]
    assert "M0 " in confirm and chosen in confirm and "supporting Green (your opponent)" in confirm, confirm
    assert "1. play this move" in screen
    pane.keys("1")
    screen = pane.wait_for("placed M0 Mustafa", timeout=30)  # the log says it, in the server's words
    line = next(x for x in latest(screen).splitlines() if "placed M0 Mustafa" in x)
    assert "You (Blue) placed M0 Mustafa" in line and "supporting Green" in line, line


def test_meeple_play_clash_vs_a_bot_to_the_end_with_a_hint_under_tmux(stack: Stack, pane_factory: list[Pane]) -> None:
    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--url", stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    assert "CLASH" in screen and "row 1" in screen and "  1. " in screen, screen  # board, numbered choices
    assert "you are seat 0: Blue (McWorld)" in screen and re.search(r"neutral zone: N\d\d [A-Z]", screen), screen
    assert "what happened:" in screen and "You joined the match." in screen  # the log in the server's words
    pane.keys("h")  # the hint walks the chooser to the suggested move, shown whole, in words
    screen = pane.wait_for("hint: ")
    assert "hint: the normal bot would play " in screen, screen  # which level gave it
    assert "the move: " in screen and "1. play this move" in screen, screen
    screen = play_ones_until(pane, "GAME OVER", limit=600)
    assert "GAME OVER: you " in screen and "winners: seat" in screen
    result = screen[screen.index("GAME OVER"):]
    assert "why it ended: all nine fields hold face-up tiles" in result or "why it ended: " in result
    assert "Seat 0: Blue (McWorld)" in result and "game 1: " in result  # the breakdown, in words
    assert "[" not in result  # no Python lists
    assert "meeple play --resume " in screen  # the resume command stays on screen to the end
    time.sleep(1)
    assert "GAME OVER" in pane.screen()  # the final screen is kept after the program ends


def test_meeple_play_keeps_the_resume_token_on_screen_and_q_says_how_to_resume(stack: Stack,
                                                                             pane_factory: list[Pane]) -> None:
    pane = Pane([MEEPLE, "play", "fierce-women", "--vs", "easy", "--url", stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    hint = next(line for line in screen.splitlines() if "meeple play --resume" in line)
    assert "--token " in hint  # on the match screen, not only in a line the first redraw clears
    screen = play_ones_until(pane, "You drew W")  # the move, in the engine's words
    assert "meeple play --resume" in screen and "what happened:" in screen
    pane.keys("q")
    screen = pane.wait_for("bye:")
    after_bye = screen[screen.index("bye:"):]
    assert hint.strip() in after_bye  # the exact command to come back


@pytest.mark.parametrize(("game", "players", "marks", "named"), [
    ("sideboards", "1", ("SIDEBOARDS", "dresser", "your hand", "start", "you are seat 0"),
     r"your hand: S\d\d\((\w+/\w+ ){4}\w+/\w+\)"),  # each card with its 5 drawers: colour/handle
    ("fierce-women", "2", ("FIERCE WOMEN", "left pile (", "seat 0 (you)", "seat 2 is the automa"),
     r"your hand: W\d\d [A-Z]\w+"),
    ("they-who-were-8", "4", ("THEY WHO WERE 8", "team 0 (seats 0+2)", "your hand", "gods:",
                              "you are seat 0, team 0 with seat 2"), r"your hand: A\d\d [A-Z]\w+"),
])
def test_meeple_play_renders_each_games_view_with_names_and_numbered_choices(
        stack: Stack, pane_factory: list[Pane], game: str, players: str, marks: tuple[str, ...], named: str) -> None:
    """The board in words: who you are in the game's terms, and every card named from the catalogue."""
    pane = Pane([MEEPLE, "play", game, "--players", players, "--vs", "easy", "--url", stack.url])
    pane_factory.append(pane)
    screen = latest(pane.wait_for("your move>"))
    for mark in marks:
        assert mark in screen, screen
    assert re.search(named, screen), screen
    assert "gods: G1 " not in screen or re.search(r"gods: G1 [A-Z]\w+\(s", screen), screen
    assert "    1. " in screen or "  1. " in screen
    version = int(screen.split(" version ", 1)[1].split()[0])
    later = [f"version {v}" for v in range(version + 1, version + 12)]
    play_ones_until(pane, *later)  # a move, chosen step by step, is accepted and the screen comes back


def test_two_friends_play_clash_in_two_terminals_with_an_invite(stack: Stack, pane_factory: list[Pane]) -> None:
    host = Pane([MEEPLE, "play", "clash", "--vs", "humans", "--option", 'match="single"', "--url", stack.url])
    pane_factory.append(host)
    screen = host.wait_for("meeple play --join ")
    match_id = screen.split("meeple play --join ", 1)[1].split()[0]
    guest = Pane([MEEPLE, "play", "--join", match_id, "--url", stack.url])
    pane_factory.append(guest)
    guest.wait_for(f"match {match_id}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        screens = [pane.screen() for pane in (host, guest)]
        if all("GAME OVER" in s for s in screens):
            break
        for pane, screen in zip((host, guest), screens, strict=True):
            if screen.rstrip().endswith("your move>"):
                pane.keys("1")
                pane.wait_until_changed(screen, "1", timeout=10)
        time.sleep(0.05)
    else:
        raise AssertionError(f"no end:\n{host.screen()}\n----\n{guest.screen()}")
    assert "you won" in host.screen() or "you won" in guest.screen() or "you share the win" in host.screen()


def moves_counted(stack: Stack) -> tuple[float, float]:
    """(REST ``POST …/moves``, socket ``move`` messages) the gateway has answered, from its /metrics."""
    import httpx

    rest = sock = 0.0
    for labels, value in re.findall(r"^meeple_gateway_request_seconds_count\{([^}]*)\} (\S+)$",
                                    httpx.get(f"{stack.url}/metrics").text, re.M):
        if 'route="/v1/matches/<match_id>/moves"' in labels and 'method="POST"' in labels:
            rest += float(value)
        elif 'route="ws:move"' in labels:
            sock += float(value)
    return rest, sock


def test_meeple_play_sends_its_moves_on_the_open_socket_not_as_rest_posts(ws_stack: Stack,
                                                                        pane_factory: list[Pane]) -> None:
    """Where the gateway holds WebSockets, every move of a whole game goes over the match's socket (issue 47):
    the gateway answers no REST move meanwhile (its own request counts say so)."""
    rest_before, sock_before = moves_counted(ws_stack)
    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--url", ws_stack.url])
    pane_factory.append(pane)
    screen = play_ones_until(pane, "GAME OVER", limit=600)
    assert "GAME OVER: you " in screen
    rest, sock = moves_counted(ws_stack)
    assert rest == rest_before, "a move went over REST while the socket was open"
    assert sock - sock_before >= 4  # this seat's moves of a whole CLASH game


@pytest.fixture()
def timekeeper(stack: Stack) -> Iterator[None]:
    """The deployment's timekeeper on the stack's Redis: it acts on the seats' deadlines (timeouts)."""
    import threading

    from services.timekeeper.keeper import Timekeeper

    keeper = Timekeeper(stack.redis_url, lease_s=2.0, poll_s=0.05)
    thread = threading.Thread(target=keeper.run, daemon=True)
    thread.start()
    yield
    keeper.stopping.set()
    thread.join(15)


def test_meeple_play_takes_the_seat_back_after_a_timeout_and_the_result_says_a_bot_played(
        stack: Stack, pane_factory: list[Pane], timekeeper: None) -> None:
    import httpx

    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--option", "first_player=0",
                 "--clock", "per_move:1.5", "--url", stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    match_id = screen.split("meeple play --resume ", 1)[1].split()[0]

    def log() -> list[tuple[str, int | None]]:
        entries = httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json()["log"]
        return [(e["kind"], e.get("seat")) for e in entries]

    deadline = time.monotonic() + 30
    while ("timeout", 0) not in log() and time.monotonic() < deadline:
        time.sleep(0.1)
    pane.keys("r")  # the screen, read again, says a bot took the seat and offers it back
    pane.wait_for("t = take my seat back")
    pane.keys("t")
    pane.wait_for("your seat is yours again")
    assert ("reclaimed", 0) in log()
    for _ in range(400):  # nobody moves for seat 0: its time runs out again and the bot plays on to the end
        screen = pane.wait_for("your move>", "your choice>", "GAME OVER")
        if "GAME OVER" in screen:
            break
        pane.keys("")
        pane.wait_until_changed(screen, "", timeout=10)
    screen = pane.wait_for("GAME OVER")
    assert "a bot played part of this game for you: your time ran out" in screen, screen


def test_meeple_play_refuses_a_clock_it_cannot_read(stack: Stack) -> None:
    done = subprocess.run([MEEPLE, "play", "clash", "--clock", "blitz", "--url", stack.url], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "--clock takes per_move:SECONDS or fischer:BASE:INCREMENT" in done.stderr


NAMES = "(Art|Culture|Feminism|Human rights|Politics|Science)"
CATEGORY = rf"\({NAMES}(, {NAMES})*\)"


def test_meeple_play_fierce_women_names_categories_numbers_columns_from_1_and_wraps_at_words(
        stack: Stack, pane_factory: list[Pane]) -> None:
    """Issue 50's terminal items: each woman with her categories on the piles, in the hand and in the chooser;
    columns numbered from 1 on the board as in the log; the notation explained in words; the log wrapped at word
    boundaries in a narrow terminal (a word is never cut in two)."""
    import httpx

    pane = Pane([MEEPLE, "play", "fierce-women", "--vs", "easy", "--url", stack.url], width=90)
    pane_factory.append(pane)
    screen = asking(pane, "From which pile?")
    assert all(len(line) < 90 for line in screen.splitlines())  # every line wrapped before the edge, at a word
    screen = " ".join(screen.split())  # what is on the screen, whatever the wrapping
    match_id, _, token = screen.split("meeple play --resume ", 1)[1].split()[:3]
    assert re.search(r"left pile \(\d+ cards\): W\d\d [^(]+" + CATEGORY, screen), screen
    assert re.search(r"your hand: W\d\d [^(]+" + CATEGORY, screen), screen
    assert re.search(r"\d+\. the (left|middle|right) pile: W\d\d [^(]+" + CATEGORY, screen), screen  # the chooser
    for _ in range(40):  # until a woman is on this seat's table
        if "column 1: W" in latest(pane.screen()):
            break
        before = pane.wait_for("your move>")
        pane.keys("1")
        pane.wait_until_changed(before, "1", timeout=15)
    screen = asking(pane, "what happened:")  # a whole screen, drawn to its prompt
    log_lines = screen.split("what happened:", 1)[1].split("\n\n", 1)[0].splitlines()
    screen = " ".join(screen.split())
    assert "column 1: W" in screen and "column 0" not in screen, screen
    assert re.search(r"column 1: .*\((collects \w|no single category)", screen), screen  # words, not [?; a/b]
    assert "[?;" not in screen and "known:" not in screen and "human_rights" not in screen
    log = httpx.get(f"{stack.url}/v1/matches/{match_id}/replay",
                    headers={"Authorization": f"Bearer {token}"}).json()["log"]
    placed = [e["text"] for e in log if "column" in (e.get("text") or "") and e.get("seat") == 0]
    assert placed and all("column 0" not in t for t in placed), placed  # the log counts from 1 as well
    shown = screen.split("what happened:", 1)[1]
    drawn = [e for e in log if f" v{e['version']} " in f" {shown} "][-6:]
    assert len(drawn) >= 4, shown
    for entry in drawn:  # every word of the entries on screen, whole, whatever the width
        assert " ".join(entry["text"].split()) in shown, (entry["text"], shown)
    assert log_lines and all(len(line) < 90 for line in log_lines), log_lines  # wrapped before the edge


def test_meeple_play_starts_without_loading_the_servers_commands() -> None:
    """Issue 50: the first screen took about 10 s on a busy machine; ``meeple play`` imported every server
    command (gateway, workers, load tests) to build its parser before it drew anything."""
    probe = ("import sys\nfrom services.cli import main\ntry:\n    main(['play', '--help'])\nexcept SystemExit:\n"
             "    pass\nprint(sorted(m for m in ('services.gateway', 'services.bots.worker', 'loadtests.runner', "
             "'tooling.stack') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "usage: meeple play" in done.stdout and done.stdout.strip().endswith("[]"), done.stdout[-400:]


def test_meeple_play_resigns_after_a_y_and_the_result_says_why(stack: Stack, pane_factory: list[Pane]) -> None:
    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--option", "first_player=0",
                 "--url", stack.url])
    pane_factory.append(pane)
    before = pane.wait_for("your move>")
    pane.keys("R")
    pane.wait_until_changed(before, "R")
    before = pane.wait_for("resign this match? your side loses. y = yes")
    pane.keys("n")  # anything but y: nothing happens
    pane.wait_until_changed(before, "n")
    assert "GAME OVER" not in pane.screen()
    pane.keys("R")
    pane.wait_for("resign this match?")
    pane.keys("y")
    screen = pane.wait_for("GAME OVER")
    result = screen[screen.index("GAME OVER"):]
    assert "GAME OVER: you lost. winners: seat 1" in result
    assert "why it ended: You resigned, so the match is over." in result, result
