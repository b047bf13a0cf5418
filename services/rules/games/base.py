"""The engine protocol, written once.

Every game is one module exposing ``GAME``, an instance of a :class:`Game` subclass. The rules service,
the bots, the conformance suite and the benchmarks are written against this class only and never know
which game they run (boardgame.io's idea: a game is data plus pure move functions).

Conventions shared by every game (see the specs in ``shared/rules``):

* moves are JSON objects ``{"type": ..., ...}`` with exactly the fields the spec lists;
* ``apply`` never mutates its input and raises :class:`IllegalMove` with a spec error code and a
  sentence a person understands;
* all randomness comes from a seeded :class:`random.Random` kept in the state;
* ``view`` shows exactly what one seat may see, ``None`` being a spectator;
* ``encode``/``decode`` use a versioned JSON document; decoding validates everything, because the bytes
  arrive over the network.
"""

from __future__ import annotations

import base64
import random
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MethodType
from typing import Any, ClassVar, Final, Generic, TypeVar

import orjson
from mypy_extensions import mypyc_attr

Move = dict[str, Any]
JSONDict = dict[str, Any]


class RulesError(Exception):
    """Base of the errors a game raises on purpose; carries a stable machine-readable ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class IllegalMove(RulesError):
    """A move that the rules do not allow in this state (or that is malformed)."""


class NoSuchSeat(IllegalMove, ValueError):
    """A seat argument that is not a seat of this state: not an ``int`` (``True`` is not seat 1) or out of range."""

    def __init__(self, message: str) -> None:
        super().__init__("no_such_seat", message)


class InvalidOptions(RulesError):
    """``new_game`` was asked for a player count or options the game does not have."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_options", message)


class InvalidState(RulesError):
    """``decode`` was given bytes that are not a valid state of this game."""

    def __init__(self, message: str) -> None:
        super().__init__("invalid_state", message)


@dataclass(frozen=True)
class OptionSpec:
    """One option of a game, as shown in the catalogue and checked by :func:`resolve_options`.

    ``kind`` is ``bool``, ``int`` or ``choice``; ``any`` leaves the check to the game (for
    structured options such as Sideboards' goal triple).
    """

    name: str
    kind: str
    default: Any
    description: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[Any, ...] = ()

    def as_json(self) -> JSONDict:
        doc: JSONDict = {"name": self.name, "type": self.kind, "default": self.default,
                         "description": self.description}
        if self.minimum is not None:
            doc["minimum"] = self.minimum
        if self.maximum is not None:
            doc["maximum"] = self.maximum
        if self.choices:
            doc["choices"] = list(self.choices)
        return doc


@dataclass(frozen=True)
class Outcome:
    """The game-independent summary of a finished game, for bots, the arena and metrics.

    ``scores`` are per seat (higher is better); ``winners`` lists every seat that won or shared the win.
    """

    scores: list[float]
    winners: list[int] = field(default_factory=list)


S = TypeVar("S")


