"""Ratings per (tenant, player, game) with openskill's Plackett-Luce model: 1-6 players and teams (the
engine's ``sides``), with uncertainty (``sigma``). Bot levels have ratings on the same scale, set by the
arena ladder (``meeple arena --ladder``, ``ai/ladder.py``) in ``rating:{bots}`` (field ``<game>:<level>``);
the server ships a ladder measured at the real budgets (``bot_ratings.json`` next to this module), used for a
game until Redis holds a newer ladder run for it.

A rated match is a tenant's match that ended by the game or a forfeit with at least one named player, unless it
was created unrated (``meta.rated`` false: a tournament that says so; matches are rated by default). When
it finishes, the update that finishes it carries the rating changes in ``outcome.ratings`` (computed from
the ratings read just before); the new ratings are written right after that compare-and-set, each only if
the player's rating is still the one the change was computed from (its ``matches`` count). The webhook
worker applies the same outcome again when it reads ``match.finished`` from the outbox, so a gateway that
dies between the two writes loses no rating update (applying twice changes nothing). Two matches of one
player finishing at the same instant: the second's change is not applied (its outcome still shows it).
Unnamed human seats play at the default rating and are not stored; bot seats at their level's rating
(not changed by the match).

**Seats a bot played.** A bot's result never counts as a human's win over a human (or loss to one). A named
human seat is *bot-played* when a bot plays it at the end without a forfeit: taken over after a timeout (policy
``bot``) and never reclaimed, or left. (A forfeited seat -- resigned, or out of time under ``forfeit`` -- is its
human's own result: its side placed last whatever the bot did, and it is rated as such.) Then:

* every other named seat is rated against the table *as it was played*: each bot-played seat enters the
  computation as the bot that played it (the match's takeover level's ladder rating), at the place it reached;
* a bot-played seat's own player is rated as placing last (below every side, tied with the other bot-played
  sides), against the same table, if they took part in the match (joined or moved: ``seats[i].acted``): an
  abandoned game is lost; a player who never came (a no-show) is not rated at all.
"""

from __future__ import annotations

import datetime
import functools
import time
from pathlib import Path
from typing import Any

import msgspec
import orjson
from openskill.models import PlackettLuce

from services.core.meta import MatchMeta, Outcome, Seat
from services.core.record import control

BOT_RATINGS_KEY = "rating:{bots}"
#: The ladder shipped with the server (written by ``meeple arena --ladder --out``).
SHIPPED_PATH = Path(__file__).with_name("bot_ratings.json")
MODEL = PlackettLuce()

#: Write the new rating only if the stored one is still the one the change was computed from.
_APPLY = """
local raw = redis.call('HGET', KEYS[1], ARGV[1])
local n = 0
if raw then n = cjson.decode(raw)['matches'] end
if n ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
"""
#: A player's ratings are kept this long after their last rated match.
KEEP_S = 365 * 24 * 3600


def player_key(tenant: str, player: str) -> str:
    return f"rating:{{{tenant}|{player}}}"


def default() -> dict[str, Any]:
    return {"mu": MODEL.mu, "sigma": MODEL.sigma, "matches": 0}


def public(doc: dict[str, Any]) -> dict[str, Any]:
    """A rating as the API shows it: ``mu`` and ``sigma`` rounded to 4 decimals, and ``rating`` = mu - 3 sigma
    (conservative) of those very values, rounded to 3. A match's outcome stores what it shows (``apply``), so the
    rating is computed from the same numbers at every door: the outcome, the player's ratings, the boards."""
    mu, sigma = round(doc["mu"], 4), round(doc["sigma"], 4)
    return {"rating": round(mu - 3 * sigma, 3), "mu": mu, "sigma": sigma, "matches": doc["matches"]}


def of_player(client: Any, tenant: str, player: str, game: str | None = None) -> dict[str, dict[str, Any]]:
    raw: dict[Any, Any] = client.hgetall(player_key(tenant, player))
    out = {(k.decode() if isinstance(k, bytes) else k): orjson.loads(v) for k, v in raw.items()}
    return {g: doc for g, doc in sorted(out.items()) if game is None or g == game}


#: The rung a new player (rating ``MODEL.mu``) is taken to be as strong as, in every game.
NEWCOMER_LEVEL = "easy"


