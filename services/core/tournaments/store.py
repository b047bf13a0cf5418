"""Where tournaments live in Redis: one slot per tournament, a sharded index of due work with leases.

Keys of tournament ``<id>`` (all with the hash tag ``{tour:<id>}``, so its scripts and transactions touch
one Redis Cluster slot):

* ``{tour:<id>}:doc`` -- the state document (:mod:`.machine`), JSON;
* ``{tour:<id>}:v`` -- its version, bumped by every save (compare-and-set);
* ``{tour:<id>}:status`` -- ``registering`` / ``running`` / ``finished`` / ``cancelled``, written with the
  document, so registration checks it without reading the whole document;
* ``{tour:<id>}:players`` -- hash, player -> JSON ``{registered_at, withdrawn}`` (registrations: the machine
  only reads them);
* ``{tour:<id>}:outbox`` -- stream of webhook events not yet handed to the core, appended by the very script
  that saves the state that makes them (an event exists if and only if its state does).

``tours:{<tenant>}`` (sorted set, id -> created_at) lists a tenant's tournaments; it is written before the
document, so a crash between leaves an entry that reads drop, never a tournament missing from the list.

**Due work.** ``tourdue:{<tag>}:due`` / ``tourdue:{<tag>}:leases`` (:data:`DUE_SHARDS`: 8 tags from
``redisconn.spread_tags``, spread over a cluster's primaries; a tournament in the shard of its id): the due
set holds each live tournament scored by when it must be looked at; a runner *claims* due ones with one
script that moves them to the lease set, scored by when the lease runs out, and puts leases that ran out back
first -- the timekeeper's pattern, so a runner that dies loses nothing: its tournaments come back after
``lease_s``. A match that finishes wakes its tournament (:func:`wake`: due now).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

import orjson

from services import redisconn
from services.core.competition.due import DUE_SHARDS, SHARDS, due_keys, schedule, wake
from services.core.errors import Kind
from services.core.record.leases import Leases
from services.core.tenancy import quotas, tenants
from services.core.tournaments.machine import TournamentError, new, reservation, settings

__all__ = ["DUE_SHARDS", "SHARDS", "due_keys", "schedule", "wake"]  # the due index, kept in .due

#: A finished tournament is kept this long, then its keys expire.
KEEP_FINISHED_S = 90 * 86400

#: Save a new state if the version is still ARGV[1]; append ARGV[5..] (event id, event) to the outbox.
#: KEYS: doc, v, status, outbox, players. ARGV: version, doc, status, ttl (0: none), events...
_SAVE = """
local v = tonumber(redis.call('GET', KEYS[2]) or '-1')
if v ~= tonumber(ARGV[1]) then return {0, v} end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('SET', KEYS[2], v + 1)
for i = 5, #ARGV, 2 do redis.call('XADD', KEYS[4], '*', 'id', ARGV[i], 'event', ARGV[i + 1]) end
local ttl = tonumber(ARGV[4])
if ttl > 0 then
  for i = 1, #KEYS do redis.call('EXPIRE', KEYS[i], ttl) end
end
return {1, v + 1}
"""

#: Register ARGV[1] (doc ARGV[2]) while the status allows it and there is room (ARGV[3] players at most);
#: ARGV[4] = 1 also while running (an arena). A player registered already, not withdrawn and not absent since
#: (ARGV[5]: when the state marked them absent, -1: never), is left as is: returns 2 with their entry. Else 1, or 0
#: with the reason.
_REGISTER = """
local status = redis.call('GET', KEYS[1])
if not status then return {0, 'not_found'} end
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then
  local entry = cjson.decode(old)
  if not entry['withdrawn'] and tonumber(ARGV[5]) < tonumber(entry['registered_at']) then return {2, old} end
end
if status ~= 'registering' and not (status == 'running' and ARGV[4] == '1') then return {0, 'closed'} end
if not old and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[3]) then
  return {0, 'full'}
