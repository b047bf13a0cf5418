"""Leaderboards over real Redis (one server and a cluster): every read checked against a plain sorted list."""

from __future__ import annotations

import random
import time
from typing import Any

import msgspec
import orjson
import pytest
from redis.cluster import RedisCluster
from redis.crc import key_slot

from services.core.competition import leaderboards as lb
from services.core.competition import ratings
from services.core.errors import Kind
from services.core.meta import MatchMeta, Outcome, Seat

GAME = "clash"


def rated(client: Any, tenant: str, player: str, mu: float, sigma: float, matches: int = 1,
          game: str = GAME) -> float:
    """Write a rating as a finished rated match does (``lb.apply_ratings``, ratings then boards), from the
    player's current match count to ``matches``; returns the displayed rating."""
    current = ratings.of_player(client, tenant, player, game).get(game)
    before = current["matches"] if current else 0
    for n in range(before + 1, matches + 1):
        after = {"mu": mu, "sigma": sigma, "matches": n}
        change = {"seat": 0, "player": player, "before": {"matches": n - 1}, "after": ratings.public(after),
                  "change": 0.0}
        lb.apply_ratings(client, tenant, game, {"ended_by": "game", "ratings": [change]})
    return float(ratings.public({"mu": mu, "sigma": sigma, "matches": matches})["rating"])


