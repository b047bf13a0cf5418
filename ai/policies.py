"""What the search knows about each game: rollout policy, move decomposition, cutoff, exploration constant.

A policy picks a legal move and must stay cheap (it runs at every rollout step). It never sees hidden
information: the rollout state is already a determinization. Without a heuristic, a game's own
``sample_move`` is the policy. Every choice here was measured against the plain search before it was kept
(docs/bots/strength.md); :class:`Tuning` names them so that ``meeple arena`` can switch each one off
(``mcts:normal@policy=uniform``) and measure it again.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

import orjson

from services.rules.games.base import below

from .ismcts import Cutoff, Game, Move, Policy, Rewards, Split, no_cutoff, rewards, uniform, whole


def prefer_existing_columns(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """Fierce Women: growing a column toward a defined one beats opening new columns, so favour it 3:1.

    Moves are matched by their spec shape ({"type": "place", "column": int | "new"}); any other move
    set falls back to uniform choice.
    """
    legal = game.legal_moves(state, seat)
    grow = [m for m in legal if m.get("type") == "place" and m.get("column") != "new"]
    if grow and rng.random() < 0.75:
        return grow[below(rng, len(grow))]
    return legal[below(rng, len(legal))]


def clash_own_side(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """CLASH: a placed tile nearly always should support its placer; ``sample_move`` picks the side at random.

    Up to four samples are drawn until one supports the mover's colour; then the last is played (a tile
    may only ever be placed for the opponent, or an effect may need that side).
    """
    colour = "blue" if seat == 0 else "green"
    move = game.sample_move(state, seat, rng)
    for _ in range(3):
        if move.get("supports", colour) == colour:
            break
        move = game.sample_move(state, seat, rng)
    return move


def clash_choices(move: Move) -> tuple[bytes, ...]:
    """CLASH: a placement is chosen as tile (with its source), then field, then side, then effect; other
    moves are one choice. Hundreds of placements become about a dozen tiles at the root."""
    if move.get("type") != "place":
        return (orjson.dumps(move, option=orjson.OPT_SORT_KEYS),)
    r, c = move["field"]
    return (f"{move['tile']}/{move['from']}".encode(), bytes((r * 3 + c,)), move["supports"].encode(),
            orjson.dumps(move["effect"], option=orjson.OPT_SORT_KEYS))


def sideboards_choices(move: Move) -> tuple[bytes, ...]:
    """Sideboards: a placement is chosen as card, then side, then orientation (the two starting cards, then their
    orientations); the exchange is one choice, padded to the same depth. What the search learns about a card
    is then shared by its four placements."""
    kind = move.get("type")
    if kind == "place":
        return (move["card"].encode(), move["side"].encode(), bytes((move["orientation"] // 180,)))
    if kind == "start":
        o = move["orientations"]
        return (f"{move['cards'][0]}/{move['cards'][1]}".encode(), bytes((o[0] // 180, o[1] // 180)), b"")
    return (orjson.dumps(move, option=orjson.OPT_SORT_KEYS), b"", b"")


def tww8_choices(move: Move) -> tuple[bytes, ...]:
    """They Who Were 8: a card play is chosen as card, then target god, then the second god (``to`` or
    ``swap_with``); a power as god, then its parameters; everything else is one choice, padded to that depth."""
    kind = move.get("type")
    if kind == "play":
        other = move.get("to") or move.get("swap_with")
        return (b"play/" + move["card"].encode(), move["target"]["god"].encode(),
                other["god"].encode() if other else b"")
    if kind == "use_power":
        rest = {k: v for k, v in move.items() if k not in ("type", "god")}
        return (b"power/" + move["god"].encode(), orjson.dumps(rest, option=orjson.OPT_SORT_KEYS), b"")
    return (orjson.dumps(move, option=orjson.OPT_SORT_KEYS), b"", b"")


def fw_choices(move: Move) -> tuple[bytes, ...]:
    """Fierce Women: a placement is chosen as card, then column; everything else is one choice, padded."""
    if move.get("type") == "place":
        return (b"place/" + move["card"].encode(), str(move["column"]).encode())
    return (orjson.dumps(move, option=orjson.OPT_SORT_KEYS), b"")


def _match_rewards(wins: list[int], played: int) -> list[float]:
    """Expected per-seat rewards of a best-of-3 match at ``wins`` after ``played`` games, each further game
    a coin flip (ties do not occur between coin flips); a finished match scores as ``ismcts.rewards``."""
    if max(wins) >= 2 or played >= 3:
        if wins[0] == wins[1]:
            return [0.375, 0.375]  # a shared win: 0.75 x 1/2 each, no score margin
        return [1.0, 0.0] if wins[0] > wins[1] else [0.0, 1.0]
    a = _match_rewards([wins[0] + 1, wins[1]], played + 1)
    b = _match_rewards([wins[0], wins[1] + 1], played + 1)
    return [(a[0] + b[0]) / 2, (a[1] + b[1]) / 2]


def clash_game_end(game: Game, state: Any) -> list[float] | None:
    """CLASH best of 3: a rollout stops when a game of the match ends; the match is then worth the chance
    to win it from that score (later games as coin flips). Playing the later games out at random costs
    two to three times the moves and adds their noise to the value of the game being decided."""
    if state.phase != "choose_first" or state.options["match"] != "best_of_3":
        return None
    return _match_rewards(list(state.wins), len(state.games))


def sideboards_greedy(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """Sideboards: the placement that scores most for the mover's own dresser right away (colour and handle
    patterns and the row goal, at their points), ties broken at random; never the exchange."""
    from services.rules.games.sideboards.components import GOALS
    from services.rules.games.sideboards.scoring import dresser_counts

    goals = state.goals
    pc, ph, pr = GOALS[goals[0]]["points"], GOALS[goals[1]]["points"], GOALS[goals[2]]["points"]
    dresser = state.dressers[seat]
    best: list[Move] = []
    top = -1
    for move in game.legal_moves(state, seat):
        kind = move["type"]
        if kind == "place":
            placed = (move["card"], move["orientation"])
            after = [placed, *dresser] if move["side"] == "left" else [*dresser, placed]
        elif kind == "start":
            after = [(move["cards"][0], move["orientations"][0]), (move["cards"][1], move["orientations"][1])]
        else:
            continue
        cc, hc, r = dresser_counts(after, goals)
        value = cc * pc + hc * ph + r * pr
        if value > top:
            top, best = value, [move]
        elif value == top:
            best.append(move)
    if not best:
        return game.sample_move(state, seat, rng)
    return best[below(rng, len(best))]


#: They Who Were 8: what each action card does to the team points (2 x glory - infamy) of the owner of each god
#: it names: (target, second god: ``to`` or ``swap_with``).
_TWW8_CARDS: dict[str, tuple[int, int]] = {
    "A01": (2, 0), "A02": (-1, 0), "A03": (4, 0), "A04": (-2, 0), "A05": (1, 0),
    "A06": (-2, 2), "A07": (1, -1), "A08": (-3, 3), "A09": (-2, 0), "A10": (1, 0),
}


def tww8_greedy(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """They Who Were 8: four times in five the card play that gains the mover's team the most points on the
    spot (good cards on the partner's gods, bad ones on the opponents'), declining powers (each costs 2
    points); otherwise, and for every other decision, a random legal move."""
    legal = game.legal_moves(state, seat)
    if rng.random() < 0.2:
        return legal[below(rng, len(legal))]
    owner, team = state.owner, seat % 2
    best: list[Move] = []
    top = -99
    for move in legal:
        kind = move["type"]
        if kind == "play":
            first, second = _TWW8_CARDS[move["card"]]
            value = first if owner[int(move["target"]["god"][1:]) - 1] % 2 == team else -first
            other = move.get("to") or move.get("swap_with")
            if other is not None:
                value += second if owner[int(other["god"][1:]) - 1] % 2 == team else -second
        elif kind == "use_power":
            value = -2
        else:
            value = 0
        if value > top:
            top, best = value, [move]
        elif value == top:
            best.append(move)
    return best[below(rng, len(best))]


POLICIES: dict[str, Policy] = {
    "uniform": uniform,
    "columns": prefer_existing_columns,
    "own-side": clash_own_side,
    "greedy": sideboards_greedy,
    "tww8-greedy": tww8_greedy,
}
SPLITS: dict[str, Split] = {"whole": whole, "clash": clash_choices, "sideboards": sideboards_choices,
                            "tww8": tww8_choices, "fw": fw_choices}
CUTOFFS: dict[str, Cutoff] = {"none": no_cutoff, "game-end": clash_game_end}


#: A typical score gap between two seats of a game played out at random (300 random games, mean |gap|):
#: the scale on which :func:`margin_rewards` tells a close game from a clear one.
MARGIN_SCALES: dict[str, float] = {"sideboards": 9.0, "fierce-women": 3.6, "clash": 1.4, "they-who-were-8": 8.9}


def leads(scores: list[float]) -> list[float]:
    """Each seat's score minus the best other seat's (0 for a seat alone)."""
    return [scores[s] - max((scores[o] for o in range(len(scores)) if o != s), default=scores[s])
            for s in range(len(scores))]


def margin_rewards(game: Game, state: Any) -> list[float]:
    """The default reward keeps only who won with two seats (the normalised score of a 2-seat game is 0 or 1):
    this one adds by how much, ``0.75 * win_share + 0.25 * (1 + tanh(gap / scale)) / 2`` with ``gap`` the seat's
    score minus the best other score, so a playout that wins by more (or loses by less) counts for more."""
    outcome = game.outcome(state)
    scores = outcome.scores
    scale = MARGIN_SCALES.get(game.id, 1.0)
    share = 1.0 / len(outcome.winners) if outcome.winners else 0.0
    return [0.75 * (share if s in outcome.winners else 0.0) + 0.125 * (1.0 + math.tanh(gap / scale))
            for s, gap in enumerate(leads(scores))]


REWARDS: dict[str, Rewards] = {"win": rewards, "margin": margin_rewards}


def standing(game: Game, state: Any) -> list[float] | None:
    """A rollout stopped before the end: each seat's chance to be ahead from the scores if the game ended now
    (``game.outcome`` of the unfinished state: Sideboards' and Fierce Women's scoring works on any position),
    ``1 / (1 + exp(-gap / scale))`` with ``gap`` the seat's score minus the best other score. A random placement
    scores far below a chosen one, so the last moves played out at random mostly add noise to the value of the
    choices that matter now."""
    scale = MARGIN_SCALES.get(game.id, 1.0)
    return [1.0 / (1.0 + math.exp(-gap / scale)) for gap in leads(game.outcome(state).scores)]


#: What a rollout stopped at the tuning's ``horizon`` is worth (``none``: 0.5 for every seat).
EVALUATORS: dict[str, Cutoff] = {"none": no_cutoff, "standing": standing}


@dataclass(frozen=True)
class Tuning:
    """A game's search settings, by name (the names are ``meeple arena`` overrides: ``policy=uniform``)."""

    policy: str = "uniform"
    split: str = "whole"
    cutoff: str = "none"
    c: float = 0.7
    decouple: bool = False
    reward: str = "win"
    #: Rollout moves before a rollout stops and ``evaluate`` values the position.
    horizon: int = 5000
    evaluate: str = "none"

    def with_overrides(self, overrides: dict[str, str]) -> Tuning:
        """This tuning with some fields replaced by name; raises ValueError for an unknown field or value."""
        policy, split, cutoff, c, decouple = self.policy, self.split, self.cutoff, self.c, self.decouple
        reward, horizon, evaluate = self.reward, self.horizon, self.evaluate
        for key, value in overrides.items():
            if key == "policy" and value in POLICIES:
                policy = value
            elif key == "split" and value in SPLITS:
                split = value
            elif key == "cutoff" and value in CUTOFFS:
                cutoff = value
            elif key == "reward" and value in REWARDS:
                reward = value
            elif key == "decouple" and value in ("0", "1"):
                decouple = value == "1"
            elif key == "evaluate" and value in EVALUATORS:
                evaluate = value
            elif key == "horizon" and value.isdigit() and int(value) >= 0:
                horizon = int(value)
            elif key == "c":
                c = float(value)
            else:
                raise ValueError(f"bad search override {key}={value}")
        return Tuning(policy, split, cutoff, c, decouple, reward, horizon, evaluate)


#: Per game; a game not listed searches with the defaults (uniform playouts, whole moves).
TUNINGS: dict[str, Tuning] = {
    # split=fw: docs/bots/strength.md e10 (the card -> column tree won at equal CPU time)
    "fierce-women": Tuning(policy="columns", split="fw"),
    # cutoff=game-end: docs/bots/strength.md e1 (a rollout that stops when a game of the match ends won 0.69
    # [0.59, 0.77] of 100 games at equal CPU time)
    "clash": Tuning(split="clash", cutoff="game-end"),
    # policy=tww8-greedy: docs/bots/strength.md e7 (greedy card play in playouts won at equal CPU time)
    "they-who-were-8": Tuning(policy="tww8-greedy"),
}


def tuning_for(game_id: str) -> Tuning:
    return TUNINGS.get(game_id, Tuning())


def split_for(game_id: str) -> Split:
    """How the search decomposes ``game_id``'s moves into successive choices (whole moves by default)."""
    return SPLITS[tuning_for(game_id).split]


def policy_for(game_id: str) -> Policy:
    """The rollout policy of ``game_id``; uniform random for games without a heuristic."""
    return POLICIES[tuning_for(game_id).policy]