end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {1, ''}
"""

#: Unregister ARGV[1]: removed before the start, withdrawn (ARGV[2] the document) after it.
_UNREGISTER = """
local status = redis.call('GET', KEYS[1])
if not status then return {0, 'not_found'} end
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return {0, 'not_registered'} end
if status == 'registering' then redis.call('HDEL', KEYS[2], ARGV[1]) return {1, 'removed'} end
if status ~= 'running' then return {0, 'closed'} end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return {1, 'withdrawn'}
"""

class StaleState(Exception):
    """Someone saved the tournament first: load it again."""


def keys(tournament_id: str) -> dict[str, str]:
    tag = f"{{tour:{tournament_id}}}"
    return {name: f"{tag}:{name}" for name in ("doc", "v", "status", "outbox", "players")}


def tenant_index(tenant: str) -> str:
    return f"tours:{{{tenant}}}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def new_id() -> str:
    return secrets.token_urlsafe(9).replace("-", "a").replace("_", "b")


def create(client: Any, tenant: str, body: Mapping[str, Any], now: float | None = None,
           tournament_id: str | None = None) -> dict[str, Any]:
    """A new tournament of ``tenant`` from the request ``body`` (checked by :func:`.machine.settings`)."""
    now = time.time() if now is None else now
    tournament_id = tournament_id or new_id()
    doc = new(tournament_id, tenant, settings(body, now), now)
    client.zadd(tenant_index(tenant), {tournament_id: now})  # before the document: see the module docstring
    save(client, tournament_id, -1, doc, [])
    schedule(client, tournament_id, doc["starts_at"])
    return doc


def load(client: Any, tournament_id: str) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]] | None:
    """(version, state, registrations), read together (one slot: MULTI/EXEC), or None."""
    k = keys(tournament_id)

    def queue(pipe: Any) -> None:
        pipe.get(k["v"])
        pipe.get(k["doc"])
        pipe.hgetall(k["players"])

    version, raw, players = redisconn.on_slot(client, k["doc"], queue)
    if version is None or raw is None:
        return None
    return int(version), orjson.loads(raw), {_text(p): orjson.loads(v) for p, v in players.items()}


def get(client: Any, tenant: str, tournament_id: str) -> tuple[int, dict[str, Any], dict[str, dict[str, Any]]]:
    """The tenant's tournament; another tenant's, or none: not_found (the same answer)."""
    found = load(client, tournament_id) if plausible(tournament_id) else None
    if found is None or found[1]["tenant"] != tenant:
        raise TournamentError(Kind.NOT_FOUND, "tournament_not_found", "no such tournament")
    return found


def plausible(tournament_id: str) -> bool:
    """Could this be a tournament id (else it is unknown without a lookup)?"""
    return 1 <= len(tournament_id) <= 64 and bool(tenants.NAME_RE.match(tournament_id))


def save(client: Any, tournament_id: str, version: int, doc: Mapping[str, Any],
         events: list[tuple[str, dict[str, Any]]]) -> int:
    """Store ``doc`` if the stored version is still ``version`` (-1: not created yet), with its ``events``
    appended to the outbox in the same script; returns the new version or raises :class:`StaleState`."""
    k = keys(tournament_id)
    over = doc["status"] in ("finished", "cancelled")
    args: list[Any] = [version, orjson.dumps(doc), doc["status"], KEEP_FINISHED_S if over else 0]
    for event_id, event in events:
        args += [event_id, orjson.dumps(event)]
    ok, current = redisconn.on_slot(client, k["doc"], lambda pipe: pipe.eval(
        _SAVE, 5, k["doc"], k["v"], k["status"], k["outbox"], k["players"], *args))[0]
    if int(ok) != 1:
        raise StaleState(f"tournament {tournament_id} is at version {current}")
    if over:  # what it held of its tenant's quota (see .machine.reservation); lapses by itself otherwise
        quotas.unreserve(client, tenants.owner_of(doc["tenant"]), reservation(tournament_id, doc)[0])
    return int(current)


def register(client: Any, tenant: str, tournament_id: str, player: str, now: float | None = None) -> dict[str, Any]:
    """Register ``player``: Swiss before the start, an arena until it ends. Again: a withdrawn or absent player
    comes back (a new registration); a player registered and neither is left as is, and their registration is
    answered (a retry is safe whenever it arrives)."""
    now = time.time() if now is None else now
    if not tenants.NAME_RE.match(player):
        raise TournamentError(Kind.MALFORMED, "bad_player", "player must be 1-64 characters: letters, digits and . _ : "
                              "@ - (not first)")
    _, doc, _ = get(client, tenant, tournament_id)
    k = keys(tournament_id)
    entry = {"registered_at": now, "withdrawn": False}
    ok, why = redisconn.on_slot(client, k["doc"], lambda pipe: pipe.eval(
        _REGISTER, 2, k["status"], k["players"], player, orjson.dumps(entry), doc["max_players"],
        "1" if doc["format"]["kind"] == "arena" else "0", repr(float(doc["absent"].get(player, -1.0)))))[0]
    if int(ok) == 2:
        return {"player": player, **orjson.loads(why)}
    if int(ok) != 1:
        reason = _text(why)
        if reason == "not_found":
            raise TournamentError(Kind.NOT_FOUND, "tournament_not_found", "no such tournament")
        if reason == "full":
            raise TournamentError(Kind.CONFLICT, "tournament_full", f"the tournament is full ({doc['max_players']} "
                                  "players)")
        raise TournamentError(Kind.CONFLICT, "registration_closed", "registration is closed")
    wake(client, tournament_id)  # an arena pairs a new player at once
    return {"player": player, **entry}


def unregister(client: Any, tenant: str, tournament_id: str, player: str, now: float | None = None) -> str:
    """``removed`` (before the start) or ``withdrawn`` (after: points kept, not paired again)."""
    now = time.time() if now is None else now
    get(client, tenant, tournament_id)
    k = keys(tournament_id)
    ok, what = redisconn.on_slot(client, k["doc"], lambda pipe: pipe.eval(
        _UNREGISTER, 2, k["status"], k["players"], player, orjson.dumps({"registered_at": now, "withdrawn": True})))[0]
    if int(ok) != 1:
        reason = _text(what)
        if reason == "not_registered":
            raise TournamentError(Kind.NOT_FOUND, "player_not_registered", f"{player!r} is not registered")
        if reason == "not_found":
            raise TournamentError(Kind.NOT_FOUND, "tournament_not_found", "no such tournament")
        raise TournamentError(Kind.CONFLICT, "tournament_over", "the tournament is over")
    return _text(what)


def listing(client: Any, tenant: str, limit: int = 20, before: float | None = None
            ) -> tuple[list[dict[str, Any]], float | None]:
    """The tenant's tournaments, newest first: summaries, and the ``before`` of the next page (None: last)."""
    top = "+inf" if before is None else f"({before!r}"
    rows = client.zrevrangebyscore(tenant_index(tenant), top, "-inf", start=0, num=limit + 1, withscores=True)
    out, stale = [], []
    for member, score in rows[:limit]:
        tournament_id = _text(member)
        found = load(client, tournament_id)
        if found is None or found[1]["tenant"] != tenant:
            stale.append(tournament_id)
            continue
        doc, players = found[1], found[2]
        out.append({"id": tournament_id, "name": doc["name"], "game": doc["game"], "format": doc["format"]["kind"],
                    "status": doc["status"], "starts_at": doc["starts_at"], "registered": len(players),
                    "created_at": score})
    if stale:
        client.zrem(tenant_index(tenant), *stale)
    nxt = float(rows[limit - 1][1]) if len(rows) > limit else None
    return out, nxt