def on_players_scale(ladder: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """A ladder anchored at random play (``ai/ladder.py``: its rungs carry ``anchored_ci95``) rates each rung by
    its distance from random play, and a new player's ``MODEL.mu`` is no such distance: read as it is, a newcomer
    would meet the rung nearest 25 (``hard`` in CLASH). The server takes a newcomer to be as strong as
    :data:`NEWCOMER_LEVEL` in every game: every rung's ``mu`` moves by one amount, so that rung sits at
    ``MODEL.mu`` and the rungs' differences, which is all the ratings use, are kept. Other ladders: as they are."""
    base = ladder.get(NEWCOMER_LEVEL)
    if not base or "anchored_ci95" not in base:
        return ladder
    shift = MODEL.mu - float(base["mu"])
    return {level: {**doc, "mu": float(doc["mu"]) + shift} for level, doc in ladder.items()}


@functools.cache
def shipped() -> dict[str, dict[str, Any]]:
    """The shipped ladder per game: ``{"at": its date as a Unix time, "ratings": {level: rating}}`` (none
    when the file is absent: bot fill then falls back to ``normal`` until a ladder runs)."""
    try:
        doc = orjson.loads(SHIPPED_PATH.read_bytes())
    except FileNotFoundError:
        return {}
    return {game: {"at": datetime.datetime.fromisoformat(run["date"]).timestamp(),
                   "ratings": on_players_scale(run["ratings"])} for game, run in doc["games"].items()}


def bot_ratings(client: Any, game: str) -> dict[str, dict[str, Any]]:
    """The ratings of the bot levels of ``game``: Redis's ladder when it ran after the shipped one (a ladder
    run replaces a game's ratings whole: two runs' ratings are not on one scale), else the shipped ladder."""
    raw: dict[Any, Any] = client.hgetall(BOT_RATINGS_KEY)
    out = {}
    for field, value in raw.items():
        name = field.decode() if isinstance(field, bytes) else str(field)
        g, _, level = name.partition(":")
        if g == game:
            out[level] = orjson.loads(value)
    ship = shipped().get(game)
    if ship and (not out or max(float(doc.get("updated_at", 0)) for doc in out.values()) < ship["at"]):
        return {level: dict(doc) for level, doc in ship["ratings"].items()}
    return on_players_scale(out)


def ranks(sides: list[list[int]], outcome: Outcome) -> list[float]:
    """A rank per side (1 best): the winners' sides first, then by the side's best score; forfeited last."""
    scores = outcome.scores
    winners, out = set(outcome.winners), set(outcome.forfeited)
    keys = []
    for side in sides:
        won = bool(set(side) & winners)
        lost = bool(set(side) & out)
        best = max((scores[s] for s in side if scores and s < len(scores)), default=0.0)
        keys.append((not won, lost, -best))
    order = sorted(set(keys))
    return [float(order.index(k) + 1) for k in keys]


def bot_played(info: Seat) -> bool:
    """A human seat a bot plays without a forfeit (taken over after a timeout and not reclaimed, or left): what
    the seat reaches is the bot's result, not its human's (see the module's docstring)."""
    return info.kind == "human" and info.control == "bot" and not info.forfeited


def settle(client: Any, before: MatchMeta, meta: MatchMeta) -> MatchMeta:
    """``meta`` with ``outcome.ratings`` when this update finishes a rated match (else unchanged)."""
    outcome, tenant = meta.outcome, meta.tenant
    if (before.status == "finished" or meta.status != "finished" or not tenant or meta.rated is False
            or not outcome or outcome.ended_by not in ("game", "forfeit") or outcome.ratings):
        return meta
    seats, game = meta.seats, meta.game
    named = {i: s.player for i, s in enumerate(seats) if s.player}
    sides = [side for side in meta.sides if side]
    if not named or len(sides) < 2:
        return meta  # a solo game has nobody to be rated against
    bots = bot_ratings(client, game)
    current: dict[int, dict[str, Any]] = {}  # each seat's own rating
    played: dict[int, dict[str, Any]] = {}  # the rating of whoever played the seat to the end
    for seat in range(len(seats)):
        if seat in named:
            current[seat] = of_player(client, tenant, named[seat], game).get(game) or default()
        elif seats[seat].kind == "bot":
            current[seat] = bots.get(seats[seat].level or "normal") or default()
        else:
            current[seat] = default()
        played[seat] = (bots.get(control.bot_level(meta, seat)) or default()) if bot_played(seats[seat]) \
            else current[seat]
    placed = ranks(sides, outcome)
    new: dict[int, Any] = {}
    # every seat its human played (or forfeited): against the table as it was played
    for side, team in zip(sides, _rate(sides, played, placed), strict=True):
        for seat, rating in zip(side, team, strict=True):
            if seat in named and not bot_played(seats[seat]):
                new[seat] = rating
    # a bot-played seat's player who took part: placed last, against the table as it was played
    gone = {seat for seat in named if bot_played(seats[seat]) and seats[seat].acted}
    if gone:
        last = max(placed) + 1
        lasts = [last if set(side) & gone else place for side, place in zip(sides, placed, strict=True)]
        own = {seat: current[seat] if seat in gone else played[seat] for seat in played}
        for side, team in zip(sides, _rate(sides, own, lasts), strict=True):
            for seat, rating in zip(side, team, strict=True):
                if seat in gone:
                    new[seat] = rating
    changes = []
    for side in sides:
        for seat in side:
            if seat not in new:
                continue
            old = current[seat]
            after = {"mu": new[seat].mu, "sigma": new[seat].sigma, "matches": old["matches"] + 1}
            changes.append({"seat": seat, "player": named[seat], "before": public(old), "after": public(after),
                            "change": round(public(after)["rating"] - public(old)["rating"], 3)})
    if not changes:
        return meta  # only players who never came: nobody is rated
    return msgspec.structs.replace(meta, outcome=msgspec.structs.replace(outcome, ratings=changes))


def _rate(sides: list[list[int]], of: dict[int, dict[str, Any]], placed: list[float]) -> list[list[Any]]:
    teams = [[MODEL.rating(mu=of[s]["mu"], sigma=of[s]["sigma"]) for s in side] for side in sides]
    rated: list[list[Any]] = MODEL.rate(teams, ranks=placed)
    return rated


def apply(client: Any, tenant: str, game: str, outcome: dict[str, Any] | None) -> int:
    """Store the new ratings an outcome carries (idempotent); returns how many were written now.

    The boards follow in :func:`services.core.competition.leaderboards.apply_ratings`, which calls this: the
    pipeline and the webhook worker call that one."""
    written = 0
    for change in (outcome or {}).get("ratings") or []:
        after = change["after"]
        doc = {"mu": after["mu"], "sigma": after["sigma"], "matches": after["matches"], "updated_at": time.time()}
        written += int(client.eval(_APPLY, 1, player_key(tenant, change["player"]), game,
                                   change["before"]["matches"], orjson.dumps(doc), KEEP_S))
    return written
