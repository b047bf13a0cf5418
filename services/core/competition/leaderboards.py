"""Leaderboards per tenant and game, derived from the ratings the server keeps
(:mod:`services.core.competition.ratings`).

**What a board is.** A board lists a tenant's players of one game by their displayed rating (openskill's
``mu - 3 sigma``, rounded to 3 decimals as the API shows it). Every (tenant, game) has the all-time board
``all``; a tenant may also define *seasons*, each with a board of its own. A board is updated whenever a
rated match's new ratings are written (:func:`apply_ratings`: ``ratings.apply``, then :func:`on_ratings_applied`),
from the ratings as stored, so the board never shows a rating the ratings store does not hold.

**Order and ranks.** Players are listed by rating, highest first; equal ratings share a rank (competition
ranking, "1, 2, 2, 4"), and within a tie the order is Redis's own (player id, reverse byte order), the same on
every read. A player is *listed* once they have played ``min_matches`` rated matches on that board (the
tenant's setting, 0 by default; a season counts the matches played in the season); until then they are kept
unlisted, with their rating, so lowering the minimum lists them at once.

**Keys.** A board is split into :data:`SHARDS` shards, a player in the shard of their id
(``redisconn.shard_of``). Shard ``k`` of board (tenant, game, season) has the hash tag ``tag_k`` from
``redisconn.spread_tags("lb|<tenant>|<game>|<season>|", SHARDS)`` -- the tags' slots fall one in each
eighth of the slot range, so on a Redis Cluster a board of 1,000,000 players spreads over the primaries
instead of sitting in one slot -- and three keys in that slot:

* ``lb:{tag_k}:r`` -- sorted set, the listed players, score = rating;
* ``lb:{tag_k}:u`` -- sorted set, the players below the minimum, score = rating;
* ``lb:{tag_k}:m`` -- hash, player -> ``<matches>:<base>``: the player's rated matches in this game when last
  written, and the count before their first match on this board (0 on ``all``), so ``matches - base`` is
  what they played on the board. ``matches`` only grows, which makes every write idempotent and ordered.

``lb:{<tenant>|<game>}:conf`` (JSON: ``min_matches`` and the seasons, with a version ``v`` for
compare-and-set) holds the settings. Season ends are indexed for the worker that closes them in
``lbdue:{<tag>}:seasons`` / ``lbdue:{<tag>}:leases`` (:data:`DUE_SHARDS`), leased like the timekeeper's
deadlines: a worker that dies mid-way leaves the lease to run out, and the next one resumes.

**Cluster rule.** Every script touches one slot (one shard of one board, or one player's rating key), and no
MULTI/EXEC spans shards. A read fans out over the shards as single-slot commands: each primary gets its own
in one pipeline, every pipeline is sent before any reply is read, so it costs one round trip to all of them at
once (redis-py's cluster pipeline asked the server for the keys of every EVALSHA first: a round trip each).

**Reads.** ``top``: each shard's best few (a script returns them with their match counts), merged; a shard
whose last entry might still belong in the requested page is asked for more, so the merge is exact.
``rank``: the player's rating from their shard, then ``ZCOUNT`` of higher ratings on every shard, summed.
``around``: per shard, a script places the player's (rating, id) in that shard's order and returns the
neighbours on each side; the merge picks the nearest ones. Each read is two or three round trips whatever
the board's size (the cost of a sorted-set lookup grows with its logarithm).

**Seasons.** A season is a named window ``[starts_at, ends_at)`` of server time; a tenant's seasons of one
game never overlap. A rated match finishing inside the window writes to the season's board too (the script
checks the window against Redis's own clock, so a board is frozen at the very instant its season ends:
later writes are refused). When it ends, the tenant's ``policy`` applies to the ratings themselves, as
matchmaking and the next season see them: ``keep`` (nothing changes), ``reset`` (back to the default) or
``decay`` (``mu`` and ``sigma`` move the fraction ``decay`` of the way back to the default). The worker
(:func:`close_due_seasons`) walks the all-time board's players page by page, rewrites each rating once
(marked ``rolled: <season>`` in the rating document) and rescores the live boards; progress is kept per
shard, so a worker that dies resumes where it stopped. The frozen board stays readable until the season is
deleted.

**Bots.** Bot seats are never on a board (they have no player id, and their level's rating is the ladder's,
not changed by a match). A human seat that a bot played to the end (taken over and never reclaimed) must not
turn a bot's result into a human's win over a human: see ``docs/guides/leaderboards-tournaments.md`` ("Bots
and fairness") for the rule the ratings apply in the core; a board only ever shows the stored ratings.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson
import redis

from services import redisconn
from services.core.competition import ratings
from services.core.errors import DomainError, Kind
from services.core.record.leases import Leases

#: Shards per board (fixed: every process must agree on it). Every read touches each shard, so more shards cost
#: every read more; 8 spread a board over a cluster's primaries as the store's own shared indexes do.
SHARDS = 8
#: The all-time board, and the name that reads whatever season is live now.
ALL, CURRENT = "all", "current"
SEASON_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$")
POLICIES = ("keep", "reset", "decay")
#: Longest page of a top read, widest span around a player, most seasons per (tenant, game).
MAX_LIMIT, MAX_SPAN, MAX_SEASONS = 100, 25, 100
#: Deepest ``offset`` of a top read (its cost grows with it; a player's neighbourhood is read with ``around``).
MAX_OFFSET = 10_000
#: The largest ``min_matches`` a board may ask for.
MAX_MIN_MATCHES = 10_000
#: Players a season-end worker rewrites per step (one pipeline), and how long its lease lasts.
ROLL_PAGE = 500
#: Season ends due, by shard: (index, leases); the claim script touches one pair, so one slot.
DUE_SHARDS = tuple((f"lbdue:{{{tag}}}:seasons", f"lbdue:{{{tag}}}:leases") for tag in redisconn.spread_tags("l", 8))
#: A window end that never comes (the all-time board), in seconds.
NEVER = 1e15
#: Python may pick a season a little before or after Redis's clock says it is live; the script decides.
CLOCK_SLACK_S = 5.0

#: Write a player's board entry if it is newer (more rated matches) than the one there, inside the window
#: [ARGV[6], ARGV[7]) of Redis's clock. KEYS: r, u, m. ARGV: player, rating, matches, base if new, min,
#: starts_at, ends_at. Returns 1 written, 0 not newer, -1 outside the window (a frozen or future season).
_RECORD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
if now < tonumber(ARGV[6]) or now >= tonumber(ARGV[7]) then return -1 end
local total = tonumber(ARGV[3])
local base = tonumber(ARGV[4])
local cur = redis.call('HGET', KEYS[3], ARGV[1])
if cur then
  local sep = string.find(cur, ':', 1, true)
  if tonumber(string.sub(cur, 1, sep - 1)) >= total then return 0 end
  base = tonumber(string.sub(cur, sep + 1))
end
redis.call('HSET', KEYS[3], ARGV[1], total .. ':' .. base)
if total - base >= tonumber(ARGV[5]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
  redis.call('ZREM', KEYS[1], ARGV[1])
end
return 1
"""

