"""The Redis match store.

One key family per match, all with the hash tag ``{id}`` so a match lives in one Redis Cluster slot:

* ``match:{id}:version`` — integer, bumped by every update;
* ``match:{id}:meta``    — JSON: game, players, options, seed, seats (token hashes), status, to_act, result
  (:class:`~services.core.meta.MatchMeta`, every key named and typed);
* ``match:{id}:state``   — the engine's state bytes (opaque here; only the rules service reads them);
* ``match:{id}:log``     — one JSON entry per version: who did what, and who is to act after it;
* ``match:{id}:events``  — a stream with one entry per version (id ``<version>-1``) for long-polls and SSE,
  with ``wake`` = ``<status>:<seats to act>`` so an ``until=turn`` long-poll can decide from the stream alone;
* ``match:{id}:idem:<key>`` — the stored response of an ``Idempotency-Key`` request;
* ``match:{id}:presence`` — hash seat -> until when the seat counts as connected (not versioned: being
  online is not a change of the match);
* ``match:{id}:chat``, ``match:{id}:chat:events`` — the match's chat and its topic (:mod:`.chat`): not
  versioned (chat never changes the match's version), but given the match's TTL by every update;
* ``match:{id}:derived`` — what the rules service derived from the current state when it made it: every
  seat's view (``view:<seat>``, ``view:-1`` the spectator's) and the legal moves of the seats to act
  (``legal:<seat>``), with ``at`` = the version that wrote the state. Reads then need no rules call;
  the compare-and-set replaces the hash together with the state, so it can never describe another one.

Seat-clock deadlines are indexed in sorted sets ``clock:{<shard>}:deadlines`` (member
``<id>|<seat>|<turn>``, score = due time), with ``clock:{<shard>}:leases`` holding the ones a timekeeper is
working on (see ``services/timekeeper``). The index is written *before* the compare-and-set that
starts a clock: an entry whose update lost the race is simply found stale, while the opposite order
could lose a deadline if the process died between the two writes.

Every match is also indexed for an idle check (score = when it is due) from its creation on, in the
``idle:{<shard>}:matches`` shard of its id: the timekeeper finishes an active match with no human action for
``MEEPLE_IDLE_MATCH_TTL`` as abandoned (``meta.human_at`` is the last human action), so no match lives forever.

``stats:{<shard>}:matches`` (hashes, outside every match's slot) count matches per ``<status>:<game>`` for
the metrics; a match counts in the shard of its id.

Structures shared by every match are split into :data:`SHARDS` keys whose hash tags fall in equal parts
of the slot range (``services.redisconn.spread_tags``): on a Redis Cluster they spread over the primaries,
and each script still touches one slot (a shard's index and leases share its tag).

Every update is one Lua script: compare the version, write everything, bump the version, append the log
and the event — atomically, so concurrent gateways can never lose or duplicate a move.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import orjson
import redis

from services import redisconn
from services.core.config import Config
from services.core.meta import MatchMeta, decode_meta, encode_meta
from services.core.record.leases import Leases
from services.core.tenancy import webhooks

KEY_SUFFIXES = ("version", "meta", "state", "log", "events", "derived")
#: How many keys each shared structure is split into (fixed: every process must agree on it).
SHARDS = 8
#: Per-game match counters: ``active:<game>`` now, ``created|finished:<game>`` ever (one hash per shard).
MATCH_STATS_KEYS = tuple(f"stats:{{{tag}}}:matches" for tag in redisconn.spread_tags("s", SHARDS))
#: (deadlines, leases) of each shard: a claim script touches one pair, so one slot.
DEADLINE_SHARDS = tuple((f"clock:{{{tag}}}:deadlines", f"clock:{{{tag}}}:leases")
                        for tag in redisconn.spread_tags("c", SHARDS))
#: How long the response of an ``Idempotency-Key`` request is kept for a retry.
IDEMPOTENCY_TTL_S = 24 * 3600
#: (idle index, leases) of each shard, claimed like the deadlines.
IDLE_SHARDS = tuple((f"idle:{{{tag}}}:matches", f"idle:{{{tag}}}:leases") for tag in redisconn.spread_tags("i", SHARDS))
#: How long the answer to "is the store full?" is reused (one INFO call a second per process at most).
ROOM_CHECK_EVERY_S = 1.0
#: How often the store looks again whether a match's primary has a replica to ``WAIT`` for.
REPLICA_CHECK_S = 5.0
#: Matches whose last update this process committed, kept with what a push reads (see :meth:`MatchStore.load_next`).
RECENT_MATCHES = 256

#: KEYS[8] and KEYS[9] are the match's chat keys (:func:`chat_keys`: they only take the match's TTL here);
#: KEYS[10], when given, is the match's webhook outbox and the last ARGV the record to append to it.
_CAS = """
local v = tonumber(redis.call('GET', KEYS[1]) or '-1')
if v ~= tonumber(ARGV[1]) then return {0, v} end
local nv = v + 1
local last = #ARGV
if KEYS[10] then last = last - 1 end
redis.call('SET', KEYS[1], nv)
redis.call('SET', KEYS[2], ARGV[2])
if ARGV[3] ~= '' then
  redis.call('SET', KEYS[3], ARGV[3])
  redis.call('DEL', KEYS[6])
  if last > 8 then redis.call('HSET', KEYS[6], 'at', nv, unpack(ARGV, 9, last)) end