# A regular Python class even in the compiled build (a mypyc "native" class has a fixed namespace): the seat
# checks below wrap the methods of each subclass, and engines written elsewhere (tests) subclass it.
@mypyc_attr(native_class=False)
class Game(ABC, Generic[S]):
    """One tabletop game. Subclasses follow the sections of their spec; states are plain data."""

    id: ClassVar[str]
    title: ClassVar[str]
    min_players: ClassVar[int]
    max_players: ClassVar[int]
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    #: True if a step may wait on several seats at once (Sideboards).
    simultaneous: ClassVar[bool] = False
    #: Move types whose parameters are too many to enumerate: ``legal_moves`` offers candidates, and
    #: ``apply`` accepts any valid instance (Fierce Women's ``rearrange``).
    open_move_types: ClassVar[frozenset[str]] = frozenset()

    def __class_getitem__(cls, item: Any) -> Any:
        """``Game[State]`` in a class statement: mypyc leaves ``Generic`` out of a regular class's bases."""
        return cls

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Guard every protocol method a game defines that takes outside input (:func:`_guarded`), once, here.

        Engines index lists by seat, so ``True`` would act as seat 1 and ``-1`` as the last seat; the
        rules service checks seats before calling, but bots, tests and other callers use engines directly.
        """
        super().__init_subclass__(**kwargs)
        _guard_methods(cls)

    # -- setup -----------------------------------------------------------------------------------
    @abstractmethod
    def new_game(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> S:
        """A fresh game; raises :class:`InvalidOptions` for a bad player count or option."""

    # -- flow ------------------------------------------------------------------------------------
    @abstractmethod
    def to_act(self, state: S) -> list[int]:
        """Seats whose decision is pending; empty once the game is over."""

    @abstractmethod
    def legal_moves(self, state: S, seat: int) -> list[Move]:
        """Every legal move of ``seat`` in the spec's order ([] if the seat is not to act)."""

    def apply(self, state: S, seat: int, move: Move) -> S:
        """The state after ``seat`` plays ``move``; the input is never changed."""
        nxt = self.clone(state)
        self.apply_in_place(nxt, seat, move)
        return nxt

    @abstractmethod
    def apply_in_place(self, state: S, seat: int, move: Move) -> None:
        """Validate and play ``move`` on ``state`` itself (the search's fast path).

        Raises :class:`IllegalMove`; validation happens before any change, so a rejected move leaves
        the state as it was.
        """

    def sample_move(self, state: S, seat: int, rng: random.Random) -> Move:
        """A random legal move of ``seat``: what bots' playouts play, many thousand times per decision.

        It need not be uniform over :meth:`legal_moves`, but it must be legal and draw only on ``rng``.
        Games whose full enumeration is costly (CLASH: hundreds of placements with effect choices)
        sample without enumerating everything.
        """
        legal = self.legal_moves(state, seat)
        return legal[below(rng, len(legal))]

    def canonical_move(self, move: Move) -> Move:
        """The spelling ``legal_moves`` uses for a move that ``apply`` also accepts in other spellings.

        Most games have one spelling per move (the identity); They Who Were 8 accepts an unordered
        pair in either order and lists it sorted. Must not raise, whatever ``move`` is.
        """
        return move

    @abstractmethod
    def clone(self, state: S) -> S:
        """A cheap independent copy (bots copy states millions of times: no deepcopy)."""

    @abstractmethod
    def is_over(self, state: S) -> bool:
        """True once the game (or match) has ended."""

    # -- information -----------------------------------------------------------------------------
    @abstractmethod
    def view(self, state: S, seat: int | None) -> JSONDict:
        """What ``seat`` may see (spec section "Hidden information"); ``None`` is a spectator."""

    @abstractmethod
    def secrets(self, state: S, seat: int | None) -> set[str]:
        """Identifiers (card ids ...) that ``view(state, seat)`` must not contain anywhere.

        This is the spec's "Hidden information" table turned into data, so that the conformance
        suite and the end-to-end tests can check every view structurally.
        """

    @abstractmethod
    def determinize(self, state: S, seat: int, rng: random.Random) -> S:
        """A full state that ``seat`` cannot tell apart from ``state``, hidden parts re-sampled.

        In a simultaneous step the other seats' hidden submissions are withdrawn first (see
        :meth:`without_others_submissions`): the seat cannot know them, so a search lets them choose again.
        """

    def without_others_submissions(self, state: S, seat: int) -> S:
        """``state`` with every other seat's pending, hidden simultaneous submission withdrawn.

        This is what ``determinize`` keeps of a simultaneous step, and what the conformance suite compares
        a determinization's view with. Games without simultaneous steps have nothing to withdraw and
        return ``state`` itself.
        """
        return state

    # -- scoring ---------------------------------------------------------------------------------
    @abstractmethod
    def result(self, state: S) -> JSONDict | None:
        """The spec's result document, or ``None`` while the game runs (unless the spec says otherwise)."""

    @abstractmethod
    def outcome(self, state: S) -> Outcome:
        """Scores and winners of a finished game, in the shape every game shares."""

    # -- transport -------------------------------------------------------------------------------
    @abstractmethod
    def encode(self, state: S) -> bytes:
        """Compact, versioned, schema-checked bytes (never pickle)."""

    @abstractmethod
    def decode(self, data: bytes) -> S:
        """The state back from :meth:`encode`; raises :class:`InvalidState` on anything malformed."""

    def decode_trusted(self, data: bytes) -> S:
        """The state back from bytes this service encoded itself (their seal verified, see ``services.rules.seal``).

        Such bytes are known to be a state :meth:`encode` wrote, so a game may skip the checks that only
        untrusted bytes need (consistency of the whole state, the log); the default validates as usual.
        """
        return self.decode(data)

    @abstractmethod
    def seat_count(self, state: S) -> int:
        """Number of seats in the state (Fierce Women's 2-player game has 3: the automa)."""

    def sides(self, state: S) -> list[list[int]]:
        """The competing sides: one seat each by default, teams where the game has them.

        Seats the engine plays itself (Fierce Women's automa) belong to no side. The gateway uses this
        to decide what a forfeit means without knowing the game: a side with a forfeited seat cannot
        win, and once a single side is left the match is over.
        """
        return [[seat] for seat in range(self.seat_count(state))]

    # -- catalogue -------------------------------------------------------------------------------
    def catalogue(self) -> JSONDict:
        return {
            "id": self.id,
            "title": self.title,
            "min_players": self.min_players,
            "max_players": self.max_players,
            "simultaneous": self.simultaneous,
            "options": [o.as_json() for o in self.options],
        }


