"""Matchmaking: tickets per (game, players, options); humans are grouped into matches as they arrive.

A ticket id is a secret bearer of its own, but it travels in URLs (and so into logs): the seat token is
therefore not made when the ticket is matched. The match holds the seat ``reserved`` for the ticket (by
the ticket's hash), and the first read that finds the ticket matched makes the token, stores its hash in
the seat (a ``joined`` entry, through the commit pipeline, so exactly one reader gets it) and answers it
once, as join does; the ticket record never holds a token. After ``MEEPLE_BOT_FILL_S`` seconds without
enough humans, the next read fills the empty seats with bots. A waiting or matched ticket counts as one of
its owner's active matches until it is cancelled or expires. Who may read a ticket is the access policy's
call (:func:`~.access.authorize_ticket`): a tenant's ticket is its key's alone.

A ticket may hold a *party*: 1 to ``players`` members (each a tenant's player, or anonymous, with an optional
display name) who are seated together in one match, placed as :func:`.skill.place` says (a team game puts a
party on one team when it fits). The party is matched by its mean rating, its window widened by half its
spread; each member's seat is reserved for the ticket, and the first read that finds it matched hands out
every member's token, once. It counts as one active match per member. A ticket without ``party`` is a party of
one: its ``player`` is its one member.

Keys: ``mm:ticket:{<ticket>}`` (the record), ``mm:ticket:{<ticket>}:events`` (one entry when it is matched or
cancelled: what a long-polling reader waits on), and per pool ``mm:{<digest>}:pool`` (sorted set: ticket by
rating), ``mm:{<digest>}:since`` (hash: ticket -> queued at), ``mm:{<digest>}:player`` (hash: ticket -> the
tenant's player it seats, for named tickets: a group never seats one player twice), ``mm:{<digest>}:party``
(hash: ticket -> its size, named members and rating spread, for parties of two or more) and
``mm:{<digest>}:sides`` (the game's sides, written by a party's enqueue: what grouping places parties by).
"""

from __future__ import annotations

import hashlib
import secrets
import time
import unicodedata
from collections.abc import Callable
from typing import Any

import orjson
import redis

from services.core.access import Caller, authorize_create, authorize_ticket, require_credential
from services.core.competition import ratings, skill
from services.core.errors import DomainError, Kind, busy
from services.core.limits import count_request
from services.core.match import idempotency
from services.core.match.commit import MAX_REBASES, commit
from services.core.match.creator import charge_all, check_room, new_match, release_all
from services.core.match.opener import load
from services.core.match.seating import BOT_LEVELS, MAX_ID, parse_player
from services.core.meta import Seat
from services.core.record.store import EVENTS_CHANNEL, StaleVersion, hash_token, new_token
from services.core.service import Core
from services.core.tenancy import tenants

TICKET_TTL_S = 3600
WAKE_TTL_S = 60
#: Tickets a grouping looks at (the lowest-rated first): bounds the work of one enqueue or poll.
POOL_SCAN = 500
#: A party member's display name is at most this long.
NAME_MAX = 32
#: How long a read that hands out a party's tokens holds the ticket (a crashed read's hold lapses).
ISSUE_HOLD_S = 30
#: Each game's sides per (game, players, options), as the rules service said (games change only on a redeploy).
_SIDES: dict[str, list[list[int]]] = {}


def _queue(game: str, players: int, options: dict[str, Any], tenant: str | None = None) -> str:
    """One pool per (game, players, options) and tenant (a tenant's players meet each other only)."""
    parts: list[Any] = [game, players, options] if tenant is None else [game, players, options, tenant]
    digest = hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:24]
    return f"mm:{{{digest}}}"


Choose = Callable[[list[skill.Entry], float, "skill.Sides | None"], list[skill.Entry] | None]


