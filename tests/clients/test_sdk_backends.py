"""The SDK as an app's backend (issue 20): a tenant's API key seats its players, reads their history and
ratings and registers webhooks — against the real stack, keys made by ``services.core.tenancy.tenants``."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
import redis
from meeple_client import AsyncClient, Client, NotFound, Unauthorized
from meeple_client._core import prepare

from services.core.tenancy import tenants
from tests.gateway.conftest import RulesProcess
from tests.gateway.test_tournaments import keeper_of

from .conftest import Stack

KEY = "mk_0123.secret"


def run_async(scenario: Coroutine[Any, Any, None]) -> None:
    """On a thread of its own: another test (a browser driver) may leave an event loop running on this one."""
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, scenario).result(timeout=120)


def new_key(stack: Stack) -> tuple[str, str]:
    """A fresh tenant's key and its key id (tenants are unique per test: the stack is shared)."""
    key, record = tenants.create_key(redis.Redis.from_url(stack.redis_url), f"t-{uuid.uuid4().hex[:10]}")
    return key, record["key_id"]


def test_the_key_goes_as_x_api_key_where_the_document_lists_it_and_a_seat_token_stays_the_bearer() -> None:
    assert prepare("games", api_key=KEY).headers["X-API-Key"] == KEY
    join = prepare("join", {"match_id": "m"}, body={"player": "ann"}, api_key=KEY)
    assert join.headers["X-API-Key"] == KEY and "Authorization" not in join.headers
    move = prepare("move", {"match_id": "m"}, body={"move": {}, "version": 0}, token="0.seat", api_key=KEY)
    assert move.headers["Authorization"] == "Bearer 0.seat" and "X-API-Key" not in move.headers
    seat_read = prepare("get_match", {"match_id": "m"}, token="0.seat", api_key=KEY)
    assert seat_read.headers["Authorization"] == "Bearer 0.seat" and "X-API-Key" not in seat_read.headers
    tenant_read = prepare("get_match", {"match_id": "m"}, api_key=KEY)  # the bearer scheme takes a key
    assert tenant_read.headers["Authorization"] == f"Bearer {KEY}"
    assert "Authorization" not in prepare("ticket", {"ticket": "t"}, token="0.seat", api_key=KEY).headers


def test_a_tenant_call_without_a_key_is_refused_before_sending_and_a_seat_token_is_no_key() -> None:
    with pytest.raises(ValueError, match="API key"):
        prepare("tenant_matches")
    with pytest.raises(ValueError, match="API key"):
        prepare("ratings", {"player": "ann"}, token="0.seat")
    with pytest.raises(ValueError, match="mk_"):
        Client("http://127.0.0.1:9", api_key="0.seat-token")


def test_a_tenant_seats_its_player_who_plays_with_the_token_then_reads_history_and_ratings(stack: Stack) -> None:
    key, _ = new_key(stack)
    rival_key, _ = new_key(stack)
    with Client(stack.url, api_key=key) as backend, Client(stack.url) as ann_app, \
            Client(stack.url, api_key=rival_key) as rival:
        created = backend.create_match("clash", 2, options={"match": "single"}, join=False, seed=5,
                                       seats=[{"kind": "human", "player": "ann"}, {"kind": "bot", "level": "easy"}])
        seat = backend.join(created.id, player="ann")  # the backend hands this token to ann's client
        assert seat.seat == 0 and seat.token
        game = ann_app.match(created.id, seat.token)
        assert all("player" not in s or s["player"] is None for s in game.seats)  # seat holders never see ids
        while not game.finished:
            game.wait_turn(timeout=60)
            if game.my_turn:
                game.move(game.legal_moves[0])
        watched = backend.match(created.id)  # the tenant reads its match with its key alone
        assert watched.finished and watched.seat is None and watched.seats[0].get("player") == "ann"
        outcome = watched.outcome
        assert outcome is not None and [c["player"] for c in outcome.get("ratings", [])] == ["ann"]
        with pytest.raises(NotFound):  # another tenant's key: as if the match did not exist
            rival.match(created.id)

        page = backend.player_matches("ann")
        assert [(m["id"], m["seat"], m["status"]) for m in page["matches"]] == [(created.id, 0, "finished")]
        assert page["next"] is None and page["matches"][0]["outcome"] == outcome
        assert [m["id"] for m in backend.history()] == [created.id]
        rating = backend.ratings("ann", game="clash")["ratings"]["clash"]
        assert rating["matches"] == 1 and rating == outcome["ratings"][0]["after"]
        assert rival.ratings("ann")["ratings"] == {} and list(rival.history("ann")) == []


