"""Issue 51 in ``meeple play``, under tmux as a person at a terminal: chat lines printed as they arrive (while
one waits for the others and while one is asked for a move), ``c TEXT`` and ``c N`` (a quick-chat preset) to say
something, a watch link's token followed read-only, and a party queued with ``--party`` whose friend takes the seat
with the line printed for them."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import httpx

from tests.gateway.test_backends import watched_tenant_clash

from .conftest import Stack
from .test_meeple_play_tmux import MEEPLE, Pane, latest, pane_factory  # noqa: F401  (pane_factory: a fixture)


def test_chat_in_two_terminals_both_ways_as_it_arrives_with_a_preset_by_number(
        stack: Stack, pane_factory: list[Pane]) -> None:  # noqa: F811
    presets = httpx.get(f"{stack.url}/v1/games/clash").json()["chat_presets"]
    host = Pane([MEEPLE, "play", "clash", "--vs", "humans", "--option", 'match="single"', "--option", "first_player=0",
                 "--url", stack.url])
    pane_factory.append(host)
    screen = host.wait_for("meeple play --join ")
    match_id = screen.split("meeple play --join ", 1)[1].split()[0]
    guest = Pane([MEEPLE, "play", "--join", match_id, "--url", stack.url])
    pane_factory.append(guest)
    guest.wait_for("waiting for seat 0 ...")  # seat 0 moves first: the guest waits, and may still type
    host.wait_for("your move>")
    guest.keys("c hello from seat one <b>G5</b>")
    host.wait_for("chat  seat 1: hello from seat one <b>G5</b>")  # printed at once, under the host's prompt
    until(host, lambda screen: latest(screen).rstrip().endswith(
        "chat  seat 1: hello from seat one <b>G5</b>\nyour move>"))  # and the prompt again under it
    guest.wait_for("chat  you: hello from seat one")
    host.keys("c 1")  # the game's first quick-chat preset
    guest.wait_for(f"chat  seat 0: {presets[0]['text']}")
    said = httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json()["chat"]
    assert [(m["seat"], m["preset"]) for m in said] == [(1, None), (0, presets[0]["id"])]
    host.keys("r")  # a screen drawn again keeps the last lines under the log
    until(host, lambda screen: "chat (c TEXT = say it):" in latest(screen) and all(
        line in latest(screen).split("chat (c TEXT = say it):", 1)[1]
        for line in ("seat 1: hello from seat one <b>G5</b>", f"you: {presets[0]['text']}")))
    host.keys("1")  # the game goes on: a chat changes no version, the move is taken
    screen = host.wait_for("your move>", "the move: ")
    assert "refused" not in latest(screen)


def test_meeple_play_follows_a_tenants_match_read_only_with_a_watch_token(stack: Stack,
                                                                        pane_factory: list[Pane]) -> None:  # noqa: F811
    _, match_id, seat_token, watch = watched_tenant_clash(stack.url, stack.redis_url, "tmux-watch")
    pane = Pane([MEEPLE, "play", "--watch", match_id, "--token", watch["token"], "--url", stack.url])
    pane_factory.append(pane)
    screen = latest(pane.wait_for("watching (read-only)"))
    assert "you are watching" in screen and "CLASH" in screen and "your move>" not in screen
    version = int(screen.split(" version ", 1)[1].split()[0])
    legal = httpx.get(f"{stack.url}/v1/matches/{match_id}/legal-moves",
                      headers={"Authorization": f"Bearer {seat_token}"}).json()["moves"]
    moved = httpx.post(f"{stack.url}/v1/matches/{match_id}/moves", json={"move": legal[0], "version": version},
                       headers={"Authorization": f"Bearer {seat_token}"})
    assert moved.status_code == 200, moved.text
    screen = pane.wait_for(f"version {version + 1} ", f"version {version + 2} ")  # it follows the match live
    pane.keys("1")  # a move: not from here
    pane.wait_for("read-only: c TEXT = chat")
    pane.keys("q")
    screen = pane.wait_for("bye:")
    assert f"meeple play --watch {match_id} --token {watch['token']}" in screen[screen.index("bye:"):]


def test_a_party_queued_in_the_terminal_prints_the_friends_line_and_the_friend_takes_the_seat_on_the_team(
        stack: Stack, pane_factory: list[Pane]) -> None:  # noqa: F811
    host = Pane([MEEPLE, "play", "they-who-were-8", "--party", "Ann", "--option", "max_rounds=4",
                 "--url", stack.url])
    pane_factory.append(host)
    screen = host.wait_for("meeple play --resume ", timeout=60)
    line = next(x for x in screen.splitlines() if x.strip().startswith("Ann (seat "))
    friend_seat = int(line.split("(seat ", 1)[1].split(",")[0].split(")")[0])
    command = line.split(": ", 1)[1].split()
    assert command[:3] == ["meeple", "play", "--resume"] and command[4] == "--token"
    match_id, token = command[3], command[5]
    deadline = time.monotonic() + 30  # a whole match screen: the party's lines stay under the log on it
    while not ("you are seat " in (screen := latest(host.screen())) and "or in a browser:" in
               screen.split("you are seat ", 1)[1]) and time.monotonic() < deadline:
        time.sleep(0.1)
    host_seat = int(screen.split("you are seat ", 1)[1].split(",")[0])
    assert host_seat % 2 == friend_seat % 2 and f"team {friend_seat % 2}" in line  # one team: [[0, 2], [1, 3]]
    assert f"{stack.url}/play#/m/{match_id}?t={token}" in screen.replace("\n", "")  # the page's link as well
    friend = Pane([MEEPLE, "play", "--resume", match_id, "--token", token, "--url", stack.url])
    pane_factory.append(friend)
    screen = latest(friend.wait_for(f"you are seat {friend_seat}, team {host_seat % 2} with seat {host_seat}"))
    seats = httpx.get(f"{stack.url}/v1/matches/{match_id}").json()["seats"]
    assert [s["kind"] for s in seats].count("bot") == 2


def until(pane: Pane, seen: Callable[[str], bool], timeout: float = 30.0) -> str:
    """The screen once ``seen(screen)`` holds (a screen is drawn in several writes: wait for all of it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        screen = pane.screen()
        if seen(screen):
            return screen
        time.sleep(0.1)
    raise AssertionError(f"not seen:\n{pane.screen()}")


def rest_chats(stack: Stack) -> float:
    """REST ``POST …/chat`` the gateway has answered, from its /metrics."""
    return sum(float(value) for labels, value in re.findall(
        r"^meeple_gateway_request_seconds_count\{([^}]*)\} (\S+)$", httpx.get(f"{stack.url}/metrics").text, re.M)
        if 'route="/v1/matches/<match_id>/chat"' in labels and 'method="POST"' in labels)


def test_meeple_play_sends_its_chat_on_the_open_socket_as_its_moves(ws_stack: Stack,
                                                                  pane_factory: list[Pane]) -> None:  # noqa: F811
    before = rest_chats(ws_stack)
    pane = Pane([MEEPLE, "play", "clash", "--vs", "easy", "--option", 'match="single"', "--option", "first_player=0",
                 "--url", ws_stack.url])
    pane_factory.append(pane)
    screen = pane.wait_for("your move>")
    match_id = screen.split("meeple play --resume ", 1)[1].split()[0]
    pane.keys("c over the socket")
    pane.wait_for("chat  you: over the socket")
    assert [m["text"] for m in httpx.get(f"{ws_stack.url}/v1/matches/{match_id}/replay").json()["chat"]] == [
        "over the socket"]
    assert rest_chats(ws_stack) == before  # the socket carried it, not a REST POST