def _take(core: Core, prefix: str, choose: Choose) -> list[str]:
    """Take the group ``choose`` picks off the pool, atomically across gateways (WATCH: a pool that changed
    meanwhile is read again)."""
    pool, since, named, parties, sides_key = _pool_keys(prefix)
    for _ in range(MAX_REBASES):
        with core.redis.pipeline(transaction=True) as pipe:  # a cluster's pipeline WATCHes only as a transaction
            try:
                pipe.watch(pool)
                rows: list[tuple[bytes, float]] = pipe.zrange(pool, 0, POOL_SCAN - 1, withscores=True)  # type: ignore[assignment]
                stamps: dict[bytes, bytes] = pipe.hgetall(since)  # type: ignore[assignment]
                players: dict[bytes, bytes] = pipe.hgetall(named)  # type: ignore[assignment]
                shapes: dict[bytes, bytes] = pipe.hgetall(parties)  # type: ignore[assignment]
                sides_raw = pipe.get(sides_key)
                now = time.time()
                entries = [_entry(m, r, stamps, players, shapes, now) for m, r in rows]
                group = choose(entries, now, orjson.loads(sides_raw) if sides_raw else None)  # type: ignore[arg-type]
                if not group:
                    pipe.unwatch()
                    return []
                ids = [e.ticket for e in group]
                pipe.multi()
                pipe.zrem(pool, *ids)
                for key in (since, named, parties):
                    pipe.hdel(key, *ids)
                pipe.execute()
                return ids
            except redis.WatchError:
                continue
    return []


def _entry(member: bytes, rating: float, stamps: dict[bytes, bytes], players: dict[bytes, bytes],
           shapes: dict[bytes, bytes], now: float) -> skill.Entry:
    """A pooled ticket as the policy sees it (a party with its size, named members and spread)."""
    shape = orjson.loads(shapes[member]) if member in shapes else {}
    return skill.Entry(member.decode(), float(rating), float(stamps.get(member, now)),
                       players[member].decode() if member in players else None, size=int(shape.get("size", 1)),
                       members=tuple(shape.get("members", ())), spread=float(shape.get("spread", 0.0)))


def _pool_keys(prefix: str) -> tuple[str, str, str, str, str]:
    """A pool's keys (one slot): tickets by rating, when each started waiting, the player each seats, the parties'
    shapes, and the game's sides."""
    return f"{prefix}:pool", f"{prefix}:since", f"{prefix}:player", f"{prefix}:party", f"{prefix}:sides"


def _pool_add(core: Core, prefix: str, docs: list[dict[str, Any]]) -> None:
    """Put waiting tickets into their queue's pool, by rating, each with the time it started waiting (and the
    player it seats, if named; a party's shape, and the game's sides it was placed by)."""
    if not docs:
        return
    pool, since, named, parties, sides_key = _pool_keys(prefix)
    players = {d["ticket"]: d["player"] for d in docs if d.get("player") and len(members_of(d)) == 1}
    shapes = {d["ticket"]: orjson.dumps({"size": len(members_of(d)), "spread": d.get("spread", 0.0),
                                         "members": [m["player"] for m in members_of(d) if m.get("player")]})
              for d in docs if len(members_of(d)) > 1}
    sides = next((d["sides"] for d in docs if d.get("sides")), None)
    pipe = core.redis.pipeline(transaction=True)
    pipe.zadd(pool, {d["ticket"]: d["rating"] for d in docs})
    pipe.hset(since, mapping={d["ticket"]: repr(d["created_at"]) for d in docs})
    if players:
        pipe.hset(named, mapping=players)
    if shapes:
        pipe.hset(parties, mapping=shapes)
    if sides is not None:
        pipe.set(sides_key, orjson.dumps(sides))
    for key in (pool, since, named, parties, sides_key):
        pipe.expire(key, TICKET_TTL_S)
    pipe.execute()


def members_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """A ticket's members (a record made before parties: its one player)."""
    members: list[dict[str, Any]] = doc.get("members") or [
        {"player": doc.get("player"), "name": None, "mu": doc.get("rating", ratings.default()["mu"])}]
    return members


def sides_of(core: Core, game: str, players: int, options: dict[str, Any]) -> list[list[int]]:
    """The game's sides for (players, options): asked of the rules service once per process (a trial game)."""
    key = orjson.dumps([game, players, options], option=orjson.OPT_SORT_KEYS).decode()
    found = _SIDES.get(key)
    if found is None:
        if len(_SIDES) > 256:
            _SIDES.clear()
        found = _SIDES[key] = core.rules.new_game(game, players, 0, options, derive=False).sides
    return found