def reference(board: dict[str, float]) -> list[tuple[str, float, int]]:
    """The board as a plain list: rating high to low, ties by player id in reverse order; competition ranks."""
    order = sorted(board.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    return [(p, r, 1 + sum(1 for _, other in order if other > r)) for p, r in order]


def triples(entries: list[lb.Entry]) -> list[tuple[str, float, int | None]]:
    return [(e.player, e.rating, e.rank) for e in entries]


@pytest.fixture()
def tied_board(client: Any, tenant: str) -> dict[str, float]:
    """300 players over 12 distinct ratings: ties everywhere, across every shard."""
    rng = random.Random(7)
    board = {}
    for i in range(300):
        player = f"p{i:03d}"
        board[player] = rated(client, tenant, player, mu=20 + rng.randrange(12) * 1.5, sigma=2.0)
    return board


def test_top_pages_and_ranks_match_a_sorted_list_with_ties(client: Any, tenant: str,
                                                           tied_board: dict[str, float]) -> None:
    """The sharded merge returns exactly the plain list's pages, ties sharing a rank (1, 2, 2, 4)."""
    want = reference(tied_board)
    assert lb.size(client, tenant, GAME) == 300
    for offset, limit in ((0, 100), (0, 1), (37, 100), (100, 100), (250, 100), (299, 5), (300, 10)):
        got = lb.top(client, tenant, GAME, limit=limit, offset=offset)
        assert triples(got) == want[offset:offset + limit], (offset, limit)
    for player, rating, rank in want:
        entry, listed = lb.rank(client, tenant, GAME, player)
        assert entry is not None and (entry.rating, entry.rank, entry.matches) == (rating, rank, 1)
        assert listed == 300


def test_around_a_player_is_the_sorted_lists_window_even_at_the_edges(client: Any, tenant: str,
                                                                      tied_board: dict[str, float]) -> None:
    """2 * span + 1 rows around the player (fewer only if the board is smaller), the player as central as the
    ends allow, with the same ranks as the plain list."""
    want = reference(tied_board)
    for span in (1, 3, 10):
        for at in (0, 1, 2, span, 150, 297, 298, 299):
            player = want[at][0]
            rows = triples(lb.around(client, tenant, GAME, player, span=span))
            width = 2 * span + 1
            start = min(max(0, at - span), len(want) - width)
            assert rows == want[start:start + width], (span, at)
            assert player in [p for p, _, _ in rows]


def test_around_ranks_a_tie_group_that_starts_above_the_window(client: Any, tenant: str) -> None:
    """The window's first rows share their rank with players above the window (a further count is needed)."""
    board = {f"a{i:02d}": rated(client, tenant, f"a{i:02d}", 30, 2.0) for i in range(20)}
    board["z"] = rated(client, tenant, "z", 25, 2.0)
    want = reference(board)
    assert triples(lb.around(client, tenant, GAME, "z", span=2)) == want[-5:]
    assert [r for _, _, r in want[-5:]] == [1, 1, 1, 1, 21]


def test_min_matches_lists_only_players_with_enough_rated_matches(client: Any, tenant: str) -> None:
    for i in range(1, 6):
        rated(client, tenant, f"m{i}", mu=20 + i, sigma=2.0, matches=i)
    lb.set_min_matches(client, tenant, GAME, 3)
    assert [e.player for e in lb.top(client, tenant, GAME, limit=10)] == ["m5", "m4", "m3"]
    entry, listed = lb.rank(client, tenant, GAME, "m2")
    assert entry is not None and entry.rank is None and entry.matches == 2 and listed == 3
    assert lb.around(client, tenant, GAME, "m2") == []
    rated(client, tenant, "m2", mu=40, sigma=2.0, matches=3)  # its third match lists it, at the top
    assert [e.player for e in lb.top(client, tenant, GAME, limit=10)] == ["m2", "m5", "m4", "m3"]
    lb.set_min_matches(client, tenant, GAME, 0)  # lowering the minimum lists everyone at once
    assert [e.player for e in lb.top(client, tenant, GAME, limit=10)] == ["m2", "m5", "m4", "m3", "m1"]
    with pytest.raises(lb.LeaderboardError) as err:
        lb.set_min_matches(client, tenant, GAME, -1)
    assert err.value.kind is Kind.MALFORMED


def test_a_player_not_on_the_board_has_no_rank(client: Any, tenant: str) -> None:
    rated(client, tenant, "here", 25, 2.0)
    assert lb.rank(client, tenant, GAME, "nobody") == (None, 1)
    assert lb.around(client, tenant, GAME, "nobody") == []


def test_a_board_only_moves_forward(client: Any, tenant: str) -> None:
    """Re-applying an old outcome (the webhook worker does after a crash) leaves the newer entry alone, and the
    board always shows the rating as stored, not the outcome's."""
    rated(client, tenant, "p", 25, 2.0, matches=2)
    stale = {"ratings": [{"seat": 0, "player": "p", "before": {"matches": 0},
                          "after": ratings.public({"mu": 40, "sigma": 1.0, "matches": 1}), "change": 0}]}
    lb.apply_ratings(client, tenant, GAME, stale)
    entry, _ = lb.rank(client, tenant, GAME, "p")
    assert entry is not None and entry.rating == 19.0 and entry.matches == 2


def test_another_tenant_sees_nothing(client: Any, tenant: str) -> None:
    rated(client, tenant, "alice", 30, 2.0)
    lb.define_season(client, tenant, GAME, "s1", time.time() - 10, time.time() + 3600)
    other = tenant + "-other"
    assert lb.top(client, other, GAME) == [] and lb.size(client, other, GAME) == 0
    assert lb.rank(client, other, GAME, "alice") == (None, 0)
    assert lb.seasons(client, other, GAME) == []
    with pytest.raises(lb.LeaderboardError):
        lb.resolve(client, other, GAME, "s1")
    assert lb.top(client, tenant, "sideboards") == []  # nor another game of the same tenant


def test_season_board_counts_only_the_seasons_matches_and_freezes_when_it_ends(client: Any, tenant: str) -> None:
    rated(client, tenant, "old", 30, 2.0, matches=3)  # before the season: on the all-time board only
    now = time.time()
    lb.define_season(client, tenant, GAME, "spring", now - 60, now + 3600, policy="keep")
    assert lb.resolve(client, tenant, GAME, lb.CURRENT) == "spring"
    assert lb.top(client, tenant, GAME, "spring") == []
    rated(client, tenant, "old", 31, 2.0, matches=4)
    rated(client, tenant, "new", 26, 2.0, matches=1)
    spring = lb.top(client, tenant, GAME, "spring")
    assert [(e.player, e.rating, e.matches) for e in spring] == [("old", 25.0, 1), ("new", 20.0, 1)]
    lb.update_season(client, tenant, GAME, "spring", ends_at=time.time())  # ends it now
    rated(client, tenant, "new", 40, 2.0, matches=2)  # after the end: the all-time board only
    assert [(e.player, e.rating) for e in lb.top(client, tenant, GAME, "spring")] == [("old", 25.0), ("new", 20.0)]
    assert lb.top(client, tenant, GAME)[0].player == "new"
    assert lb.season(client, tenant, GAME, "spring")["state"] == "ending"
    with pytest.raises(lb.LeaderboardError) as err:
        lb.update_season(client, tenant, GAME, "spring", ends_at=time.time() + 100)
    assert err.value.code == "season_over"
    member = lb.due_member(tenant, GAME, "spring")
    assert member in lb.close_due_seasons(client, time.time() + 1)
    assert lb.season(client, tenant, GAME, "spring")["state"] == "closed"
    assert ratings.of_player(client, tenant, "new", GAME)[GAME]["mu"] == 40  # keep: ratings untouched
    with pytest.raises(lb.LeaderboardError) as err:
        lb.resolve(client, tenant, GAME, lb.CURRENT)
    assert err.value.code == "no_live_season"


def _season_with(client: Any, tenant: str, policy: str, decay: float | None = None) -> None:
    now = time.time()
    lb.define_season(client, tenant, GAME, "s1", now - 60, now + 3600, policy=policy, decay=decay)
    for i in range(40):
        rated(client, tenant, f"p{i:02d}", 20 + i * 0.5, 3.0, matches=1 + i % 3)
    lb.update_season(client, tenant, GAME, "s1", ends_at=time.time())


@pytest.mark.parametrize(("policy", "decay"), [("reset", None), ("decay", 0.25)])
def test_season_end_resets_or_decays_ratings_once_and_keeps_the_frozen_board(
        client: Any, tenant: str, policy: str, decay: float | None) -> None:
    _season_with(client, tenant, policy, decay)
    frozen = triples(lb.top(client, tenant, GAME, "s1", limit=100))
    before = {p: ratings.of_player(client, tenant, p, GAME)[GAME] for p, _, _ in frozen}
    lb.close_due_seasons(client, time.time() + 1)
    lb.close_due_seasons(client, time.time() + 2)  # nothing due any more: nothing rolls twice
    d = 1.0 if policy == "reset" else 0.25
    mu0, sigma0 = ratings.MODEL.mu, ratings.MODEL.sigma
    expected = {}
    for player, doc in before.items():
        now = ratings.of_player(client, tenant, player, GAME)[GAME]
        assert now["mu"] == pytest.approx(doc["mu"] - d * (doc["mu"] - mu0), abs=1e-9)
        assert now["sigma"] == pytest.approx(doc["sigma"] + d * (sigma0 - doc["sigma"]), abs=1e-9)
        assert now["matches"] == doc["matches"]
        expected[player] = ratings.public(now)["rating"]
    assert triples(lb.top(client, tenant, GAME, limit=100)) == reference(expected)  # the all-time board follows
    assert triples(lb.top(client, tenant, GAME, "s1", limit=100)) == frozen  # the season's stays as it ended


def test_an_interrupted_rollover_resumes_and_rolls_each_player_once(client: Any, tenant: str) -> None:
    """A worker that stops half-way (its budget, or its death) leaves cursors; the next run goes on from them."""
    _season_with(client, tenant, "decay", 0.5)
    start = {f"p{i:02d}": ratings.of_player(client, tenant, f"p{i:02d}", GAME)[GAME]["mu"] for i in range(40)}
    assert lb.close_due_seasons(client, time.time() + 1, budget=1) == []  # one page, then out of budget
    assert lb.season(client, tenant, GAME, "s1")["state"] == "ending"
    assert client.hgetall(lb.roll_key(tenant, GAME, "s1"))
    lb.close_due_seasons(client, time.time() + 2)
    lb.close_due_seasons(client, time.time() + 3)
    assert lb.season(client, tenant, GAME, "s1")["state"] == "closed"
    for player, mu in start.items():
        assert ratings.of_player(client, tenant, player, GAME)[GAME]["mu"] == pytest.approx(mu - 0.5 * (mu - 25))


def test_a_lease_whose_worker_died_returns_the_season_to_the_next_worker(client: Any, tenant: str) -> None:
    _season_with(client, tenant, "reset")
    member = lb.due_member(tenant, GAME, "s1")
    now = time.time() + 1
    assert member in lb.claim_due_seasons(client, now, lease_s=30, count=1000)  # taken, then the worker dies
    assert member not in lb.claim_due_seasons(client, now + 1, lease_s=30, count=1000)
    assert member in lb.close_due_seasons(client, now + 31)
    assert ratings.of_player(client, tenant, "p39", GAME)[GAME]["mu"] == pytest.approx(25.0)


def test_seasons_never_overlap_and_are_checked(client: Any, tenant: str) -> None:
    now = time.time()
    lb.define_season(client, tenant, GAME, "a", now + 100, now + 200)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "b", "starts_at": now + 150, "ends_at": now + 300}, "season_overlap"),
        ({"name": "a", "starts_at": now + 300, "ends_at": now + 400}, "season_exists"),
        ({"name": "all", "starts_at": now + 300, "ends_at": now + 400}, "bad_season"),
        ({"name": "c", "starts_at": now + 400, "ends_at": now + 300}, "bad_season"),
        ({"name": "c", "starts_at": now - 400, "ends_at": now - 300}, "bad_season"),
        ({"name": "c", "starts_at": now + 300, "ends_at": now + 400, "policy": "decay"}, "bad_season"),
        ({"name": "c", "starts_at": now + 300, "ends_at": now + 400, "policy": "halve"}, "bad_season"),
    ]
    for kwargs, code in cases:
        with pytest.raises(lb.LeaderboardError) as err:
            lb.define_season(client, tenant, GAME, **kwargs)
        assert err.value.code == code, kwargs
    lb.define_season(client, tenant, GAME, "b", now + 200, now + 300, policy="decay", decay=0.5)
    assert [s["name"] for s in lb.seasons(client, tenant, GAME)] == ["a", "b"]
    lb.delete_season(client, tenant, GAME, "a")
    assert [(s["name"], s["state"], s["decay"]) for s in lb.seasons(client, tenant, GAME)] == [("b", "scheduled", 0.5)]