def test_history_pages_newest_first_with_limit_and_before_in_the_async_client(stack: Stack) -> None:
    key, _ = new_key(stack)

    async def scenario() -> None:
        async with AsyncClient(stack.url, api_key=key) as backend:
            ids = []
            for _ in range(3):
                made = await backend.create_match("fierce-women", 2, join=False,
                                                  seats=[{"kind": "human", "player": "pat"}, {"kind": "human"}])
                ids.append(made.id)
            first = await backend.player_matches("pat", limit=2)
            assert [m["id"] for m in first["matches"]] == ids[:0:-1] and first["next"] is not None
            second = await backend.player_matches("pat", limit=2, before=first["next"])
            assert [m["id"] for m in second["matches"]] == ids[:1] and second["next"] is None
            assert [m["id"] async for m in backend.history("pat", limit=2)] == ids[::-1]
            assert [m["id"] async for m in backend.history(limit=1)] == ids[::-1]
            assert all(m["seat"] is None for m in (await backend.matches())["matches"])  # the tenant's list

    run_async(scenario())


def test_webhooks_are_registered_listed_and_deleted_and_dead_letters_read_in_both_flavours(stack: Stack) -> None:
    key, key_id = new_key(stack)
    with Client(stack.url, api_key=key) as backend:
        hook = backend.add_webhook("http://127.0.0.1:9/meeple", ["match.finished", "match.created"])
        assert hook["secret"].startswith("whsec_") and hook["events"] == ["match.created", "match.finished"]
        listed = backend.webhooks()
        assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
        assert backend.delete_webhook(hook["id"]) == hook["id"] and backend.webhooks() == []
        with pytest.raises(NotFound) as gone:
            backend.delete_webhook(hook["id"])
        assert gone.value.code == "webhook_not_found"
        assert backend.dead_letters(limit=5) == [] and backend.clear_dead_letters() == 0

    async def from_async() -> None:
        async with AsyncClient(stack.url, api_key=key) as backend:
            made = await backend.add_webhook("https://example.test/hook", ["turn"])
            assert [h["id"] for h in await backend.webhooks()] == [made["id"]]
            assert await backend.delete_webhook(made["id"]) == made["id"]
            assert await backend.dead_letters() == [] and await backend.clear_dead_letters() == 0

    run_async(from_async())
    tenants.revoke(redis.Redis.from_url(stack.redis_url), key_id)
    with Client(stack.url, api_key=key, retries=0) as revoked, pytest.raises(Unauthorized) as refused:
        revoked.webhooks()
    assert refused.value.code == "invalid_api_key"


def _tournament_settings() -> dict[str, Any]:
    return {"name": "SDK Swiss", "game": "clash", "players_per_table": 2, "clock": {"mode": "per_move", "seconds": 60},
            "starts_at": time.time() + 3600, "format": {"kind": "swiss", "rounds": 2}}


def test_seasons_boards_and_a_tournaments_registrations_through_the_sync_client(stack: Stack) -> None:
    """Every leaderboard, season and tournament call of the SDK against the real stack; another key sees none."""
    key, _ = new_key(stack)
    rival_key, _ = new_key(stack)
    with Client(stack.url, api_key=key) as backend, Client(stack.url, api_key=rival_key, retries=0) as rival:
        assert backend.leaderboard("clash", limit=5) == {"game": "clash", "season": "all", "listed": 0, "entries": []}
        with pytest.raises(NotFound):
            backend.leaderboard_rank("clash", "ann")
        assert backend.leaderboard_around("clash", "ann", span=2)["entries"] == []
        assert backend.set_leaderboard_settings("clash", 3)["min_matches"] == 3
        assert backend.leaderboard_settings("clash")["min_matches"] == 3
        season = backend.create_season("clash", "s1", 3e9, 3.1e9, policy="decay", decay=0.25)
        assert (season["state"], season["policy"], season["decay"]) == ("scheduled", "decay", 0.25)
        assert backend.update_season("clash", "s1", ends_at=3.2e9)["ends_at"] == 3.2e9
        assert [s["name"] for s in backend.seasons("clash")] == ["s1"] and backend.season("clash", "s1")["name"] == "s1"
        with pytest.raises(NotFound):
            rival.season("clash", "s1")
        assert backend.delete_season("clash", "s1") == "s1" and backend.seasons("clash") == []

        made = backend.create_tournament(_tournament_settings())
        tid = made["id"]
        assert made["status"] == "registering" and made["registered"] == 0
        assert backend.register_player(tid, "ann")["player"] == "ann"
        backend.register_player(tid, "ben")
        assert backend.tournament(tid)["registered"] == 2
        assert backend.tournament_player(tid, "ann")["table"] is None
        assert backend.unregister_player(tid, "ben") == {"player": "ben", "status": "removed"}
        assert [t["id"] for t in backend.tournaments(limit=5)["tournaments"]] == [tid]
        for refused in (lambda: rival.tournament(tid), lambda: rival.register_player(tid, "eve"),
                        lambda: rival.cancel_tournament(tid)):
            with pytest.raises(NotFound):
                refused()
        assert rival.tournaments()["tournaments"] == []
        assert backend.cancel_tournament(tid)["status"] == "cancelled"