def _rating_of(core: Core, tenant: tenants.Tenant | None, player: str | None, game: str) -> float:
    """What a ticket is matched by: the tenant's player's rating (mu), else the default."""
    if tenant is None or player is None:
        return float(ratings.default()["mu"])
    found = ratings.of_player(core.redis, tenant.name, player, game).get(game)
    return float((found or ratings.default())["mu"])


def ticket_key(ticket: str) -> str:
    return f"mm:ticket:{{{ticket}}}"


def wake_key(ticket: str) -> str:
    """A stream the hub watches for a long-polling read: one entry when the ticket is matched or cancelled."""
    return f"mm:ticket:{{{ticket}}}:events"


def ticket_record(core: Core, ticket: str) -> dict[str, Any]:
    """The ticket's stored record, or 404 ``ticket_not_found`` (no access decided: see :func:`open_ticket`)."""
    raw = core.redis.get(ticket_key(ticket)) if len(ticket) <= MAX_ID else None
    if raw is None:
        raise DomainError(Kind.NOT_FOUND, "ticket_not_found", "no such ticket (it may have expired)")
    doc: dict[str, Any] = orjson.loads(raw)
    return doc


def _save(core: Core, doc: dict[str, Any], wake: bool = False) -> None:
    pipe = core.redis.pipeline(transaction=False)
    pipe.set(ticket_key(doc["ticket"]), orjson.dumps(doc), ex=TICKET_TTL_S)
    if wake:
        pipe.xadd(wake_key(doc["ticket"]), {"status": doc["status"]})
        pipe.expire(wake_key(doc["ticket"]), WAKE_TTL_S)
    done = pipe.execute()
    if wake:  # announced for the hubs as the match script does (see ``services/gateway/hub.py``)
        entry = done[1].decode() if isinstance(done[1], bytes) else str(done[1])
        core.redis.publish(EVENTS_CHANNEL, f"{wake_key(doc['ticket'])} {entry.split('-')[0]} ")


def public(doc: dict[str, Any], tokens: list[str | None] | None = None) -> dict[str, Any]:
    """The ticket as clients see it; ``tokens`` (one per member) only in the one response that hands them out.
    The top-level ``seat`` and ``token`` are the first member's (as before parties)."""
    members = members_of(doc)
    tokens = tokens or [None] * len(members)
    issued = bool(doc.get("token_issued"))
    seats = doc.get("seats") or [doc.get("seat")] + [None] * (len(members) - 1)
    teams = doc.get("teams") or [None] * len(members)
    party = [{"player": m.get("player"), "name": m.get("name"), "seat": seat, "team": team, "token": token,
              "token_issued": issued or token is not None}
             for m, seat, team, token in zip(members, seats, teams, tokens, strict=True)]
    return {**{k: doc.get(k) for k in ("ticket", "status", "game", "players", "options", "match_id")},
            "seat": seats[0], "token": tokens[0], "token_issued": issued or tokens[0] is not None, "party": party}


def _reservation(ticket: str, member: int = 0) -> str:
    """What a seat held for a ticket's member carries (the first member's: the ticket's, as before parties)."""
    return hash_token(ticket if member == 0 else f"{ticket}#{member}")[:32]


def _seat_tickets(core: Core, tickets: list[str], game: str, players: int, options: dict[str, Any],
                  tenant: str | None = None) -> None:
    """Create the match for these tickets (each party placed as :func:`.skill.place` says, bots in the remaining
    seats, each human seat reserved for its ticket's member, with the member's player) and tell each ticket
    its members' seats and teams."""
    docs = [ticket_record(core, t) for t in tickets]
    sizes = [len(members_of(d)) for d in docs]
    sides = sides_of(core, game, players, options) if max(sizes) > 1 else None
    placed = skill.place(sizes, players, sides) or skill.place(sizes, players)
    assert placed is not None  # a group never holds more members than seats
    taken: list[Seat | None] = [None] * players
    for doc, party_seats in zip(docs, placed, strict=True):
        for i, (member, seat) in enumerate(zip(members_of(doc), party_seats, strict=True)):
            taken[seat] = Seat(kind="human", reserved=_reservation(doc["ticket"], i),
                               player=member.get("player") or None)
    level = _fill_level(core, game, [m for d in docs for m in members_of(d)]) if None in taken else None
    seats = [s or Seat(kind="bot", level=level) for s in taken]  # the bot rung closest in rating to the table's humans
    try:
        match = new_match(core, game, players, options, None, seats,
                          tenant=tenants.by_name(core.redis, tenant) if tenant else None)
    except Exception:  # e.g. the rules service is down: nobody was seated, so every ticket waits again
        _pool_add(core, _queue(game, players, options, tenant), _still_waiting(core, tickets))
        raise
    for doc, party_seats in zip(docs, placed, strict=True):
        _save(core, {**ticket_record(core, doc["ticket"]), "status": "matched", "match_id": match.id,
                     "seat": party_seats[0], "seats": party_seats,
                     "teams": [skill.team_of(match.meta.sides, s) for s in party_seats]}, wake=True)