def outbox(client: Any, tournament_id: str, count: int = 100) -> list[tuple[str, str, dict[str, Any]]]:
    """Events saved and not yet handed over: (stream entry id, event id, event), oldest first."""
    rows = client.xrange(keys(tournament_id)["outbox"], "-", "+", count=count)
    return [(_text(entry), _text(fields[b"id"]), orjson.loads(fields[b"event"])) for entry, fields in rows]


def ack(client: Any, tournament_id: str, entries: list[str]) -> None:
    if entries:
        client.xdel(keys(tournament_id)["outbox"], *entries)


# -- due work ---------------------------------------------------------------------------------------------------
def claim(client: Any, now: float, lease_s: float, count: int = 20) -> list[str]:
    """Tournaments due at ``now``, leased for ``lease_s``."""
    return [member for _, member in Leases(client).claim_shards(DUE_SHARDS, now, lease_s, count)]


def release(client: Any, tournament_id: str, due: float | None) -> None:
    """Done with a leased tournament; ``due``: when to look again (None: it is over)."""
    index, leases = due_keys(tournament_id)

    def queue(pipe: Any) -> None:
        pipe.zrem(leases, tournament_id)
        if due is not None:
            pipe.zadd(index, {tournament_id: due}, lt=True)

    redisconn.on_slot(client, index, queue)