#: A new rating for a player whose entry still has ``matches`` = ARGV[2] (season-end rollover). KEYS: r, u, m.
_RESCORE = """
local cur = redis.call('HGET', KEYS[3], ARGV[1])
if not cur then return 0 end
if tonumber(string.sub(cur, 1, string.find(cur, ':', 1, true) - 1)) ~= tonumber(ARGV[2]) then return 0 end
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
else redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1]) end
return 1
"""

#: Move one page of a shard's players between listed and unlisted for a new minimum. KEYS: r, u, m.
#: ARGV: min, HSCAN cursor, page size. Returns the next cursor ("0": done).
_RELIST = """
local res = redis.call('HSCAN', KEYS[3], ARGV[2], 'COUNT', ARGV[3])
local min = tonumber(ARGV[1])
local flat = res[2]
for i = 1, #flat, 2 do
  local player, val = flat[i], flat[i + 1]
  local sep = string.find(val, ':', 1, true)
  local played = tonumber(string.sub(val, 1, sep - 1)) - tonumber(string.sub(val, sep + 1))
  local from, to = KEYS[2], KEYS[1]
  if played < min then from, to = KEYS[1], KEYS[2] end
  local s = redis.call('ZSCORE', from, player)
  if s then
    redis.call('ZADD', to, s, player)
    redis.call('ZREM', from, player)
  end
end
return res[1]
"""

#: The best of one shard from rank ARGV[1] to ARGV[2], with each one's ``m`` entry. KEYS: r, m.
_TOP = """
local rows = redis.call('ZREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'WITHSCORES')
if #rows == 0 then return {rows, {}} end
local names = {}
for i = 1, #rows, 2 do names[#names + 1] = rows[i] end
return {rows, redis.call('HMGET', KEYS[2], unpack(names))}
"""

#: Where (rating ARGV[1], player ARGV[2]) falls in one shard, and up to ARGV[3] neighbours on each side
#: (ARGV[3] + 1 above: the one past the window tells whether the window's top group goes on). Members of
#: equal score are ordered by bytes (memcmp), as Redis orders them; Lua's own string ``<`` follows the
#: server's locale, hence ``less``. KEYS: r, m. Returns {below (ascending), above (ascending), their m
#: entries, count of higher ratings, card, entries of this shard above the player}.
_AROUND = """
local function less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
local key, s, me, k = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3])
local p, mine = redis.call('ZRANK', key, me), 0
if p then mine = 1 else
  local a = redis.call('ZCOUNT', key, '-inf', '(' .. s)
  local b = a + redis.call('ZCOUNT', key, s, s)
  while a < b do
    local mid = math.floor((a + b) / 2)
    if less(redis.call('ZRANGE', key, mid, mid)[1], me) then a = mid + 1 else b = mid end
  end
  p = a
end
local card = redis.call('ZCARD', key)
local gt = redis.call('ZCOUNT', key, '(' .. s, '+inf')
local below = {}
if p > 0 then below = redis.call('ZRANGE', key, math.max(0, p - k), p - 1, 'WITHSCORES') end
local above = redis.call('ZRANGE', key, p + mine, p + mine + k, 'WITHSCORES')
local names = {}
for i = 1, #below, 2 do names[#names + 1] = below[i] end
for i = 1, #above, 2 do names[#names + 1] = above[i] end
local counts = {}
if #names > 0 then counts = redis.call('HMGET', KEYS[2], unpack(names)) end
return {below, above, counts, gt, card, card - p - mine}
"""

