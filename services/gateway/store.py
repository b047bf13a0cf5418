"""The Redis match store.

One key family per match, all with the hash tag ``{id}`` so a match lives in one Redis Cluster slot:

* ``match:{id}:version`` — integer, bumped by every update;
* ``match:{id}:meta``    — JSON: game, players, options, seed, seats (token hashes), status, to_act, result;
* ``match:{id}:state``   — the engine's state bytes (opaque here; only the rules service reads them);
* ``match:{id}:log``     — one JSON entry per version: who did what, and who is to act after it;
* ``match:{id}:events``  — a stream with one entry per version (id ``<version>-1``) for long-polls and SSE,
  with ``wake`` = ``<status>:<seats to act>`` so an ``until=turn`` long-poll can decide from the stream alone;
* ``match:{id}:idem:<key>`` — the stored response of an ``Idempotency-Key`` request;
* ``match:{id}:presence`` — hash seat -> until when the seat counts as connected (not versioned: being
  online is not a change of the match);
* ``match:{id}:derived`` — what the rules service derived from the current state when it made it: every
  seat's view (``view:<seat>``, ``view:-1`` the spectator's) and the legal moves of the seats to act
  (``legal:<seat>``), with ``at`` = the version that wrote the state. Reads then need no rules call;
  the compare-and-set replaces the hash together with the state, so it can never describe another one.

Seat-clock deadlines of every match are indexed in one sorted set, ``{clock}:deadlines`` (member
``<id>|<seat>|<turn>``, score = due time), with ``{clock}:leases`` holding the ones a timekeeper is
working on (see ``services/timekeeper``). The index is written *before* the compare-and-set that
starts a clock: an entry whose update lost the race is simply found stale, while the opposite order
could lose a deadline if the process died between the two writes.

Every match is also indexed in ``{idle}:matches`` (score = when it is due for an idle check) from its
creation on: the timekeeper finishes an active match with no human action for ``MEEPLE_IDLE_MATCH_TTL``
as abandoned (``meta["human_at"]`` is the last human action), so no match lives forever.

``stats:matches`` (a hash, outside every match's slot) counts matches per ``<status>:<game>`` for the metrics.

Every update is one Lua script: compare the version, write everything, bump the version, append the log
and the event — atomically, so concurrent gateways can never lose or duplicate a move.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
import redis

from . import quotas, webhooks
from .config import GatewayConfig

KEY_SUFFIXES = ("version", "meta", "state", "log", "events", "derived")
#: Per-game match counters: ``active:<game>`` now, ``created|finished:<game>`` ever.
MATCH_STATS_KEY = "stats:matches"
DEADLINES_KEY = "{clock}:deadlines"
#: How long the response of an ``Idempotency-Key`` request is kept for a retry.
IDEMPOTENCY_TTL_S = 24 * 3600
LEASES_KEY = "{clock}:leases"
IDLE_KEY = "{idle}:matches"
IDLE_LEASES_KEY = "{idle}:leases"
#: How long the answer to "is the store full?" is reused (one INFO call a second per process at most).
ROOM_CHECK_EVERY_S = 1.0

#: Move due deadlines to the lease set (due again at ``lease_until``) and return them; expired leases
#: (a timekeeper died holding them) return to the deadlines first. One script, so two timekeepers
#: never take the same entry.
_CLAIM = """
local back = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(back) do
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZADD', KEYS[1], ARGV[1], m)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], ARGV[2], m)
end
return due
"""

#: KEYS[8], when given, is the match's webhook outbox and the last ARGV the record to append to it.
_CAS = """
local v = tonumber(redis.call('GET', KEYS[1]) or '-1')
if v ~= tonumber(ARGV[1]) then return {0, v} end
local nv = v + 1
local last = #ARGV
if KEYS[8] then last = last - 1 end
redis.call('SET', KEYS[1], nv)
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[3], ARGV[3])
  redis.call('DEL', KEYS[6])
  if last > 8 then redis.call('HSET', KEYS[6], 'at', nv, unpack(ARGV, 9, last)) end
