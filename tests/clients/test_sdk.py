"""The Python SDK against a real server: typed errors, versions, idempotent retries, events, async."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from meeple_client import AsyncClient, BadRequest, Client, Forbidden, NotFound, StaleVersion, Unauthorized, _core
from meeple_client._core import MatchFlows, prepare

from .conftest import Stack

VS_BOT = [{"kind": "human"}, {"kind": "bot", "level": "easy"}]


def test_a_whole_clash_game_against_a_bot_through_the_sdk(stack: Stack) -> None:
    with Client(stack.url + "/v1") as api:
        match = api.create_match("clash", 2, options={"match": "single"}, seats=VS_BOT, seed=7)
        assert match.seat == 0 and match.token and match.view is not None
        while not match.finished:
            match.wait_turn(timeout=60)
            if match.my_turn:
                match.move(match.legal_moves[0])
        assert match.outcome is not None and match.result is not None
        assert match.replay()["seed"] == "7"


def test_a_clash_game_against_a_bot_with_one_request_a_turn(stack: Stack) -> None:
    """``move(m, wait=...)``: each answer comes at the seat's next turn, with the bot's moves in ``events``."""
    with Client(stack.url + "/v1") as api:
        match = api.create_match("clash", 2, options={"match": "single"}, seats=VS_BOT, seed=11)
        match.wait_turn(timeout=60)
        bot_moves = 0
        while not match.finished:
            assert match.my_turn, "a move with wait answers only at the seat's turn or at the end"
            match.move(match.legal_moves[0], wait=30)
            bot_moves += sum(1 for e in match.doc["events"] if e["kind"] == "move" and e["seat"] == 1)
        assert bot_moves > 0 and match.refresh().outcome is not None


def test_a_move_with_wait_reads_past_its_wait_and_one_without_keeps_the_clients_timeout() -> None:
    state = MatchFlows("m1", "0.tok", {"id": "m1", "version": 3})
    waiting = next(state.move_flow({"type": "pass"}, 30))
    assert waiting.query == {"include": "legal_moves", "wait": 30} and waiting.timeout == 45
    plain = next(state.move_flow({"type": "pass"}))
    assert plain.query == {"include": "legal_moves"} and plain.timeout is None
    assert plain.body == {"move": {"type": "pass"}, "version": 3}


def test_a_status_document_with_events_is_folded_whole_and_an_events_document_keeps_the_rest() -> None:
    state = MatchFlows("m1", "0.tok", {"id": "m1", "version": 3, "seats": [], "clock": None})
    state.update({"id": "m1", "version": 5, "to_act": [0], "status": "active", "seats": [1], "events": []})
    assert state.doc["seats"] == [1] and state.version == 5
    state.update({"version": 6, "status": "active", "to_act": [1], "result": None, "view": None, "events": []})
    assert state.doc["seats"] == [1] and state.version == 6 and state.doc["to_act"] == [1]


def test_a_move_at_an_old_version_raises_stale_version_and_is_not_rebased(stack: Stack) -> None:
    with Client(stack.url) as api:
        first = api.create_match("fierce-women", 2, seats=[{"kind": "human"}, {"kind": "human"}])
        second = api.join(first.id)
        first.refresh()
        actor, other = (first, second) if first.my_turn else (second, first)
        stale_copy = api.match(actor.id, actor.token)
        actor.move(actor.legal_moves[0])
        if not actor.my_turn:  # the other seat moves: the copy's decision (same seat) is long gone
            other.refresh().move(other.legal_moves[0])
        version_before = api.match(actor.id).version
        with pytest.raises(StaleVersion) as caught:
            stale_copy.move(stale_copy.legal_moves[0])
        assert caught.value.status == 409 and caught.value.code == "stale_version"
        assert api.match(actor.id).version == version_before  # nothing was applied behind our back


def test_errors_are_typed_and_carry_the_servers_code(stack: Stack) -> None:
    with Client(stack.url) as api:
        with pytest.raises(NotFound) as missing:
            api.match("no-such-match")
        assert missing.value.code == "match_not_found"
        with pytest.raises(BadRequest) as bad:
            api.create_match("no-such-game", 2)
        assert bad.value.code == "unknown_game"
        match = api.create_match("clash", 2, seats=VS_BOT)
        with pytest.raises((Unauthorized, Forbidden)) as refused:  # 403 today; 401 once invalid tokens are
            api.call("legal_moves", {"match_id": match.id}, token="0.not-a-token")
        assert refused.value.code in ("wrong_token", "bad_token", "invalid_token")


def test_every_post_is_sent_as_json_with_a_body() -> None:
    req = prepare("leave", {"match_id": "m"}, token="0.t")
    assert req.headers["Content-Type"] == "application/json" and req.body == {}
    move = prepare("move", {"match_id": "m"}, body={"move": {}, "version": 0}, token="0.t")
    assert len(move.headers["Idempotency-Key"]) == 32


class _Faulty(httpx.HTTPTransport):
    """A real transport to the server that fails the first matching request in a chosen way."""

    def __init__(self, path_end: str, fault: str) -> None:
        super().__init__()
        self.path_end, self.fault, self.seen = path_end, fault, 0
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST" and request.url.path.endswith(self.path_end):
            self.seen += 1
            self.keys.append(request.headers.get("Idempotency-Key"))
            if self.seen == 1 and self.fault == "503":
                return httpx.Response(503, json={"error": {"code": "store_unavailable", "message": "down"}})
            if self.seen == 1 and self.fault == "lost":
                super().handle_request(request).read()
                raise httpx.ReadError("answer lost", request=request)
        return super().handle_request(request)


def test_the_sdk_reads_and_writes_the_same_json_with_orjson_and_with_the_standard_library(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """orjson, when installed, reads the answers and writes the bodies (a tenth of a load test user's CPU went to
    the standard library's decoder); a venv with only the SDK (``test_example_fresh_venv``) uses the standard
    library. Both must send and read the same values."""
    values: list[Any] = [{"move": {"type": "play", "card": "Größe ✓", "to": [0, 2]}, "version": 7},
                         {"options": {1: "x", "rounds": 3, "ratio": 0.1, "ok": True, "none": None}},
                         {"big": 2 ** 70}, [], {}]
    fast = [_core.dumps(v) for v in values]
    texts = ['{"id":"m1","seats":[{"seat":0,"you":true}],"version":12,"score":1.5,"words":"Größe ✓"}',
             '{"type":"update","version":3,"events":[]}']
    read_fast = [_core.loads(s.encode()) for s in texts]
    monkeypatch.setattr(_core, "orjson", None)
    assert [_core.loads(b) for b in fast] == [_core.loads(_core.dumps(v)) for v in values]
    assert [_core.loads(s.encode()) for s in texts] == read_fast
    assert _core.loads(_core.dumps(values[1])) == {"options": {"1": "x", "rounds": 3, "ratio": 0.1, "ok": True,
                                                               "none": None}}


def test_a_retried_move_applies_once_thanks_to_its_idempotency_key(stack: Stack) -> None:
    """The first answer is lost: the SDK sends the same move with the same key again, and it applies once."""
    faulty = _Faulty("/moves", "lost")
    with Client(stack.url, http=httpx.Client(base_url=stack.url, transport=faulty)) as api:
        first = api.create_match("fierce-women", 2, seats=[{"kind": "human"}, {"kind": "human"}])
        second = api.join(first.id)
        match = first if first.refresh().my_turn else second
        before = match.version
        match.move(match.legal_moves[0])
        assert faulty.seen == 2 and faulty.keys[0] == faulty.keys[1] is not None
        assert match.version == before + 1  # applied exactly once
        log = api.replay(match.id)["log"]
        assert sum(1 for e in log if e["kind"] == "move") == 1

def test_events_iterate_over_long_poll_and_sse_alike(stack: Stack) -> None:
    with Client(stack.url) as api:
        host = api.create_match("clash", 2, options={"match": "single"}, seats=VS_BOT, seed=3)
        watcher_lp = api.match(host.id)
        watcher_sse = api.match(host.id)
        seen: dict[str, list[int]] = {"long-poll": [], "sse": []}
        starts = {"long-poll": watcher_lp.version, "sse": watcher_sse.version}

        def follow(name: str, watcher: Any) -> None:
            for doc in watcher.events(transport=name):
                seen[name].extend(e["version"] for e in doc["events"])

        import threading

        threads = [threading.Thread(target=follow, args=(n, w), daemon=True)
                   for n, w in (("long-poll", watcher_lp), ("sse", watcher_sse))]
        for t in threads:
            t.start()
        while not host.finished:
            host.wait_turn(timeout=60)
            if host.my_turn:
                host.move(host.legal_moves[-1])
        for t in threads:
            t.join(60)
        final = host.version
        for name in seen:  # every version exactly once, in order, on either transport
            assert seen[name] == list(range(starts[name] + 1, final + 1)), name
        assert watcher_sse.finished and watcher_lp.finished


def test_the_async_client_plays_a_game_too(stack: Stack) -> None:
    async def play() -> dict[str, Any] | None:
        async with AsyncClient(stack.url) as api:
            match = await api.create_match("clash", 2, options={"match": "single"}, seats=VS_BOT)
            while not match.finished:
                await match.wait_turn(timeout=60)
                if match.my_turn:
                    await match.move(match.legal_moves[0])
            return match.outcome

    # A thread of its own: Playwright's sync API (tests/browser, same process) holds this thread's event loop.
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(asyncio.run, play()).result(timeout=180)
    assert outcome is not None and outcome["ended_by"] == "game"


def test_matchmaking_tickets_turn_into_seats(stack: Stack) -> None:
    with Client(stack.url) as api:
        first = api.matchmaking("clash", 2, {"match": "single"})
        second = api.matchmaking("clash", 2, {"match": "single"})
        a, b = first.wait(timeout=30), second.wait(timeout=30)
        assert a.id == b.id and {a.seat, b.seat} == {0, 1}


def test_a_party_queues_as_one_ticket_and_each_member_gets_a_seat(stack: Stack) -> None:
    """Two parties of two for They Who Were 8: one match, a team each (seats 0 + 2 against 1 + 3), every
    member's own token (kept from the one answer that shows it)."""
    with Client(stack.url) as api:
        first = api.queue("they-who-were-8", 4, party=[{"name": "ann"}, {"name": "ben"}])
        second = api.matchmaking("they-who-were-8", 4, party=[{"name": "cat"}, {"name": "dan"}])
        assert second.status == "matched" and all(second.tokens)
        ours, theirs = first.wait_party(timeout=30), second.wait_party(timeout=30)
        assert len({m.token for m in ours + theirs}) == 4 and {m.id for m in ours + theirs} == {ours[0].id}
        assert sorted(m.seat for m in ours) in ([0, 2], [1, 3]) and sorted(m.seat for m in theirs) in ([0, 2], [1, 3])
        assert [m["name"] for m in first.party] == ["ann", "ben"] and len({m["team"] for m in first.party}) == 1
        assert first.wait(timeout=5).seat == first.party[0]["seat"]  # the first member's, as before parties


def test_an_async_party_of_three_is_seated_with_bots(stack: Stack) -> None:
    async def queue() -> list[Any]:
        async with AsyncClient(stack.url) as api:
            ticket = await api.queue("fierce-women", 4, party=[{"name": "ann"}, {"name": "ben"}, {"name": "cat"}])
            return [(m.seat, m.token) for m in await ticket.wait_party(timeout=60)]  # bot fill after 1 s

    with ThreadPoolExecutor(1) as pool:
        seats = pool.submit(asyncio.run, queue()).result(timeout=90)
    assert [seat for seat, _ in seats] == [0, 1, 2] and len({token for _, token in seats}) == 3


def test_the_readme_sdk_example_runs_as_written(stack: Stack) -> None:
    """The Python example in README.md ("The SDKs"), against this server with an easy bot."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## The SDKs", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 16
    code = code.replace("http://127.0.0.1:8000", stack.url).replace('"level": "normal"', '"level": "easy"')
    printed: list[Any] = []
    exec(compile(code, "README.md", "exec"), {"print": lambda *a: printed.append(a)})
    assert printed and isinstance(printed[-1][0], list)  # winners, then scores


async def follow_async(url: str, transport: str) -> tuple[list[int], int, int]:
    """A spectator's async ``events(transport)`` while the host plays a bot: (versions seen, start, final)."""
    async with AsyncClient(url) as api:
        host = await api.create_match("clash", 2, options={"match": "single"}, seats=VS_BOT)
        watcher = await api.match(host.id)
        start, seen = watcher.version, []

        async def play() -> None:
            while not host.finished:
                await host.wait_turn(timeout=60)
                if host.my_turn:
                    await host.move(host.legal_moves[0])

        async def follow() -> None:
            async for doc in watcher.events(transport=transport):
                seen.extend(e["version"] for e in doc["events"])

        await asyncio.wait_for(asyncio.gather(play(), follow()), timeout=120)
        return seen, start, host.version


def test_the_async_client_follows_a_match_over_sse(stack: Stack) -> None:
    with ThreadPoolExecutor(1) as pool:
        seen, start, final = pool.submit(asyncio.run, follow_async(stack.url, "sse")).result(timeout=180)
    assert seen == list(range(start + 1, final + 1))


def test_each_error_a_retry_absorbs_is_reported_to_on_retry(stack: Stack) -> None:
    """A lost answer to a move: the call succeeds, and the hook saw the error it hid (what the load test counts)."""
    faulty = _Faulty("/moves", "lost")
    seen: list[tuple[str, str, float]] = []
    with Client(stack.url, http=httpx.Client(base_url=stack.url, transport=faulty),
                on_retry=lambda name, exc, delay: seen.append((name, type(exc).__name__, delay))) as api:
        match = api.create_match("clash", 2, seats=VS_BOT)
        match.wait_turn(timeout=60)
        match.move(match.legal_moves[0])
    assert [(name, kind) for name, kind, _ in seen] == [("move", "ReadError")] and 0 < seen[0][2] <= 2.0


def test_a_503_is_retried_and_the_call_then_succeeds(stack: Stack) -> None:
    faulty = _Faulty("/v1/matches", "503")
    with Client(stack.url, http=httpx.Client(base_url=stack.url, transport=faulty)) as api:
        match = api.create_match("clash", 2, seats=VS_BOT)
    assert faulty.seen == 2 and match.token


def test_create_join_and_matchmaking_carry_a_fresh_idempotency_key_per_call() -> None:
    """A key per logical call (its resends reuse it): two calls with the same body are two matches, two seats."""
    for name, path in (("create_match", None), ("join", {"match_id": "m"}), ("matchmaking", None)):
        first, second = (prepare(name, path, body={"game": "clash", "players": 2}) for _ in range(2))
        assert first.op.idempotent
        keys = first.headers["Idempotency-Key"], second.headers["Idempotency-Key"]
        assert all(len(key) == 32 for key in keys) and keys[0] != keys[1], name


def test_a_lost_answer_to_a_create_is_resent_with_the_same_key(stack: Stack) -> None:
    """A gateway restarting can cut a create's answer: the SDK sends it again, with the key of the first try."""
    faulty = _Faulty("/v1/matches", "lost")
    with Client(stack.url, http=httpx.Client(base_url=stack.url, transport=faulty)) as api:
        match = api.create_match("clash", 2, seats=VS_BOT)
    assert faulty.seen == 2 and faulty.keys[0] == faulty.keys[1] is not None
    assert match.token


def test_a_lost_answer_to_a_join_is_resent_and_takes_one_seat(stack: Stack) -> None:
    with Client(stack.url) as api:
        host = api.create_match("fierce-women", 3, seats=[{"kind": "human"}] * 3)
    faulty = _Faulty("/join", "lost")
    with Client(stack.url, http=httpx.Client(base_url=stack.url, transport=faulty)) as api:
        joined = api.join(host.id)
        assert faulty.seen == 2 and faulty.keys[0] == faulty.keys[1] is not None
        taken = [seat for seat in api.match(host.id).seats if seat.get("kind") == "human" and seat.get("taken")]
    assert joined.seat == 1 and len(taken) == 2  # the host's seat and one joined seat, not two


def test_the_sdk_reads_a_games_components(stack: Stack) -> None:
    """``Client.game``: GET /v1/games/{game}, the cards with their names and rules text (issue 33)."""
    from meeple_client import Client

    with Client(stack.url) as api:
        doc = api.game("fierce-women")
    assert doc["id"] == "fierce-women" and len(doc["components"]["women"]) == 56
    assert all(w["name"] and w["text"] for w in doc["components"]["women"])