def test_a_decay_named_beside_keep_or_reset_is_refused_not_dropped(client: Any, tenant: str) -> None:
    """Found probing: ``{"policy": "keep", "decay": 0.5}`` was answered 201 with ``decay: 0.0``, the value the
    caller sent silently gone. Now it is 400 bad_season, on create and on update, and a switch of policy that
    names no decay still works."""
    now = time.time()
    for policy in ("keep", "reset"):
        with pytest.raises(lb.LeaderboardError) as err:
            lb.define_season(client, tenant, GAME, f"k-{policy}", now + 100, now + 200, policy=policy, decay=0.5)
        assert err.value.code == "bad_season"
    lb.define_season(client, tenant, GAME, "d", now + 100, now + 200, policy="decay", decay=0.5)
    with pytest.raises(lb.LeaderboardError) as err:
        lb.update_season(client, tenant, GAME, "d", policy="keep", decay=0.3)
    assert err.value.code == "bad_season"
    assert lb.update_season(client, tenant, GAME, "d", decay=0.25)["decay"] == 0.25
    assert (lb.update_season(client, tenant, GAME, "d", policy="keep")["decay"]) == 0.0
    with pytest.raises(lb.LeaderboardError) as err:
        lb.update_season(client, tenant, GAME, "d", decay=0.3)  # the season keeps now
    assert err.value.code == "bad_season"