end
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', 1000, nv .. '-1', 'version', nv, 'wake', ARGV[6])
if ARGV[7] ~= '' then redis.call('SET', KEYS[7], ARGV[7], 'EX', ARGV[8], 'NX') end
if KEYS[8] then redis.call('XADD', KEYS[8], '*', 'record', ARGV[#ARGV]) end
local ttl = tonumber(ARGV[5])
for i = 1, #KEYS do
  if i ~= 7 then
    if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
end
return {1, nv}
"""


def idem_key(match_id: str, key: str) -> str:
    return f"match:{{{match_id}}}:idem:{key}"


def keys(match_id: str) -> list[str]:
    return [f"match:{{{match_id}}}:{suffix}" for suffix in KEY_SUFFIXES]


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token(seat: int) -> str:
    """``<seat>.<secret>``: the seat is no secret, and knowing it before the match is loaded lets the one
    round trip that loads the match fetch that seat's view too (the secret part is what is checked)."""
    return f"{seat}.{secrets.token_urlsafe(32)}"


def seat_hint(token: str | None) -> int | None:
    """The seat a token claims (unverified: :meth:`Match.seat_of` checks the token itself)."""
    head, dot, _ = (token or "").partition(".")
    return int(head) if dot and head.isdigit() and len(head) <= 2 else None


def new_match_id() -> str:
    """12 URL-safe letters and digits (no '-' or '_', so ids read well in URLs and logs)."""
    return secrets.token_urlsafe(9).replace("-", "a").replace("_", "b")


def presence_key(match_id: str) -> str:
    return f"match:{{{match_id}}}:presence"


@dataclass
class Match:
    id: str
    version: int
    meta: dict[str, Any]
    state: bytes
    #: seat -> wall-clock time until which the seat counts as connected
    presence: dict[int, float] = field(default_factory=dict)
    #: documents derived from ``state`` that were loaded with it (``view:<seat>``, ``legal:<seat>``)
    derived: dict[str, bytes] = field(default_factory=dict)
    #: log entries after the version a reader asked for (``log_from``), loaded with the match
    tail: list[dict[str, Any]] | None = None

    @property
    def game(self) -> str:
        return str(self.meta["game"])

    def seat_of(self, token: str | None) -> int | None:
        if not token:
            return None
        digest = hash_token(token)
        for seat, info in enumerate(self.meta["seats"]):
            if info.get("token_hash") and secrets.compare_digest(info["token_hash"], digest):
                return seat
        return None


#: Makes the response an update stores for its ``Idempotency-Key``: (key, record) from the updated match.
Remember = Callable[[Match], tuple[str, dict[str, Any]]]


class StaleVersion(Exception):
    def __init__(self, current: int) -> None:
        super().__init__(f"match is at version {current}")
        self.current = current


class MatchStore:
    def __init__(self, client: redis.Redis, finished_ttl_s: int, waiting_ttl_s: int,
                 idle_ttl_s: int = 7 * 24 * 3600) -> None:
        self.redis = client
        self.finished_ttl_s, self.waiting_ttl_s, self.idle_ttl_s = finished_ttl_s, waiting_ttl_s, idle_ttl_s
        self._cas = client.register_script(_CAS)
        self._claim = client.register_script(_CLAIM)
        self._room: tuple[float, float] = (0.0, 0.0)  # (checked at, used share of maxmemory)

    @classmethod
    def from_config(cls, client: redis.Redis, config: GatewayConfig) -> MatchStore:
        """The store as every process that shares it must see it: the TTLs come from the one config."""
        return cls(client, config.finished_ttl_s, config.waiting_ttl_s, config.idle_match_ttl_s)

    def quota_until(self, status: str, now: float) -> float:
        """When a match's quota charge lapses at the latest (it is released when the match finishes)."""
        return now + (self.waiting_ttl_s if status == "waiting" else self.idle_ttl_s + self.waiting_ttl_s)

    def used_share(self) -> float:
        """How full Redis is: ``used_memory / maxmemory`` (0 without a ``maxmemory``), refreshed each second."""
        checked, share = self._room
        if time.monotonic() - checked < ROOM_CHECK_EVERY_S:
            return share
        info: Any = self.redis.info("memory")
        limit = int(info.get("maxmemory") or 0)
        share = int(info.get("used_memory") or 0) / limit if limit > 0 else 0.0
        self._room = (time.monotonic(), share)
        return share

    def ttl_for(self, status: str) -> int:
        if status == "finished":
            return self.finished_ttl_s
        if status == "waiting":
            return self.waiting_ttl_s
        return 0

    def create(self, match_id: str, meta: dict[str, Any], state: bytes, derived: dict[str, str] | None = None) -> Match:
        meta = {**meta, "id": match_id, "created_at": time.time()}
        entry = {"version": 0, "kind": "created", "seat": None, "to_act": meta["to_act"], "at": time.time()}
        # Indexed before it exists (as clock deadlines are): a crash in between leaves a stale entry, never
        # a match without a lifetime.
        self.redis.zadd(IDLE_KEY, {match_id: meta["created_at"] + self.idle_ttl_s})
        # Version -1 -> 0: the creation itself, with the TTL of its status (a waiting match expires).
        ok, version = self._compare_and_set(match_id, -1, meta, state, entry, derived,
                                            events=webhooks.events_of(None, meta, entry))
        assert ok == 1
        self.count_transition(meta["game"], None, meta["status"], meta)
        return Match(match_id, int(version), meta, state)

    def load(self, match_id: str, fields: tuple[str, ...] = (), log_from: int | None = None) -> Match | None:
        """The match, with the derived documents ``fields`` and the log entries from ``log_from`` on."""
        pipe = self.redis.pipeline(transaction=True)
        _queue_reads(pipe, match_id, fields, log_from)
        return _read(match_id, pipe.execute(), fields, log_from)

    def load_counted(self, match_id: str, ident: str, idempotency_key: str | None = None,
                     fields: tuple[str, ...] = (), log_from: int | None = None, window_s: int = 60
                     ) -> tuple[Match | None, tuple[int, int], dict[str, Any] | None]:
        """One round trip for what every match request starts with: count the caller's request (see
        :meth:`hit`), load the match as :meth:`load` does, and fetch the stored response of
        ``idempotency_key`` if given. MULTI/EXEC, so what is read is one version of the match."""
        key, reset = _window(ident, window_s)
        pipe = self.redis.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, window_s)
        if idempotency_key is not None:
            pipe.get(idem_key(match_id, idempotency_key))
        _queue_reads(pipe, match_id, fields, log_from)
        replies = pipe.execute()
        count, done = replies[0], None
        if idempotency_key is not None:
            done = orjson.loads(replies[2]) if replies[2] else None
        match = _read(match_id, replies[3 if idempotency_key is not None else 2:], fields, log_from)
        return match, (int(count), reset), done

    def delete(self, match_id: str, meta: dict[str, Any] | None = None) -> None:
        """Remove a match that never became visible (a rematch that lost its race), and its quota charge."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.delete(*keys(match_id), presence_key(match_id), webhooks.outbox_key(match_id))
        pipe.zrem(IDLE_KEY, match_id)
        if meta is not None and meta.get("owner"):
            quotas.release(pipe, meta["owner"], match_id, meta["seats"])
        pipe.execute()

    # -- presence ----------------------------------------------------------------------------------
    def touch(self, match: Match, seat: int, until: float, slack: float = 0.0) -> None:
        """Record that ``seat`` counts as connected at least until ``until``.

        What is written is ``until + slack``, and nothing is written while the stored time is later than
        ``until``: a seat polling every second writes once per ``slack`` seconds, not every second.
        """
        if match.presence.get(seat, 0.0) >= until:
            return
        until += slack
        match.presence[seat] = until
        pipe = self.redis.pipeline(transaction=False)
        pipe.hset(presence_key(match.id), str(seat), f"{until:.3f}")
        pipe.expire(presence_key(match.id), max(self.finished_ttl_s, self.waiting_ttl_s))
        pipe.execute()

    # -- seat-clock deadlines ----------------------------------------------------------------------
    def schedule(self, match_id: str, seat: int, turn: int, due: float) -> None:
        self.redis.zadd(DEADLINES_KEY, {f"{match_id}|{seat}|{turn}": due})

    def claim_due(self, now: float, lease_s: float, count: int = 50) -> list[str]:
        """Deadlines due at ``now``, leased to the caller for ``lease_s`` seconds."""
        due = self._claim(keys=[DEADLINES_KEY, LEASES_KEY], args=[now, now + lease_s, count])
        return [m.decode() if isinstance(m, bytes) else str(m) for m in due]

    def release(self, member: str, due: float | None = None, *, idle: bool = False) -> None:
        """Done with a leased deadline; ``due`` puts it back for later (it was not due yet). ``idle``: an
        entry of the idle-match index instead (see :meth:`claim_idle`)."""
        index, leases = (IDLE_KEY, IDLE_LEASES_KEY) if idle else (DEADLINES_KEY, LEASES_KEY)
        pipe = self.redis.pipeline(transaction=False)
        pipe.zrem(leases, member)
        if due is not None:
            pipe.zadd(index, {member: due})
        pipe.execute()

    def claim_idle(self, now: float, lease_s: float, count: int = 50) -> list[str]:
        """Match ids due for an idle check at ``now``, leased as :meth:`claim_due` leases deadlines."""
        due = self._claim(keys=[IDLE_KEY, IDLE_LEASES_KEY], args=[now, now + lease_s, count])
        return [m.decode() if isinstance(m, bytes) else str(m) for m in due]

    def update(self, match: Match, meta: dict[str, Any], state: bytes | None, entry: dict[str, Any],
               derived: dict[str, str] | None = None, remember: Remember | None = None) -> Match:
        """Compare-and-set from ``match.version``; raises :class:`StaleVersion` if someone was first.

        A new ``state`` comes with the documents derived from it (``derived``); without a state, the
        derived documents of the current one stay. ``remember`` makes the idempotent response from the
        match as it will be, and the same script stores it: a move and its stored response commit together.
        """
        entry = {**entry, "version": match.version + 1, "at": time.time()}
        updated = Match(match.id, match.version + 1, meta, match.state if state is None else state)
        ok, version = self._compare_and_set(match.id, match.version, meta, state, entry,
                                            derived if state is not None else None,
                                            remember(updated) if remember is not None else None,
                                            webhooks.events_of(match.meta, meta, entry))
        if ok != 1:
            raise StaleVersion(int(version))
        self.count_transition(str(meta["game"]), match.meta["status"], meta["status"], meta)
        return updated

    def _compare_and_set(self, match_id: str, version: int, meta: dict[str, Any], state: bytes | None,
                         entry: dict[str, Any], derived: dict[str, str] | None,
                         idempotent: tuple[str, dict[str, Any]] | None = None,
                         events: list[dict[str, Any]] | None = None) -> tuple[int, int]:
        """Run the compare-and-set script: the one place that knows its keys and arguments.

        ``events`` (a tenant's match, see :mod:`.webhooks`) go to the match's outbox in the same script,
        after its pending mark is written."""
        k = keys(match_id)
        idem, record = idempotent if idempotent is not None else (None, None)
        outbox: list[Any] = []
        if events:
            webhooks.mark(self.redis, match_id)
            outbox = [webhooks.outbox_record(match_id, version + 1, meta, events)]
        ok, current = self._cas(keys=[*k, idem_key(match_id, idem) if idem is not None else k[0],
                                      *([webhooks.outbox_key(match_id)] if outbox else [])], args=[
            version, orjson.dumps(meta), state if state is not None else b"", orjson.dumps(entry),
            self.ttl_for(meta["status"]), wake_of(meta), orjson.dumps(record) if record is not None else b"",
            IDEMPOTENCY_TTL_S, *_pairs(derived), *outbox])
        return int(ok), int(current)

    def count_transition(self, game: str, before: str | None, after: str, meta: dict[str, Any] | None = None) -> None:
        """Keep the match counters the metrics read, and the owner's quota charges: one extra round trip,
        only when a status changes.

        Outside the compare-and-set (the hash is in another Cluster slot), so a crash in between can
        leave a count off by one; the matches themselves are never affected.
        """
        if before == after:
            return
        pipe = self.redis.pipeline(transaction=False)
        owner = (meta or {}).get("owner")
        if owner and meta is not None and before is not None:
            if after == "finished":
                quotas.release(pipe, owner, meta["id"], meta["seats"])
            elif after == "active":
                now = time.time()
                quotas.extend(pipe, owner, meta["id"], meta["seats"], now, self.quota_until(after, now))
        if before is None:
            pipe.hincrby(MATCH_STATS_KEY, f"created:{game}", 1)
        if before == "active":
            pipe.hincrby(MATCH_STATS_KEY, f"active:{game}", -1)
        if after == "active":
            pipe.hincrby(MATCH_STATS_KEY, f"active:{game}", 1)
        if after == "finished":
            pipe.hincrby(MATCH_STATS_KEY, f"finished:{game}", 1)
        pipe.execute()

    def derived(self, match: Match, name: str) -> bytes | None:
        """A document derived from the state ``match`` holds, or None (not cached, or a newer state landed)."""
        if name in match.derived:
            return match.derived[name]
        at, doc = self.redis.hmget(keys(match.id)[5], ["at", name])
        if at is None or doc is None or int(at) > match.version:
            return None
        return doc if isinstance(doc, bytes) else str(doc).encode()

    def log(self, match_id: str, start: int = 0, end: int = -1) -> list[dict[str, Any]]:
        return [orjson.loads(raw) for raw in self.redis.lrange(keys(match_id)[3], start, end)]

    def wait_for_version(self, match_id: str, after: int, wait_s: float) -> tuple[int, bytes | None] | None:
        """Block until the match passes version ``after`` (or ``wait_s`` elapses): the newest version then
        and its ``wake``, or None if nothing happened in time."""
        if wait_s <= 0:
            return None
        reply: Any = self.redis.xread({keys(match_id)[4]: f"{after}-1"}, block=max(1, int(wait_s * 1000)))
        if not reply:
            return None
        entry_id, fields = reply[0][1][-1]
        return int(entry_id.split(b"-", 1)[0]), fields.get(b"wake")

    def wait_for_turn(self, match_id: str, seat: int, after: int, wait_s: float) -> None:
        """Block until the match passes version ``after`` with ``seat`` to act or the game over (or ``wait_s``
        elapses). Each version's stream entry carries its ``wake`` (status and seats to act), so versions in
        between (bots or other people moving) cost one stream read here, not an HTTP round trip."""
        deadline = time.monotonic() + wait_s
        while (remaining := deadline - time.monotonic()) > 0.001:
            newest = self.wait_for_version(match_id, after, remaining)
            if newest is None:
                return  # waited long enough
            after, wake = newest
            if wake is None or your_turn_or_over(*parse_wake(wake), seat):
                return  # (an entry without ``wake`` predates it: let the caller look)

    # -- idempotency -------------------------------------------------------------------------------
    def idempotent_get(self, match_id: str, key: str) -> dict[str, Any] | None:
        raw = self.redis.get(idem_key(match_id, key))
        return orjson.loads(raw) if raw else None

    def idempotent_put(self, match_id: str, key: str, record: dict[str, Any]) -> None:
        """Store a response that changed nothing (a rejected move); an applied one is stored by :meth:`update`."""
        self.redis.set(idem_key(match_id, key), orjson.dumps(record), ex=IDEMPOTENCY_TTL_S, nx=True)

    # -- rate limiting -------------------------------------------------------------------------------
    def hit(self, ident: str, window_s: int = 60) -> tuple[int, int]:
        """Fixed-window counter: (requests in this window, seconds until it resets)."""
        key, reset = _window(ident, window_s)
        pipe = self.redis.pipeline()
        pipe.incr(key)
        pipe.expire(key, window_s)
        count, _ = pipe.execute()
        return int(count), reset

    def move_hit(self, source: str, target: str, drop: bool, window_s: int = 60) -> tuple[int, int]:
        """Take back one request counted for ``source`` (dropping its key if that was its only one) and
        count it for ``target`` instead; returns ``target``'s count and reset as :meth:`hit` does."""
        source_key, _ = _window(source, window_s)
        key, reset = _window(target, window_s)
        pipe = self.redis.pipeline(transaction=False)
        if drop:
            pipe.delete(source_key)
        else:
            pipe.decr(source_key)
        pipe.incr(key)
        pipe.expire(key, window_s)
        count = pipe.execute()[1]
        return int(count), reset


def wake_of(meta: dict[str, Any]) -> str:
    """What a waiting reader needs of a version, in its stream entry: ``active:0,2``."""
    return f"{meta['status']}:{','.join(map(str, meta['to_act']))}"


def parse_wake(wake: bytes) -> tuple[str, list[int]]:
    """``active:0,2`` -> ("active", [0, 2]): the status and the seats to act (see :func:`wake_of`)."""
    status, _, seats = wake.decode().partition(":")
    return status, [int(s) for s in seats.split(",") if s]


def your_turn_or_over(status: str, to_act: list[int], seat: int) -> bool:
    """What ``until=turn`` waits for: the seat must decide, or the match is finished."""
    return status == "finished" or (status == "active" and seat in to_act)


def _pairs(derived: dict[str, str] | None) -> list[str]:
    return [item for pair in (derived or {}).items() for item in pair]


def _window(ident: str, window_s: int) -> tuple[str, int]:
    """The fixed-window counter's key for ``ident`` now, and the seconds until the window resets."""
    now = time.time()
    return f"ratelimit:{{{ident}}}:{int(now // window_s)}", window_s - int(now) % window_s


def _queue_reads(pipe: Any, match_id: str, fields: tuple[str, ...], log_from: int | None) -> None:
    k = keys(match_id)
    pipe.mget(k[:3])
    pipe.hgetall(presence_key(match_id))
    if fields:
        pipe.hmget(k[5], ["at", *fields])
    if log_from is not None:
        pipe.lrange(k[3], log_from, -1)


def _read(match_id: str, replies: list[Any], fields: tuple[str, ...], log_from: int | None) -> Match | None:
    (version, meta, state), presence, *rest = replies
    match = _match(match_id, version, meta, state, presence)
    if match is None:
        return None
    if fields:
        at, *docs = rest.pop(0)
        if at is not None and int(at) <= match.version:  # always, inside MULTI; a guard all the same
            match.derived = {name: doc for name, doc in zip(fields, docs, strict=True) if doc is not None}
    if log_from is not None:
        match.tail = [orjson.loads(raw) for raw in rest.pop(0)]
    return match


def _match(match_id: str, version: Any, meta: Any, state: Any, presence: dict[Any, Any]) -> Match | None:
    if version is None or meta is None:
        return None
    return Match(match_id, int(version), orjson.loads(meta), state if isinstance(state, bytes) else b"",
                 {int(seat): float(until) for seat, until in presence.items()})
