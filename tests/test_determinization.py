"""Determinization conformance: for every game and option set, ``determinize(state, seat, rng)`` is honest.

A search walks determinized states, so whatever they contain is what a bot "knows". For sampled states of
seeded random games, and every seat, a determinized state must

(a) decode: it is a valid state of the game (the engine's own, untrusting ``decode`` accepts it);
(b) leave the seat the same view, the same seats to act and the same legal moves;
(c) carry none of the seat's secrets: swapping two ids the seat has never seen, everywhere in the true
    state, gives a world the seat cannot tell apart, and the determinization must then be byte for byte the
    same. A secret kept anywhere (a raw private log entry, another seat's knowledge that names it) changes
    the bytes. Literal absence cannot be the rule: a determinized world necessarily holds every card
    somewhere; what it may not hold is *where the truth put it*;
(d) sample only worlds consistent with what is public: the spectator's view (everything any seat revealed
    to all) is unchanged, and so is what every seat knows publicly (the engine's knowledge bookkeeping
    survives ``decode``, which checks it against the sampled hands).
"""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest

from services.rules.games import GAMES
from services.rules.games.base import Game, InvalidOptions, InvalidState
from tests.games.fixtures import walk_strings

from .test_conformance import CONFIGS, states_of, withdrawn


def option_pairs(game: Game[Any]) -> list[tuple[int, dict[str, Any]]]:
    """Two non-default option values together, where the game accepts them (CLASH's hidden_support needs
    random_support): the single-option configurations of the conformance suite miss those."""
    singles = [{o.name: not o.default} for o in game.options if o.kind == "bool"]
    singles += [{o.name: c} for o in game.options if o.kind == "choice" for c in o.choices if c != o.default]
    out = []
    for i, a in enumerate(singles):
        for b in singles[i + 1:]:
            if set(a) & set(b):
                continue
            options = {**a, **b}
            try:
                game.new_game(game.min_players, 0, options)
            except InvalidOptions:
                continue
            out.append((game.min_players, options))
    return out


ALL_CONFIGS = CONFIGS + [(gid, p, o) for gid in GAMES for p, o in option_pairs(GAMES[gid])]
ALL_IDS = [f"{gid}-{players}p-{orjson.dumps(options).decode()}" for gid, players, options in ALL_CONFIGS]

#: Bounds: states every ``EVERY``-th decision of one seeded game, ``PAIRS`` swaps per state and seat.
EVERY = 3
PAIRS = 3


def swapped(value: Any, x: str, y: str) -> Any:
    """``value`` with the strings ``x`` and ``y`` exchanged everywhere (lists, dicts, tuples, sets, objects)."""
    if isinstance(value, str):
        return y if value == x else x if value == y else value
    if isinstance(value, list):
        out = [swapped(v, x, y) for v in value]
        if len(value) > 1 and all(isinstance(v, str) for v in value) and value == sorted(value):
            out.sort()  # a list kept in id order stays in id order
        return out
    if isinstance(value, tuple):
        return tuple(swapped(v, x, y) for v in value)
    if isinstance(value, set | frozenset):
        return type(value)(swapped(v, x, y) for v in value)
    if isinstance(value, dict):
        return {swapped(k, x, y): swapped(v, x, y) for k, v in value.items()}
    return value


def twin(game: Game[Any], state: Any, x: str, y: str) -> Any:
    """The true state with ``x`` and ``y`` exchanged in every field (the generator is kept as it is)."""
    out = game.clone(state)
    names = list(getattr(out, "__dict__", {})) or [n for c in type(out).__mro__ for n in getattr(c, "__slots__", ())]
    for name in names:
        if hasattr(out, name):
                setattr(out, name, swapped(getattr(out, name), x, y))
    return out


def decisions(game: Game[Any], players: int, options: dict[str, Any]) -> list[tuple[Any, int]]:
    """(state, seat) pairs: every seat at every few decisions of two seeded games."""
    out = []
    for seed in (3, 21):
        for state in states_of(game, players, options, seed=seed, every=EVERY):
            out.extend((state, seat) for seat in range(game.seat_count(state)))
    return out


@pytest.mark.parametrize(("gid", "players", "options"), ALL_CONFIGS, ids=ALL_IDS)
def test_determinized_states_decode_and_keep_the_seats_view_and_public_facts(
        gid: str, players: int, options: dict[str, Any]) -> None:
    """(a), (b) and (d)."""
    game = GAMES[gid]
    rng = random.Random(4)
    for state, seat in decisions(game, players, options):
        det = game.determinize(state, seat, random.Random(rng.getrandbits(32)))
        data = game.encode(det)
        assert game.encode(game.decode(data)) == data, "a determinized state must be a valid state"
        seen = withdrawn(game, state, seat)
        assert game.view(det, seat) == game.view(seen, seat)
        assert game.to_act(det) == game.to_act(seen)
        assert game.legal_moves(det, seat) == game.legal_moves(seen, seat)
        assert game.view(det, None) == game.view(seen, None), "a public fact changed"
        assert game.secrets(det, seat) == game.secrets(seen, seat) or not game.secrets(seen, seat), \
            "the seat would see a different set of ids"


@pytest.mark.parametrize(("gid", "players", "options"), ALL_CONFIGS, ids=ALL_IDS)
def test_determinize_carries_none_of_the_seats_secrets(gid: str, players: int, options: dict[str, Any]) -> None:
    """(c): two worlds differing only in which unseen id sits where determinize to the same bytes."""
    game = GAMES[gid]
    rng = random.Random(9)
    checked = 0
    for state, seat in decisions(game, players, options):
        view = game.view(state, seat)
        secret = sorted(game.secrets(state, seat) - set(walk_strings(view)))
        for _ in range(PAIRS if len(secret) >= 2 else 0):
            x, y = rng.sample(secret, 2)
            other = twin(game, state, x, y)
            try:
                game.decode(game.encode(other))
            except InvalidState:
                continue  # not a state of the game: the two ids are not interchangeable here
            if game.view(other, seat) != view:
                continue  # the ids are distinguishable through something derived (a count, an order)
            s = rng.getrandbits(32)
            first = game.encode(game.determinize(state, seat, random.Random(s)))
            second = game.encode(game.determinize(other, seat, random.Random(s)))
            assert first == second, f"seat {seat}'s determinization depends on where {x} and {y} really are"
            checked += 1
    if any(game.secrets(s, 0) for s, _ in decisions(game, players, options)):
        assert checked, "no pair of secrets was ever swapped: the test checked nothing"