def _fill_level(core: Core, game: str, humans: list[dict[str, Any]]) -> str:
    """The bot rung whose rating is closest to the mean ``mu`` of the table's humans (every party member)."""
    mean = sum(float(m.get("mu", ratings.default()["mu"])) for m in humans) / len(humans)
    rungs = {lv: doc for lv, doc in ratings.bot_ratings(core.redis, game).items() if lv in BOT_LEVELS}
    return skill.closest_level(rungs, mean)


def _still_waiting(core: Core, tickets: list[str]) -> list[dict[str, Any]]:
    """The records of those tickets that are still waiting (not cancelled, not expired)."""
    raws = [core.redis.get(ticket_key(t)) for t in tickets]  # one slot each on a cluster: no MGET
    docs = [orjson.loads(raw) for raw in raws if raw is not None]
    return [d for d in docs if d["status"] == "waiting"]


def _issue_tokens(core: Core, doc: dict[str, Any]) -> list[str | None]:
    """The seat tokens of a matched ticket's members, made on the first read and never again (None after that).
    A party's read holds the ticket meanwhile, so one response carries every member's token."""
    members = members_of(doc)
    if doc["status"] != "matched" or doc.get("token_issued"):
        return [None] * len(members)
    hold = f"{ticket_key(doc['ticket'])}:issuing"
    if len(members) > 1 and not core.redis.set(hold, "1", nx=True, ex=ISSUE_HOLD_S):
        return [None] * len(members)  # another read is handing them out
    try:
        seats = doc.get("seats") or [doc["seat"]]
        tokens = [_issue_one(core, doc["match_id"], seat, _reservation(doc["ticket"], i))
                  for i, seat in enumerate(seats)]
        _save(core, {**doc, "token_issued": True})
        return tokens
    finally:
        if len(members) > 1:
            core.redis.delete(hold)


def _issue_one(core: Core, match_id: str, seat: int, reservation: str) -> str | None:
    """The token of one seat held for a ticket (its ``joined`` entry), or None if another read took it."""
    for _ in range(MAX_REBASES):
        match = load(core, match_id)
        if match.meta.seats[seat].reserved != reservation:
            return None  # another read of this ticket took the token first
        token = new_token(seat)
        try:
            commit(core, match, match.meta.with_seat(seat, token_hash=hash_token(token), reserved=None), None,
                   {"kind": "joined", "seat": seat, "to_act": match.meta.to_act})
        except StaleVersion:
            continue
        return token
    raise busy()


