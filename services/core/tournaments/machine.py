"""A tournament's state machine: pure functions from (state, what the matches say, now) to the next state.

The state is one JSON document (see :mod:`.store` for where it lives) with the settings, ``status``
(``registering`` -> ``running`` -> ``finished``, or ``cancelled``), the rounds and their tables, the players
marked absent, and a counter for event ids. Registrations live beside it (a hash the machine only reads).
:func:`advance` never does I/O: the runner (:mod:`.runner`) feeds it the matches' results and the players'
ratings, stores what it returns (with its events) under compare-and-set, and then does what the new state
asks for: create the matches of tables that have none yet (:func:`pending_creates`), end the ones a deadline
overtook (:func:`pending_aborts`). Every such action is idempotent, so a runner that dies anywhere leaves a
state the next one completes.

**Swiss.** At ``starts_at`` (with at least 2 players; else the tournament is cancelled) round 1 is paired;
a round ends when its last table is scored, or at its deadline (``round_s`` after it started), when every
unfinished table is scored as a draw and its match ended. The next round is paired at once, until
``rounds`` are played (or fewer than 2 players are left): then the tournament is finished.

**Arena.** From ``starts_at`` for ``duration_s``, every waiting player (registered, not at a running table,
not absent) is paired in waves (each wave is a "round" of the document); a player goes back to the waiting
pool as soon as their match ends. No pairing after the window; matches still running then count when they
finish, until ``grace_s`` after the window, when they are scored as draws and ended.

**No straight repeat.** Two players who sat at one table are not seated together again straight away: the
repeat waits until it is *due*, when another table (one neither of them sat at) has finished since both were
freed, or when both have waited ``REPEAT_WAIT_S``. Until then they are held apart (:mod:`.pairing`): each may be
paired with anyone else, or with bots once they waited ``bot_after_s``. A due repeat is still the last choice.

**Players.** Registering puts a player in; registering again brings back one withdrawn or absent, and leaves
one who is neither as they are (the store answers their registration unchanged); unregistering before the start
takes them out, after it withdraws them (they keep their points, and are not paired again). A no-show (see
:mod:`.scoring`) is marked absent at the time the table was scored and is not paired again until they register
again.

Events (webhooks): ``tournament.started``, ``round.started`` (with the tables), ``round.finished`` (with
the standings), ``tournament.finished`` (with the final standings; ``cancelled: true`` if it never ran or was
cancelled).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from services.core.errors import DomainError, Kind
from services.core.tenancy import tenants
from services.core.tournaments import pairing, scoring
from services.core.tournaments.port import MatchResult, MatchSpec, SeatSpec

#: A running tournament is looked at this often even if no match wakes it up (a lost wake-up costs this).
POLL_S = 15.0
#: How often an arena pairs its waiting players.
ARENA_WAVE_S = 5.0
#: How long two players of one arena table wait, at most, before they may be paired together again.
REPEAT_WAIT_S = 10.0
MAX_PLAYERS = 1024
MAX_ROUNDS = 50
SEATS = (2, 6)
#: The other bounds of the settings: (low, high[, default]); ``starts_at``: how long ago, how far ahead (seconds).
LIMITS: dict[str, Any] = {
    "name": 100, "round_s": (60.0, 7 * 86400.0, 3600.0), "duration_s": (60.0, 7 * 86400.0),
    "grace_s": (0.0, 86400.0, 600.0), "bot_after_s": (0.0, 3600.0, 60.0), "max_players": (2, MAX_PLAYERS, 256),
    "starts_at": (60.0, 365 * 86400.0)}
BOT_LEVELS = ("novice", "easy", "casual", "normal", "strong", "hard")
#: A match's takeover level of ``auto``: the rung closest to the table's ratings, as for byes.
AUTO = "auto"

RatingsOf = Callable[[list[str]], Mapping[str, float]]


class TournamentError(DomainError):
    """A refusal of the tournaments (kinds ``MALFORMED``, ``NOT_FOUND``, ``CONFLICT``). Its own class while no
    route answers with it: the codes join ``errors.CATALOG`` (and docs/api.md's table) with the routes."""


def _bad(message: str) -> TournamentError:
    return TournamentError(Kind.MALFORMED, "bad_tournament", message)


def _number(body: Mapping[str, Any], name: str, low: float, high: float, default: float | None = None) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise _bad(f"{name} must be a number from {low:g} to {high:g}")
    return float(value)


def settings(body: Mapping[str, Any], now: float) -> dict[str, Any]:
    """Checked settings of a new tournament (what ``POST /v1/tournaments`` takes); raises TournamentError."""
    allowed = {"name", "game", "players_per_table", "options", "clock", "takeover_level", "rated", "starts_at",
               "max_players", "format"}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise _bad(f"unknown field(s): {', '.join(unknown)}")
    name = body.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= LIMITS["name"]:
        raise _bad(f"name is 1-{LIMITS['name']} characters")
    game = body.get("game")
    if not isinstance(game, str) or not tenants.NAME_RE.match(game):
        raise _bad("game is a game id (GET /v1/games)")
    per_table = int(_number(body, "players_per_table", *SEATS))
    clock = body.get("clock")
    if not isinstance(clock, dict) or clock.get("mode") in (None, "none"):
        raise _bad("a tournament needs a seat clock (a no-show must time out so a bot can take the seat)")
    takeover = body.get("takeover_level", AUTO)
    if takeover not in (AUTO, *BOT_LEVELS):
        raise _bad(f"takeover_level is {AUTO!r} or one of {', '.join(BOT_LEVELS)}")
    options = body.get("options", {})
    rated = body.get("rated", True)
    if not isinstance(options, dict) or not isinstance(rated, bool):
        raise _bad("options is an object and rated a boolean")
    past, ahead = LIMITS["starts_at"]
    starts_at = _number(body, "starts_at", now - past, now + ahead)
    fmt = body.get("format")
    if not isinstance(fmt, dict) or fmt.get("kind") not in ("swiss", "arena"):
        raise _bad("format is {\"kind\": \"swiss\", \"rounds\": N, \"round_s\": S} or {\"kind\": \"arena\", "
                   "\"duration_s\": S}")
    if fmt["kind"] == "swiss":
        if set(fmt) - {"kind", "rounds", "round_s"}:
            raise _bad("a swiss format has rounds and round_s")
        fmt = {"kind": "swiss", "rounds": int(_number(fmt, "rounds", 1, MAX_ROUNDS)),
               "round_s": _number(fmt, "round_s", *LIMITS["round_s"])}
    else:
        if set(fmt) - {"kind", "duration_s", "grace_s", "bot_after_s"}:
            raise _bad("an arena format has duration_s, grace_s and bot_after_s")
        fmt = {"kind": "arena", "duration_s": _number(fmt, "duration_s", *LIMITS["duration_s"]),
               "grace_s": _number(fmt, "grace_s", *LIMITS["grace_s"]),
               "bot_after_s": _number(fmt, "bot_after_s", *LIMITS["bot_after_s"])}
    return {"name": name, "game": game, "players_per_table": per_table, "options": options, "clock": clock,
            "takeover_level": takeover, "rated": rated, "starts_at": starts_at,
            "max_players": int(_number(body, "max_players", *LIMITS["max_players"])), "format": fmt}


def new(tournament_id: str, tenant: str, checked: Mapping[str, Any], now: float) -> dict[str, Any]:
    """The state document of a tournament just created (settings from :func:`settings`)."""
    return {"id": tournament_id, "tenant": tenant, **copy.deepcopy(dict(checked)), "created_at": now,
            "status": "registering", "rounds": [], "absent": {}, "ratings": {}, "free_since": {}, "seq": 0,
            "started_at": None, "ended_at": None, "reason": None}


#: How long past its latest planned end a tournament's reservation lapses by itself (if its end never released it).
RESERVATION_SLACK_S = 86400.0


def reservation(tournament_id: str, checked: Mapping[str, Any]) -> tuple[list[str], float]:
    """What a tournament holds of its tenant's ``matches`` quota from its creation until it ends: one match per
    table of its largest round (each player sits at one table at a time, Swiss or arena), so its tables never
    fail for a quota mid-round and are not charged again; and when that lapses at the latest."""
    tables = -(-int(checked["max_players"]) // int(checked["players_per_table"]))
    fmt = checked["format"]
    span = (fmt["rounds"] * fmt["round_s"] if fmt["kind"] == "swiss"
            else fmt["duration_s"] + fmt["grace_s"])
    return [f"tour:{tournament_id}:{n}" for n in range(tables)], float(checked["starts_at"]) + span + \
        RESERVATION_SLACK_S


@dataclass
class Step:
    doc: dict[str, Any]
    #: events to append to the outbox with the new state, each ``(event id, event)``
    events: list[tuple[str, dict[str, Any]]]
    #: when to look at the tournament again (None: it is over)
    due: float | None


def _emit(doc: dict[str, Any], out: list[tuple[str, dict[str, Any]]], kind: str, now: float, **fields: Any) -> None:
    doc["seq"] += 1
    out.append((f"{doc['id']}:{doc['seq']}", {"type": kind, "tournament_id": doc["id"], "at": now, **fields}))


def active(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Players who may be paired: registered, not withdrawn, not absent since their last registration."""
    return sorted(p for p, info in players.items() if not info.get("withdrawn")
                  and doc["absent"].get(p, -math.inf) < float(info.get("registered_at", 0.0)))


def match_id_of(tournament_id: str, table_key: str) -> str:
    """The id of a table's match, fixed when the round is paired (so ``round.started`` names it) and made from the
    tournament's id, which only its tenant knows: 12 URL-safe characters, as any match id."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(f"meeple:{tournament_id}:{table_key}".encode()).digest())
    return digest[:12].decode().replace("-", "a").replace("_", "b")


def has_match(table: Mapping[str, Any]) -> bool:
    """Whether the table's match has been made (a table of an older state: whether it names one)."""
    return bool(table.get("made", table["match_id"] is not None))


def tables(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [t for r in doc["rounds"] for t in r["tables"]]


def published(table: Mapping[str, Any]) -> bool:
    """Whether the table is shown (the tournament's reads, ``round.started``): once its match is made, so a
    backend that joins a table it is shown never gets 404 (a round is paired, saved, then its matches made)."""
    return has_match(table)


def standings(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]]) -> list[scoring.Standing]:
    absent = [p for p in players if p not in active(doc, players) and not players[p].get("withdrawn")]
    return scoring.standings(doc["format"]["kind"], players, tables(doc), doc["ratings"], absent)


def _public_standings(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [s.public() for s in standings(doc, players)]


def _public_table(table: Mapping[str, Any]) -> dict[str, Any]:
    return {"table": table["key"], "match_id": table["match_id"], "seats": table["seats"],
            "status": "finished" if table.get("result") else "running", "result": table.get("result"),
            "started_at": table["created_at"], "finished_at": table.get("finished_at")}


def _score(doc: dict[str, Any], results: Mapping[str, MatchResult], now: float) -> list[dict[str, Any]]:
    """Score every running table whose match ended; returns the tables scored now."""
    scored = []
    for table in tables(doc):
        if table.get("result") or not has_match(table):
            continue
        result = results.get(table["match_id"])
        if result is None or result.status == "active":
            continue
        table["result"] = scoring.table_result(result)
        table["finished_at"] = now
        for player in table["result"]["no_shows"]:
            doc["absent"][player] = now
        for player in table["result"]["points"]:
            doc["free_since"][player] = now
        scored.append(table)
    return scored


def _end_tables(doc: dict[str, Any], results: Mapping[str, MatchResult], now: float, why: str) -> None:
    """Score every unscored table of the tournament as a draw and mark its match to be ended."""
    for table in tables(doc):
        if table.get("result"):
            continue
        known = results.get(table["match_id"]) if has_match(table) else None
        humans = [s["player"] for s in table["seats"] if s.get("player")]
        if known is not None and known.seats:
            result = scoring.table_result(MatchResult(known.match_id, "active", seats=known.seats))
        else:
            result = scoring.drawn(humans)
        table["result"] = {**result, "ended_by": why}
        table["finished_at"] = now
        table["abort"] = bool(table["match_id"])
        for player in humans:
            doc["free_since"][player] = now


def _history(doc: Mapping[str, Any], arena: bool) -> dict[str, dict[str, Any]]:
    """Per player: points, who they met (Swiss: every table; arena: the last one), byes and first seats."""
    out: dict[str, dict[str, Any]] = {}
    for table in tables(doc):
        humans = [s["player"] for s in table["seats"] if s.get("player")]
        bots = len(table["seats"]) - len(humans)
        for i, player in enumerate(humans):
            h = out.setdefault(player, {"score": 0.0, "met": {}, "byes": 0, "firsts": 0})
            if table.get("result"):
                h["score"] += table["result"]["points"].get(player, 0.0)
            if arena:
                h["met"] = {}
            for other in humans:
                if other != player:
                    h["met"][other] = h["met"].get(other, 0) + 1
            h["byes"] += bool(bots)
            h["firsts"] += i == 0
    return out


def _entrants(doc: dict[str, Any], names: list[str], ratings_of: RatingsOf, arena: bool,
              since: Mapping[str, float] | None = None, now: float = 0.0) -> list[pairing.Entrant]:
    """The players to pair, with their history; an arena's (``since``: when each waiting player was freed) with
    the opponents each is held apart from now (:func:`_held`)."""
    rates = ratings_of(names)
    history = _history(doc, arena)
    out = []
    for name in names:
        h = history.get(name, {"score": 0.0, "met": {}, "byes": 0, "firsts": 0})
        doc["ratings"][name] = float(rates.get(name, 25.0))
        held = _held(doc, name, h["met"], since, now) if since is not None else frozenset()
        out.append(pairing.Entrant(name, h["score"], doc["ratings"][name], h["met"], h["byes"], h["firsts"], held))
    return out


def _held(doc: Mapping[str, Any], player: str, last: Mapping[str, int], since: Mapping[str, float],
          now: float) -> frozenset[str]:
    """The waiting opponents of ``player``'s last table whose repeat is not due yet: neither another table finished
    since both were freed, nor have both waited ``REPEAT_WAIT_S``."""
    held = set()
    for other in last:
        if other not in since:
            continue  # not waiting: nothing to hold
        freed = max(since[player], since[other])
        waited = now - freed >= REPEAT_WAIT_S
        moved_on = any(t.get("result") and float(t.get("finished_at") or 0.0) >= freed
                       and not {player, other} & {s.get("player") for s in t["seats"]} for t in tables(doc))
        if not (waited or moved_on):
            held.add(other)
    return frozenset(held)


def _open_round(doc: dict[str, Any], plan: list[pairing.Table], ladder: Mapping[str, Mapping[str, Any]],
                now: float, deadline: float | None, out: list[tuple[str, dict[str, Any]]]) -> None:
    n = len(doc["rounds"]) + 1
    made = []
    for i, table in enumerate(plan, 1):
        level = pairing.bot_level(ladder, [doc["ratings"][p] for p in table.players])
        key = f"r{n}t{i}"
        made.append({"key": key, "seats": table.seats(), "level": level,
                     "match_id": match_id_of(doc["id"], key), "made": False, "created_at": now, "result": None})
    doc["rounds"].append({"n": n, "started_at": now, "deadline": deadline, "finished_at": None, "tables": made})
    _emit(doc, out, "round.started", now, round=n, deadline=deadline, tables=[_public_table(t) for t in made])


def _close_rounds(doc: dict[str, Any], players: Mapping[str, Mapping[str, Any]], now: float,
                  out: list[tuple[str, dict[str, Any]]]) -> None:
    for rnd in doc["rounds"]:
        if rnd["finished_at"] is None and all(t.get("result") for t in rnd["tables"]):
            rnd["finished_at"] = now
            _emit(doc, out, "round.finished", now, round=rnd["n"], standings=_public_standings(doc, players))


def _finish(doc: dict[str, Any], players: Mapping[str, Mapping[str, Any]], now: float,
            out: list[tuple[str, dict[str, Any]]], reason: str | None = None) -> None:
    doc["status"] = "cancelled" if reason else "finished"
    doc["ended_at"], doc["reason"] = now, reason
    _emit(doc, out, "tournament.finished", now, cancelled=bool(reason), reason=reason,
          standings=_public_standings(doc, players))


def advance(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]], results: Mapping[str, MatchResult],
            ratings_of: RatingsOf, ladder: Mapping[str, Mapping[str, Any]], now: float) -> Step:
    """The tournament's next state at ``now``, given the results of its running matches (``results`` by match
    id: the ones not given are taken as still running) and the players' ratings (asked only to pair)."""
    new_doc = copy.deepcopy(dict(doc))
    out: list[tuple[str, dict[str, Any]]] = []
    if new_doc["status"] in ("finished", "cancelled"):
        return Step(new_doc, out, None)
    if new_doc["status"] == "registering":
        if now < new_doc["starts_at"]:
            return Step(new_doc, out, new_doc["starts_at"])
        if len(active(new_doc, players)) < 2:
            _finish(new_doc, players, now, out, "fewer than 2 players registered")
            return Step(new_doc, out, None)
        new_doc["status"], new_doc["started_at"] = "running", now
        _emit(new_doc, out, "tournament.started", now, players=len(active(new_doc, players)))
    _score(new_doc, results, now)
    if new_doc["format"]["kind"] == "swiss":
        due = _swiss(new_doc, players, results, ratings_of, ladder, now, out)
    else:
        due = _arena(new_doc, players, results, ratings_of, ladder, now, out)
    return Step(new_doc, out, due)


def _swiss(doc: dict[str, Any], players: Mapping[str, Mapping[str, Any]], results: Mapping[str, MatchResult],
           ratings_of: RatingsOf, ladder: Mapping[str, Mapping[str, Any]], now: float,
           out: list[tuple[str, dict[str, Any]]]) -> float | None:
    current = doc["rounds"][-1] if doc["rounds"] else None
    if current is not None and current["finished_at"] is None and now >= current["deadline"]:
        _end_tables(doc, results, now, "deadline")
    _close_rounds(doc, players, now, out)
    if current is not None and current["finished_at"] is None:
        return min(current["deadline"], now + POLL_S)
    names = active(doc, players)
    if len(doc["rounds"]) >= doc["format"]["rounds"] or len(names) < 2:
        _finish(doc, players, now, out)
        return None
    plan = pairing.swiss(_entrants(doc, names, ratings_of, arena=False), doc["players_per_table"], ladder)
    deadline = now + doc["format"]["round_s"]
    _open_round(doc, plan, ladder, now, deadline, out)
    return min(deadline, now + POLL_S)


def _arena(doc: dict[str, Any], players: Mapping[str, Mapping[str, Any]], results: Mapping[str, MatchResult],
           ratings_of: RatingsOf, ladder: Mapping[str, Mapping[str, Any]], now: float,
           out: list[tuple[str, dict[str, Any]]]) -> float | None:
    fmt = doc["format"]
    ends = doc["starts_at"] + fmt["duration_s"]
    if now >= ends + fmt["grace_s"]:
        _end_tables(doc, results, now, "deadline")
    _close_rounds(doc, players, now, out)
    busy = {s["player"] for t in tables(doc) if not t.get("result") for s in t["seats"] if s.get("player")}
    if now >= ends:
        if not busy:
            _finish(doc, players, now, out)
            return None
        return min(ends + fmt["grace_s"], now + POLL_S)
    waiting = [p for p in active(doc, players) if p not in busy]
    if waiting:
        since = {p: doc["free_since"].get(p, max(doc["started_at"], float(players[p].get("registered_at", 0.0))))
                 for p in waiting}
        plan = pairing.arena(_entrants(doc, waiting, ratings_of, arena=True, since=since, now=now),
                             doc["players_per_table"], ladder, {p: now - t for p, t in since.items()},
                             fmt["bot_after_s"])
        if plan:
            _open_round(doc, plan, ladder, now, None, out)
            _close_rounds(doc, players, now, out)
    seated = {s["player"] for t in tables(doc) if not t.get("result") for s in t["seats"] if s.get("player")}
    still = [p for p in waiting if p not in seated]
    return min(ends, now + (ARENA_WAVE_S if still else POLL_S))


def cancel(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]], results: Mapping[str, MatchResult],
           now: float) -> Step:
    """The tenant cancels: unfinished tables are scored as draws and their matches ended; the standings so far
    are final."""
    new_doc = copy.deepcopy(dict(doc))
    out: list[tuple[str, dict[str, Any]]] = []
    if new_doc["status"] in ("finished", "cancelled"):
        raise TournamentError(Kind.CONFLICT, "tournament_over", "the tournament is already over")
    _end_tables(new_doc, results, now, "cancelled")
    _close_rounds(new_doc, players, now, out)
    _finish(new_doc, players, now, out, "cancelled by the tenant")
    return Step(new_doc, out, None)