def test_deleting_a_closed_season_drops_its_board(client: Any, tenant: str) -> None:
    _season_with(client, tenant, "keep")
    lb.close_due_seasons(client, time.time() + 1)
    assert lb.size(client, tenant, GAME, "s1") == 40
    lb.delete_season(client, tenant, GAME, "s1")
    assert lb.size(client, tenant, GAME, "s1") == 0 and lb.seasons(client, tenant, GAME) == []


def test_a_season_board_does_not_take_matches_before_it_starts(client: Any, tenant: str) -> None:
    now = time.time()
    lb.define_season(client, tenant, GAME, "later", now + 3600, now + 7200)
    rated(client, tenant, "early", 30, 2.0)
    assert lb.size(client, tenant, GAME, "later") == 0 and lb.size(client, tenant, GAME) == 1


def test_every_board_script_touches_one_slot_and_shards_cover_every_primary(client: Any, tenant: str) -> None:
    """A board's shards spread over the slot range; each shard's three keys share a slot (its scripts use them
    together). On a cluster, a board has a shard on every primary."""
    tags = lb.board_tags(tenant, GAME, lb.ALL)
    assert len(set(tags)) == lb.SHARDS
    for tag in tags:
        keys = lb.shard_keys(tag)
        assert len({key_slot(k.encode()) for k in keys}) == 1
    if isinstance(client, RedisCluster):
        owners = {client.get_node_from_key(lb.shard_keys(t)[0]).name for t in tags}
        assert owners == {n.name for n in client.get_primaries()}


