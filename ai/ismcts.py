"""Information-set Monte Carlo tree search over the engine protocol (Cowling, Powley & Whitehouse 2012).

Each iteration starts from ``game.determinize(state, seat, rng)``: a full state re-sampled from what the
searching seat can see, so the bot never uses hidden information. Nodes are keyed by moves; a move's
statistics are shared by every determinization in which it is legal ("availability" counts replace the
parent's visit count in UCB, the SO-ISMCTS rule). Rewards are per seat, so any number of seats, teams,
simultaneous steps and decision windows work the same way: at each node the seat to act picks.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from services.rules.games.base import Game, Move

#: A rollout policy picks one of the legal moves of ``seat`` in ``state``.
Policy = Callable[[Game[Any], Any, int, list[Move], random.Random], Move]


def move_key(move: Move) -> bytes:
    return orjson.dumps(move, option=orjson.OPT_SORT_KEYS)


def uniform(game: Game[Any], state: Any, seat: int, legal: list[Move], rng: random.Random) -> Move:
    return legal[rng.randrange(len(legal))]


def rewards(game: Game[Any], state: Any) -> list[float]:
    """Per-seat reward in [0, 1]: mostly the win (shared wins split), partly the normalised score.

    The score term breaks ties between equally winning lines and keeps losing lines informative.
    """
    outcome = game.outcome(state)
    scores = outcome.scores
    low, high = min(scores), max(scores)
    span = (high - low) or 1.0
    share = 1.0 / len(outcome.winners) if outcome.winners else 0.0
    return [0.75 * (share if s in outcome.winners else 0.0) + 0.25 * (scores[s] - low) / span
            for s in range(len(scores))]


@dataclass
class Node:
    actor: int = -1  # the seat that made the move leading here
    move: Move | None = None
    visits: int = 0
    total: float = 0.0
    available: int = 0
    children: dict[bytes, Node] = field(default_factory=dict)

    def ucb(self, c: float) -> float:
        return self.total / self.visits + c * math.sqrt(math.log(max(self.available, 1)) / self.visits)


@dataclass
class SearchResult:
    move: Move
    iterations: int
    seconds: float
    visits: dict[bytes, int]


def _actor(game: Game[Any], state: Any, root_seat: int, at_root: bool) -> int:
    to_act = game.to_act(state)
    if at_root and root_seat in to_act:
        return root_seat
    return to_act[0]


def search(game: Game[Any], state: Any, seat: int, *, iterations: int, seconds: float | None = None,
           c: float = 0.7, rng: random.Random | None = None, policy: Policy = uniform,
           max_rollout: int = 5000) -> SearchResult:
    """The move ``seat`` should play in ``state``, from at most ``iterations`` iterations / ``seconds``."""
    rng = rng or random.Random(0)
    root = Node(actor=-1)
    legal_root = game.legal_moves(state, seat)
    if not legal_root:
        raise ValueError(f"seat {seat} has no decision to make")
    if len(legal_root) == 1:
        return SearchResult(legal_root[0], 0, 0.0, {move_key(legal_root[0]): 0})
    start = time.perf_counter()
    deadline = start + seconds if seconds else math.inf
    done = 0
    while done < iterations and time.perf_counter() < deadline:
        det = game.determinize(state, seat, rng)
        node, path, at_root = root, [root], True
        # Selection and expansion over the moves legal in this determinization.
        while not game.is_over(det):
            actor = _actor(game, det, seat, at_root)
            at_root = False
            legal = game.legal_moves(det, actor)
            keyed = [(move_key(m), m) for m in legal]
            untried = [(k, m) for k, m in keyed if k not in node.children]
            for k, _ in keyed:
                child = node.children.get(k)
                if child is not None:
                    child.available += 1
            if untried:
                key, move = untried[rng.randrange(len(untried))]
                child = Node(actor=actor, move=move, available=1)
                node.children[key] = child
                game.apply_in_place(det, actor, move)
                path.append(child)
                break
            key, move = max(keyed, key=lambda km: node.children[km[0]].ucb(c))
            node = node.children[key]
            game.apply_in_place(det, actor, move)
            path.append(node)
        # Rollout.
        steps = 0
        while not game.is_over(det) and steps < max_rollout:
            actor = game.to_act(det)[0]
            legal = game.legal_moves(det, actor)
            game.apply_in_place(det, actor, policy(game, det, actor, legal, rng))
            steps += 1
        if not game.is_over(det):
            continue
        reward = rewards(game, det)
        for visited in path:
            visited.visits += 1
            if visited.actor >= 0:
                visited.total += reward[visited.actor]
        done += 1
    legal_keys = {move_key(m): m for m in legal_root}
    best = max(legal_keys, key=lambda k: (root.children[k].visits if k in root.children else -1, k))
    return SearchResult(legal_keys[best], done, time.perf_counter() - start,
                        {k: root.children[k].visits for k in legal_keys if k in root.children})