# -- what the runner does with a state ---------------------------------------------------------------------------
def pending_creates(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tables whose match is still to be created."""
    return [t for t in tables(doc) if not has_match(t) and not t.get("result")]


def pending_aborts(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tables scored by a deadline or a cancel whose match is still to be ended."""
    return [t for t in tables(doc) if t.get("abort") and t["match_id"]]


def running_matches(doc: Mapping[str, Any]) -> list[str]:
    return [t["match_id"] for t in tables(doc) if has_match(t) and not t.get("result")]


def spec(doc: Mapping[str, Any], table: Mapping[str, Any]) -> MatchSpec:
    """The match a table is played in (its ``key`` makes creating it twice create it once)."""
    seats = tuple(SeatSpec(player=s["player"]) if s.get("player") else SeatSpec(bot_level=s["bot"])
                  for s in table["seats"])
    takeover = table["level"] if doc["takeover_level"] == AUTO else doc["takeover_level"]
    return MatchSpec(key=f"{doc['id']}:{table['key']}", tenant=doc["tenant"], game=doc["game"], seats=seats,
                     options=doc["options"], clock=doc["clock"], takeover_level=takeover, rated=doc["rated"],
                     tag=f"tournament:{doc['id']}", match_id=table["match_id"])


def with_matches(doc: Mapping[str, Any], made: Mapping[str, str]) -> dict[str, Any]:
    """``doc`` with the tables ``made`` (table key -> the id of its match, now made)."""
    new_doc = copy.deepcopy(dict(doc))
    for table in tables(new_doc):
        if table["key"] in made and not has_match(table):
            table["match_id"], table["made"] = made[table["key"]], True
    return new_doc


def with_aborted(doc: Mapping[str, Any], keys: set[str]) -> dict[str, Any]:
    new_doc = copy.deepcopy(dict(doc))
    for table in tables(new_doc):
        if table["key"] in keys:
            table["abort"] = False
    return new_doc


def view(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """The tournament as ``GET /v1/tournaments/{id}`` shows it: settings, state, the current round (Swiss; an
    arena's: its latest wave) and ``tables`` (Swiss: the current round's; arena: every table still playing; a
    table once its match is made: :func:`published`), and the standings."""
    current = doc["rounds"][-1] if doc["rounds"] else None
    keys = ("id", "name", "game", "players_per_table", "options", "clock", "takeover_level", "rated", "starts_at",
            "max_players", "format", "status", "created_at", "started_at", "ended_at", "reason")
    if doc["format"]["kind"] == "swiss":
        shown = current["tables"] if current else []
    else:
        shown = [t for t in tables(doc) if not t.get("result")]
    shown = [t for t in shown if published(t)]
    return {**{k: doc[k] for k in keys}, "registered": len(players),
            "rounds_played": sum(1 for r in doc["rounds"] if r["finished_at"] is not None),
            "round": None if current is None else {k: current[k] for k in ("n", "started_at", "deadline",
                                                                           "finished_at")},
            "tables": [_public_table(t) for t in shown], "standings": _public_standings(doc, players)}


def rounds_page(doc: Mapping[str, Any], after: int, limit: int) -> dict[str, Any]:
    """``GET /v1/tournaments/{id}/rounds``: up to ``limit`` rounds after round ``after``, oldest first, each with
    every table shown so far (:func:`published`), and the ``after`` of the next page (None: none yet)."""
    later = [r for r in doc["rounds"] if r["n"] > after]
    page = later[:limit]
    return {"rounds": [{**{k: r[k] for k in ("n", "started_at", "deadline", "finished_at")},
                        "tables": [_public_table(t) for t in r["tables"] if published(t)]} for r in page],
            "next": page[-1]["n"] if len(later) > limit else None}


def player_view(doc: Mapping[str, Any], players: Mapping[str, Mapping[str, Any]], player: str) -> dict[str, Any]:
    """One registered player's standing and the table they play at now (None between matches): its
    ``match_id`` is the way into their own match. not_found if they are not registered."""
    if player not in players:
        raise TournamentError(Kind.NOT_FOUND, "player_not_registered", f"{player!r} is not registered")
    row = next(s for s in standings(doc, players) if s.player == player)
    playing = [t for t in tables(doc) if not t.get("result") and published(t)
               and any(s.get("player") == player for s in t["seats"])]
    return {"standing": row.public(), "table": _public_table(playing[-1]) if playing else None}
