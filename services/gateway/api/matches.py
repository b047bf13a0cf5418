"""Matches: create, join, status with the caller's view, legal moves, moves, replay, leave.

The gateway never interprets a game: the rules service validates and applies every move, and the
store's compare-and-set makes each update atomic.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

import orjson
from flask import Blueprint, Response, g, jsonify, request

from services.core import clocks, control, hints, history, quotas, tenants
from services.core.moves import MAX_REBASES, apply_move, bot_seats_due, commit, notify_bots
from services.core.rules_client import Applied
from services.core.store import Match, StaleVersion, hash_token, new_match_id, new_token
from services.core.views import SPECTATOR, seat_legal_moves, seat_view

from ..context import gateway
from ..errors import ApiError
from .common import (
    caller_seat,
    client_ip,
    current_tenant,
    identify,
    json_body,
    limited_load,
    load_match,
    rate_limit,
    wants_legal_moves,
)

bp = Blueprint("matches", __name__)

#: Weakest first (the iteration budgets of ``ai/bot.py`` LEVELS; the gateway does not import ``ai/``).
BOT_LEVELS = ("novice", "easy", "casual", "normal", "strong", "hard")
#: Players a match may be created for (each game's own range is narrower; the rules service checks it).
MAX_PLAYERS = 16
#: An ``Idempotency-Key`` is 1 to this many characters.
IDEMPOTENCY_KEY_MAX = 128


def seats_public(match: Match, now: float) -> list[dict[str, Any]]:
    owner = _is_owning_tenant(match)
    return [{"seat": i, "kind": s["kind"], "level": s.get("level"), "taken": bool(s.get("token_hash"))
             or s["kind"] == "bot" or bool(s.get("left")) or bool(s.get("reserved")),
             "control": "bot" if control.bot_plays(s) else "human",
             "connected": s["kind"] == "human" and match.presence.get(i, 0.0) >= now,
             "forfeited": bool(s.get("forfeited")), "left": bool(s.get("left")),
             **({"player": s.get("player")} if owner and s["kind"] == "human" else {})}
            for i, s in enumerate(match.meta["seats"])]


def _is_owning_tenant(match: Match) -> bool:
    """Player ids are the tenant's own: only a request with its key sees them."""
    tenant = g.get("tenant")
    return tenant is not None and match.meta.get("tenant") == tenant.name


def status_doc(match: Match, seat: int | None, view: Any) -> dict[str, Any]:
    meta = match.meta
    now = time.time()
    clock = meta.get("clock")
    return {"id": match.id, "game": meta["game"], "players": meta["players"], "options": meta["options"],
            "status": meta["status"], "version": match.version, "seats": seats_public(match, now),
            "to_act": meta["to_act"], "you": seat, "view": view, "result": meta.get("result"),
            "outcome": meta.get("outcome"), "clock": clocks.public(clock, now) if clock else None,
            "takeover_level": meta.get("takeover_level", control.DEFAULT_TAKEOVER_LEVEL),
            "rematch": meta.get("rematch")}


def parse_seats(raw: Any, players: int, tenant: tenants.Tenant | None = None) -> list[dict[str, Any]]:
    if raw is None:
        return [{"kind": "human", "token_hash": None} for _ in range(players)]
    if len(raw) != players:
        raise ApiError(400, "bad_seats", f"seats must list exactly {players} seats")
    seats = []
    named: set[str] = set()
    for i, seat in enumerate(raw):
        if not isinstance(seat, dict) or seat.get("kind") not in ("human", "bot"):
            raise ApiError(400, "bad_seats", f"seat {i}: kind must be 'human' or 'bot'")
        if set(seat) - {"kind", "level", "player"}:
            raise ApiError(400, "bad_seats", f"seat {i}: only 'kind', 'level' and 'player' are allowed")
        if "player" in seat:
            if seat["kind"] != "human":
                raise ApiError(400, "bad_seats", f"seat {i}: only a human seat names a player")
            player = parse_player(seat["player"], tenant)
            if player in named:
                raise ApiError(400, "bad_seats", f"seat {i}: player {player!r} already sits in another seat")
            named.add(player)
            seats.append({"kind": "human", "token_hash": None, "player": player})
            continue
        if seat["kind"] == "bot":
            level = seat.get("level", "normal")
            if level not in BOT_LEVELS:
                raise ApiError(400, "bad_seats", f"seat {i}: level must be one of {', '.join(BOT_LEVELS)}")
            seats.append({"kind": "bot", "level": level, "token_hash": None})
        else:
            if "level" in seat:
                raise ApiError(400, "bad_seats", f"seat {i}: a human seat has no level")
            seats.append({"kind": "human", "token_hash": None})
    return seats


