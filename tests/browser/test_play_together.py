"""Issue 51 on the play page, in a real headless Chromium against the whole stack: a party queued from the lobby
whose friends take their seats from the links the page makes, the match's chat (both ways, the game's quick-chat
presets, plain text never read as HTML, over the open socket, a mute this browser remembers, a spectator who reads
it and may post only where the match allows it), and watch links (a tenant's watch token opened read-only; the
copy-watch-link button of an anonymous match)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx

from tests.gateway.test_backends import new_key, watched_tenant_clash

from .conftest import Stack
from .test_play_board import M0, move, two_people_clash

SHOTS = os.environ.get("MEEPLE_SCREENSHOTS")  # a folder: save the screenshots of docs/screenshots there


def seated(new_page: Any, match_id: str, token: str, seat: int) -> Any:
    """A page that holds ``seat`` of the match (its token in this browser's storage), its socket ready."""
    page = new_page()
    page.goto("/play")
    page.evaluate("([id, seat, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat, token, "
                  "game: 'clash'}))", [match_id, seat, token])
    page.goto(f"/play#/m/{match_id}")
    page.wait_for_selector("#match-id")
    page.wait_for_function("document.body.dataset.socket === 'ready'")
    return page


def chat_lines(page: Any, visible_only: bool = False) -> list[str]:
    return page.eval_on_selector_all("#chat-log li", f"els => els.filter(e => {str(not visible_only).lower()} || "
                                                     "!e.hidden).map(e => e.textContent)")


def wait_for_line(page: Any, text: str) -> None:
    page.wait_for_function("t => [...document.querySelectorAll('#chat-log li')].some(li => li.textContent.includes(t))",
                           arg=text, timeout=20_000)


def rest_chat_posts(page: Any) -> list[str]:
    """Every REST chat POST the page sends from now on (none while its socket is open)."""
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" and r.url.endswith("/chat") else None)
    return posts


def test_chat_goes_both_ways_as_plain_text_with_presets_over_the_socket_and_a_mute_this_browser_keeps(
        new_page: Any, stack: Stack) -> None:
    match_id, tokens = two_people_clash(stack)
    presets = httpx.get(f"{stack.url}/v1/games/clash").json()["chat_presets"]
    assert presets
    host, guest = seated(new_page, match_id, tokens[0], 0), seated(new_page, match_id, tokens[1], 1)
    host_posts, guest_posts = rest_chat_posts(host), rest_chat_posts(guest)
    version = host.inner_text("#version")
    text = "<b>bold?</b> <img src=x onerror=alert(1)> I hold G5 & M0"
    host.fill("#chat-text", text)
    host.press("#chat-text", "Enter")
    wait_for_line(guest, "bold?")
    assert chat_lines(guest)[-1] == f"seat 0 (Blue): {text}"  # as typed: the tags are words, not elements
    assert guest.eval_on_selector_all("#chat-log b:not(.who), #chat-log img", "els => els.length") == 0
    wait_for_line(host, "bold?")
    assert chat_lines(host) == [f"you (Blue): {text}"]  # once, though it came back over the socket too
    assert host.input_value("#chat-text") == ""
    # a preset from the game's catalogue, the other way
    assert guest.eval_on_selector_all("button.chat-preset", "els => els.map(e => e.textContent)") == [
        p["text"] for p in presets]
    guest.locator("button.chat-preset").first.click()
    wait_for_line(host, presets[0]["text"])
    assert chat_lines(host)[-1] == f"seat 1 (Green): {presets[0]['text']}"
    assert host_posts == [] and guest_posts == []  # both went over the open socket, as moves do
    assert host.inner_text("#version") == version  # chat is no move: the version stays
    said = httpx.get(f"{stack.url}/v1/matches/{match_id}/replay").json()["chat"]
    assert [(m["seat"], m["text"], m["preset"]) for m in said] == [(0, text, None),
                                                                   (1, presets[0]["text"], presets[0]["id"])]
    # the mute hides what the others say (not one's own), and this browser remembers it
    host.check("#chat-mute")
    guest.fill("#chat-text", "are you still there?")
    guest.click("#chat-send")
    host.wait_for_function("document.querySelectorAll('#chat-log li').length === 3")
    assert chat_lines(host, visible_only=True) == [f"you (Blue): {text}"]
    assert "2 messages hidden" in host.inner_text("#chat-muted")
    if SHOTS:
        guest.locator("#move-panel").screenshot(path=str(Path(SHOTS) / "chat.png"))
    host.reload()
    host.wait_for_selector("#chat-log li")
    host.wait_for_function("document.querySelectorAll('#chat-log li').length === 3")  # the chat so far, from the replay
    assert host.is_checked("#chat-mute") and len(chat_lines(host, visible_only=True)) == 1
    host.uncheck("#chat-mute")
    assert chat_lines(host, visible_only=True)[-1] == "seat 1 (Green): are you still there?"
    assert not host.is_visible("#chat-muted")
    # the game goes on meanwhile: a move after the chat is taken at the same version
    move(stack, match_id, tokens[0], M0)
    host.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    assert not host.is_visible("#error") and not guest.is_visible("#error")


def test_a_spectator_reads_the_chat_and_posts_only_where_the_match_allows_spectators_to(
        new_page: Any, stack: Stack) -> None:
    match_id, tokens = two_people_clash(stack)
    watcher = new_page()
    watcher.goto(f"/play#/m/{match_id}")
    watcher.wait_for_selector("#chat-log", state="attached")
    assert not watcher.is_visible("#chat-form") and "cannot chat" in watcher.inner_text("#chat-status")
    said = httpx.post(f"{stack.url}/v1/matches/{match_id}/chat", json={"text": "hello, watchers"},
                      headers={"Authorization": f"Bearer {tokens[1]}"})
    assert said.status_code == 201, said.text
    wait_for_line(watcher, "hello, watchers")
    assert chat_lines(watcher) == ["seat 1 (Green): hello, watchers"]

    made = httpx.post(f"{stack.url}/v1/matches", json={"game": "clash", "players": 2, "join": True, "seed": 3,
                                                      "spectator_chat": True, "options": {"match": "single"}}).json()
    assert made.get("spectator_chat") is True or httpx.get(
        f"{stack.url}/v1/matches/{made['id']}").json()["spectator_chat"] is True
    open_seat = new_page()
    open_seat.goto("/play")
    open_seat.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token}))",
                       [made["id"], made["token"]])
    open_seat.goto(f"/play#/m/{made['id']}")
    open_seat.wait_for_selector("#chat-log", state="attached")
    fan = new_page()
    fan.goto(f"/play#/m/{made['id']}")
    fan.wait_for_selector("#chat-form")
    fan.fill("#chat-text", "go blue!")
    fan.press("#chat-text", "Enter")
    wait_for_line(open_seat, "go blue!")
    assert chat_lines(open_seat) == ["a spectator: go blue!"]