# -- argument checks (once for every engine) -------------------------------------------------------
#
# The protocol's arguments come from clients and the network, so an engine must answer a wrong one with its
# own error, never a crash. The checks live here, in front of every engine, and not in the engines' typed
# code: there, once compiled (mypyc), a parameter typed ``int`` turns ``True`` into 1 and one typed ``dict``
# raises TypeError, so what reaches it must already have the declared type.

#: The protocol methods whose second argument is a seat, and whether ``None`` (a spectator) is allowed.
_SEAT_METHODS: Final = {"legal_moves": False, "apply_in_place": False, "apply": False, "sample_move": False,
                 "view": True, "secrets": True, "determinize": False, "without_others_submissions": False}
#: The seat methods whose next argument is a move.
_MOVE_METHODS: Final = frozenset({"apply", "apply_in_place"})
_NOT_A_MOVE: Final = "a move must be a JSON object with a 'type'"


_GUARDED: Final = (*_SEAT_METHODS, "new_game", "decode", "decode_trusted", "canonical_move")


def _guard_methods(cls: type, names: tuple[str, ...] = _GUARDED) -> None:
    """Wrap the methods of ``names`` that ``cls`` itself defines (not inherited) with their argument checks."""
    for name in names:
        method = vars(cls).get(name)
        if method is not None and not getattr(method, "_guarded", False):
            setattr(cls, name, _guarded(method, name))