def all_seated(seats: list[dict[str, Any]]) -> bool:
    """Every seat has its player: a bot, a token, a matchmaking ticket that holds it, or a human who left."""
    return all(s["kind"] == "bot" or s.get("token_hash") or s.get("reserved") or s.get("left") for s in seats)


def count_fill(match: Match) -> None:
    """Seat-fill metrics, once per match, when it starts: who ended up in the seats."""
    if match.meta["status"] == "active":
        for info in match.meta["seats"]:
            gateway().metrics.seats_filled.labels("bot" if control.bot_plays(info) else "human").inc()


def parse_player(raw: Any, tenant: tenants.Tenant | None) -> str:
    """A tenant's user id (``"player"``): only with an API key, 1-64 characters of ``[A-Za-z0-9._:@-]``."""
    if tenant is None:
        raise ApiError(400, "player_needs_api_key", "'player' names a tenant's user: send it with an API key")
    if not isinstance(raw, str) or not tenants.NAME_RE.match(raw):
        raise ApiError(400, "bad_player", "player must be 1-64 characters: letters, digits and . _ : @ - "
                       "(not first)")
    return raw


@bp.post("/v1/matches")
def create_match() -> tuple[Response, int]:
    tenant = identify("creating a match")
    rate_limit()
    body = json_body({"game": str, "players": int, "options": dict, "seed": int, "seats": list, "join": bool,
                      "clock": dict, "takeover_level": str}, required=("game", "players"))
    if not 0 <= body.get("seed", 0) < 2**63:
        raise ApiError(400, "wrong_type", "seed must be an integer from 0 to 2^63-1")
    if not 1 <= body["players"] <= MAX_PLAYERS:
        raise ApiError(400, "invalid_options", f"players must be from 1 to {MAX_PLAYERS}")
    seats = parse_seats(body.get("seats"), body["players"], tenant)
    clock = clocks.parse(body.get("clock"))
    takeover = body.get("takeover_level", control.DEFAULT_TAKEOVER_LEVEL)
    if takeover not in BOT_LEVELS:
        raise ApiError(400, "bad_seats", f"takeover_level must be one of {', '.join(BOT_LEVELS)}")
    if body.get("join") and seats[0]["kind"] != "human":
        raise ApiError(400, "bad_seats", "join needs seat 0 to be a human seat")
    match = create(body["game"], body["players"], body.get("options", {}), body.get("seed"), seats, clock, takeover,
                   owner=f"ip:{client_ip()}", tenant=tenant)
    if not body.get("join"):
        return jsonify(status_doc(match, None, seat_view(gateway(), match, None))), 201
    match, seat, token = take_seat(match.id, 0)  # version 1: the ``joined`` entry, as a join would write
    return jsonify({**status_doc(match, seat, seat_view(gateway(), match, seat)), "token": token}), 201


def quota_limits(tenant: tenants.Tenant | None = None) -> quotas.Limits:
    """The per-IP limits, or the tenant's own quotas (``meeple keys create --quota``)."""
    if tenant is not None:
        return quotas.Limits(tenant.quotas["matches"], tenant.quotas["bots"], tenant.quotas["hard"])
    cfg = gateway().config
    return quotas.Limits(cfg.max_active_matches_per_ip, cfg.max_bot_seats_per_ip, cfg.max_hard_bots_per_ip)


def check_room() -> None:
    """503 ``store_full`` once Redis holds ``MEEPLE_STORE_FULL_RATIO`` of its ``maxmemory``: the rest is kept
    for the matches already running, which must never fail for want of memory."""
    gw = gateway()
    if gw.config.store_full_ratio > 0 and gw.store.used_share() >= gw.config.store_full_ratio:
        raise ApiError(503, "store_full", "the match store is full: no new matches for now (running matches go "
                       "on); retry later", {"Retry-After": "60"})


def charge(owner: str, member: str, seats: list[dict[str, Any]], until: float,
           tenant: tenants.Tenant | None = None) -> None:
    """Charge ``owner``'s quotas until ``until`` at the latest, or 429 ``quota_exceeded`` naming the limit."""
    gw = gateway()
    try:
        quotas.charge(gw.store.redis, owner, member, seats, time.time(), until, quota_limits(tenant))
    except quotas.QuotaExceeded as err:
        who = "" if tenant is None else f"tenant {tenant.name}: "
        raise ApiError(429, "quota_exceeded", who + str(err)) from None