def test_the_async_client_makes_the_same_tournament_and_season_calls(stack: Stack) -> None:
    key, _ = new_key(stack)

    async def scenario() -> None:
        async with AsyncClient(stack.url, api_key=key) as backend:
            assert (await backend.leaderboard("clash"))["entries"] == []
            await backend.create_season("clash", "s9", 3e9, 3.1e9)
            assert [s["name"] for s in await backend.seasons("clash")] == ["s9"]
            assert await backend.delete_season("clash", "s9") == "s9"
            tid = (await backend.create_tournament(_tournament_settings()))["id"]
            await backend.register_player(tid, "ann")
            assert (await backend.tournament_player(tid, "ann"))["standing"]["player"] == "ann"
            assert (await backend.cancel_tournament(tid))["status"] == "cancelled"

    run_async(scenario())


def started_swiss(stack: Stack, rules: RulesProcess, key: str, players: list[str]) -> str:
    """A Swiss of ``players`` (2 a table) whose first round the timekeeper has paired and made (time moved past its
    ``starts_at`` as the keeper sees it); its id."""
    with Client(stack.url, api_key=key) as backend:
        tid = backend.create_tournament({**_tournament_settings(), "max_players": 4})["id"]
        for player in players:
            backend.register_player(tid, player)
        starts = backend.tournament(tid)["starts_at"]
    keeper_of(stack.redis_url, rules).run_once(now=starts + 1)
    return str(tid)


def test_a_tournaments_rounds_are_read_page_by_page_in_both_clients_and_registering_again_changes_nothing(
        stack: Stack, rules: RulesProcess) -> None:
    """Issue 49: a tournament showed only its current round; a backend that missed a webhook could not rebuild the
    rounds, tables and results. ``tournament_rounds`` reads them (paged); registering twice answered 201 with a new
    registration, undocumented: now the same registration comes back."""
    key, _ = new_key(stack)
    with Client(stack.url, api_key=key) as backend:
        tid = backend.create_tournament({**_tournament_settings(), "max_players": 4})["id"]
        first = backend.register_player(tid, "ann")
        assert backend.register_player(tid, "ann") == first  # the same registration, nothing changed
        assert backend.tournament(tid)["registered"] == 1
        assert backend.tournament_rounds(tid) == {"rounds": [], "next": None}
    tid = started_swiss(stack, rules, key, ["ann", "ben", "cat"])
    with Client(stack.url, api_key=key) as backend:
        page = backend.tournament_rounds(tid)
        [round_one] = page["rounds"]
        assert page["next"] is None and round_one["n"] == 1 and round_one["finished_at"] is None
        tables = round_one["tables"]
        assert [t["table"] for t in tables] == ["r1t1", "r1t2"]  # a table of two and the bye against a bot
        assert all(t["status"] == "running" and t["result"] is None and t["match_id"] for t in tables)
        for table in tables:  # every table named is a match the backend joins
            for seat in table["seats"]:
                if "player" in seat:
                    assert backend.join(table["match_id"], player=seat["player"]).token
        backend.cancel_tournament(tid)
        ended = backend.tournament_rounds(tid, after=0, limit=1)
        assert ended["next"] is None and [t["table"] for t in ended["rounds"][0]["tables"]] == ["r1t1", "r1t2"]
        assert all(t["status"] == "finished" and t["result"]["ended_by"] == "cancelled" and t["finished_at"]
                   for t in ended["rounds"][0]["tables"])
        assert backend.tournament_rounds(tid, after=1)["rounds"] == []

    async def scenario() -> None:
        async with AsyncClient(stack.url, api_key=key) as backend:
            assert await backend.tournament_rounds(tid, limit=1) == ended
            with pytest.raises(NotFound):
                async with AsyncClient(stack.url, api_key=new_key(stack)[0], retries=0) as rival:
                    await rival.tournament_rounds(tid)

    run_async(scenario())


def test_a_lost_answer_to_a_registration_is_resent_and_answers_the_same_registration(stack: Stack) -> None:
    """Registering is idempotent (issue 49; the document marks it ``x-meeple-idempotent``), so the SDK resends one
    whose answer was lost, and the server answers the registration the first request made."""
    from .test_sdk import _Faulty

    key, _ = new_key(stack)
    with Client(stack.url, api_key=key) as backend:
        tid = backend.create_tournament(_tournament_settings())["id"]
    faulty = _Faulty("/players", "lost")
    with Client(stack.url, api_key=key, http=httpx.Client(base_url=stack.url, transport=faulty)) as backend:
        registered = backend.register_player(tid, "ann")
        assert faulty.seen == 2 and registered["player"] == "ann"
        assert backend.register_player(tid, "ann") == registered and backend.tournament(tid)["registered"] == 1