def test_a_party_queued_from_the_lobby_seats_a_friend_on_the_hosts_team_through_the_link_the_page_makes(
        new_page: Any, stack: Stack) -> None:
    host = new_page()
    host.context.grant_permissions(["clipboard-read", "clipboard-write"])
    host.goto("/play")
    host.select_option("#game", "they-who-were-8")
    host.fill("#opt-max_rounds", "4")
    host.fill("#party-names", "Ann")
    host.click("#party-queue")
    host.wait_for_selector("#party", timeout=60_000)  # matched (bots fill the other team), on the match page
    match_id = host.inner_text("#match-id")
    label = host.inner_text("label[for='party-link-0']")
    link = host.input_value("#party-link-0")
    assert link.startswith(f"{stack.url}/play#/m/{match_id}?t=") and label.startswith("Ann · seat ")
    host_seat = int(host.evaluate(f"JSON.parse(localStorage.getItem('meeple.seat.{match_id}')).seat"))
    friend_seat = int(label.split("seat ")[1].split()[0])
    assert f"team {friend_seat % 2}" in label and friend_seat % 2 == host_seat % 2  # one team: [[0, 2], [1, 3]]
    assert f"You are seat {host_seat}, team {host_seat % 2} with seat {friend_seat}" in host.inner_text("#you")
    host.click("#copy-party-0")
    host.wait_for_function("document.getElementById('party-copied-0')?.textContent === 'Copied!'")
    assert host.evaluate("navigator.clipboard.readText()") == link
    if SHOTS:
        host.locator("#party").screenshot(path=str(Path(SHOTS) / "party.png"))

    friend = new_page({"width": 390, "height": 844})  # a phone, with the link its owner was sent
    friend.goto(link)
    friend.wait_for_selector("#match-id")
    token = link.split("?t=")[1]
    assert friend.url.endswith(f"#/m/{match_id}") and token not in friend.url  # kept, then out of the address bar
    assert f"You are seat {friend_seat}, team {host_seat % 2} with seat {host_seat}" in friend.inner_text("#you")
    assert friend.evaluate(f"JSON.parse(localStorage.getItem('meeple.seat.{match_id}'))")["token"] == token
    friend.reload()  # the seat stays this browser's
    friend.wait_for_selector("#match-id")
    assert f"You are seat {friend_seat}" in friend.inner_text("#you")
    assert friend.query_selector("#party") is None  # the links are the host's to send
    seats = httpx.get(f"{stack.url}/v1/matches/{match_id}").json()["seats"]
    assert [s["kind"] for s in seats].count("bot") == 2 and seats[friend_seat]["kind"] == "human"


