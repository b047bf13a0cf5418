"""Information-set Monte Carlo tree search over the engine protocol (Cowling, Powley & Whitehouse 2012).

Why it cannot cheat: every iteration starts from ``game.determinize(state, seat, rng)``, a full state
re-sampled from what the searching seat can see, and nothing else of ``state`` is read (the root's legal
moves are the seat's own, which its view shows). Nodes are keyed by moves (canonical JSON); a move's
statistics are shared by every determinization in which it is legal, and UCB uses the child's
*availability* count (how often it was legal when its parent was visited) instead of the parent's visit
count: the SO-ISMCTS rule.

Decomposed moves: a game may split a move into successive choices (``split``; CLASH: tile, then field,
then side, then effect), each a level of the tree with its own UCB statistics and availability counts,
so that a few hundred placements share what the search learns about their tile and field.

Seats: rewards are per seat, so any number of seats, teams, automata, decision windows and simultaneous
steps work alike: at every node the seat that acts picks for itself. In a simultaneous step the pending
seats act in seat order (the searching seat first at the root). With ``decouple`` (decoupled UCT for
simultaneous moves) a seat that chooses after another seat's hidden submission in the same step keeps
its statistics at the node where the step's first hidden submission was chosen, shared by every
submission it cannot see, so it cannot learn a best reply to a choice it would not know; the tree below
still follows the joint moves. Without it, the later seat's node hangs under the earlier seat's move.

Reward of a finished game, per seat, in [0, 1]:
``0.75 * win_share + 0.25 * (score - min_score) / (max_score - min_score)``, where ``win_share`` is
``1 / len(winners)`` for a winner (a shared win is split) and 0 otherwise. The win dominates (a winner
always gets more than a loser); the normalised score margin keeps lost lines informative and breaks
ties between equally winning ones. A rollout cut off at ``max_rollout`` moves scores 0.5 for every seat,
unless the game has an ``evaluate`` for unfinished positions.
A game may end rollouts early where a position's value is known well enough (``cutoff``: CLASH scores a
finished game of a best-of-3 match by the chance each seat then has to win the match).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from services.rules.games.base import below, unguarded  # below: rng.randrange's draw, compiled

Move = dict[str, Any]


class Game(Protocol):
    """The part of the engine protocol (``services.rules.games.base.Game``) the search uses: it depends on
    the protocol's shape only, so any object of that shape can be searched (tests/ai/tiny_game.py), and a
    Protocol is what the compiled search checks arguments against (nothing, unlike a class)."""

    @property
    def id(self) -> str: ...
    def to_act(self, state: Any) -> list[int]: ...
    def legal_moves(self, state: Any, seat: int) -> list[Move]: ...
    def apply_in_place(self, state: Any, seat: int, move: Move) -> None: ...
    def sample_move(self, state: Any, seat: int, rng: random.Random) -> Move: ...
    def is_over(self, state: Any) -> bool: ...
    def determinize(self, state: Any, seat: int, rng: random.Random) -> Any: ...
    def outcome(self, state: Any) -> Any: ...


#: A rollout policy picks a legal move of ``seat`` in ``state`` (a determinization).
Policy = Callable[[Game, Any, int, random.Random], Move]
#: Per-seat rewards of a position where rollouts may stop early, or None to play on.
Cutoff = Callable[[Game, Any], "list[float] | None"]
#: Per-seat rewards in [0, 1] of a finished game.
Rewards = Callable[[Game, Any], "list[float]"]


def move_key(move: Move) -> bytes:
    """Canonical identity of a move: the same move from two determinizations shares one node."""
    return orjson.dumps(move, option=orjson.OPT_SORT_KEYS)


def edge_key(actor: int, move: Move) -> bytes:
    """A tree edge: who moves, and what. Which seat acts at a node can depend on hidden information
    (a decision window opens for whoever holds a power), so a bare move would let two seats share one
    child and credit one seat's rewards to the other."""
    return bytes((actor,)) + move_key(move)


def uniform(game: Game, state: Any, seat: int, rng: random.Random) -> Move:
    """The game's own random move (``sample_move``: cheap even where enumerating every move is not)."""
    return game.sample_move(state, seat, rng)


def no_cutoff(game: Game, state: Any) -> list[float] | None:
    """Play every rollout to the end of the game."""
    return None


def rewards(game: Game, state: Any) -> list[float]:
    """Per-seat reward in [0, 1] of a finished game (see the module docstring)."""
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
    root: Node | None = None  # the search tree (diagnostics and tests)