def create(game_id: str, players: int, options: dict[str, Any], seed: int | None, seats: list[dict[str, Any]],
           clock: dict[str, Any] | None = None, takeover_level: str = control.DEFAULT_TAKEOVER_LEVEL,
           owner: str | None = None, tenant: tenants.Tenant | None = None) -> Match:
    """A new match in the store (the rules service sets it up); shared by create, matchmaking and rematch.

    ``owner`` (the client's IP) is charged the match and its bot seats until the match finishes; a
    ``tenant``'s match is charged to the tenant instead, with its quotas, and indexed for its history.
    """
    gw = gateway()
    if tenant is not None:
        owner = tenant.owner
    check_room()
    seed = secrets.randbits(63) if seed is None else seed
    game = gw.rules.new_game(game_id, players, seed, options)
    meta: dict[str, Any] = {"game": game_id, "players": players, "options": options, "seed": seed,
            "seats": seats, "seat_count": game.seats, "sides": game.sides, "to_act": game.to_act,
            "status": "active" if all_seated(seats) else "waiting", "result": None, "outcome": None,
            "clock": clocks.initial(clock or clocks.parse(None), game.seats), "takeover_level": takeover_level}
    match_id = new_match_id()
    if owner is not None:
        charge(owner, match_id, seats, gw.store.quota_until(meta["status"], time.time()), tenant)
        meta["owner"] = owner
    if tenant is not None:
        meta["tenant"] = tenant.name
        history.index(gw.store, tenant.name, match_id, [s.get("player") for s in seats], time.time())
    try:
        if meta["status"] == "active":  # everyone is seated already: the clocks of the seats to act start now
            meta["clock"] = clocks.advance(meta["clock"], timed=control.timed(meta), to_act=meta["to_act"],
                                           mover=None, version=0, now=time.time())
            for seat, due in clocks.started(meta["clock"], 0):
                gw.store.schedule(match_id, seat, 0, due)
        match = gw.store.create(match_id, meta, game.state, game.derived())
    except Exception:
        if owner is not None:
            pipe = gw.store.redis.pipeline(transaction=False)
            quotas.release(pipe, owner, match_id, seats)
            pipe.execute()
        raise
    count_fill(match)
    notify_bots(gw.store, match, bot_seats_due(None, match.meta, None))
    return match


def take_seat(match_id: str, wanted: int | None, player: str | None = None, *,
              seat_holder: bool = False) -> tuple[Match, int, str]:
    """Join: a free human seat (``wanted`` or the first) gets a new token; returns the match, seat and token.

    A tenant's match is joined with its key only (any other caller: 404), which may name the ``player``;
    ``seat_holder``: the caller holds this seat in the match before (a rematch), whoever its tenant.
    """
    gw = gateway()
    tenant = current_tenant()
    for _ in range(MAX_REBASES):
        match = load_match(match_id)
        owner = match.meta.get("tenant")
        if owner is not None and not seat_holder and (tenant is None or tenant.name != owner):
            raise ApiError(404, "match_not_found", f"no match {match_id!r} (it may have expired)")
        if player is not None and owner is None:
            raise ApiError(400, "bad_player", "a player is named only in its tenant's own matches (this one was "
                           "created without an API key)")
        if match.meta["status"] == "finished":
            raise ApiError(409, "match_closed", "the match is over")
        seats = [dict(s) for s in match.meta["seats"]]
        free = [i for i, s in enumerate(seats) if s["kind"] == "human" and not s.get("token_hash")
                and not s.get("left") and not s.get("reserved")]
        if wanted is not None:
            if not 0 <= wanted < len(seats):
                raise ApiError(400, "no_such_seat", f"seat {wanted} does not exist")
            if wanted not in free:
                raise ApiError(409, "seat_taken", f"seat {wanted} is not free")
            seat = wanted
        elif free:
            seat = free[0]
        else:
            raise ApiError(409, "match_full", "every seat is taken")
        if player is not None and seats[seat].get("player") not in (None, player):
            raise ApiError(409, "seat_taken", f"seat {seat} is kept for another player")
        if player is not None and any(s.get("player") == player for i, s in enumerate(seats) if i != seat):
            raise ApiError(409, "player_seated", f"player {player!r} already sits in this match")
        token = new_token(seat)
        seats[seat]["token_hash"] = hash_token(token)
        if player is not None:
            seats[seat]["player"] = player
            history.index(gw.store, str(owner), match_id, [player], match.meta.get("created_at", time.time()))
        meta = {**match.meta, "seats": seats, "status": "active" if all_seated(seats) else "waiting"}
        try:
            match = commit(gw.store, match, meta, None, {"kind": "joined", "seat": seat, "to_act": meta["to_act"]})
        except StaleVersion:
            continue
        count_fill(match)
        return match, seat, token
    raise ApiError(409, "busy", "the match changed too often; retry")


