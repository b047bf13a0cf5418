"""The SDK and watch links (issue 51): a backend's key mints a read-only spectator token and revokes it; an app's
user holds a match with it (reads, events over the socket and SSE, replay) and acts with it on nothing — against
the real stack (gunicorn: WebSockets and SSE), keys made by ``services.core.tenancy.tenants``."""

from __future__ import annotations

import time

import pytest
from meeple_client import AsyncClient, Client, Match, Unauthorized
from meeple_client._core import prepare

from .conftest import Stack
from .test_sdk_backends import new_key, run_async


def two_seats(backend: Client) -> tuple[Match, Match]:
    """An active CLASH match of the backend's tenant, its seats named u1 and u2 (both held by the test)."""
    first = backend.create_match("clash", 2, options={"match": "single"},
                                 seats=[{"kind": "human", "player": "u1"}, {"kind": "human", "player": "u2"}])
    second = backend.join(first.id, 1)
    return first.refresh(), second.refresh()


def play_one(first: Match, second: Match) -> None:
    mover = first if first.my_turn else second
    mover.move(mover.legal_moves[0])


def test_a_watch_token_goes_as_the_bearer_of_the_reads_and_a_watched_match_refuses_to_act_before_sending() -> None:
    read = prepare("get_match", {"match_id": "m"}, token="w_ab.secret")
    assert read.headers["Authorization"] == "Bearer w_ab.secret"
    with Client("http://127.0.0.1:9") as nowhere:
        watched = Match(nowhere, "m", "w_ab.secret")
        assert watched.watching
        for act in (lambda: watched.move({"type": "place"}), watched.leave, watched.resign, watched.hint,
                    watched.rematch, lambda: watched.wait_turn(1)):
            with pytest.raises(ValueError, match="only reads"):
                act()
        with pytest.raises(ValueError, match="w_"):
            nowhere.watch("m", "0.a-seat-token")


def test_a_backend_mints_a_watch_link_its_user_reads_every_door_with_it_until_it_is_revoked(ws_stack: Stack) -> None:
    key, _ = new_key(ws_stack)
    with Client(ws_stack.url, api_key=key) as backend, Client(ws_stack.url) as app:
        first, second = two_seats(backend)
        minted = backend.watch_token(first.id, ttl_s=600)
        assert minted["match_id"] == first.id and not minted["player_ids"]
        assert "token" not in backend.describe_watch_token(minted["id"])  # shown once, when minted
        watched = app.watch(first.id, minted["token"])
        spectator = backend.match(first.id)
        assert (watched.seat, watched.legal_moves, watched.view) == (None, [], spectator.view)
        assert all(s.get("player") is None for s in watched.seats)  # no player ids unless asked
        with watched.socket() as ws:  # the socket's updates (the hello carries the watch token)
            updates = ws.updates()
            play_one(first, second)
            assert next(updates)["view"] == backend.match(first.id).view
        sse = watched.events("sse")
        play_one(first.refresh(), second.refresh())
        assert next(sse)["version"] == first.refresh().version
        sse.close()
        assert app.replay(first.id, minted["token"])["seed"] is None
        backend.revoke_watch_token(minted["id"])
        with pytest.raises(Unauthorized) as refused:
            watched.refresh()
        assert refused.value.code == "watch_token_revoked"
        assert backend.describe_watch_token(minted["id"])["revoked_at"] is not None


def test_the_async_client_watches_with_player_ids_when_asked_and_mints_for_a_tournament(ws_stack: Stack) -> None:
    key, _ = new_key(ws_stack)

    async def scenario() -> None:
        async with AsyncClient(ws_stack.url, api_key=key) as backend, AsyncClient(ws_stack.url) as app:
            created = await backend.create_match("clash", 2, options={"match": "single"},
                                                 seats=[{"kind": "human", "player": "u1"}, {"kind": "human"}])
            minted = await backend.watch_token(created.id, player_ids=True)
            watched = await app.watch(created.id, minted["token"])
            assert watched.watching and watched.seats[0].get("player") == "u1"
            with pytest.raises(ValueError, match="only reads"):
                await watched.leave()
            await backend.revoke_watch_token(minted["id"])
            with pytest.raises(Unauthorized):
                await watched.refresh()
            tournament = await backend.create_tournament({
                "name": "watched", "game": "clash", "players_per_table": 2, "starts_at": time.time() + 86400,
                "clock": {"mode": "per_move", "seconds": 60}, "format": {"kind": "swiss", "rounds": 1}})
            league = await backend.tournament_watch_token(tournament["id"], ttl_s=60)
            assert (league["tournament_id"], league["match_id"]) == (tournament["id"], None)
            assert league["expires_at"] - league["created_at"] == pytest.approx(60)

    run_async(scenario())
