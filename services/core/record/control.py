"""Who plays each seat, and what a forfeit means — without knowing the game.

A seat of kind ``bot`` is always played by a bot. A ``human`` seat is played by its owner unless its
``control`` is ``"bot"``: after a timeout (policy ``bot``) until the owner reclaims it, after a forfeit
(policy ``forfeit``, by the easy bot) and after the owner left (for good; the token is revoked then).

Forfeits use the engine's ``sides`` (one seat each, or teams): a side with a forfeited seat can no
longer win; when at most one side is left the match ends at once and that side wins. Otherwise play goes
on and, at the end, the game's winners are kept unless they are on a forfeited side (a winner on no side,
such as Fierce Women's automa in 2-player games, is kept as the engine named it); if every winner was
on a forfeited side, the best score among the sides still in wins. Without forfeits the outcome's
winners are exactly the engine's.
"""

from __future__ import annotations

import msgspec

from services.core.meta import MatchMeta, Outcome, Seat

#: The level that plays forfeited seats: they keep the game going but should not decide it.
FORFEIT_LEVEL = "easy"
DEFAULT_TAKEOVER_LEVEL = "normal"


def bot_plays(info: Seat) -> bool:
    return info.kind == "bot" or info.control == "bot"


def bot_level(meta: MatchMeta, seat: int) -> str:
    info = meta.seats[seat]
    if info.kind == "bot":
        return info.level or "normal"
    if info.forfeited:
        return FORFEIT_LEVEL
    return meta.takeover_level or DEFAULT_TAKEOVER_LEVEL


def timed(meta: MatchMeta) -> list[bool]:
    """Per seat: does a clock run for it when it is to act (a human plays it and the match is on)?"""
    active = meta.status == "active"
    return [active and not bot_plays(info) for info in meta.seats]


def forfeited(meta: MatchMeta) -> list[int]:
    return [seat for seat, info in enumerate(meta.seats) if info.forfeited]


def sides_in(sides: list[list[int]], out: list[int]) -> list[list[int]]:
    return [side for side in sides if not set(side) & set(out)]


def forfeit_ends(sides: list[list[int]], out: list[int]) -> Outcome | None:
    """The outcome if the forfeits in ``out`` leave at most one side (the match is over), else None."""
    remaining = sides_in(sides, out)
    if len(remaining) > 1:
        return None
    winners = sorted(remaining[0]) if remaining else []
    return Outcome(ended_by="forfeit", winners=winners, forfeited=sorted(out), scores=None, ratings=None)


def forfeit(meta: MatchMeta, seat: int) -> MatchMeta:
    """The match meta after ``seat`` forfeits (resigned, or timed out under the ``forfeit`` policy): a bot plays
    it on, its side can no longer win, and the match is over at once if at most one side is left."""
    new = meta.with_seat(seat, control="bot", forfeited=True)
    ended = forfeit_ends(meta.sides, forfeited(new))
    if ended is not None:
        new = msgspec.structs.replace(new, status="finished", to_act=[], outcome=ended)
    return new


def final(sides: list[list[int]], out: list[int], scores: list[float], winners: list[int]) -> Outcome:
    """The outcome of a game the engine finished, with forfeited sides unable to win."""
    remaining = sides_in(sides, out)
    barred = {seat for side in sides if set(side) & set(out) for seat in side}
    kept = sorted(w for w in winners if w not in barred)
    if not kept and remaining and barred:
        best = max(max(scores[s] for s in side) for side in remaining)
        kept = sorted(s for side in remaining if max(scores[t] for t in side) == best for s in side)
    return Outcome(ended_by="game", winners=kept, forfeited=sorted(out), scores=scores, ratings=None)