#: A player's rating for ``game`` moved toward the default by ``decay`` (once per season: the document is
#: marked ``rolled``). KEYS: the player's rating key. ARGV: game, season, decay, mu0, sigma0, now.
#: Returns {mu, sigma, matches} as now stored, or nil when the player has no rating in the game.
_ROLL = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return nil end
local doc = cjson.decode(raw)
if doc['rolled'] ~= ARGV[2] then
  local d = tonumber(ARGV[3])
  doc['mu'] = doc['mu'] - d * (doc['mu'] - tonumber(ARGV[4]))
  doc['sigma'] = doc['sigma'] + d * (tonumber(ARGV[5]) - doc['sigma'])
  doc['rolled'] = ARGV[2]
  doc['updated_at'] = tonumber(ARGV[6])
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(doc))
end
return {tostring(doc['mu']), tostring(doc['sigma']), tostring(doc['matches'])}
"""

#: Replace the settings document if its version is still ARGV[1]. KEYS: conf.
_PUT_CONF = """
local raw = redis.call('GET', KEYS[1])
local v = 0
if raw then v = cjson.decode(raw)['v'] end
if v ~= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""

_SCRIPTS = (_RECORD, _RESCORE, _RELIST, _TOP, _AROUND, _ROLL, _PUT_CONF)
_SHA = {src: hashlib.sha1(src.encode()).hexdigest() for src in _SCRIPTS}


class LeaderboardError(DomainError):
    """A refusal of the leaderboards (kinds ``MALFORMED``, ``NOT_FOUND``, ``CONFLICT``). Its own class while no
    route answers with it: the codes join ``errors.CATALOG`` (and docs/api.md's table) with the routes."""


@dataclass(frozen=True)
class Entry:
    """One player on a board: ``rank`` (None while unlisted), rating, and rated matches on the board."""

    player: str
    rating: float
    matches: int
    rank: int | None

    def public(self) -> dict[str, Any]:
        return {"rank": self.rank, "player": self.player, "rating": self.rating, "matches": self.matches}


# -- keys ---------------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def board_tags(tenant: str, game: str, board: str) -> tuple[str, ...]:
    """The hash tags of a board's shards, one in each ``1/SHARDS`` of the slot range."""
    return redisconn.spread_tags(f"lb|{tenant}|{game}|{board}|", SHARDS)


def shard_keys(tag: str) -> tuple[str, str, str]:
    """(listed, unlisted, matches) of one shard."""
    return f"lb:{{{tag}}}:r", f"lb:{{{tag}}}:u", f"lb:{{{tag}}}:m"


def shard_of(player: str) -> int:
    return redisconn.shard_of(player, SHARDS)


def player_keys(tenant: str, game: str, board: str, player: str) -> tuple[str, str, str]:
    return shard_keys(board_tags(tenant, game, board)[shard_of(player)])


def conf_key(tenant: str, game: str) -> str:
    return f"lb:{{{tenant}|{game}}}:conf"


def roll_key(tenant: str, game: str, season: str) -> str:
    """Per shard of the all-time board: the HSCAN cursor a season's rollover reached (same slot as conf)."""
    return f"lb:{{{tenant}|{game}}}:roll:{season}"


def due_member(tenant: str, game: str, season: str) -> str:
    return f"{tenant}|{game}|{season}"


def due_keys(member: str) -> tuple[str, str]:
    return DUE_SHARDS[redisconn.shard_of(member, len(DUE_SHARDS))]


# -- scripts over a fan-out pipeline ----------------------------------------------------------------------------
def _fan(client: Any, queue: Callable[[Batch], object]) -> list[Any]:
    """Run the single-slot commands ``queue(batch)`` adds, each node's in one pipeline, all nodes' at once:
    every node gets its commands before any reply is read, so a read over the shards of a cluster costs one
    round trip whatever the number of primaries. Replies in order, as Redis sends them (bytes, no decoding).

    Every command here is a read or an idempotent write, so the whole batch may run again: after a node that
    did not know a script yet had them all loaded, or (cluster) when a slot moved or a node refused the
    connection (the slot table is read again first, as :func:`services.redisconn.on_slot` does).
    """
    batch = Batch()
    queue(batch)
    for attempt in range(2):
        try:
            if not redisconn.is_cluster(client):
                return _send_and_read(client, [(client, list(range(len(batch.commands))))], batch.commands)
            return list(redisconn.ride_out_failover(lambda: _fan_nodes(client, batch.commands), client))
        except redis.exceptions.NoScriptError:
            if attempt:
                raise
            for src in _SCRIPTS:
                client.script_load(src)
    raise AssertionError("unreachable")