def _guarded(method: Any, name: str) -> Any:
    """``method`` refusing arguments of the wrong kind with the protocol's errors:

    * a seat that is not an ``int`` in ``0..seat_count-1``: :class:`NoSuchSeat`;
    * a move that is not a JSON object: :class:`IllegalMove` ``malformed_move``;
    * a player count that is not an ``int``: :class:`InvalidOptions`;
    * state bytes that are not bytes: :class:`InvalidState` (a ``bytearray`` or ``memoryview`` is copied
      to ``bytes``);
    * ``canonical_move`` of anything but a JSON object: the value itself (it must never raise).
    """
    checked: Any
    if name == "new_game":
        def checked(self: Game[Any], players: Any, seed: int, options: Mapping[str, Any] | None = None) -> Any:
            if players.__class__ is not int:
                raise InvalidOptions(f"{self.title} is for {self.min_players} to {self.max_players} players, "
                                     f"not {players!r}")
            return method(self, players, seed, options)
    elif name in ("decode", "decode_trusted"):
        def checked(self: Game[Any], data: Any) -> Any:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise InvalidState("state must be bytes")
            return method(self, data if data.__class__ is bytes else bytes(data))
    elif name == "canonical_move":
        def checked(self: Game[Any], move: Any) -> Any:
            return method(self, move) if isinstance(move, dict) else move
    elif name in _MOVE_METHODS:
        def checked(self: Game[Any], state: Any, seat: Any, move: Any) -> Any:
            if seat.__class__ is not int or seat < 0 or seat >= self.seat_count(state):
                raise _no_such_seat(self, state, seat)
            if not isinstance(move, dict):
                raise IllegalMove("malformed_move", _NOT_A_MOVE)
            return method(self, state, seat, move)
    elif name in ("sample_move", "determinize"):  # (state, seat, rng)
        def checked(self: Game[Any], state: Any, seat: Any, rng: Any) -> Any:
            if seat.__class__ is not int or seat < 0 or seat >= self.seat_count(state):
                raise _no_such_seat(self, state, seat)
            return method(self, state, seat, rng)
    else:  # (state, seat): fixed arities, as calls with *args cost more than the check
        spectator = _SEAT_METHODS[name]

        def checked(self: Game[Any], state: Any, seat: Any) -> Any:
            if (seat.__class__ is not int or seat < 0 or seat >= self.seat_count(state)) and not (
                    spectator and seat is None):
                raise _no_such_seat(self, state, seat)
            return method(self, state, seat)

    checked._guarded = True
    checked.__name__ = getattr(method, "__name__", name)  # compiled methods of a regular class have no name
    checked.__qualname__ = getattr(method, "__qualname__", name)
    checked.__doc__ = getattr(method, "__doc__", None)
    checked.__wrapped__ = method
    return checked


def _no_such_seat(game: Game[Any], state: Any, seat: Any) -> NoSuchSeat:
    return NoSuchSeat(f"seat {seat!r} does not exist (seats 0..{game.seat_count(state) - 1})")


# Its own concrete protocol methods (the abstract ones are overridden, and guarded, in every engine).
_guard_methods(Game, ("apply", "sample_move", "without_others_submissions", "canonical_move", "decode_trusted"))


def _unchecked(game: Any, name: str) -> Any:
    """``game.<name>`` bound without its argument checks (the method itself where it has none)."""
    method = getattr(type(game), name, None)
    inner = getattr(method, "__wrapped__", None) if getattr(method, "_guarded", False) else None
    return MethodType(inner, game) if inner is not None else getattr(game, name)


class Unguarded:
    """The protocol methods a search or a playout calls in its inner loop, bound without the argument checks.

    The checks (:func:`_guarded`) protect an engine from its callers' arguments. A loop that only passes back
    what the engine itself gave it (a seat from ``to_act``, a move from ``legal_moves`` or ``sample_move``,
    a state it cloned or determinized) cannot pass a wrong one, and in such a loop a check costs as much as
    a cheap call itself (0.3-0.6 µs). So the loop checks its outside inputs once, through the guarded
    methods, and calls these for the rest. Anything else is the game's own (``game``).
    """

    def __init__(self, game: Any) -> None:
        self.game = game
        self.id: str = game.id
        self.simultaneous: bool = bool(getattr(game, "simultaneous", False))
        self.to_act: Callable[[Any], list[int]] = _unchecked(game, "to_act")
        self.is_over: Callable[[Any], bool] = _unchecked(game, "is_over")
        self.legal_moves: Callable[[Any, int], list[Move]] = _unchecked(game, "legal_moves")
        self.apply_in_place: Callable[[Any, int, Move], None] = _unchecked(game, "apply_in_place")
        self.sample_move: Callable[[Any, int, random.Random], Move] = _unchecked(game, "sample_move")
        self.determinize: Callable[[Any, int, random.Random], Any] = _unchecked(game, "determinize")
        self.clone: Callable[[Any], Any] = _unchecked(game, "clone")
        self.outcome: Callable[[Any], Any] = _unchecked(game, "outcome")


