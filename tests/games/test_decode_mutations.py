"""Property: a state ``decode`` accepts is one the game can go on from (issue 19, "decode checks every rule").

For each game, hypothesis takes a state reached by ``new_game`` + random legal moves, changes one field
somewhere in its document the way a hostile client would (a near value: a number ± 1, a flipped bool, an
element dropped, duplicated, swapped or moved to another list; or any JSON value), and requires that
``decode`` either refuses it with :class:`InvalidState` or gives a state that plays to its end: each
step has seats to act, each of them has a legal move, and views, results and the outcome do not crash.
Bounded: a fixed number of examples per game, every playout capped.
"""

from __future__ import annotations

import contextlib
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.rules.games import GAMES
from services.rules.games.base import Game, InvalidState
from services.rules.games.clash import _history_digest as clash_digest
from services.rules.games.sideboards import _history_digest as sideboards_digest
from services.rules.games.they_who_were_8 import _digest as tw8_digest
from tests.games.fixtures import sample_configs

EXAMPLES = 150

#: The unkeyed history digests, recomputed after a change as any client can (only a seal stops that).
DIGESTS = {
    "sideboards": lambda d: sideboards_digest(d["pass_log"]),
    "clash": lambda d: clash_digest(d["games"], d["log"], d["result"]),
    "they-who-were-8": lambda d: tw8_digest(d["log"]),
}
MAX_PLAYOUT = 1500


def reached_states(game: Game[Any]) -> list[bytes]:
    """Encoded states of random legal play over every sample configuration, a few per game."""
    out: list[bytes] = []
    for n, (players, options) in enumerate(sample_configs(game)):
        rng = random.Random(n)
        state = game.new_game(players, n, options)
        step = 0
        while True:
            if step % 7 == 3 or game.is_over(state):
                out.append(game.encode(state))
            if game.is_over(state):
                break
            seat = rng.choice(game.to_act(state))
            state = game.apply(state, seat, game.sample_move(state, seat, rng))
            step += 1
    return out


STATES = {gid: reached_states(game) for gid, game in GAMES.items()}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``doc`` (the rng string and the digest excluded: they carry no rule)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if not prefix and key in ("rng", "game", "v"):
                continue
            out += paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += paths(value, (*prefix, i))
    return out


def lists_in(doc: Any) -> list[list[Any]]:
    found: list[list[Any]] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            found.append(item)
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


@st.composite
def mutated(draw: Any, gid: str) -> bytes:
    doc = orjson.loads(draw(st.sampled_from(STATES[gid])))
    path = draw(st.sampled_from(paths(doc)))
    holder = doc
    for key in path[:-1]:
        holder = holder[key]
    key = path[-1]
    value = holder[key]
    kind = draw(st.sampled_from(["near", "near", "near", "list", "list", "any"]))
    if kind == "near" and isinstance(value, bool):
        holder[key] = not value
    elif kind == "near" and isinstance(value, int):
        holder[key] = value + draw(st.sampled_from([-1, 1, 2]))
    elif kind == "near" and value is None:
        holder[key] = draw(st.sampled_from([0, 1, [], {}, "x"]))
    elif kind == "near" and isinstance(value, str):
        same_kind = [s for s in _strings(doc) if s != value and s[:1] == value[:1]]
        holder[key] = draw(st.sampled_from(same_kind)) if same_kind else value + "x"
    elif kind == "list" and isinstance(holder, list):
        op = draw(st.sampled_from(["drop", "dup", "swap", "move"]))
        if op == "drop":
            del holder[key]
        elif op == "dup":
            holder.insert(key, value)
        elif op == "swap":
            other = draw(st.integers(0, len(holder) - 1))
            holder[key], holder[other] = holder[other], holder[key]
        else:
            targets = [lst for lst in lists_in(doc) if lst is not holder]
            if targets:
                del holder[key]
                target = draw(st.sampled_from(targets))
                target.insert(draw(st.integers(0, len(target))), value)
    else:
        holder[key] = draw(json_values)
    if gid in DIGESTS and draw(st.booleans()):
        with contextlib.suppress(KeyError, TypeError):  # the mutation broke what the digest reads: refused anyway
            doc["history_digest"] = DIGESTS[gid](doc)
    return orjson.dumps(doc)


def _strings(doc: Any) -> list[str]:
    return sorted({s for s in _walk(doc) if isinstance(s, str) and len(s) < 20})


def _walk(doc: Any) -> list[Any]:
    out: list[Any] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            out.append(item)
    return out


def plays_to_the_end(game: Game[Any], state: Any, rng: random.Random) -> None:
    """Every step has seats to act, each with a legal move; views, result and outcome never crash."""
    for _ in range(MAX_PLAYOUT):
        for seat in [None, *range(game.seat_count(state))]:
            orjson.dumps(game.view(state, seat))
        orjson.dumps(game.result(state))
        if game.is_over(state):
            game.outcome(state)
            assert game.to_act(state) == []
            return
        to_act = game.to_act(state)
        assert to_act, "a running game with nobody to act"
        for seat in to_act:
            assert game.legal_moves(state, seat), f"seat {seat} must act but has no legal move"
        seat = rng.choice(to_act)
        state = game.apply(state, seat, rng.choice(game.legal_moves(state, seat)))
        game.decode(game.encode(state))  # and every later state is one decode accepts
    raise AssertionError(f"no end after {MAX_PLAYOUT} moves")


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_mutated_state_is_refused_or_playable_to_the_end(gid: str) -> None:
    game = GAMES[gid]

    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(data=mutated(gid), seed=st.integers(0, 3))
    def check(data: bytes, seed: int) -> None:
        try:
            state = game.decode(data)
        except InvalidState:
            return
        plays_to_the_end(game, state, random.Random(seed))

    check()
