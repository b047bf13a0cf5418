"""The conformance suite: every registered game must pass the same properties.

Parametrised over the registry, so a new game is checked the moment it is registered. The properties are
those of ARCHITECTURE.md "The engine protocol": determinism from the seed, every legal move applies, random
playouts end with a valid result, illegal moves are rejected with a code, encode/decode round-trips and
rejects tampered bytes, views hide what the spec hides, and determinize never changes what a seat saw.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.rules.games import GAMES
from services.rules.games.base import Game, IllegalMove, InvalidState, RulesError
from services.rules.playout import random_playout
from tests.games.fixtures import leaked_secrets, sample_configs, walk_strings

GAME_IDS = list(GAMES)
CONFIGS = [(gid, players, options) for gid in GAME_IDS for players, options in sample_configs(GAMES[gid])]
CONFIG_IDS = [f"{gid}-{players}p-{orjson.dumps(options).decode()}" for gid, players, options in CONFIGS]
ID_LIKE = re.compile(r"^[A-Z]+[0-9]+$")


def canonical(move: Any) -> bytes:
    return orjson.dumps(move, option=orjson.OPT_SORT_KEYS)


def trajectory(game: Game[Any], players: int, options: dict[str, Any], seed: int) -> Iterator[tuple[Any, int, Any]]:
    """(state, seat, move) for every decision of one seeded random game; the states are never mutated."""
    rng = random.Random(seed)
    state = game.new_game(players, seed, options)
    while not game.is_over(state):
        to_act = game.to_act(state)
        seat = rng.choice(to_act)
        legal = game.legal_moves(state, seat)
        move = rng.choice(legal)
        yield state, seat, move
        state = game.apply(state, seat, move)
    yield state, -1, None


def states_of(game: Game[Any], players: int, options: dict[str, Any], seed: int, every: int = 1) -> list[Any]:
    return [s for i, (s, _, _) in enumerate(trajectory(game, players, options, seed)) if i % every == 0]


# -- determinism ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_same_seed_and_moves_give_identical_states_and_views(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    first = list(trajectory(game, players, options, seed=11))
    second = list(trajectory(game, players, options, seed=11))
    assert len(first) == len(second)
    for (s1, seat1, m1), (s2, seat2, m2) in zip(first, second, strict=True):
        assert (seat1, m1) == (seat2, m2)
        assert game.encode(s1) == game.encode(s2)
        for seat in [None, *range(game.seat_count(s1))]:
            assert game.view(s1, seat) == game.view(s2, seat)


@pytest.mark.parametrize("gid", GAME_IDS)
def test_different_seeds_give_different_games(gid: str) -> None:
    game = GAMES[gid]
    players = game.min_players if game.min_players > 1 else 2
    encodings = {game.encode(game.new_game(players, seed, {})) for seed in range(8)}
    assert len(encodings) > 1


# -- playouts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_random_playouts_terminate_with_a_valid_result(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    for seed in range(12):
        state = game.new_game(players, seed, options)
        final, moves = random_playout(game, state, random.Random(seed), in_place=seed % 2 == 0)
        assert moves > 0
        assert game.is_over(final) and game.to_act(final) == []
        result = game.result(final)
        assert isinstance(result, dict)
        orjson.dumps(result)
        outcome = game.outcome(final)
        seats = game.seat_count(final)
        assert len(outcome.scores) == seats
        assert outcome.winners and set(outcome.winners) <= set(range(seats))
        for seat in range(seats):
            assert game.legal_moves(final, seat) == []
            with pytest.raises(IllegalMove):
                game.apply(final, seat, {"type": "anything"})


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_every_legal_move_applies_and_apply_never_mutates_its_input(
    gid: str, players: int, options: dict[str, Any]
) -> None:
    game = GAMES[gid]
    for state in states_of(game, players, options, seed=5, every=3):
        before = game.encode(state)
        for seat in range(game.seat_count(state)):
            legal = game.legal_moves(state, seat)
            if seat not in game.to_act(state):
                assert legal == []
                continue
            assert legal, f"seat {seat} is to act but has no legal move"
            assert len({canonical(m) for m in legal}) == len(legal), "legal_moves lists a move twice"
            for move in legal[:60]:
                game.apply(state, seat, move)
        assert game.encode(state) == before


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_sampled_moves_are_legal_and_cover_the_choices(gid: str, players: int, options: dict[str, Any]) -> None:
    """``sample_move`` (what playouts play) returns one of ``legal_moves`` and, over many draws, many of them."""
    game = GAMES[gid]
    rng = random.Random(21)
    for state in states_of(game, players, options, seed=13, every=5):
        before = game.encode(state)
        for seat in game.to_act(state):
            legal = {canonical(game.canonical_move(m)) for m in game.legal_moves(state, seat)}
            drawn = {canonical(game.canonical_move(game.sample_move(state, seat, rng))) for _ in range(40)}
            assert game.encode(state) == before, "sample_move changed the state"
            assert drawn <= legal, f"sample_move gave an illegal move: {sorted(drawn - legal)[:1]}"
            assert len(drawn) >= min(len(legal), 2), "sample_move keeps giving the same move"


# -- illegal moves -------------------------------------------------------------------------------------


def mutations(move: dict[str, Any], vocabulary: list[str]) -> Iterator[Any]:
    """Moves one edit away from a legal one: each field dropped, retyped, or given another value."""
    yield {k: v for k, v in move.items() if k != "type"}
    yield {**move, "type": "no_such_move"}
    yield {**move, "unexpected": 1}
    for key, value in move.items():
        if key == "type":
            continue
        yield {k: v for k, v in move.items() if k != key}
        if isinstance(value, bool):
            yield {**move, key: not value}
            yield {**move, key: 1}
        elif isinstance(value, int):
            for other in (value - 1, value + 1, 99, -1):
                yield {**move, key: other}
            yield {**move, key: str(value)}
            yield {**move, key: True}
        elif isinstance(value, str):
            yield {**move, key: "ZZ99"}
            yield {**move, key: 7}
            for other in vocabulary[:12]:
                yield {**move, key: other}
        elif isinstance(value, list):
            yield {**move, key: []}
            yield {**move, key: "x"}
            if value:
                yield {**move, key: value + value[:1]}
                yield {**move, key: value[:-1]}
                if isinstance(value[0], str):
                    for other in vocabulary[:6]:
                        yield {**move, key: [other, *value[1:]]}
        elif isinstance(value, dict):
            yield {**move, key: {}}
            yield {**move, key: [value]}


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_illegal_moves_raise_illegal_move_with_a_code(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    for state in states_of(game, players, options, seed=3, every=4):
        if game.is_over(state):
            continue
        to_act = game.to_act(state)
        legal_by_seat = {s: game.legal_moves(state, s) for s in to_act}
        vocabulary = sorted({s for moves in legal_by_seat.values() for s in walk_strings(moves) if ID_LIKE.match(s)})
        for junk in (None, 3, "draw", [], {}, {"type": 5}, {"type": "no_such_move"}):
            with pytest.raises(IllegalMove) as err:
                game.apply(state, to_act[0], junk)
            assert err.value.code == "malformed_move"
        idle = [s for s in range(game.seat_count(state)) if s not in to_act]
        for seat in idle:  # wrong seat / out of turn: nothing is legal for it
            some_move = legal_by_seat[to_act[0]][0]
            with pytest.raises(IllegalMove) as err:
                game.apply(state, seat, some_move)
            assert err.value.code and err.value.message
        for seat, legal in legal_by_seat.items():
            legal_keys = {canonical(m) for m in legal}
            for move in legal[:4]:
                for candidate in mutations(move, vocabulary):
                    if isinstance(candidate.get("type"), str) and candidate["type"] in game.open_move_types:
                        continue
                    if canonical(game.canonical_move(candidate)) in legal_keys:  # another spelling of a legal move
                        game.apply(state, seat, candidate)
                        continue
                    with pytest.raises(IllegalMove) as err:
                        game.apply(state, seat, candidate)
                    assert isinstance(err.value.code, str) and err.value.code
                    assert isinstance(err.value.message, str) and len(err.value.message) > 5


# -- transport -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_encode_decode_round_trips(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    rng = random.Random(0)
    for state in states_of(game, players, options, seed=9, every=2):
        data = game.encode(state)
        assert isinstance(data, bytes)
        back = game.decode(data)
        assert game.encode(back) == data
        assert game.to_act(back) == game.to_act(state)
        for seat in [None, *range(game.seat_count(state))]:
            assert game.view(back, seat) == game.view(state, seat)
        for seat in game.to_act(state):
            assert game.legal_moves(back, seat) == game.legal_moves(state, seat)
        if not game.is_over(state):  # the future is the same too: same moves, same RNG
            seat = game.to_act(state)[0]
            move = rng.choice(game.legal_moves(state, seat))
            assert game.encode(game.apply(back, seat, move)) == game.encode(game.apply(state, seat, move))
        else:
            assert game.result(back) == game.result(state)


def tampered_documents(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Structurally plausible forgeries of a state document, each of which must be rejected."""
    for key in doc:
        yield f"drop {key}", {k: v for k, v in doc.items() if k != key}
        value = doc[key]
        wrong: Any = "x" if not isinstance(value, str) else 12345
        yield f"retype {key}", {**doc, key: wrong}
    yield "extra field", {**doc, "extra": 1}
    yield "other version", {**doc, "v": 999}
    yield "other game", {**doc, "game": "chess"}
    slots: list[tuple[list[Any], int]] = []
    stack: list[Any] = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            for i, element in enumerate(item):
                if isinstance(element, str) and ID_LIKE.match(element):
                    slots.append((item, i))
                else:
                    stack.append(element)
    distinct = {lst[i] for lst, i in slots}
    if len(distinct) >= 2:
        (first, i), value = slots[0], slots[0][0][slots[0][1]]
        other = next(lst[j] for lst, j in slots if lst[j] != value)
        first[i] = other
        yield f"card {other} twice", orjson.loads(orjson.dumps(doc))
        first[i] = "ZZ99"
        yield "unknown card", orjson.loads(orjson.dumps(doc))
        first[i] = value


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_decode_rejects_tampered_bytes(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    for state in states_of(game, players, options, seed=4, every=7)[:6]:
        data = game.encode(state)
        for junk in (b"", b"garbage", b"[]", b"{}", b"null", data[: len(data) // 2], data + b"x", b"\xff" * 40):
            with pytest.raises(InvalidState):
                game.decode(junk)
        doc = orjson.loads(data)
        for what, forged in tampered_documents(doc):
            with pytest.raises(InvalidState):
                game.decode(orjson.dumps(forged))
                pytest.fail(f"decode accepted a state with {what}")


@pytest.mark.parametrize("gid", GAME_IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_decode_of_flipped_bytes_never_crashes(gid: str, data: st.DataObject) -> None:
    game = GAMES[gid]
    players = max(game.min_players, 2) if game.max_players >= 2 else 1
    encoded = bytearray(game.encode(game.new_game(players, 1, {})))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    try:
        state = game.decode(bytes(encoded))
    except InvalidState:
        return
    # Whatever decodes must be a playable state: nothing may crash on it later.
    for seat in range(game.seat_count(state)):
        orjson.dumps(game.view(state, seat))
        for move in game.legal_moves(state, seat)[:5]:
            with contextlib.suppress(RulesError):
                game.apply(state, seat, move)


# -- hidden information --------------------------------------------------------------------------------


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_views_show_no_hidden_information(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    for state in states_of(game, players, options, seed=8, every=1):
        for seat in [None, *range(game.seat_count(state))]:
            view = game.view(state, seat)
            assert isinstance(view, dict)
            text = orjson.dumps(view)
            assert b'"rng"' not in text and b'"seed"' not in text
            assert leaked_secrets(game, state, seat, view) == set(), f"seat {seat} sees hidden ids"
            if seat is not None:  # a spectator never knows more than a seat
                assert game.secrets(state, None) >= game.secrets(state, seat)


def withdrawn(game: Game[Any], state: Any, seat: int) -> Any:
    """What ``seat``'s determinizations keep of ``state``: the state itself, except that in a simultaneous
    step the other seats' hidden submissions are withdrawn (the seat cannot know them; a search lets those
    seats choose again). Withdrawing may only put other seats back among those to act: what the seat may
    not see, its own status and its own legal moves stay exactly as they were.
    """
    before = game.encode(state)
    seen = game.without_others_submissions(state, seat)
    assert game.encode(state) == before, "without_others_submissions mutated its input"
    if not game.simultaneous:
        assert game.encode(seen) == before, "only a simultaneous game has submissions to withdraw"
        return seen
    old, new = game.to_act(state), game.to_act(seen)
    assert set(old) <= set(new) and (seat in old) == (seat in new)
    assert game.legal_moves(seen, seat) == game.legal_moves(state, seat)
    assert game.secrets(seen, seat) == game.secrets(state, seat)
    return seen


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_determinize_keeps_everything_the_seat_sees(gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    rng = random.Random(17)
    hidden_changed = False
    for state in states_of(game, players, options, seed=6, every=3):
        for seat in range(game.seat_count(state)):
            if seat in game.to_act(state) or rng.random() < 0.3:
                before = game.encode(state)
                det = game.determinize(state, seat, random.Random(rng.getrandbits(32)))
                assert game.encode(state) == before, "determinize mutated its input"
                seen = withdrawn(game, state, seat)
                assert game.view(det, seat) == game.view(seen, seat)
                assert game.to_act(det) == game.to_act(seen)
                if seat in game.to_act(state):
                    assert game.legal_moves(det, seat) == game.legal_moves(state, seat)
                hidden_changed |= game.encode(det) != game.encode(state)
                if rng.random() < 0.2:  # a determinized state is a real, playable game
                    final, _ = random_playout(game, det, random.Random(1))
                    assert game.is_over(final)
    if any(game.secrets(s, 0) for s in states_of(game, players, options, seed=6, every=5)):
        assert hidden_changed, "determinize never re-sampled anything although the game hides information"


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=CONFIG_IDS)
def test_determinize_depends_only_on_what_the_seat_sees(gid: str, players: int, options: dict[str, Any]) -> None:
    """Two states a seat cannot tell apart determinize identically: this is why bots cannot peek."""
    game = GAMES[gid]
    for state in states_of(game, players, options, seed=12, every=4):
        for seat in range(game.seat_count(state)):
            twin = game.determinize(state, seat, random.Random(99))
            assert game.view(twin, seat) == game.view(withdrawn(game, state, seat), seat)
            first = game.determinize(state, seat, random.Random(5))
            second = game.determinize(twin, seat, random.Random(5))
            assert game.encode(first) == game.encode(second)
