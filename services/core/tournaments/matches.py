"""The tournament port (:class:`.port.TournamentCore`) on the match core: tables become real matches.

* **create_match**: a tenant match created *active* at once (:func:`services.core.match.creator.new_match`), each
  human seat ``kept`` for its named player (they join it with the tenant's key and their player id, as any
  tenant match: ``POST /v1/matches/{id}/join {"player": ...}``), bot seats at the table's rung, the clocks
  running, ``rated`` as the tournament says and tagged ``tournament:<id>``: the commit pipeline wakes the
  tournament when it finishes. A player who never comes times out on their first decision and a bot of the
  takeover level plays the seat (the timekeeper's takeover rules); they may still join and reclaim it. Its
  quota was reserved with the tournament (``machine.reservation``): it is charged nothing, so a round never
  fails half-made because the tenant's own matches filled the quota meanwhile.
  Idempotent: the match is made under the id the tournament chose for the table when it paired the round (or,
  for a spec without one, an id chosen once per key in ``{tour:<id>}:match:<table>``, SET NX), so a runner
  that died anywhere makes the same match, never a second one.
* **match_result**: the match as the runner scores it (see :class:`.port.MatchResult`); another tenant's match,
  or none, is ``gone``.
* **abort_match**: :func:`services.core.match.aborter.abort` (finished, ``ended_by: "aborted"``, no winner, unrated).
* **emit**: the tenant's hooks' deliveries (:func:`services.core.tenancy.webhooks.tournament_deliveries`), sent by the
  webhook worker with the same signature, retries and dead letters as a match's events.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from services.core.competition import ratings
from services.core.match import aborter, clocks, creator, seating
from services.core.meta import Seat
from services.core.record import control
from services.core.record.store import StaleVersion, new_match_id
from services.core.service import Core
from services.core.tenancy import tenants, webhooks
from services.core.tournaments.port import MatchResult, MatchSpec, SeatResult

#: A table's chosen match id is needed only until the runner saved it with the table (seconds); kept a week.
MATCH_ID_KEEP_S = 7 * 86400


def match_id_key(spec_key: str) -> str:
    """Where the match id of table ``<tournament>:<table>`` is kept: in the tournament's slot."""
    tournament_id, _, table = spec_key.partition(":")
    return f"{{tour:{tournament_id}}}:match:{table}"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class TournamentMatches:
    """The match core as the tournament runner sees it."""

    def __init__(self, core: Core) -> None:
        self.core = core

    @property
    def client(self) -> Any:
        return self.core.redis

    def create_match(self, spec: MatchSpec) -> str:
        match_id = spec.match_id
        if match_id is None:
            key = match_id_key(spec.key)
            self.client.set(key, new_match_id(), nx=True, ex=MATCH_ID_KEEP_S)
            match_id = _text(self.client.get(key))
        if self.core.store.load(match_id) is not None:
            return match_id
        seats: list[Seat] = []
        for seat in spec.seats:
            if seat.player is not None:
                seats.append(Seat(kind="human", player=seat.player, kept=True))
            else:
                seats.append(Seat(kind="bot", level=seat.bot_level or control.DEFAULT_TAKEOVER_LEVEL))
        with contextlib.suppress(StaleVersion):  # another runner made it meanwhile: the same match
            creator.new_match(self.core, spec.game, len(seats), dict(spec.options), None, seats,
                              clocks.parse(dict(spec.clock)), spec.takeover_level,
                              tenant=tenants.by_name(self.client, spec.tenant), match_id=match_id, rated=spec.rated,
                              tag=spec.tag, reserved=True)
        return match_id

    def match_result(self, tenant: str, match_id: str) -> MatchResult:
        match = self.core.store.load(match_id) if len(match_id) <= seating.MAX_ID else None
        if match is None or match.meta.tenant != tenant:
            return MatchResult(match_id, "gone")
        meta = match.meta
        seats = tuple(SeatResult(player=s.player if s.kind == "human" else None, bot=s.kind == "bot",
                                 bot_played=s.kind == "human" and control.bot_plays(s), acted=s.acted)
                      for s in meta.seats)
        if meta.status != "finished":
            return MatchResult(match_id, "active", seats=seats)
        outcome = meta.outcome
        ended_by = outcome.ended_by if outcome is not None else None
        ranks = None
        if outcome is not None and ended_by in ("game", "forfeit"):
            sides = [side for side in meta.sides if side]
            by_side = ratings.ranks(sides, outcome)
            worst = int(max(by_side, default=0.0)) + 1
            per_seat = [worst] * len(meta.seats)  # a seat on no side (none in today's games) comes last
            for side, rank in zip(sides, by_side, strict=True):
                for seat in side:
                    per_seat[seat] = int(rank)
            ranks = tuple(per_seat)
        return MatchResult(match_id, "finished", ended_by=ended_by, ranks=ranks, seats=seats)

    def abort_match(self, tenant: str, match_id: str, reason: str) -> None:
        aborter.abort(self.core, match_id, reason, tenant=tenant)

    def player_ratings(self, tenant: str, game: str, players: list[str]) -> dict[str, float]:
        pipe = self.client.pipeline(transaction=False)
        for player in players:
            pipe.hget(ratings.player_key(tenant, player), game)
        mu0 = float(ratings.default()["mu"])
        out = {}
        for player, raw in zip(players, pipe.execute() if players else [], strict=True):
            out[player] = float(orjson.loads(raw)["mu"]) if raw else mu0
        return out

    def bot_ladder(self, game: str) -> dict[str, dict[str, Any]]:
        return ratings.bot_ratings(self.client, game)

    def emit(self, tenant: str, event_id: str, event: dict[str, Any]) -> None:
        webhooks.tournament_deliveries(self.client, tenant, event_id, event)
