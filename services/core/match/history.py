"""A tenant's match history: which matches it made, and which of them each of its players sat in.

Two sorted sets per tenant, scored by the match's creation time, each in its own Redis Cluster slot:
``hist:{<tenant>}:matches`` and ``hist:{<tenant>|<player>}:matches``. They are written *before* the
compare-and-set that creates the match or seats the player (as the idle index is): a crash or a lost race
in between leaves an entry that a read drops (no such match, or the player is not in it), never a match
missing from a history. Each set keeps its newest :data:`KEEP` entries and lives as long as the matches.
"""

from __future__ import annotations

from typing import Any

from services.core.meta import MatchMeta, decode_meta
from services.core.record.store import MatchStore, keys

#: Entries kept per tenant and per player (older ones are trimmed at each write).
KEEP = 1000


def tenant_key(tenant: str) -> str:
    return f"hist:{{{tenant}}}:matches"


def player_key(tenant: str, player: str) -> str:
    return f"hist:{{{tenant}|{player}}}:matches"


def index(store: MatchStore, tenant: str, match_id: str, players: list[str | None], created_at: float) -> None:
    """Record ``match_id`` in the tenant's history and in each named player's."""
    ttl = store.finished_ttl_s + store.idle_ttl_s + store.waiting_ttl_s
    pipe = store.redis.pipeline(transaction=False)
    for key in (tenant_key(tenant), *(player_key(tenant, p) for p in players if p)):
        pipe.zadd(key, {match_id: created_at})
        pipe.zremrangebyrank(key, 0, -KEEP - 1)
        pipe.expire(key, ttl)
    pipe.execute()


def page(store: MatchStore, tenant: str, player: str | None, before: float | None, limit: int
         ) -> tuple[list[dict[str, Any]], float | None]:
    """Up to ``limit`` matches, newest first, created before ``before``; and the ``before`` of the next page
    (None when this is the last). Entries whose match expired, or that the player does not sit in, are dropped."""
    key = tenant_key(tenant) if player is None else player_key(tenant, player)
    out: list[dict[str, Any]] = []
    top = "+inf" if before is None else f"({before!r}"
    while len(out) < limit:
        want = limit - len(out)
        rows: list[tuple[Any, float]] = store.redis.zrevrangebyscore(  # type: ignore[assignment]
            key, top, "-inf", start=0, num=want + 1, withscores=True)
        if not rows:
            return out, None
        batch = rows[:want]
        pipe = store.redis.pipeline(transaction=False)
        for member, _ in batch:
            pipe.get(keys(member.decode() if isinstance(member, bytes) else str(member))[1])
        stale = []
        for (member, score), raw in zip(batch, pipe.execute(), strict=True):
            match_id = member.decode() if isinstance(member, bytes) else str(member)
            meta = decode_meta(raw) if raw else None
            seat = _seat_of(meta, player) if meta is not None else None
            if meta is None or meta.tenant != tenant or (player is not None and seat is None):
                stale.append(match_id)
                continue
            out.append(summary(match_id, meta, seat, score))
        if stale:
            store.redis.zrem(key, *stale)
        top = f"({batch[-1][1]!r}"
        if len(rows) <= want:
            return out, None
    return out, float(top[1:])


def _seat_of(meta: MatchMeta, player: str | None) -> int | None:
    if player is None:
        return None
    return next((i for i, s in enumerate(meta.seats) if s.player == player), None)


def summary(match_id: str, meta: MatchMeta, seat: int | None, created_at: float) -> dict[str, Any]:
    return {"id": match_id, "game": meta.game, "players": meta.players, "status": meta.status,
            "created_at": created_at, "seat": seat,
            "seats": [{"seat": i, "kind": s.kind, "player": s.player} for i, s in enumerate(meta.seats)],
            "result": meta.result, "outcome": meta.outcome.doc() if meta.outcome is not None else None}