def test_a_watch_link_opens_a_tenants_match_read_only_and_its_button_copies_it(new_page: Any, stack: Stack) -> None:
    headers, match_id, seat_token, watch = watched_tenant_clash(stack.url, stack.redis_url, "browser-watch")

    private = new_page()  # without the link, a tenant's match is not there to read
    private.goto(f"/play#/m/{match_id}")
    private.wait_for_selector("#error:not([hidden])")
    assert "match_not_found" in private.inner_text("#error")

    viewer = new_page()
    viewer.context.grant_permissions(["clipboard-read", "clipboard-write"])
    viewer.goto(f"/play#/w/{match_id}?t={watch['token']}")
    viewer.wait_for_selector("#match-id")
    assert viewer.url.endswith(f"#/w/{match_id}") and watch["token"] not in viewer.url
    assert "Watching with a watch link" in viewer.inner_text("#spectating")
    assert viewer.inner_text("#you") == "You are watching." and viewer.query_selector("button.choice") is None
    assert not viewer.is_visible("#chat-form")  # spectators' chat is off in this match
    viewer.click("#watch-link")
    viewer.wait_for_function("document.getElementById('watch-copied')?.textContent === 'Copied!'")
    assert viewer.evaluate("navigator.clipboard.readText()") == f"{stack.url}/play#/w/{match_id}?t={watch['token']}"
    version = viewer.inner_text("#version")
    auth = {"Authorization": f"Bearer {seat_token}"}
    at = httpx.get(f"{stack.url}/v1/matches/{match_id}", headers=auth).json()["version"]
    moved = httpx.post(f"{stack.url}/v1/matches/{match_id}/moves", json={"move": M0, "version": at}, headers=auth)
    assert moved.status_code == 200, moved.text  # the board follows live
    viewer.wait_for_function(f"document.getElementById('version').textContent !== '{version}'")
    assert "placed M0" in viewer.inner_text("#log")
    assert not viewer.is_visible("#error")

    revoked = httpx.delete(f"{stack.url}/v1/watch-tokens/{watch['id']}", headers=headers)
    assert revoked.status_code == 204, revoked.text
    viewer.wait_for_selector("#error:not([hidden])")  # the open socket ends at once, and the page says why
    assert "watch_token_revoked" in viewer.inner_text("#error")
    viewer.reload()  # the link is dead now: the page says so
    viewer.wait_for_selector("#error:not([hidden])")
    assert "watch_token_revoked" in viewer.inner_text("#error")