def _actor(to_act: list[int], root_seat: int, at_root: bool) -> int:
    if at_root and root_seat in to_act:
        return root_seat
    return min(to_act)


#: A move's path in the tree: one key per choice level (see :func:`search`, ``split``).
Split = Callable[[Move], tuple[bytes, ...]]


def whole(move: Move) -> tuple[bytes, ...]:
    """No decomposition: the move is one choice."""
    return (move_key(move),)


Options = list[tuple[tuple[bytes, ...], Move]]


def _choose(node: Node, actor: int, options: Options, c: float, rng: random.Random,
            path: list[Node]) -> tuple[Move, bool]:
    """Walk ``actor``'s decision down its choice levels from ``node``, appending the nodes to ``path``.

    At each level the options are grouped by their key at that level; every existing child among them
    counts one more availability, an untried group is expanded (one new node, then a uniformly random move
    of that group completes the decision and the iteration goes to its rollout), else UCB picks a group.
    Returns the move and whether a node was expanded.
    """
    prefix = bytes((actor,))
    depth = 0
    while True:
        if depth >= len(options[0][0]):
            return options[0][1], False
        groups: dict[bytes, Options] = {}
        for option in options:
            groups.setdefault(prefix + option[0][depth], []).append(option)
        untried = []
        for key in groups:
            child = node.children.get(key)
            if child is None:
                untried.append(key)
            else:
                child.available += 1
        if untried:
            key = untried[below(rng, len(untried))]
            child = Node(actor=actor, available=1)
            node.children[key] = child
            path.append(child)
            group = groups[key]
            return group[below(rng, len(group)) if len(group) > 1 else 0][1], True
        children = node.children
        key = max(groups, key=lambda k: children[k].ucb(c))
        node = children[key]
        path.append(node)
        options = groups[key]
        depth += 1


def search(game: Game, state: Any, seat: int, *, iterations: int, seconds: float | None = None,
           c: float = 0.7, rng: random.Random | None = None, policy: Policy = uniform,
           max_rollout: int = 5000, split: Split = whole, cutoff: Cutoff = no_cutoff,
           decouple: bool = False, clock: Callable[[], float] = time.perf_counter,
           reward_of: Rewards = rewards, evaluate: Cutoff = no_cutoff) -> SearchResult:
    """The move ``seat`` should play in ``state``, from at most ``iterations`` iterations / ``seconds``.

    ``split`` decomposes a move into successive choices (CLASH: tile, field, side, effect), each a level of
    the tree, so that statistics are shared by every move that starts alike: with hundreds of placements a
    flat root gives each move a visit or two, while a tile, then a field for it, gather many.
    ``cutoff`` may end a rollout early with its own rewards; ``reward_of`` values a finished game;
    ``evaluate`` values a rollout stopped unfinished at ``max_rollout`` moves (None: 0.5 for every seat);
    ``decouple`` keeps a seat's choices in a
    simultaneous step apart from the hidden submissions made before it in that step (module docstring).

    Reproducible for a given ``rng`` seed when the iteration budget, not the clock, ends the search
    (``seconds=None``); the clock is a safety net for slow positions. ``clock`` may be the process's CPU
    time (``time.process_time``), so that experiments on a shared machine give each side the same work.
    """
    rng = rng or random.Random(0)
    legal_root = game.legal_moves(state, seat)
    if not legal_root:
        raise ValueError(f"seat {seat} has no decision to make")
    if len(legal_root) == 1:
        return SearchResult(legal_root[0], 0, 0.0, {})
    # Every determinization leaves the seat its own legal moves (the conformance suite checks it), so
    # the root's list, usually the widest, is enumerated and split once, not once per iteration.
    root_options = [(split(m), m) for m in legal_root]
    # The seat was checked by legal_moves above; from here on every seat comes from to_act and every move from
    # legal_moves or the policy, so the loop calls the engine without the argument checks (base.Unguarded).
    simultaneous = decouple and bool(getattr(game, "simultaneous", False))
    game = unguarded(game)
    root = Node()
    tried: dict[bytes, list[float]] = {}  # per complete root move: visits, total reward (see _best)
    start = clock()
    deadline = start + seconds if seconds else math.inf
    done = 0
    while done < iterations and (done == 0 or clock() < deadline):
        det = game.determinize(state, seat, rng)
        node, path, at_root = root, [root], True
        # A simultaneous step's first hidden submission was chosen at ``anchor``; each seat that acts
        # after it in the step walks its own statistics from there (``own``), see the module docstring.
        anchor: Node | None = None
        own: dict[int, Node] = {}
        first: Move | None = None  # the seat's move at the root in this iteration
        # Selection and expansion over the moves legal in this determinization; a cutoff ends the tree too.
        reward = cutoff(game, det)
        while reward is None and not game.is_over(det):
            pending = game.to_act(det)
            actor = _actor(pending, seat, at_root)
            if at_root and actor == seat:
                options = root_options
            else:
                options = [(split(m), m) for m in game.legal_moves(det, actor)]
            before = node
            if anchor is None:
                move, expanded = _choose(node, actor, options, c, rng, path)
                node = path[-1]
            else:
                move, expanded = _choose(own.get(actor, anchor), actor, options, c, rng, path)
                own[actor] = path[-1]
                key = edge_key(actor, move)
                follow = node.children.get(key)
                if follow is None:
                    follow = node.children[key] = Node(actor=actor)
                    expanded = True
                path.append(follow)
                node = follow
            if at_root and actor == seat:
                first = move
            at_root = False
            game.apply_in_place(det, actor, move)
            if simultaneous:
                after = game.to_act(det)
                if actor not in after and len(pending) > 1 and all(p in after for p in pending if p != actor):
                    if anchor is None:  # a hidden submission: the others still choose without seeing it
                        anchor = before
                elif set(after) != set(pending):
                    anchor = None  # the step resolved (or the game ended): every submission is now known
                    own.clear()
            reward = cutoff(game, det)
            if expanded:
                break
        # Rollout with the game's light policy, unless the cutoff knows the value already.
        steps = 0
        while reward is None and not game.is_over(det) and steps < max_rollout:
            actor = min(game.to_act(det))
            game.apply_in_place(det, actor, policy(game, det, actor, rng))
            steps += 1
            reward = cutoff(game, det)
        if reward is None:
            reward = reward_of(game, det) if game.is_over(det) else evaluate(game, det)
        for visited in path:
            visited.visits += 1
            if visited.actor >= 0:
                visited.total += reward[visited.actor] if reward is not None else 0.5
        if first is not None:
            record = tried.setdefault(move_key(first), [0.0, 0.0])
            record[0] += 1.0
            record[1] += reward[seat] if reward is not None else 0.5
        done += 1
    move = _best(root, seat, root_options, tried)
    visits = {}
    for keys, m in root_options:
        leaf = _leaf(root, seat, keys)
        if leaf is not None:
            visits[move_key(m)] = leaf.visits
    return SearchResult(move, done, clock() - start, visits, root)