@bp.post("/v1/matches/<match_id>/join")
def join(match_id: str) -> tuple[Response, int]:
    tenant = identify("joining a match")
    rate_limit()
    body = json_body({"seat": int, "player": str})
    player = parse_player(body["player"], tenant) if "player" in body else None
    match, seat, token = take_seat(match_id, body.get("seat"), player)
    return jsonify({**status_doc(match, seat, seat_view(gateway(), match, seat)), "seat": seat, "token": token}), 200


@bp.get("/v1/matches/<match_id>")
def get_match(match_id: str) -> Response:
    include_legal = wants_legal_moves()
    match, _ = limited_load(match_id, view=True, legal=include_legal)
    seat = caller_seat(match, required=False)
    doc = status_doc(match, seat, seat_view(gateway(), match, seat))
    if include_legal:
        doc["legal_moves"] = None if seat is None else seat_legal_moves(gateway(), match, seat)
    return jsonify(doc)


@bp.get("/v1/matches/<match_id>/legal-moves")
def legal_moves(match_id: str) -> Response:
    match, _ = limited_load(match_id, legal=True)
    seat = caller_seat(match, required=True)
    assert seat is not None
    return jsonify({"version": match.version, "seat": seat, "moves": seat_legal_moves(gateway(), match, seat)})


@bp.post("/v1/matches/<match_id>/moves")
def submit_move(match_id: str) -> tuple[Response, int]:
    key = request.headers.get("Idempotency-Key")
    if key is not None and not 1 <= len(key) <= IDEMPOTENCY_KEY_MAX:
        raise ApiError(400, "bad_idempotency_key", f"Idempotency-Key must be 1 to {IDEMPOTENCY_KEY_MAX} characters")
    include_legal = wants_legal_moves()
    match, done = limited_load(match_id, key)  # one round trip: rate limit, match, earlier response
    seat = caller_seat(match, required=True)
    assert seat is not None
    body = json_body({"move": dict, "version": int}, required=("move", "version"))
    gw = gateway()
    fingerprint = hashlib.sha256(orjson.dumps([seat, body], option=orjson.OPT_SORT_KEYS)).hexdigest()
    if done is not None:
        if done["fingerprint"] != fingerprint:
            raise ApiError(422, "idempotency_key_reused", "that Idempotency-Key was used with another request")
        return jsonify(done["body"]), done["status"]

    def respond(updated: Match, applied: Applied) -> dict[str, Any]:
        doc = status_doc(updated, seat, orjson.Fragment(applied.views[seat]))
        if include_legal:
            mine = applied.legal.get(seat)
            doc["legal_moves"] = orjson.Fragment(mine) if mine is not None and not control.bot_plays(
                updated.meta["seats"][seat]) and updated.meta["status"] == "active" else []
        return doc

    made: list[dict[str, Any]] = []  # by remember(): the last one is the attempt that committed

    def remember(updated: Match, applied: Applied) -> tuple[str, dict[str, Any]]:
        """The response, stored by the same compare-and-set as the move (``key`` is set here)."""
        assert key is not None
        made.append(respond(updated, applied))
        return key, {"fingerprint": fingerprint, "status": 200, "body": made[-1]}

    try:
        updated, applied = apply_move(gw.store, gw.rules, match, seat, body["move"], body["version"],
                                      remember=remember if key is not None else None)
    except ApiError as err:
        gw.metrics.moves.labels(match.game, err.code).inc()
        if key is not None and err.status == 422:
            gw.store.idempotent_put(match_id, key, {"fingerprint": fingerprint, "status": err.status,
                                                    "body": {"error": {"code": err.code, "message": err.message}}})
        if key is not None and err.code == "stale_version":  # a concurrent twin may have won: replay it
            done = gw.store.idempotent_get(match_id, key)
            if done is not None and done["fingerprint"] == fingerprint:
                return jsonify(done["body"]), done["status"]
        raise
    gw.metrics.moves.labels(match.game, "applied").inc()
    return jsonify(made[-1] if made else respond(updated, applied)), 200