class Batch:
    """The commands of one :func:`_fan`: raw Redis commands, each on one slot."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []

    def cmd(self, *args: Any) -> Batch:
        self.commands.append(args)
        return self

    def script(self, src: str, keys: Iterable[str], args: Iterable[Any]) -> Batch:
        """``src`` by its SHA (see :func:`_fan` for a server that does not know it yet)."""
        names = list(keys)
        return self.cmd("EVALSHA", _SHA[src], len(names), *names, *args)


def _key_of(command: tuple[Any, ...]) -> str:
    """The key a command routes by: EVALSHA's first key, any other command's first argument."""
    return str(command[3] if command[0] == "EVALSHA" else command[1])


def _fan_nodes(client: Any, commands: list[tuple[Any, ...]]) -> list[Any]:
    groups: dict[str, tuple[Any, list[int]]] = {}
    for i, command in enumerate(commands):
        node = client.get_node_from_key(_key_of(command))
        groups.setdefault(node.name, (node, []))[1].append(i)
    return _send_and_read(client, [(client.get_redis_connection(node), indexes)
                                   for node, indexes in groups.values()], commands)


def _send_and_read(client: Any, groups: list[tuple[Any, list[int]]], commands: list[tuple[Any, ...]]) -> list[Any]:
    """Send each group's commands on a connection of its node, then read every reply; the first error reply is
    raised once everything was read (a MOVED, a missing script), so no connection is left out of step."""
    held: list[tuple[Any, Any, list[int]]] = []
    out: list[Any] = [None] * len(commands)
    error: Exception | None = None
    clean = False
    try:
        for node, indexes in groups:
            pool = node.connection_pool
            conn = pool.get_connection()
            held.append((pool, conn, indexes))
            conn.send_packed_command(conn.pack_commands([commands[i] for i in indexes]))
        for _, conn, indexes in held:
            for i in indexes:
                try:
                    out[i] = conn.read_response()
                except redis.exceptions.ResponseError as err:
                    error = error or err
        clean = True
    finally:
        for pool, conn, _ in held:
            if not clean:
                conn.disconnect()  # replies may be left on the wire: never reuse it
            pool.release(conn)
    if error is not None:
        raise error
    return out


def _one(client: Any, src: str, keys: list[str], args: list[Any]) -> Any:
    """Run one script (on its keys' slot)."""
    return _fan(client, lambda batch: batch.script(src, keys, args))[0]


def _each(src: str, calls: list[tuple[list[str], list[Any]]]) -> Callable[[Batch], None]:
    def queue(batch: Batch) -> None:
        for keys, args in calls:
            batch.script(src, keys, args)
    return queue


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _played(raw: Any) -> int:
    total, _, base = _text(raw).partition(":")
    return int(total) - int(base)


# -- settings and seasons ---------------------------------------------------------------------------------------
def conf(client: Any, tenant: str, game: str) -> dict[str, Any]:
    """The board settings of (tenant, game): ``{"v", "min_matches", "seasons": {name: season}}``."""
    raw = client.get(conf_key(tenant, game))
    return _parse_conf(raw)


def _parse_conf(raw: Any) -> dict[str, Any]:
    if not raw:
        return {"v": 0, "min_matches": 0, "seasons": {}}
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


def _change_conf(client: Any, tenant: str, game: str, change: Callable[[dict[str, Any]], dict[str, Any]]
                 ) -> dict[str, Any]:
    """Apply ``change`` to the settings under compare-and-set (``change`` may raise a LeaderboardError)."""
    key = conf_key(tenant, game)
    for _ in range(20):
        current = conf(client, tenant, game)
        new = {**change(orjson.loads(orjson.dumps(current))), "v": current["v"] + 1}
        if int(_one(client, _PUT_CONF, [key], [current["v"], orjson.dumps(new)])) == 1:
            return new
    raise LeaderboardError(Kind.CONFLICT, "busy", "the board settings changed too often; retry")


def season_state(season: dict[str, Any], now: float) -> str:
    """``scheduled`` (not started), ``live``, ``ending`` (over, its ratings policy not applied yet) or ``closed``."""
    if season.get("closed"):
        return "closed"
    if now < season["starts_at"]:
        return "scheduled"
    return "live" if now < season["ends_at"] else "ending"


def public_season(season: dict[str, Any], now: float) -> dict[str, Any]:
    return {"name": season["name"], "starts_at": season["starts_at"], "ends_at": season["ends_at"],
            "policy": season["policy"], "decay": season["decay"], "state": season_state(season, now),
            "closed_at": season.get("closed_at")}


def live_season(doc: dict[str, Any], now: float) -> dict[str, Any] | None:
    return next((s for s in doc["seasons"].values() if season_state(s, now) == "live"), None)


def _check_window(doc: dict[str, Any], name: str, starts_at: float, ends_at: float) -> None:
    if not (math.isfinite(starts_at) and math.isfinite(ends_at)) or ends_at <= starts_at:
        raise LeaderboardError(Kind.MALFORMED, "bad_season", "a season ends after it starts (finite Unix times)")
    for other in doc["seasons"].values():
        if other["name"] != name and starts_at < other["ends_at"] and other["starts_at"] < ends_at:
            raise LeaderboardError(Kind.CONFLICT, "season_overlap", f"season {name!r} would overlap season "
                                   f"{other['name']!r}: a game's seasons never overlap")


def _decay_of(policy: str, decay: float | None) -> float:
    if policy not in POLICIES:
        raise LeaderboardError(Kind.MALFORMED, "bad_season", f"policy must be one of {', '.join(POLICIES)}")
    if policy in ("keep", "reset"):
        if decay is not None:  # said and dropped would leave the caller believing a decay was set
            raise LeaderboardError(Kind.MALFORMED, "bad_season", f"decay is taken only with policy 'decay' (policy "
                                   f"{policy!r} moves ratings {'none' if policy == 'keep' else 'all'} of the way back)")
        return 0.0 if policy == "keep" else 1.0
    if decay is None or not 0.0 < decay < 1.0:
        raise LeaderboardError(Kind.MALFORMED, "bad_season", "policy 'decay' needs decay, a fraction between 0 and 1: "
                               "how much of the way back to the default rating a rating moves")
    return float(decay)


def define_season(client: Any, tenant: str, game: str, name: str, starts_at: float, ends_at: float,
                  policy: str = "keep", decay: float | None = None, now: float | None = None) -> dict[str, Any]:
    """A new season of (tenant, game); its end is indexed for the worker that closes it."""
    now = time.time() if now is None else now
    if not SEASON_RE.match(name) or name in (ALL, CURRENT):
        raise LeaderboardError(Kind.MALFORMED, "bad_season", "a season name is 1-32 letters, digits and . _ - "
                               f"(not first), other than {ALL!r} and {CURRENT!r}")
    factor = _decay_of(policy, decay)
    if ends_at <= now:
        raise LeaderboardError(Kind.MALFORMED, "bad_season", "a new season must end in the future")

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        if name in doc["seasons"]:
            raise LeaderboardError(Kind.CONFLICT, "season_exists", f"season {name!r} already exists")
        if len(doc["seasons"]) >= MAX_SEASONS:
            raise LeaderboardError(Kind.CONFLICT, "season_limit", f"at most {MAX_SEASONS} seasons per game; "
                                   "delete an old one first")
        _check_window(doc, name, starts_at, ends_at)
        doc["seasons"][name] = {"name": name, "starts_at": float(starts_at), "ends_at": float(ends_at),
                                "policy": policy, "decay": factor, "created_at": now}
        return doc

    doc = _change_conf(client, tenant, game, change)
    _schedule(client, tenant, game, name, ends_at)
    return public_season(doc["seasons"][name], now)


def update_season(client: Any, tenant: str, game: str, name: str, *, starts_at: float | None = None,
                  ends_at: float | None = None, policy: str | None = None, decay: float | None = None,
                  now: float | None = None) -> dict[str, Any]:
    """Change a season that has not ended: its window (a live season's start stays; its end may be moved to
    now, which ends it at once) and its policy."""
    now = time.time() if now is None else now

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        season = doc["seasons"].get(name)
        if season is None:
            raise LeaderboardError(Kind.NOT_FOUND, "season_not_found", f"no season {name!r}")
        state = season_state(season, now)
        if state in ("ending", "closed"):
            raise LeaderboardError(Kind.CONFLICT, "season_over", f"season {name!r} is over: its board is frozen")
        start = season["starts_at"] if starts_at is None else float(starts_at)
        end = season["ends_at"] if ends_at is None else float(ends_at)
        if state == "live" and start != season["starts_at"]:
            raise LeaderboardError(Kind.CONFLICT, "season_started", "a live season's start cannot move")
        if end < now - CLOCK_SLACK_S:
            raise LeaderboardError(Kind.MALFORMED, "bad_season", "a season cannot end in the past (end it now instead)")
        end = max(end, now)  # "now" as the caller's clock read it a moment ago
        _check_window(doc, name, start, end)
        new_policy = season["policy"] if policy is None else policy
        factor = _decay_of(new_policy, season["decay"] if decay is None and new_policy == "decay" else decay)
        doc["seasons"][name] = {**season, "starts_at": start, "ends_at": end, "policy": new_policy, "decay": factor}
        return doc

    doc = _change_conf(client, tenant, game, change)
    season = doc["seasons"][name]
    _schedule(client, tenant, game, name, season["ends_at"])
    return public_season(season, now)


def delete_season(client: Any, tenant: str, game: str, name: str, now: float | None = None) -> None:
    """Remove a season that is not live (a scheduled one, or a closed one with its frozen board)."""
    now = time.time() if now is None else now

    def change(doc: dict[str, Any]) -> dict[str, Any]:
        season = doc["seasons"].get(name)
        if season is None:
            raise LeaderboardError(Kind.NOT_FOUND, "season_not_found", f"no season {name!r}")
        if season_state(season, now) in ("live", "ending"):
            raise LeaderboardError(Kind.CONFLICT, "season_live", f"season {name!r} is live or ending: end it and "
                                   "let it close first")
        del doc["seasons"][name]
        return doc

    _change_conf(client, tenant, game, change)
    member = due_member(tenant, game, name)
    index, leases = due_keys(member)
    _fan(client, lambda batch: (batch.cmd("ZREM", index, member), batch.cmd("ZREM", leases, member)))
    drop_board(client, tenant, game, name)


def seasons(client: Any, tenant: str, game: str, now: float | None = None) -> list[dict[str, Any]]:
    now = time.time() if now is None else now
    doc = conf(client, tenant, game)
    return [public_season(s, now) for s in sorted(doc["seasons"].values(), key=lambda s: s["starts_at"])]


def season(client: Any, tenant: str, game: str, name: str, now: float | None = None) -> dict[str, Any]:
    now = time.time() if now is None else now
    found = conf(client, tenant, game)["seasons"].get(name)
    if found is None:
        raise LeaderboardError(Kind.NOT_FOUND, "season_not_found", f"no season {name!r}")
    return public_season(found, now)


def resolve(client: Any, tenant: str, game: str, board: str, now: float | None = None) -> str:
    """The board a read names: ``all``, a season's name, or ``current`` (the live season's; not_found if none)."""
    if board == ALL:
        return ALL
    now = time.time() if now is None else now
    doc = conf(client, tenant, game)
    if board == CURRENT:
        live = live_season(doc, now)
        if live is None:
            raise LeaderboardError(Kind.NOT_FOUND, "no_live_season", f"no season of {game} is live now")
        return str(live["name"])
    if board not in doc["seasons"]:
        raise LeaderboardError(Kind.NOT_FOUND, "season_not_found", f"no season {board!r}")
    return board


def set_min_matches(client: Any, tenant: str, game: str, minimum: int, now: float | None = None) -> dict[str, Any]:
    """The rated matches a player needs to be listed; the all-time and live boards are relisted at once
    (a page of players per script: a board of a million takes a few seconds). Frozen boards keep theirs."""
    if not isinstance(minimum, int) or isinstance(minimum, bool) or not 0 <= minimum <= MAX_MIN_MATCHES:
        raise LeaderboardError(Kind.MALFORMED, "bad_min_matches",
                               f"min_matches is a whole number from 0 to {MAX_MIN_MATCHES}")
    now = time.time() if now is None else now
    doc = _change_conf(client, tenant, game, lambda d: {**d, "min_matches": minimum})
    live = live_season(doc, now)
    for board in [ALL] + ([live["name"]] if live else []):
        relist(client, tenant, game, board, minimum)
    return {"min_matches": minimum}


def relist(client: Any, tenant: str, game: str, board: str, minimum: int) -> None:
    for tag in board_tags(tenant, game, board):
        cursor = "0"
        while True:
            cursor = _text(_one(client, _RELIST, list(shard_keys(tag)), [minimum, cursor, ROLL_PAGE]))
            if cursor == "0":
                break


def drop_board(client: Any, tenant: str, game: str, board: str) -> None:
    """Delete a board's keys (UNLINK: a big set is freed in the background)."""
    def queue(batch: Batch) -> None:
        for tag in board_tags(tenant, game, board):
            for key in shard_keys(tag):
                batch.cmd("UNLINK", key)
    _fan(client, queue)


def _schedule(client: Any, tenant: str, game: str, name: str, ends_at: float) -> None:
    member = due_member(tenant, game, name)
    index, leases = due_keys(member)
    _fan(client, lambda batch: batch.cmd("ZREM", leases, member).cmd("ZADD", index, repr(float(ends_at)), member))


# -- writes: from the ratings ------------------------------------------------------------------------------------
def apply_ratings(client: Any, tenant: str, game: str, outcome: dict[str, Any] | None) -> int:
    """Store the new ratings an outcome carries (``ratings.apply``, idempotent) and bring the boards up to date with
    them; returns how many ratings were written now."""
    written = ratings.apply(client, tenant, game, outcome)
    on_ratings_applied(client, tenant, game, outcome)  # the boards follow the stored ratings
    return written


def on_ratings_applied(client: Any, tenant: str, game: str, outcome: dict[str, Any] | None,
                       now: float | None = None) -> int:
    """Bring the boards of (tenant, game) up to date with the ratings an outcome changed.

    Called by :func:`apply_ratings` every time it runs (also when it wrote nothing: the webhook worker re-applies
    an outcome after a gateway died, and the boards catch up then). Each board gets the player's rating *as
    stored*, which may be newer than the outcome's; a board write only ever moves forward (more matches).
    Returns how many board entries were written."""
    players = sorted({c["player"] for c in (outcome or {}).get("ratings") or [] if c.get("player")})
    if not players:
        return 0
    now = time.time() if now is None else now

    def reads(batch: Batch) -> None:
        batch.cmd("GET", conf_key(tenant, game))
        for player in players:
            batch.cmd("HGET", ratings.player_key(tenant, player), game)

    raw_conf, *docs = _fan(client, reads)
    settings = _parse_conf(raw_conf)
    boards: list[tuple[str, float, float]] = [(ALL, 0.0, NEVER)]
    for s in settings["seasons"].values():  # the script checks the window exactly, on Redis's clock
        if not s.get("closed") and s["starts_at"] - CLOCK_SLACK_S <= now < s["ends_at"] + CLOCK_SLACK_S:
            boards.append((s["name"], s["starts_at"], s["ends_at"]))
    calls = []
    for player, raw in zip(players, docs, strict=True):
        if raw is None:
            continue
        doc = orjson.loads(raw)
        rating, total = ratings.public(doc)["rating"], int(doc["matches"])
        for board, start, end in boards:
            base = 0 if board == ALL else max(0, total - 1)
            calls.append((list(player_keys(tenant, game, board, player)),
                          [player, repr(rating), total, base, settings["min_matches"], repr(start), repr(end)]))
    if not calls:
        return 0
    done = _fan(client, _each(_RECORD, calls))
    return sum(1 for d in done if int(d) == 1)


# -- reads --------------------------------------------------------------------------------------------------------
#: A board row as Redis sends it: (rating, player id, its ``m`` entry). Tuples of these sort in board order
#: (descending: rating, then the id's bytes, as Redis orders equal scores), decoded only for the rows shown.
Row = tuple[float, bytes, Any]


def _rows(flat: list[Any], counts: list[Any]) -> list[Row]:
    """A script's ``[id, score, id, score, ...]`` and the ids' ``m`` entries, as rows."""
    return list(zip(map(float, flat[1::2]), flat[0::2], counts, strict=True))


def _ranked(rows: list[Row], start: int, first_rank: int) -> list[Entry]:
    """Rows in board order from board position ``start`` (0 = the best), with competition ranks: the first row's
    is ``first_rank`` (it may share the rank of rows before it); a row whose rating differs from the row before
    it is ranked by its position."""
    out: list[Entry] = []
    rank = first_rank
    for i, (rating, player, raw) in enumerate(rows):
        if i and rating != rows[i - 1][0]:
            rank = start + i + 1
        out.append(Entry(_text(player), rating, _played(raw) if raw is not None else 0, rank))
    return out


def top(client: Any, tenant: str, game: str, board: str = ALL, limit: int = 10, offset: int = 0) -> list[Entry]:
    """``limit`` listed players from position ``offset`` (0 = the best), in board order, with their ranks."""
    if not 1 <= limit <= MAX_LIMIT or not 0 <= offset <= MAX_OFFSET:
        raise LeaderboardError(Kind.MALFORMED, "bad_parameter", f"limit is 1-{MAX_LIMIT} and offset 0-{MAX_OFFSET} "
                               "(deeper: read around a player)")
    tags = board_tags(tenant, game, board)
    need = offset + limit
    per = min(need, math.ceil(need / SHARDS + 2 * math.sqrt(need / SHARDS) + 2))
    fetched: list[list[Row]] = [[] for _ in tags]
    complete = [False] * len(tags)
    ask = dict.fromkeys(range(len(tags)), per)
    while ask:
        def queue(batch: Batch, ask: dict[int, int] = ask) -> None:
            for k, count in ask.items():
                r, _, m = shard_keys(tags[k])
                start = len(fetched[k])
                batch.script(_TOP, [r, m], [start, start + count - 1])
        for (k, count), (flat, counts) in zip(ask.items(), _fan(client, queue), strict=True):
            got = _rows(flat, counts)
            fetched[k] += got
            complete[k] = len(got) < count
        merged = sorted((row for rows in fetched for row in rows), reverse=True)
        boundary = merged[need - 1][:2] if len(merged) >= need else None
        ask = {}
        for k, rows in enumerate(fetched):
            # a shard cut short whose last entry is inside the page may hold more of it
            if not complete[k] and (boundary is None or rows[-1][:2] >= boundary):
                ask[k] = max(per, len(rows))
    page = merged[offset:need]
    if not page:
        return []
    first = page[0][0]
    higher = sum(1 for r in merged[:offset] if r[0] > first)  # the exact prefix holds every higher rating
    return _ranked(page, offset, higher + 1)


def rank(client: Any, tenant: str, game: str, player: str, board: str = ALL) -> tuple[Entry | None, int]:
    """The player's entry on the board (``rank`` None while they are below the minimum; None if they are not on
    the board at all), and how many players are listed."""
    tags = board_tags(tenant, game, board)
    r, u, m = shard_keys(tags[shard_of(player)])
    listed_raw, unlisted, played = _fan(client, lambda batch: (
        batch.cmd("ZSCORE", r, player), batch.cmd("ZSCORE", u, player), batch.cmd("HGET", m, player)))
    listed = None if listed_raw is None else float(listed_raw)

    def counts(batch: Batch) -> None:
        for tag in tags:
            key = shard_keys(tag)[0]
            batch.cmd("ZCARD", key)
            if listed is not None:
                batch.cmd("ZCOUNT", key, f"({listed!r}", "+inf")

    replies = _fan(client, counts)
    step = 2 if listed is not None else 1
    size = sum(int(n) for n in replies[0::step])
    if listed is None and unlisted is None:
        return None, size
    matches = _played(played) if played is not None else 0
    if listed is None:
        return Entry(player, float(unlisted), matches, None), size
    return Entry(player, float(listed), matches, 1 + sum(int(n) for n in replies[1::2])), size


def around(client: Any, tenant: str, game: str, player: str, board: str = ALL, span: int = 5) -> list[Entry]:
    """The listed player and their neighbours: ``2 * span + 1`` entries in board order when the board has
    them, the player as near the middle as the board's ends allow. Empty if the player is not listed."""
    if not 1 <= span <= MAX_SPAN:
        raise LeaderboardError(Kind.MALFORMED, "bad_parameter", f"span is 1-{MAX_SPAN}")
    tags = board_tags(tenant, game, board)
    r, _, m = shard_keys(tags[shard_of(player)])
    score_raw, mine_raw = _fan(client, lambda batch: (batch.cmd("ZSCORE", r, player), batch.cmd("HGET", m, player)))
    if score_raw is None:
        return []
    score = float(score_raw)
    want = 2 * span

    def queue(batch: Batch) -> None:
        for tag in tags:
            sr, _, sm = shard_keys(tag)
            batch.script(_AROUND, [sr, sm], [repr(score), player, want])

    below: list[Row] = []
    above: list[Row] = []
    higher = position = 0
    for low, high, counts, gt, _card, over in _fan(client, queue):
        n_low = len(low) // 2
        below += _rows(low, counts[:n_low])
        above += _rows(high, counts[n_low:])
        higher += int(gt)
        position += int(over)
    below.sort(reverse=True)  # nearest first
    above.sort()  # nearest first; one past the window may follow
    n_above = min(len(above), span)
    n_below = min(len(below), want - n_above)
    n_above = min(len(above), want - n_below)
    window = [*reversed(above[:n_above]), (score, player.encode(), mine_raw), *below[:n_below]]
    top_pos = position - n_above  # the board position (0 = best) of the window's first row
    # ranks: known for the player (1 + higher); a row whose rating differs from the row before it is ranked by
    # its position; the window's first rows share a rank with what is above the window when their rating goes on
    first = window[0][0]
    if top_pos == 0 or first == score:
        first_rank = 1 if top_pos == 0 else 1 + higher
    elif len(above) > n_above and above[n_above][0] == first:
        first_rank = 1 + _count_higher(client, tags, first)
    else:
        first_rank = top_pos + 1
    return _ranked(window, top_pos, first_rank)


def _count_higher(client: Any, tags: tuple[str, ...], rating: float) -> int:
    return sum(int(n) for n in _fan(client, lambda batch: [batch.cmd("ZCOUNT", shard_keys(t)[0], f"({rating!r}", "+inf")
                                                          for t in tags]))


def size(client: Any, tenant: str, game: str, board: str = ALL) -> int:
    """How many players the board lists."""
    return sum(int(n) for n in _fan(client, lambda batch: [batch.cmd("ZCARD", shard_keys(t)[0])
                                                          for t in board_tags(tenant, game, board)]))


# -- season ends: the worker's part -------------------------------------------------------------------------------
def claim_due_seasons(client: Any, now: float, lease_s: float, count: int = 10) -> list[str]:
    """Season ends due at ``now``, leased for ``lease_s`` (members ``tenant|game|season``)."""
    return [member for _, member in Leases(client).claim_shards(DUE_SHARDS, now, lease_s, count)]


def close_due_seasons(client: Any, now: float | None = None, lease_s: float = 30.0,
                      budget: int = 100_000) -> list[str]:
    """Close every season whose end is due: apply its ratings policy, rolling at most ``budget`` players in this
    call (a season left unfinished is due again at once, and goes on from its saved cursors; if the worker
    dies, its lease runs out and another one resumes). Returns the seasons closed now."""
    now = time.time() if now is None else now
    closed = []
    for member in claim_due_seasons(client, now, lease_s):
        tenant, game, name = member.split("|")
        _, leases = due_keys(member)
        found = conf(client, tenant, game)["seasons"].get(name)
        if found is None or found.get("closed"):
            client.zrem(leases, member)
            continue
        if found["ends_at"] > now:  # moved later since it was indexed
            _schedule(client, tenant, game, name, found["ends_at"])
            continue
        budget, finished = _roll(client, tenant, game, found, now, budget, member, lease_s)
        if not finished:  # due again at once: the next call (any worker's) goes on from the saved cursors
            _schedule(client, tenant, game, name, now)
            continue
        _change_conf(client, tenant, game, functools.partial(_mark_closed, name=name, now=now))
        client.zrem(leases, member)
        client.unlink(roll_key(tenant, game, name))
        closed.append(member)
    return closed


def _mark_closed(doc: dict[str, Any], *, name: str, now: float) -> dict[str, Any]:
    if name in doc["seasons"]:
        doc["seasons"][name] = {**doc["seasons"][name], "closed": True, "closed_at": now}
    return doc


def _roll(client: Any, tenant: str, game: str, season: dict[str, Any], now: float, budget: int, member: str,
          lease_s: float) -> tuple[int, bool]:
    """Apply a season's policy to the ratings of every player on the all-time board, page by page from the saved
    cursors; rescore the all-time and live boards. Returns (budget left, finished)."""
    if season["decay"] <= 0.0:
        return budget, True
    name = season["name"]
    progress = {_text(k): _text(v) for k, v in client.hgetall(roll_key(tenant, game, name)).items()}
    live = live_season(conf(client, tenant, game), now)
    boards = [ALL] + ([live["name"]] if live else [])
    mu0, sigma0 = ratings.MODEL.mu, ratings.MODEL.sigma
    _, leases = due_keys(member)
    for k, tag in enumerate(board_tags(tenant, game, ALL)):
        cursor = progress.get(str(k), "0")
        if cursor == "done":
            continue
        while True:
            if budget <= 0:
                return budget, False
            cursor, found = client.hscan(shard_keys(tag)[2], cursor, count=ROLL_PAGE)
            players = [_text(p) for p in found]
            budget -= len(players)
            if players:
                args = [game, name, season["decay"], mu0, sigma0, now]
                rolled = _fan(client, _each(_ROLL, [(
                    [ratings.player_key(tenant, p)], args) for p in players]))
                rescores = []
                for p, doc in zip(players, rolled, strict=True):
                    if doc is None:
                        continue
                    mu, sigma, matches = (float(_text(x)) for x in doc)
                    rating = ratings.public({"mu": mu, "sigma": sigma, "matches": int(matches)})["rating"]
                    rescores += [(list(player_keys(tenant, game, board, p)), [p, int(matches), repr(rating)])
                                 for board in boards]
                _fan(client, _each(_RESCORE, rescores))
            cursor = _text(cursor)
            client.hset(roll_key(tenant, game, name), str(k), "done" if cursor == "0" else cursor)
            client.zadd(leases, {member: time.time() + lease_s}, xx=True)  # a longer lease for the next page
            if cursor == "0":
                break
    return budget, True