def _leaf(root: Node, seat: int, keys: tuple[bytes, ...]) -> Node | None:
    node: Node | None = root
    for key in keys:
        node = node.children.get(bytes((seat,)) + key) if node is not None else None
    return node


def _best(root: Node, seat: int, options: Options, tried: dict[bytes, list[float]]) -> Move:
    """The most robust choice at each level in turn (most visits, then best mean), down to one move.

    A level the tree never reached (the search expanded the choice above it and completed the move at
    random in its rollouts) is decided by the complete moves the iterations actually played (``tried``:
    visits and reward per root move), not by the order the moves are listed in: with the first listed
    option a CLASH bot on a small budget placed every tile for blue, whichever seat it played.
    """
    node: Node | None = root
    depth = 0
    prefix = bytes((seat,))
    while depth < len(options[0][0]):
        groups: dict[bytes, Options] = {}
        for option in options:
            groups.setdefault(prefix + option[0][depth], []).append(option)
        if node is not None and any(k in node.children for k in groups):
            here = node
            key = max(groups, key=lambda k: _robustness(here.children.get(k)))
        else:
            key = max(groups, key=lambda k: _played(groups[k], tried))
        node = node.children.get(key) if node is not None else None
        options = groups[key]
        depth += 1
    return options[0][1]


def _played(group: Options, tried: dict[bytes, list[float]]) -> tuple[float, float]:
    """Visits and mean reward of the complete moves of ``group`` the iterations played."""
    visits, total = 0.0, 0.0
    for _, move in group:
        record = tried.get(move_key(move))
        if record is not None:
            visits += record[0]
            total += record[1]
    return (visits, total / visits if visits else 0.0)


def _robustness(node: Node | None) -> tuple[int, float]:
    """The most visited child wins; among equally visited ones (wide roots on small budgets), the best mean."""
    if node is None:
        return (-1, 0.0)
    return (node.visits, node.total / node.visits if node.visits else 0.0)