def unguarded(game: Any) -> Unguarded:
    """``game``'s inner-loop methods without argument checks (see :class:`Unguarded`); any object with the
    protocol's methods works (those without checks are taken as they are)."""
    return game if isinstance(game, Unguarded) else Unguarded(game)


# -- helpers shared by the games --------------------------------------------------------------------


def resolve_options(game: type[Game[Any]] | Game[Any], options: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults filled in and each value type-checked against the game's :class:`OptionSpec` list.

    Unknown keys and wrong types raise :class:`InvalidOptions`; cross-option constraints stay with
    the game.
    """
    specs = {o.name: o for o in game.options}
    given = dict(options or {})
    unknown = sorted(set(given) - set(specs))
    if unknown:
        raise InvalidOptions(f"unknown option {unknown[0]!r}; {game.id} has: {', '.join(specs) or 'none'}")
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        value = given.get(name, spec.default)
        if spec.kind == "bool":
            if not isinstance(value, bool):
                raise InvalidOptions(f"option {name!r} must be true or false")
        elif spec.kind == "int":
            if not is_int(value):
                raise InvalidOptions(f"option {name!r} must be a whole number")
            if (spec.minimum is not None and value < spec.minimum) or (
                spec.maximum is not None and value > spec.maximum
            ):
                raise InvalidOptions(f"option {name!r} must be between {spec.minimum} and {spec.maximum}")
        elif spec.kind == "choice" and not any(value == c and type(value) is type(c) for c in spec.choices):
            shown = ", ".join(orjson.dumps(c).decode() for c in spec.choices)
            raise InvalidOptions(f"option {name!r} must be one of {shown}")
        out[name] = value
    return out


def is_int(value: Any) -> bool:
    """JSON integers only: ``True`` is not a number here."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_move_shape(move: Any, fields: dict[str, type | tuple[type, ...]], type_name: str) -> None:
    """Exactly ``type`` plus ``fields`` must be present, each of the given JSON type (strict moves)."""
    same = len(move) == len(fields) + 1 and "type" in move
    if same:
        for name in fields:
            if name not in move:
                same = False
                break
    if not same and set(move) != {"type", *fields}:  # the sets, only to be sure and to name what differs
        missing = sorted(set(fields) - set(move))
        extra = sorted(set(move) - {"type", *fields})
        what = f"missing {', '.join(missing)}" if missing else f"unexpected {', '.join(extra)}"
        raise IllegalMove("malformed_move", f"{type_name} needs exactly: {', '.join(fields) or 'no fields'} ({what})")
    for name, kind in fields.items():
        value = move[name]
        if kind is int or kind == (int,):
            ok = is_int(value)
        else:
            ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
        if not ok:
            raise IllegalMove("malformed_move", f"{type_name}: field {name!r} has the wrong type")


def move_type(move: Any, known: Iterable[str]) -> str:
    """The move's ``type``, or ``malformed_move`` for a non-object or an unknown type."""
    if not isinstance(move, dict):
        raise IllegalMove("malformed_move", _NOT_A_MOVE)
    kind = move.get("type")
    if not isinstance(kind, str) or kind not in known:
        raise IllegalMove("malformed_move", f"unknown move type {kind!r}; expected one of {', '.join(known)}")
    return kind


# -- transport helpers ------------------------------------------------------------------------------

_MT_WORDS: Final = 624


def rng_dump(rng: random.Random) -> str:
    """The Mersenne Twister state as compact base64 (about 3.3 kB), never in any view."""
    version, internal, gauss = rng.getstate()
    if version != 3 or len(internal) != _MT_WORDS + 1 or gauss is not None:
        raise ValueError("unsupported random.Random state")
    return base64.b64encode(struct.pack(f"<{_MT_WORDS + 1}I", *internal)).decode("ascii")


def rng_load(text: Any) -> random.Random:
    """Inverse of :func:`rng_dump`; raises :class:`InvalidState` on anything else."""
    try:
        raw = base64.b64decode(text, validate=True)
        words = struct.unpack(f"<{_MT_WORDS + 1}I", raw)
    except Exception as exc:  # binascii.Error, struct.error, TypeError
        raise InvalidState("rng: not a valid generator state") from exc
    if words[-1] > _MT_WORDS:
        raise InvalidState("rng: position out of range")
    rng = random.Random.__new__(random.Random)  # Random() would first seed itself from os.urandom (~8 µs)
    rng.setstate((3, words, None))
    return rng


def rng_copy(rng: random.Random) -> random.Random:
    out = random.Random.__new__(random.Random)  # not Random(): it would seed itself from os.urandom first
    out.setstate(rng.getstate())
    return out


# -- draws (compiled with the engines) ---------------------------------------------------------------
#
# ``random.Random``'s own randrange, choice and shuffle are Python code in the standard library, so they stay
# interpreted when the engines are compiled, and in a playout they cost more than the rules. These draw
# exactly the same numbers from the generator (CPython's ``_randbelow_with_getrandbits``, used by
# ``randrange(n)``, ``choice`` and ``shuffle``), so a seed gives the same game either way
# (tests/games/test_draws.py checks them against the standard library).


#: The generator's own C method, called directly for a plain ``random.Random`` (no method lookup per draw).
_RANDOM: Final = random.Random
_GETRANDBITS: Final = random.Random.getrandbits


def below(rng: random.Random, n: int) -> int:
    """``rng.randrange(n)`` for ``n >= 1``, the same draw."""
    if n <= 0:
        raise ValueError(f"below({n}): empty range")
    k = n.bit_length()
    if type(rng) is _RANDOM:  # type(), not __class__: compiled, a pointer comparison
        r: int = _GETRANDBITS(rng, k)
        while r >= n:
            r = _GETRANDBITS(rng, k)
        return r
    r = rng.getrandbits(k)  # a subclass may draw its own way, as randrange would let it
    while r >= n:
        r = rng.getrandbits(k)
    return r


def shuffle(rng: random.Random, items: list[Any]) -> None:
    """``rng.shuffle(items)``, the same permutation."""
    for i in range(len(items) - 1, 0, -1):
        j = below(rng, i + 1)
        items[i], items[j] = items[j], items[i]


def dump_document(game_id: str, version: int, body: Mapping[str, Any]) -> bytes:
    """A versioned JSON document: ``{"game", "v", ...body}``."""
    return orjson.dumps({"game": game_id, "v": version, **body})


def load_document(data: bytes, game_id: str, version: int, keys: Sequence[str]) -> dict[str, Any]:
    """Parse and check the envelope of :func:`dump_document`; the game checks the body's meaning."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise InvalidState("state must be bytes")
    try:  # sealed bytes are the rules service's envelope: it (or a reader with no key, seal.strip) opens them first
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidState(f"state is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidState("state must be a JSON object")
    if doc.get("game") != game_id:
        raise InvalidState(f"state belongs to {doc.get('game')!r}, not {game_id!r}")
    if doc.get("v") != version:
        raise InvalidState(f"state version {doc.get('v')!r} is not supported (expected {version})")
    expected = {"game", "v", *keys}
    if set(doc) != expected:
        missing = sorted(expected - set(doc))
        extra = sorted(set(doc) - expected)
        raise InvalidState(f"state fields wrong: missing {missing}, unexpected {extra}")
    return doc


def require(condition: bool, message: str) -> None:
    """Decode-time check: raise :class:`InvalidState` unless ``condition`` holds."""
    if not condition:
        raise InvalidState(message)