def test_a_rating_reads_the_same_in_the_outcome_the_players_ratings_and_the_board(client: Any, tenant: str) -> None:
    """Issue 49: an outcome said rating 1.461 (mu 24.8984, sigma 7.8123) and the board and the player's ratings
    1.462 for the same stored state: the outcome computed mu - 3 sigma before rounding mu and sigma, the other
    doors after. Real two-player results settled (``ratings.settle``) and stored (``apply_ratings``) many times:
    every door shows the outcome's number."""
    rng = random.Random(49)
    players = [f"r{i}" for i in range(6)]
    for n in range(120):
        a, b = rng.sample(players, 2)
        meta = MatchMeta(status="finished", rated=True, tenant=tenant, game=GAME, sides=[[0], [1]], to_act=[],
                         seats=[Seat(kind="human", player=a, acted=True), Seat(kind="human", player=b, acted=True)],
                         outcome=Outcome(ended_by="game", winners=[0], scores=[1, 0]))
        settled = ratings.settle(client, msgspec.structs.replace(meta, status="active"), meta)
        outcome = settled.outcome
        assert outcome is not None
        lb.apply_ratings(client, tenant, GAME, outcome.doc())  # stored, then the boards follow (as the commit does)
        for change in outcome.ratings or []:
            shown = change["after"]
            stored = ratings.public(ratings.of_player(client, tenant, change["player"], GAME)[GAME])
            entry, _ = lb.rank(client, tenant, GAME, change["player"])
            assert entry is not None and (stored["rating"], entry.rating) == (shown["rating"], shown["rating"]), (
                n, change, stored, entry)
            assert shown["rating"] == round(shown["mu"] - 3 * shown["sigma"], 3)


def test_the_rating_hook_writes_the_stored_rating_of_every_rated_seat(client: Any, tenant: str) -> None:
    """``apply_ratings`` on a real multi-seat outcome: each named seat lands on the board with its new rating."""
    changes = []
    for seat, (player, mu) in enumerate((("x", 28.0), ("y", 24.0), ("z", 22.0))):
        after = ratings.public({"mu": mu, "sigma": 7.0, "matches": 1})
        changes.append({"seat": seat, "player": player, "before": ratings.public(ratings.default()),
                        "after": after, "change": after["rating"]})
    assert lb.apply_ratings(client, tenant, GAME, {"ended_by": "game", "ratings": changes}) == 3
    rows = lb.top(client, tenant, GAME)
    assert [(e.player, e.rating, e.rank) for e in rows] == [("x", 7.0, 1), ("y", 3.0, 2), ("z", 1.0, 3)]
    raw = client.hget(ratings.player_key(tenant, "x"), GAME)
    assert orjson.loads(raw)["matches"] == 1


def test_a_read_follows_a_stale_slot_table_to_the_right_primary(client: Any, tenant: str) -> None:
    """Reads route each shard's commands by the client's slot table; after a failover the table may be stale:
    the node answers MOVED, nothing ran, and the read must re-read the table and answer as if nothing happened."""
    if not isinstance(client, RedisCluster):
        pytest.skip("a single server has no slot table")
    board = {f"p{i}": rated(client, tenant, f"p{i}", 20 + i, 2.0) for i in range(20)}
    key = lb.shard_keys(lb.board_tags(tenant, GAME, lb.ALL)[0])[0]
    slot = client.keyslot(key)
    owner = client.get_node_from_key(key)
    wrong = next(n for n in client.get_primaries() if n.name != owner.name)
    client.nodes_manager.slots_cache[slot] = [wrong]
    assert triples(lb.top(client, tenant, GAME, limit=20)) == reference(board)
    assert client.get_node_from_key(key).name == owner.name