end
redis.call('RPUSH', KEYS[4], ARGV[4])
redis.call('XADD', KEYS[5], 'MAXLEN', '~', 1000, nv .. '-1', 'version', nv, 'wake', ARGV[6])
redis.call('PUBLISH', 'meeple:events', KEYS[5] .. ' ' .. nv .. ' ' .. ARGV[6])
if ARGV[7] ~= '' then redis.call('SET', KEYS[7], ARGV[7], 'EX', ARGV[8], 'NX') end
if KEYS[10] then redis.call('XADD', KEYS[10], '*', 'record', ARGV[#ARGV]) end
local ttl = tonumber(ARGV[5])
for i = 1, #KEYS do
  if i ~= 7 then
    if ttl > 0 then redis.call('EXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
  end
end
return {1, nv}
"""


#: Where every event stream's new entry is also announced (``<key> <version> <wake>``): a cluster's hub
#: subscribes here instead of XREADing streams of many slots (see ``hub.py``).
EVENTS_CHANNEL = "meeple:events"


def events_key(match_id: str) -> str:
    """The match's event stream: one entry per version, id ``<version>-1``, with its ``wake``."""
    return f"match:{{{match_id}}}:events"


def chat_keys(match_id: str) -> tuple[str, str]:
    """The match's chat: its messages (a list) and its topic (a stream of changes), see :mod:`.chat`."""
    return f"match:{{{match_id}}}:chat", f"match:{{{match_id}}}:chat:events"


def version_key(match_id: str) -> str:
    """The match's version: what a chat write copies the match's TTL from."""
    return keys(match_id)[0]


def idem_key(match_id: str, key: str) -> str:
    return f"match:{{{match_id}}}:idem:{key}"


def keys(match_id: str) -> list[str]:
    return [f"match:{{{match_id}}}:{suffix}" for suffix in KEY_SUFFIXES]


def deadline_keys(match_id: str) -> tuple[str, str]:
    """(deadlines, leases) of the shard that indexes ``match_id``'s clock deadlines."""
    return DEADLINE_SHARDS[redisconn.shard_of(match_id, SHARDS)]


def idle_keys(match_id: str) -> tuple[str, str]:
    """(index, leases) of the shard that indexes ``match_id`` for its idle check."""
    return IDLE_SHARDS[redisconn.shard_of(match_id, SHARDS)]


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
    meta: MatchMeta
    state: bytes
    #: seat -> wall-clock time until which the seat counts as connected
    presence: dict[int, float] = field(default_factory=dict)
    #: documents derived from ``state`` that were loaded with it (``view:<seat>``, ``legal:<seat>``)
    derived: dict[str, bytes] = field(default_factory=dict)
    #: log entries after the version a reader asked for (``log_from``), loaded with the match
    tail: list[dict[str, Any]] | None = None
    #: (the chat topic's position, the newest chat message id), loaded with the match when asked for (``chat``)
    chat_cursor: tuple[int, int] | None = None

    @property
    def game(self) -> str:
        return self.meta.game

    def seat_of(self, token: str | None) -> int | None:
        if not token:
            return None
        digest = hash_token(token)
        for seat, info in enumerate(self.meta.seats):
            if info.token_hash and secrets.compare_digest(info.token_hash, digest):
                return seat
        return None


#: Makes the response an update stores for its ``Idempotency-Key``: (key, record) from the updated match.
Remember = Callable[[Match], tuple[str, dict[str, Any]]]


class NotReplicated(redis.exceptions.ConnectionError):
    """The update is on the primary but no replica confirmed it in time: not acknowledged (503).

    A retry with the same ``Idempotency-Key`` returns the stored response if the update survived.
    """


class StaleVersion(Exception):
    def __init__(self, current: int) -> None:
        super().__init__(f"match is at version {current}")
        self.current = current


class MatchStore:
    def __init__(self, client: Any, finished_ttl_s: int, waiting_ttl_s: int, idle_ttl_s: int = 7 * 24 * 3600,
                 wait_replicas: int = -1, wait_ms: int = 500) -> None:
        self.redis = client
        self.cluster = redisconn.is_cluster(client)
        self.finished_ttl_s, self.waiting_ttl_s, self.idle_ttl_s = finished_ttl_s, waiting_ttl_s, idle_ttl_s
        #: replicas an update waits for (``WAIT``): -1 = one if the match's primary has any, else none
        self.wait_replicas, self.wait_ms = wait_replicas, wait_ms
        self._replicas: tuple[float, int] | None = None  # (checked at, count) on a single server
        self._cas = client.register_script(_CAS)
        self.leases = Leases(client)
        self._claim_from = {"deadlines": 0, "idle": 0}  # the shard each kind's next claim starts at
        self._room: tuple[float, float] = (0.0, 0.0)  # (checked at, used share of maxmemory)
        #: match id -> (the match as this process last committed it, its derived documents, its log entry)
        self._recent: OrderedDict[str, tuple[Match, dict[str, str], dict[str, Any]]] = OrderedDict()
        self._recent_lock = threading.Lock()

    @classmethod
    def from_config(cls, client: Any, config: Config) -> MatchStore:
        """The store as every process that shares it must see it: the TTLs come from the one config."""
        return cls(client, config.finished_ttl_s, config.waiting_ttl_s, config.idle_match_ttl_s,
                   config.redis_wait_replicas, config.redis_wait_ms)

    def quota_until(self, status: str, now: float) -> float:
        """When a match's quota charge lapses at the latest (it is released when the match finishes)."""
        return now + (self.waiting_ttl_s if status == "waiting" else self.idle_ttl_s + self.waiting_ttl_s)

    def used_share(self) -> float:
        """How full Redis is: ``used_memory / maxmemory`` (0 without a ``maxmemory``; on a cluster, of its fullest
        primary), refreshed each second."""
        checked, share = self._room
        if time.monotonic() - checked < ROOM_CHECK_EVERY_S:
            return share
        if self.cluster:  # every primary holds matches: the fullest one decides (one failing over is skipped)
            infos: Any = redisconn.each_primary(self.redis, lambda node: node.info("memory"))
        else:
            infos = [self.redis.info("memory")]
        share = max((int(i.get("used_memory") or 0) / int(i["maxmemory"]) if int(i.get("maxmemory") or 0) > 0
                     else 0.0) for i in infos)
        self._room = (time.monotonic(), share)
        return share

    def ttl_for(self, status: str) -> int:
        if status == "finished":
            return self.finished_ttl_s
        if status == "waiting":
            return self.waiting_ttl_s
        return 0

    def create(self, match_id: str, meta: MatchMeta, state: bytes, derived: dict[str, str] | None = None,
               events: list[dict[str, Any]] | None = None) -> Match:
        """Write a new match at version 0 (with the webhook ``events`` of its creation in its outbox)."""
        meta = msgspec.structs.replace(meta, id=match_id, created_at=time.time())
        entry = {"version": 0, "kind": "created", "seat": None, "to_act": meta.to_act, "at": time.time()}
        # Indexed before it exists (as clock deadlines are): a crash in between leaves a stale entry, never
        # a match without a lifetime.
        self.redis.zadd(idle_keys(match_id)[0], {match_id: meta.created_at + self.idle_ttl_s})
        # Version -1 -> 0: the creation itself, with the TTL of its status (a waiting match expires).
        ok, version = self._compare_and_set(match_id, -1, meta, state, entry, derived, events=events)
        if ok != 1:
            raise StaleVersion(int(version))
        return Match(match_id, int(version), meta, state)

    def load(self, match_id: str, fields: tuple[str, ...] = (), log_from: int | None = None, *,
             patient: bool = True, chat: bool = False) -> Match | None:
        """The match, with the derived documents ``fields``, the log entries from ``log_from`` on and, with
        ``chat``, its chat cursor (:attr:`Match.chat_cursor`).
        ``patient=False``: a match whose primary is failing over raises at once (see ``redisconn.on_slot``)."""
        replies = redisconn.on_slot(self.redis, keys(match_id)[0],
                                    lambda pipe: _queue_reads(pipe, match_id, fields, log_from, chat), patient=patient)
        return _read(match_id, replies, fields, log_from, chat)

    def load_next(self, match_id: str, fields: tuple[str, ...], after: int) -> Match | None:
        """The match past version ``after`` for a push to a reader who has seen ``after``: with the derived
        documents ``fields`` and the log entries after ``after``.

        When this process committed version ``after + 1`` itself (a move on one of its sockets), that version is
        answered from memory, with no round trip: a committed version never changes, so it is what Redis holds
        for it. A newer version, if one landed meanwhile, wakes the reader again. Otherwise: :meth:`load`.
        """
        with self._recent_lock:
            kept = self._recent.get(match_id)
        if kept is not None:
            match, derived, entry = kept
            # (a seat's legal moves are derived only while it is to act: one left out is one the reader won't need)
            if match.version == after + 1 and all(name in derived for name in fields if name.startswith("view:")):
                return Match(match.id, match.version, match.meta, match.state, dict(match.presence),
                             {name: derived[name].encode() for name in fields if name in derived},
                             [orjson.loads(orjson.dumps(entry))])  # (its words are JSON fragments until read)
        return self.load(match_id, fields, after + 1)

    def _keep(self, match: Match, derived: dict[str, str], entry: dict[str, Any]) -> None:
        """Remember a version this process just committed with a new state, for :meth:`load_next`: as it was
        committed, so a commit no socket reads (REST, a worker's) pays nothing but this."""
        with self._recent_lock:
            self._recent.pop(match.id, None)
            self._recent[match.id] = (match, derived, entry)
            while len(self._recent) > RECENT_MATCHES:
                self._recent.popitem(last=False)

    def load_counted(self, match_id: str, ident: str, idempotency_key: str | None = None,
                     fields: tuple[str, ...] = (), log_from: int | None = None, window_s: int = 60,
                     *, scoped: bool = False, chat: bool = False
                     ) -> tuple[Match | None, tuple[int, int], dict[str, Any] | None]:
        """One round trip for what every match request starts with: count the caller's request (see
        :meth:`hit`), load the match as :meth:`load` does (``chat``: its chat cursor too), and fetch the stored
        response of ``idempotency_key`` if given. MULTI/EXEC, so what is read is one version of the match.

        ``scoped``: ``ident`` can act in this match only (a seat token), so its counter is kept in the
        match's slot (``ratelimit:{<match>}:<ident>:<window>``) and a cluster counts it in the same
        MULTI/EXEC. Other counters (an IP, a tenant) are global: on a cluster they live in another slot
        and take a round trip of their own.
        """
        key, reset = _window(ident, window_s, match_id if scoped else None)
        together = scoped or not self.cluster

        def queue(pipe: Any) -> None:
            if together:
                pipe.incr(key)
                pipe.expire(key, window_s)
            if idempotency_key is not None:
                pipe.get(idem_key(match_id, idempotency_key))
            _queue_reads(pipe, match_id, fields, log_from, chat)

        if together:
            count, _, *replies = redisconn.on_slot(self.redis, keys(match_id)[0], queue)
        else:
            count = self.hit(ident, window_s)[0]
            replies = redisconn.on_slot(self.redis, keys(match_id)[0], queue)
        done = None
        if idempotency_key is not None:
            raw = replies.pop(0)
            done = orjson.loads(raw) if raw else None
        match = _read(match_id, replies, fields, log_from, chat)
        return match, (int(count), reset), done

    def delete(self, match_id: str) -> None:
        """Remove a match that never became visible (a rematch that lost its race)."""
        pipe = self.redis.pipeline(transaction=False)
        pipe.delete(*keys(match_id), *chat_keys(match_id), presence_key(match_id), webhooks.outbox_key(match_id))
        pipe.zrem(idle_keys(match_id)[0], match_id)
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
        key = presence_key(match.id)

        def queue(pipe: Any) -> None:
            pipe.hset(key, str(seat), f"{until:.3f}")
            pipe.expire(key, max(self.finished_ttl_s, self.waiting_ttl_s))

        redisconn.on_slot(self.redis, key, queue, transaction=False)

    # -- seat-clock deadlines ----------------------------------------------------------------------
    def schedule(self, match_id: str, seat: int, turn: int, due: float) -> None:
        self.redis.zadd(deadline_keys(match_id)[0], {f"{match_id}|{seat}|{turn}": due})

    def claim_due(self, now: float, lease_s: float, count: int = 50) -> list[str]:
        """Deadlines due at ``now`` (up to ``count``), leased to the caller for ``lease_s`` seconds."""
        return self._claim_shards("deadlines", DEADLINE_SHARDS, now, lease_s, count)

    def _claim_shards(self, kind: str, shards: tuple[tuple[str, str], ...], now: float, lease_s: float,
                      count: int) -> list[str]:
        """Lease up to ``count`` due entries of a sharded index, starting each call at the next shard so that none
        waits behind a busy one."""
        start = self._claim_from[kind]
        self._claim_from[kind] = (start + 1) % len(shards)
        return [member for _, member in self.leases.claim_shards(shards, now, lease_s, count, start)]

    def release(self, member: str, due: float | None = None, *, idle: bool = False) -> None:
        """Done with a leased deadline; ``due`` puts it back for later (it was not due yet). ``idle``: an
        entry of the idle-match index instead (see :meth:`claim_idle`)."""
        index, leases = idle_keys(member) if idle else deadline_keys(member.split("|", 1)[0])
        self.leases.release(index, leases, member, due)

    def claim_idle(self, now: float, lease_s: float, count: int = 50) -> list[str]:
        """Match ids due for an idle check at ``now``, leased as :meth:`claim_due` leases deadlines."""
        return self._claim_shards("idle", IDLE_SHARDS, now, lease_s, count)

    def deadlines_pending(self) -> int:
        """Deadlines indexed and not yet leased, over every shard."""
        pipe = self.redis.pipeline(transaction=False)
        for deadlines, _ in DEADLINE_SHARDS:
            pipe.zcard(deadlines)
        return sum(int(n) for n in pipe.execute())

    def update(self, match: Match, meta: MatchMeta, state: bytes | None, entry: dict[str, Any],
               derived: dict[str, str] | None = None, remember: Remember | None = None,
               events: list[dict[str, Any]] | None = None) -> Match:
        """Compare-and-set from ``match.version``; raises :class:`StaleVersion` if someone was first.

        A new ``state`` comes with the documents derived from it (``derived``); without a state, the
        derived documents of the current one stay. ``remember`` makes the idempotent response from the
        match as it will be, and the same script stores it: a move and its stored response commit together,
        as do the webhook ``events`` the update makes (its outbox).
        """
        entry = {**entry, "version": match.version + 1, "at": time.time()}
        updated = Match(match.id, match.version + 1, meta, match.state if state is None else state,
                        dict(match.presence))
        ok, version = self._compare_and_set(match.id, match.version, meta, state, entry,
                                            derived if state is not None else None,
                                            remember(updated) if remember is not None else None, events)
        if ok != 1:
            raise StaleVersion(int(version))
        if state is not None and derived:
            self._keep(updated, derived, entry)
        return updated

    def _compare_and_set(self, match_id: str, version: int, meta: MatchMeta, state: bytes | None,
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
        cas_keys = [*k, idem_key(match_id, idem) if idem is not None else k[0], *chat_keys(match_id),
                    *([webhooks.outbox_key(match_id)] if outbox else [])]
        args = [version, encode_meta(meta), state if state is not None else b"", orjson.dumps(entry),
                self.ttl_for(meta.status), wake_of(meta), orjson.dumps(record) if record is not None else b"",
                IDEMPOTENCY_TTL_S, *_pairs(derived), *outbox]
        if not self.cluster and self.replicas_to_wait(k[0]) == 0:  # (on a cluster the node's pipeline is cheaper)
            ok, current = self._cas(keys=cas_keys, args=args)
            return int(ok), int(current)
        return self._cas_and_wait(cas_keys, args)

    def replicas_to_wait(self, key: str) -> int:
        """Replicas an update of ``key``'s match waits for: the configured count, or (auto) one when its
        primary has a replica now. A primary left without one (its replica was promoted after a failover
        and no new one joined yet) acknowledges on its own rather than refuse every move."""
        if self.wait_replicas >= 0:
            return self.wait_replicas
        if self.cluster:
            return min(1, redisconn.replicas_of(self.redis, key))
        now = time.monotonic()
        if self._replicas is None or now - self._replicas[0] > REPLICA_CHECK_S:
            self._replicas = (now, redisconn.replicas_of(self.redis, key))
        return min(1, self._replicas[1])

    def _cas_and_wait(self, cas_keys: list[str], args: list[Any]) -> tuple[int, int]:
        """The compare-and-set, then ``WAIT replicas wait_ms`` on the same connection (WAIT counts that
        connection's writes): an update is acknowledged only once a replica holds it, so a primary
        killed right after loses nothing a client was told. On a cluster, also the call without ``WAIT``
        (the node's own pipeline costs less than the cluster client's routing)."""
        waited = 0

        def queue(pipe: Any) -> None:
            nonlocal waited  # (asked on every attempt: after a failover the slot's new primary may have none)
            waited = self.replicas_to_wait(cas_keys[0])
            # EVALSHA itself: a pipeline running a Script object first asks SCRIPT EXISTS (a round trip more)
            pipe.evalsha(self._cas.sha, len(cas_keys), *cas_keys, *args)
            if waited:
                pipe.execute_command("WAIT", waited, self.wait_ms)

        for _ in range(2):
            try:
                (ok, current), *acks = redisconn.on_slot(self.redis, cas_keys[0], queue, transaction=False,
                                                         name="EVALSHA")
            except redis.exceptions.NoScriptError:
                # a node that never ran it (new, or just promoted): nothing ran
                redisconn.primary_client(self.redis, cas_keys[0]).script_load(_CAS)
                continue
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                redisconn.refresh(self.redis)
                raise  # the script may have run: only the client's retry (Idempotency-Key) can tell
            if int(ok) == 1 and (int(acks[0]) if acks else 0) < waited:
                redisconn.refresh(self.redis)  # the replica may be gone: look again next time
                self._replicas = None
                raise NotReplicated(f"no replica confirmed the update within {self.wait_ms} ms")
            return int(ok), int(current)
        raise redis.exceptions.ConnectionError("the compare-and-set script could not be loaded on its primary")

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

    # waiting: see ``hub.py`` (one reader per process watches these streams for every waiter)

    # -- idempotency -------------------------------------------------------------------------------
    def idempotent_get(self, match_id: str, key: str) -> dict[str, Any] | None:
        raw = self.redis.get(idem_key(match_id, key))
        return orjson.loads(raw) if raw else None

    def idempotent_put(self, match_id: str, key: str, record: dict[str, Any]) -> None:
        """Store a response that changed nothing (a rejected move); an applied one is stored by :meth:`update`."""
        self.redis.set(idem_key(match_id, key), orjson.dumps(record), ex=IDEMPOTENCY_TTL_S, nx=True)

    # -- rate limiting -------------------------------------------------------------------------------
    def hit(self, ident: str, window_s: int = 60) -> tuple[int, int]:
        """Fixed-window counter: (requests in this window, seconds until it resets).

        On a cluster the counter's primary may be failing over while the match a request is about is
        fine: the request is then not counted (0) rather than held for the failover or refused (fail open,
        as docs/api.md says). On one server a store that is down is down for the match too: raised.
        """
        key, reset = _window(ident, window_s)

        def queue(pipe: Any) -> None:
            pipe.incr(key)
            pipe.expire(key, window_s)

        try:
            count, _ = redisconn.on_slot(self.redis, key, queue, patient=not self.cluster)
        except redisconn.UNAVAILABLE:
            if not self.cluster:
                raise
            return 0, reset
        return int(count), reset

    def move_hit(self, source: str, target: str, drop: bool, window_s: int = 60,
                 source_scope: str | None = None) -> tuple[int, int]:
        """Take back one request counted for ``source`` (dropping its key if that was its only one) and
        count it for ``target`` instead; returns ``target``'s count and reset as :meth:`hit` does.
        ``source_scope``: the match ``source`` was counted in (see :meth:`load_counted`'s ``scoped``)."""
        source_key, _ = _window(source, window_s, source_scope)
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


def wake_of(meta: MatchMeta) -> str:
    """What a waiting reader needs of a version, in its stream entry: ``active:0,2``."""
    return f"{meta.status}:{','.join(map(str, meta.to_act))}"


def parse_wake(wake: bytes) -> tuple[str, list[int]]:
    """``active:0,2`` -> ("active", [0, 2]): the status and the seats to act (see :func:`wake_of`)."""
    status, _, seats = wake.decode().partition(":")
    return status, [int(s) for s in seats.split(",") if s]


def your_turn_or_over(status: str, to_act: list[int], seat: int) -> bool:
    """What ``until=turn`` waits for: the seat must decide, or the match is finished."""
    return status == "finished" or (status == "active" and seat in to_act)


def _pairs(derived: dict[str, str] | None) -> list[str]:
    return [item for pair in (derived or {}).items() for item in pair]


def _window(ident: str, window_s: int, scope: str | None = None) -> tuple[str, int]:
    """The fixed-window counter's key for ``ident`` now (in the slot of the match ``scope`` if given), and
    the seconds until the window resets."""
    now = time.time()
    window = int(now // window_s)
    key = f"ratelimit:{{{ident}}}:{window}" if scope is None else f"ratelimit:{{{scope}}}:{ident}:{window}"
    return key, window_s - int(now) % window_s


def _queue_reads(pipe: Any, match_id: str, fields: tuple[str, ...], log_from: int | None, chat: bool = False
                 ) -> None:
    k = keys(match_id)
    pipe.execute_command("MGET", *k[:3])  # (a cluster pipeline refuses ``mget``: this one is single-slot)
    pipe.hgetall(presence_key(match_id))
    if fields:
        pipe.hmget(k[5], ["at", *fields])
    if log_from is not None:
        pipe.lrange(k[3], log_from, -1)
    if chat:
        queue_chat_cursor(pipe, match_id)


def _read(match_id: str, replies: list[Any], fields: tuple[str, ...], log_from: int | None, chat: bool = False
          ) -> Match | None:
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
    if chat:
        match.chat_cursor = chat_cursor_of(rest.pop(0), rest.pop(0))
    return match


def queue_chat_cursor(pipe: Any, match_id: str) -> None:
    """Queue the reads of a match's chat cursor (its topic's newest entry, its message count): in the match's
    own round trip when a reader asks for the chat with it (a long-poll's ``chat_after``)."""
    chat, topic = chat_keys(match_id)
    pipe.xrevrange(topic, "+", "-", count=1)
    pipe.llen(chat)


def chat_cursor_of(last: Any, count: Any) -> tuple[int, int]:
    """(the chat topic's position, the newest message id) from the replies of :func:`queue_chat_cursor`."""
    return (entry_seq(last[0][0]) if last else 0), int(count)


def entry_seq(entry_id: Any) -> int:
    """A stream entry id's first part (``<seq>-<n>``)."""
    raw = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    return int(raw.split("-", 1)[0])


def _match(match_id: str, version: Any, meta: Any, state: Any, presence: dict[Any, Any]) -> Match | None:
    if version is None or meta is None:
        return None
    return Match(match_id, int(version), decode_meta(meta), state if isinstance(state, bytes) else b"",
                 {int(seat): float(until) for seat, until in presence.items()})