def test_an_anonymous_matchs_copy_watch_link_button_gives_the_spectators_address(new_page: Any, stack: Stack) -> None:
    match_id, tokens = two_people_clash(stack)
    host = seated(new_page, match_id, tokens[0], 0)
    host.context.grant_permissions(["clipboard-read", "clipboard-write"])
    host.click("#watch-link")
    host.wait_for_function("document.getElementById('watch-copied')?.textContent === 'Copied!'")
    link = host.evaluate("navigator.clipboard.readText()")
    assert link == f"{stack.url}/play#/m/{match_id}"
    watcher = new_page()
    watcher.goto(link)
    watcher.wait_for_selector("#spectating")
    assert watcher.inner_text("#you") == "You are watching."
    assert json.loads(watcher.evaluate("JSON.stringify(localStorage)")).get(f"meeple.seat.{match_id}") is None


def test_without_a_websocket_the_chat_comes_with_the_long_polls_and_goes_over_rest(new_page: Any,
                                                                                   plain_stack: Stack) -> None:
    match_id, tokens = two_people_clash(plain_stack)
    page = new_page(base_url=plain_stack.url)  # werkzeug's server: /ws answers 501
    page.goto("/play")
    page.evaluate("([id, token]) => localStorage.setItem(`meeple.seat.${id}`, JSON.stringify({seat: 0, token}))",
                  [match_id, tokens[0]])
    posts = rest_chat_posts(page)
    page.goto(f"/play#/m/{match_id}")
    page.wait_for_function("document.body.dataset.live === 'long-poll'")
    said = httpx.post(f"{plain_stack.url}/v1/matches/{match_id}/chat", json={"text": "can you hear me?"},
                      headers={"Authorization": f"Bearer {tokens[1]}"})
    assert said.status_code == 201, said.text
    wait_for_line(page, "can you hear me?")  # a chat message wakes the long-poll
    page.fill("#chat-text", "loud and clear")
    page.press("#chat-text", "Enter")
    wait_for_line(page, "loud and clear")
    assert len(posts) == 1  # no socket: REST
    assert [m["text"] for m in httpx.get(f"{plain_stack.url}/v1/matches/{match_id}/replay").json()["chat"]] == [
        "can you hear me?", "loud and clear"]


def test_a_message_the_tenant_redacts_is_replaced_on_the_page(new_page: Any, stack: Stack) -> None:
    key = new_key(stack.redis_url, "browser-redact")["key"]
    made = httpx.post(f"{stack.url}/v1/matches", headers={"X-API-Key": key}, json={
        "game": "clash", "players": 2, "join": True, "seed": 5, "options": {"match": "single"},
        "seats": [{"kind": "human"}, {"kind": "human"}]}).json()
    joined = httpx.post(f"{stack.url}/v1/matches/{made['id']}/join", headers={"X-API-Key": key}, json={}).json()
    page = seated(new_page, made["id"], made["token"], 0)
    said = httpx.post(f"{stack.url}/v1/matches/{made['id']}/chat", json={"text": "something rude"},
                      headers={"Authorization": f"Bearer {joined['token']}"}).json()
    wait_for_line(page, "something rude")
    gone = httpx.delete(f"{stack.url}/v1/matches/{made['id']}/chat/{said['id']}", headers={"X-API-Key": key})
    assert gone.status_code == 204, gone.text
    wait_for_line(page, "(message removed)")
    assert chat_lines(page) == ["seat 1 (Green): (message removed)"]
    page.reload()  # and so it stays (the replay has it redacted)
    wait_for_line(page, "(message removed)")
    assert "something rude" not in page.inner_text("#chat-log")