def with_defaults(game: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """The options a ticket asks for, each option the game takes and it leaves out at the game's default: players
    who send a default and players who leave it out ask for the same game, so they share a pool."""
    return {**{o["name"]: o["default"] for o in game.get("options", [])}, **options}


def _bad_party(message: str) -> DomainError:
    return DomainError(Kind.MALFORMED, "bad_party", message)


def parse_party(tenant: tenants.Tenant | None, players: int, player: str | None,
                party: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """A ticket's members ``[{"player", "name"}]``: its ``party``, or its one ``player``; 400 ``bad_party`` for
    a party that is empty, larger than the table, names a player twice, comes with ``player``, or has a bad
    name."""
    if party is None:
        return [{"player": parse_player(player, tenant) if player is not None else None, "name": None}]
    if player is not None:
        raise _bad_party("send 'player' or 'party', not both: a party names each member's player")
    if not 1 <= len(party) <= players:
        raise _bad_party(f"a party has 1 to {players} members (the match's players)")
    members = [_member(i, m, tenant) for i, m in enumerate(party)]
    named = [m["player"] for m in members if m["player"] is not None]
    if len(named) != len(set(named)):
        raise _bad_party("a party names each player once (a match seats a player once)")
    return members  # (any party of 1..players can sit in any game's teams: see skill.place)


def _member(i: int, raw: dict[str, Any], tenant: tenants.Tenant | None) -> dict[str, Any]:
    player, name = raw.get("player"), raw.get("name")
    if name is not None and (not isinstance(name, str) or not 1 <= len(name) <= NAME_MAX
                             or any(unicodedata.category(c) == "Cc" for c in name)):
        raise _bad_party(f"party member {i}: a name is 1 to {NAME_MAX} characters, no control characters")
    return {"player": parse_player(player, tenant) if player is not None else None, "name": name}


def enqueue(core: Core, caller: Caller, *, game: str, players: int, options: dict[str, Any] | None = None,
            player: str | None = None, party: list[dict[str, Any]] | None = None,
            idempotency_key: str | None = None) -> dict[str, Any]:
    """``POST /v1/matchmaking``: a new ticket (for one player, or a ``party``), seated at once if a group can play
    (then with its tokens); with an ``idempotency_key``, the same ticket (and tokens) on every retry (see
    :mod:`.idempotency`)."""
    authorize_create(caller, "queueing")
    count_request(core, caller)
    options = options or {}
    tenant = caller.tenant
    catalogue = core.rules.catalogue()
    if game not in catalogue:
        raise DomainError(Kind.MALFORMED, "unknown_game", f"unknown game {game!r}")
    if not catalogue[game]["min_players"] <= players <= catalogue[game]["max_players"]:
        raise DomainError(Kind.MALFORMED, "invalid_options", f"{game} is for {catalogue[game]['min_players']}-"
                                                             f"{catalogue[game]['max_players']} players")
    if options:  # options the game does not take are refused now (400 invalid_options), not when a group is seated
        core.rules.new_game(game, players, 0, options, derive=False)
    options = with_defaults(catalogue[game], options)
    members = parse_party(tenant, players, player, party)
    if idempotency_key is None:
        return _enqueue(core, caller, game, players, options, members, secrets.token_urlsafe(18), kept=False)
    request = {"game": game, "players": players, "options": options, "player": player,
               **({"party": party} if party is not None else {})}
    claim = idempotency.claim(core.redis, idempotency.caller_record(caller.owner, "enqueue", idempotency_key),
                              idempotency_key, idempotency.fingerprint("enqueue", request),
                              {"id": secrets.token_urlsafe(18)})
    if (answer := claim.answer) is not None:
        return answer
    ticket = str(claim.record["id"])
    if not claim.fresh:
        raw = core.redis.get(ticket_key(ticket))
        if raw is not None:  # the first request queued it, and its answer was lost (or it could not seat its group)
            doc = orjson.loads(raw)
            if doc["status"] == "waiting":
                _group(core, game, players, options, doc["tenant"])
                doc = ticket_record(core, ticket)  # seated just now, perhaps
            return claim.complete(settle(core, doc))
        if claim.young():
            raise claim.in_use()
    try:
        answer = _enqueue(core, caller, game, players, options, members, ticket)
    except Exception:
        if core.redis.get(ticket_key(ticket)) is None:
            claim.forget()
        raise
    return claim.complete(answer)


def _charges(ticket: str, members: int) -> list[str]:
    """What a ticket holds of its owner's active matches: one per member (``t:<ticket>``, ``t:<ticket>:<i>``)."""
    return [f"t:{ticket}", *(f"t:{ticket}:{i}" for i in range(1, members))]


def _enqueue(core: Core, caller: Caller, game: str, players: int, options: dict[str, Any],
             members: list[dict[str, Any]], ticket: str, kept: bool = True) -> dict[str, Any]:
    """Queue a new ticket and seat a group if one can play. ``kept``: the request has an Idempotency-Key, so the
    ticket outlives a failed answer (its retry finds it); without one, a ticket whose request fails leaves the
    queue, since nobody could ask for it again."""
    check_room(core)
    tenant = caller.tenant
    charge_all(core, caller.owner, _charges(ticket, len(members)), time.time() + TICKET_TTL_S, tenant)
    mus = [_rating_of(core, tenant, m["player"], game) for m in members]
    doc: dict[str, Any] = {"ticket": ticket, "status": "waiting", "game": game, "players": players,
                           "options": options, "created_at": time.time(), "match_id": None, "seat": None,
                           "owner": caller.owner, "tenant": tenant.name if tenant else None,
                           "player": members[0]["player"], "rating": sum(mus) / len(mus),
                           "members": [{**m, "mu": mu} for m, mu in zip(members, mus, strict=True)]}
    if len(members) > 1:
        doc.update(spread=skill.spread(mus), sides=sides_of(core, game, players, options))
    _save(core, doc)
    prefix = _queue(game, players, options, doc["tenant"])
    _pool_add(core, prefix, [doc])
    try:
        _group(core, game, players, options, doc["tenant"])
    except Exception:
        if not kept and (own := _still_waiting(core, [ticket])):
            _withdraw(core, own[0])
        raise
    doc = ticket_record(core, ticket)
    return public(doc, _issue_tokens(core, doc))


def _group(core: Core, game: str, players: int, options: dict[str, Any], tenant: str | None) -> None:
    """Seat a group of the queue's waiting tickets if one can play now."""
    cfg = core.config
    taken = _take(core, _queue(game, players, options, tenant),
                  lambda entries, now, sides: skill.pick_group(entries, players, now, cfg.mm_window,
                                                               cfg.mm_widen_per_s, sides))
    if taken:
        _seat_tickets(core, taken, game, players, options, tenant)


def open_ticket(core: Core, caller: Caller, ticket: str, *, count: bool = True) -> dict[str, Any]:
    """The ticket's record, if the caller may read it (the request counted unless ``count`` is False)."""
    require_credential(caller)
    if count:
        count_request(core, caller)
    doc = ticket_record(core, ticket)
    authorize_ticket(caller, doc)
    return doc


def fill_in(core: Core, doc: dict[str, Any]) -> float | None:
    """Seconds until a waiting ticket's empty seats are due to be filled with bots (None: never)."""
    fill_after = core.config.bot_fill_s
    if doc["status"] != "waiting" or fill_after <= 0:
        return None
    return float(doc["created_at"]) + fill_after - time.time()


def settle(core: Core, doc: dict[str, Any]) -> dict[str, Any]:
    """A read of the ticket: bots fill its seats once that is due, and the first read that finds it matched
    takes its seat tokens."""
    due = fill_in(core, doc)
    if due is not None and due <= 0:
        ticket = doc["ticket"]

        def with_nearest(entries: list[skill.Entry], _: float, sides: skill.Sides | None) -> list[skill.Entry] | None:
            anchor = next((e for e in entries if e.ticket == ticket), None)  # gone: another read seated it
            if anchor is None:
                return None
            return [anchor, *skill.nearest(entries, anchor, doc["players"] - anchor.size, sides)]

        group = _take(core, _queue(doc["game"], doc["players"], doc["options"], doc.get("tenant")), with_nearest)
        if group:
            _seat_tickets(core, group, doc["game"], doc["players"], doc["options"], doc.get("tenant"))
        doc = ticket_record(core, ticket)
    return public(doc, _issue_tokens(core, doc))


def cancel(core: Core, caller: Caller, ticket: str) -> dict[str, Any]:
    """``DELETE /v1/matchmaking/{ticket}``: leave the queue (409 once matched); the owner's charges are released."""
    doc = open_ticket(core, caller, ticket)
    if doc["status"] != "waiting":
        raise DomainError(Kind.CONFLICT, "ticket_matched", "the ticket already has a match")
    _withdraw(core, doc)
    return public({**doc, "status": "cancelled"})


def _withdraw(core: Core, doc: dict[str, Any]) -> None:
    """Take a waiting ticket out of its queue for good (cancelled); its owner's charges are released."""
    ticket = doc["ticket"]
    pool, since, named, parties, _ = _pool_keys(_queue(doc["game"], doc["players"], doc["options"], doc.get("tenant")))
    pipe = core.redis.pipeline(transaction=True)
    pipe.zrem(pool, ticket)
    for key in (since, named, parties):
        pipe.hdel(key, ticket)
    pipe.execute()
    _save(core, {**doc, "status": "cancelled"}, wake=True)
    if doc.get("owner"):
        release_all(core, doc["owner"], _charges(ticket, len(members_of(doc))))