@bp.get("/v1/matches/<match_id>/replay")
def replay(match_id: str) -> Response:
    """The move log. Before the end a seat sees only its own moves (others' may hide cards), and no seed.

    ``include=views`` (a finished match only) adds the caller's view after each version, rebuilt by the rules
    service from the seed and the moves: a replay viewer draws the board at every step without a game
    engine, and sees only what that seat (or a spectator) saw then."""
    match, _ = limited_load(match_id)
    seat = caller_seat(match, required=False)
    over = match.meta["status"] == "finished"
    include = request.args.get("include")
    if include not in (None, "views"):
        raise ApiError(400, "bad_parameter", "include takes: views")
    if include and not over:
        raise ApiError(409, "match_not_finished", "views of past versions are served once the match is over")
    log = gateway().store.log(match_id)
    views = replay_views(match, log, seat) if include else None
    entries = []
    for i, entry in enumerate(log):
        item = {"version": entry["version"], "kind": entry["kind"], "seat": entry.get("seat")}
        if "by" in entry:
            item["by"] = entry["by"]
        if entry["kind"] == "move" and (over or entry.get("seat") == seat):
            item["move"] = entry["move"]
        if views is not None:
            item["view"] = views[i]
        entries.append(item)
    meta = match.meta
    return jsonify({"id": match.id, "game": meta["game"], "players": meta["players"], "options": meta["options"],
                    "seed": meta["seed"] if over else None, "status": meta["status"], "version": match.version,
                    "log": entries, "result": meta.get("result")})


def replay_views(match: Match, log: list[dict[str, Any]], seat: int | None) -> list[Any]:
    """The view of ``seat`` (None: a spectator) after each log entry: the game replayed from its seed, one
    rules-service call per move, asking for that one view only. Entries other than moves change no state."""
    rules, meta = gateway().rules, match.meta
    key = SPECTATOR if seat is None else seat
    applied = rules.new_game(match.game, meta["players"], meta["seed"], meta["options"], derive=False,
                             view_seats=[key])
    views = []
    for entry in log:
        if entry["kind"] == "move":
            applied = rules.apply_move(match.game, applied.state, entry["seat"], entry["move"], view_seats=[key],
                                       derive=False)
        views.append(orjson.loads(applied.views[key]))
    return views


@bp.get("/v1/matches/<match_id>/hint")
def hint(match_id: str) -> Response:
    """The easy bot's suggestion for the caller's own seat, computed by a bot worker (never in the gateway).

    The search determinizes from the caller's seat, so a hint can never reveal another seat's cards.
    """
    match, _ = limited_load(match_id)
    seat = caller_seat(match, required=True)
    assert seat is not None
    if match.meta["status"] != "active" or seat not in match.meta["to_act"]:
        raise ApiError(409, "not_your_turn", "there is no decision of yours to hint at")
    gw = gateway()
    if match.meta.get("tenant"):  # the tenant's hint budget, shared by all its matches
        budget = tenants.quotas_of(gw.store.redis, match.meta["tenant"])["hints"]
        used, reset = gw.store.hit(f"hints:{tenants.owner_of(match.meta['tenant'])}")
        if budget > 0 and used > budget:
            raise ApiError(429, "hint_limited", f"tenant {match.meta['tenant']}: at most {budget} hints a minute; "
                           f"retry in {reset} s", {"Retry-After": str(reset)})
    try:
        move = hints.ask(gw.store.redis, match, seat, wait_s=gw.config.hint_wait_s,
                         budget_s=gw.config.hint_budget_s, per_minute=gw.config.hints_per_seat_minute)
    except hints.HintLimited as err:
        raise ApiError(429, "hint_limited", str(err), {"Retry-After": str(err.retry_after)}) from None
    except hints.HintStale:
        raise ApiError(409, "stale_version", "the match moved on while the hint was computed; ask again") from None
    except hints.NoAnswer:
        raise ApiError(503, "hint_unavailable", f"no bot worker answered within {gw.config.hint_wait_s:g} s; "
                       "retry shortly", {"Retry-After": "1"}) from None
    return jsonify({"version": match.version, "seat": seat, "move": move})
