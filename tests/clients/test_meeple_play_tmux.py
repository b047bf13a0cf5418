"""``meeple play`` like a person at a terminal: a tmux pane, keys typed with send-keys, the screen read back."""

from __future__ import annotations

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

    def __init__(self, command: list[str]) -> None:
        self.socket = f"meeple-test-{uuid.uuid4().hex[:8]}"
        self.tmux(["new-session", "-d", "-x", "220", "-y", "60", "-s", "play", *command])
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


def test_meeple_play_clash_vs_a_bot_to_the_end_with_a_hint_under_tmux(stack: Stack, pane_factory: list[Pane]) -> None:
    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--url", stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    assert "CLASH" in screen and "row 1" in screen and "  1. place " in screen, screen  # board, numbered moves
    assert "what happened:" in screen and "You joined the match." in screen  # the log in the server's words
    pane.keys("h")
    assert "hint: " in pane.wait_for("hint: ")
    for _ in range(200):
        screen = pane.wait_for("your move>", "GAME OVER")
        if "GAME OVER" in screen:
            break
        pane.keys("1")
        time.sleep(0.05)
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
    pane.keys("1")
    screen = pane.wait_for("You drew W")  # the move, in the engine's words
    assert "meeple play --resume" in screen and "what happened:" in screen
    pane.keys("q")
    screen = pane.wait_for("bye:")
    after_bye = screen[screen.index("bye:"):]
    assert hint.strip() in after_bye  # the exact command to come back


@pytest.mark.parametrize(("game", "players", "marks"), [
    ("sideboards", "1", ("SIDEBOARDS", "dresser", "your hand", "start")),
    ("fierce-women", "2", ("FIERCE WOMEN", "piles", "seat 0: hand")),
    ("they-who-were-8", "4", ("THEY WHO WERE 8", "team 0 (seats 0+2)", "your hand", "gods:")),
])
def test_meeple_play_renders_each_games_view_with_numbered_moves(stack: Stack, pane_factory: list[Pane], game: str,
                                                                 players: str, marks: tuple[str, ...]) -> None:
    pane = Pane([MEEPLE, "play", game, "--players", players, "--vs", "easy", "--url", stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    for mark in marks:
        assert mark in screen, screen
    assert "    1. " in screen or "  1. " in screen
    pane.keys("1")  # a move is accepted and the screen comes back
    pane.wait_for("version 1", "version 2", "version 3", "version 4", "version 5")


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
