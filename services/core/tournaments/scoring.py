"""Table points and standings: pure functions.

**Table points.** Every table is worth the same to each seat whatever its size: a seat's points are
``(n - place) / (n - 1)`` for a table of ``n`` seats (bots included), where ``place`` is its position from 1,
tied seats sharing the mean of the places they span. Two players: a win 1, a draw 0.5, a loss 0 (chess's
Swiss). Four (Fierce Women): 1, 2/3, 1/3, 0; two tied for first get 5/6 each.

**Bots never make a human's win over a human.**

* A bot seat (a bye, or a table's missing player) is not in the standings and scores nothing; a human who
  beats it earns the place's points (they played a game against a bot of their strength).
* A human seat that a bot was playing when the match ended (taken over and never reclaimed, left, forfeited:
  ``bot_played``) scores 0 whatever the bot achieved. Its place still counts for the others: they played
  the game against that bot, so a bot's win is a loss to a bot, never a win of its absent owner.
* A human who never acted in the match (``acted`` false and ``bot_played``) is a *no-show*: marked absent and
  not paired again until they register again.

**Unfinished tables.** A table whose match is aborted (the round's deadline, a cancelled tournament) or
that expired is scored as a draw: every human who was playing their own seat gets 0.5, a bot-played seat 0.

**Tie-breaks.** Swiss: points, then Buchholz (the sum, over the player's rounds, of their opponents' final
points: the mean over the other humans at the table, so a 4-player table weighs as much as a 2-player one; a
round without a human opponent -- a bye against bots -- counts the player's own final points, FIDE's "virtual
opponent", so a bye neither helps nor hurts). Arena: points, then points per match. Players equal on both
share a rank, listed by rating at their last pairing, then player id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from services.core.tournaments.port import MatchResult

DRAW = 0.5


def places(ranks: tuple[int, ...]) -> list[float]:
    """Per seat, its place from 1 with ties sharing the mean of the places they span: ranks (1, 2, 2, 3) ->
    places (1, 2.5, 2.5, 4)."""
    order = sorted(range(len(ranks)), key=lambda s: ranks[s])
    out = [0.0] * len(ranks)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and ranks[order[j + 1]] == ranks[order[i]]:
            j += 1
        for s in order[i:j + 1]:
            out[s] = (i + j) / 2 + 1
        i = j + 1
    return out


def table_result(result: MatchResult) -> dict[str, Any]:
    """What a finished (or gone) match gives its humans: ``points`` per player, ``no_shows``, ``bot_played``,
    ``ended_by`` -- the document a table keeps."""
    humans = [s for s in result.seats if s.player is not None]
    no_shows = sorted(str(s.player) for s in humans if s.bot_played and not s.acted)
    bot_played = sorted(str(s.player) for s in humans if s.bot_played)
    points: dict[str, float] = {}
    if result.status == "finished" and result.ranks is not None and result.ended_by in ("game", "forfeit"):
        n = len(result.seats)
        seat_places = places(result.ranks)
        for seat, place in zip(result.seats, seat_places, strict=True):
            if seat.player is not None:
                points[seat.player] = 0.0 if seat.bot_played else round((n - place) / (n - 1), 6) if n > 1 else 1.0
        ended_by: str = result.ended_by
    else:
        for human in humans:
            points[str(human.player)] = 0.0 if human.bot_played else DRAW
        ended_by = (result.ended_by or "aborted") if result.status == "finished" else "gone"
    return {"points": points, "no_shows": no_shows, "bot_played": bot_played, "ended_by": ended_by}


def drawn(players: Iterable[str]) -> dict[str, Any]:
    """The result of a table the runner ended before its match did (round deadline, cancel): a draw."""
    return {"points": dict.fromkeys(players, DRAW), "no_shows": [], "bot_played": [], "ended_by": "deadline"}


@dataclass(frozen=True)
class Standing:
    player: str
    points: float
    played: int
    tiebreak: float
    rating: float
    rank: int = 0
    absent: bool = False
    withdrawn: bool = False

    def public(self) -> dict[str, Any]:
        return {"rank": self.rank, "player": self.player, "points": round(self.points, 4), "played": self.played,
                "tiebreak": round(self.tiebreak, 4), "mu": round(self.rating, 3), "absent": self.absent,
                "withdrawn": self.withdrawn}


def _human_opponents(table: Mapping[str, Any], player: str) -> list[str]:
    return [s["player"] for s in table["seats"] if s.get("player") and s["player"] != player]


def standings(kind: str, players: Mapping[str, Mapping[str, Any]], tables: Iterable[Mapping[str, Any]],
              ratings: Mapping[str, float], absent: Iterable[str] = ()) -> list[Standing]:
    """Everyone registered, best first, from the scored tables (``table["result"]["points"]``): ``kind`` is
    ``swiss`` (Buchholz) or ``arena`` (points per match)."""
    scored = [t for t in tables if t.get("result")]
    points = dict.fromkeys(players, 0.0)
    played = dict.fromkeys(players, 0)
    for table in scored:
        for player, pts in table["result"]["points"].items():
            if player in points:
                points[player] += pts
                played[player] += 1
    tiebreak: dict[str, float] = {}
    for player in players:
        if kind == "swiss":
            total = 0.0
            for table in scored:
                if player not in table["result"]["points"]:
                    continue
                others = [o for o in _human_opponents(table, player) if o in points]
                total += sum(points[o] for o in others) / len(others) if others else points[player]
            tiebreak[player] = total
        else:
            tiebreak[player] = points[player] / played[player] if played[player] else 0.0
    gone = set(absent)
    rows = sorted((Standing(p, points[p], played[p], tiebreak[p], float(ratings.get(p, 0.0)), absent=p in gone,
                            withdrawn=bool(players[p].get("withdrawn"))) for p in players),
                  key=lambda s: (-round(s.points, 6), -round(s.tiebreak, 6), -s.rating, s.player))
    out: list[Standing] = []
    for i, row in enumerate(rows):
        tied = out and (round(out[-1].points, 6), round(out[-1].tiebreak, 6)) == (round(row.points, 6),
                                                                                  round(row.tiebreak, 6))
        out.append(Standing(**{**row.__dict__, "rank": out[-1].rank if tied else i + 1}))
    return out
