"""CLASH effects E2-E11: one handler class per effect shape, dispatched from ``HANDLERS``.

``HANDLER_KINDS`` is keyed by the data file's effect kind and scope (``destroy:one_of``, ``flip:ray``,
``zone_transfer:zone:removed`` ...). Each handler enumerates its legal effects (for ``legal_moves``), checks a
submitted one and executes it.

A handler enumerates its effects as small ints, its *effect numbers* (a target field, a direction ...), and
:meth:`Handler.effect_of` turns a number into its effect object, built once and shared: ``legal_moves`` finds
the place move of a number in a list (``match.PLACE_ROWS``) instead of building hundreds of objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Final

from ..base import (
    JSONDict,
)
from .board import (
    BLUE_TILES,
    COLOURS,
    DATA,
    DIRECTIONS,
    EMPTY_EFF,
    FIELDS,
    GREEN_TILES,
    HIDDEN_EFF,
    IMMEDIATE,
    MOVE_EFF,
    NAMES,
    NEIGH,
    ORDER,
    PATTERNS,
    RAYS,
    TARGET_EFF,
    TILE_EFF,
    TILE_IDS,
    TILES,
    ClashState,
    affectable,
    bad_effect,
    canon,
    describe,
    draw,
    fast_aff,
    field_index,
    field_name,
    insert_canon,
    make_public,
    secured,
    unaffectable_reason,
)

# -- effect handlers (E2-E11) -----------------------------------------------------------------------------

class Handler:
    """Enumerate / check / execute one effect shape. ``orient`` = depends on the source's own orientation."""

    keys: ClassVar[frozenset[str]] = frozenset()
    orient = False
    destroys = False
    #: enum reads the placed tile itself (empty fields, its support), so legal_moves must place it first.
    reads_source = False
    #: The effect numbers are 0 .. size - 1 (Repeat: numbers are handed out as its effects are first met).
    size = 1
    #: This handler's place in ``HANDLER_LIST`` (the blue and green tile of a pair share one handler).
    uid = -1

    def __init__(self, tile: str) -> None:
        self.effect = TILES[tile]["effect"]

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        """The legal effects' numbers, in the spec's order. ``st.aff`` holds the affectable fields (bit mask,
        the source's field included: see ``board.fast_aff``)."""
        raise NotImplementedError

    def effect_of(self, k: int) -> dict[str, Any]:
        """The shared effect object of effect number ``k``."""
        raise NotImplementedError

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        """Raise bad_effect unless legal; return True if the effect destroys something."""
        raise NotImplementedError

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        raise NotImplementedError


def _destroy(st: ClashState, i: int, mover: int) -> None:
    st.down[i] = mover


def _flip(st: ClashState, i: int, mover: int) -> None:
    st.sup[i] ^= 1


def _discard(st: ClashState, i: int, mover: int) -> None:
    st.removed.append(st.tile[i])  # type: ignore[arg-type]
    st.tile[i] = None


ACTIONS: Final[dict[str, Callable[[ClashState, int, int], None]]] = {
    "destroy": _destroy, "flip": _flip, "discard": _discard}


class OneOf(Handler):
    """destroy / flip / discard of one target in an offset set (B1 B4 B5 B6 N01 N02 N03)."""

    keys = frozenset({"target"})

    def __init__(self, tile: str) -> None:
        super().__init__(tile)
        self.set = self.effect["scope"]["set"]
        self.secured_only = self.effect.get("target_filter") == "secured_only"
        self.action = ACTIONS[self.effect["kind"]]
        self.destroys = self.effect["kind"] == "destroy"
        self.orient = self.set == "front3"

    def ok(self, st: ClashState, i: int, src: int) -> bool:
        if self.secured_only:
            return i != src and st.tile[i] is not None and st.down[i] < 0 and secured(st, i)
        return affectable(st, i, src)

    size = 9

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        if no_destroy and self.destroys:
            return []
        fields = NEIGH[self.set][st.sup[src]][src]
        if self.secured_only:
            return [i for i in fields if self.ok(st, i, src)]
        aff = fast_aff(st, src)
        return [i for i in fields if aff >> i & 1]

    def effect_of(self, k: int) -> dict[str, Any]:
        return TARGET_EFF[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        i = field_index(eff["target"])
        if i not in NEIGH[self.set][st.sup[src]][src]:
            raise bad_effect(f"{field_name(i)} is not in the {self.set} scope of {describe(st, src)}")
        if not self.ok(st, i, src):
            security = self.secured_only and st.tile[i] is not None and i != src and st.down[i] < 0
            why = "it has no Security" if security else unaffectable_reason(st, i, src)
            raise bad_effect(f"{st.tile[src]} cannot {self.effect['kind']} {describe(st, i)}: {why}")
        return self.destroys

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        i = field_index(eff["target"])
        st.log.append({"event": self.effect["kind"], "field": FIELDS[i], "tile": st.tile[i]})
        self.action(st, i, mover)


class AllOf(Handler):
    """Flip every affectable tile of a set (N09 front3, N10 all8)."""

    def __init__(self, tile: str) -> None:
        super().__init__(tile)
        self.set = self.effect["scope"]["set"]
        self.orient = self.set == "front3"

    def scope(self, st: ClashState, src: int) -> list[int]:
        return [i for i in NEIGH[self.set][st.sup[src]][src] if affectable(st, i, src)]

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        return [0] if any_in(fast_aff(st, src), NEIGH[self.set][st.sup[src]][src]) else []

    def effect_of(self, k: int) -> dict[str, Any]:
        return EMPTY_EFF

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        if not self.scope(st, src):
            raise bad_effect(f"{describe(st, src)} has no tile to flip")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        for i in self.scope(st, src):
            _flip(st, i, mover)
            st.log.append({"event": "flip", "field": FIELDS[i], "tile": st.tile[i]})


class Pattern(Handler):
    """B3/G3: flip all affectable tiles of the orthogonal or the diagonal pattern."""

    keys = frozenset({"pattern"})
    EFFS: ClassVar[list[dict[str, str]]] = [{"pattern": p} for p in PATTERNS]

    def scope(self, st: ClashState, src: int, p: str) -> list[int]:
        return [i for i in NEIGH[p][0][src] if affectable(st, i, src)]

    size = 2

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        aff = fast_aff(st, src)
        return [p for p in range(2) if any_in(aff, NEIGH[PATTERNS[p]][0][src])]

    def effect_of(self, k: int) -> dict[str, Any]:
        return self.EFFS[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        if not self.scope(st, src, eff["pattern"]):
            raise bad_effect(f"the {eff['pattern']} pattern of {describe(st, src)} holds no tile that can be flipped")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        for i in self.scope(st, src, eff["pattern"]):
            _flip(st, i, mover)
            st.log.append({"event": "flip", "field": FIELDS[i], "tile": st.tile[i]})


class Ray(Handler):
    """B2/G2: flip every affectable tile from the source to the edge in one direction."""

    keys = frozenset({"direction"})
    EFFS: ClassVar[list[dict[str, str]]] = [{"direction": d} for d in DIRECTIONS]

    def scope(self, st: ClashState, src: int, d: int) -> list[int]:
        return [i for i in RAYS[src][d] if affectable(st, i, src)]

    size = 4

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        aff = fast_aff(st, src)
        rays = RAYS[src]
        return [d for d in range(4) if any_in(aff, rays[d])]

    def effect_of(self, k: int) -> dict[str, Any]:
        return self.EFFS[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        if not self.scope(st, src, DIRECTIONS.index(eff["direction"])):
            raise bad_effect(f"no tile can be flipped {eff['direction']} of {describe(st, src)}")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        for i in self.scope(st, src, DIRECTIONS.index(eff["direction"])):
            _flip(st, i, mover)
            st.log.append({"event": "flip", "field": FIELDS[i], "tile": st.tile[i]})


class Bribe(Handler):
    """N11: move any affectable tile to an empty field."""

    keys = frozenset({"target", "to"})
    reads_source = True

    size = 81

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        empty = [j for j in range(9) if st.tile[j] is None]
        if not empty:
            return []
        aff = fast_aff(st, src)
        return [i * 9 + j for i in range(9) if aff >> i & 1 and i != src for j in empty]

    def effect_of(self, k: int) -> dict[str, Any]:
        return MOVE_EFF[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        i, j = field_index(eff["target"]), field_index(eff["to"])
        if not affectable(st, i, src):
            raise bad_effect(f"Bribe cannot move {describe(st, i)}")
        if st.tile[j] is not None:
            raise bad_effect(f"Bribe must move to an empty field; {field_name(j)} is occupied")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        i, j = field_index(eff["target"]), field_index(eff["to"])
        st.log.append({"event": "move", "field": FIELDS[i], "to": FIELDS[j], "tile": st.tile[i]})
        st.tile[j], st.cov[j], st.sup[j], st.down[j] = st.tile[i], st.cov[i], st.sup[i], -1
        st.tile[i] = st.cov[i] = None


class Crisis(Handler):
    """N08: take an affectable tile supporting the mover back into the mover's open zone."""

    keys = frozenset({"target"})
    reads_source = True

    size = 9

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        aff = fast_aff(st, src)
        return [i for i in range(9) if aff >> i & 1 and i != src and st.sup[i] == mover]

    def effect_of(self, k: int) -> dict[str, Any]:
        return TARGET_EFF[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        i = field_index(eff["target"])
        if not affectable(st, i, src) or st.sup[i] != mover:
            raise bad_effect(f"Financial crisis must take a tile supporting {COLOURS[mover]} without Security, "
                       f"not {describe(st, i)}")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        i = field_index(eff["target"])
        t = st.tile[i]
        assert t is not None
        st.log.append({"event": "take", "field": FIELDS[i], "tile": t})
        insert_canon(st.open[mover], t)
        st.tile[i] = None


class Agent(Handler):
    """N06: an opponent's zone tile (open by id, hidden by slot) goes to the removed pile."""

    keys = frozenset({"tile"})
    KEYSETS: ClassVar[tuple[frozenset[str], ...]] = (frozenset({"tile"}), frozenset({"hidden"}))

    size = 2 * len(ORDER)  # a tile by its catalogue number; a hidden slot k as len(ORDER) + k

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        opp = 1 - mover
        n = len(ORDER)
        return [ORDER[t] for t in st.open[opp]] + [n + k for k in range(len(st.hidden[opp]))]

    def effect_of(self, k: int) -> dict[str, Any]:
        n = len(ORDER)
        return TILE_EFF[TILE_IDS[k]] if k < n else HIDDEN_EFF[k - n]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        opp = 1 - mover
        if "tile" in eff:
            if eff["tile"] not in st.open[opp]:
                raise bad_effect(f"{eff['tile']} is not in {COLOURS[opp]}'s open zone")
        elif "hidden" in eff:
            if eff["hidden"] >= len(st.hidden[opp]):
                raise bad_effect(f"{COLOURS[opp]} has no hidden tile in slot {eff['hidden']}")
        else:
            raise bad_effect("Agent needs {\"tile\": id} or {\"hidden\": slot}")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        opp = 1 - mover
        if "tile" in eff:
            t = eff["tile"]
            st.open[opp].remove(t)
            st.log.append({"event": "agent", "tile": t, "hidden": None})
        else:
            k = eff["hidden"]
            t = st.hidden[opp].pop(k)
            del st.know[mover]["slots"][k]
            make_public(st, t)
            st.log.append({"event": "agent", "tile": t, "hidden": k})
        st.removed.append(t)


class Hacker(Handler):
    """N07: a tile of the removed pile joins the mover's open zone."""

    keys = frozenset({"tile"})

    size = len(ORDER)

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        return [ORDER[t] for t in canon(st.removed)]

    def effect_of(self, k: int) -> dict[str, Any]:
        return TILE_EFF[TILE_IDS[k]]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        if eff["tile"] not in st.removed:
            raise bad_effect(f"{eff['tile']} is not in the removed pile")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        st.removed.remove(eff["tile"])
        insert_canon(st.open[mover], eff["tile"])
        st.log.append({"event": "hacker", "tile": eff["tile"]})


class Elections(Handler):
    """N16: draw 1 tile from the pool into the mover's open zone (public)."""

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        return [0] if st.pool else []

    def effect_of(self, k: int) -> dict[str, Any]:
        return EMPTY_EFF

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        if not st.pool:
            raise bad_effect("Elections: the pool of unused neutral tiles is empty")
        return False

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        for t in draw(st, 1):
            insert_canon(st.open[mover], t)
            make_public(st, t)
            st.log.append({"event": "elections", "seat": mover, "tile": t})


class Repeat(Handler):
    """N04/N05: execute a neighbour's immediate effect as if it had just been placed (E8)."""

    keys = frozenset({"target", "effect"})
    orient = True
    reads_source = True

    def __init__(self, tile: str) -> None:
        super().__init__(tile)
        self.set = self.effect["scope"]["set"]

    def ok(self, st: ClashState, i: int, chain: list[int]) -> bool:
        t = st.tile[i]
        return t in IMMEDIATE and st.down[i] < 0 and st.cov[i] is None and i not in chain

    size = 0

    def enum(self, st: ClashState, src: int, mover: int, chain: list[int], no_destroy: bool) -> list[int]:
        out: list[int] = []
        for i in NEIGH[self.set][0][src]:
            if self.ok(st, i, chain):
                h = HANDLERS[st.tile[i]]  # type: ignore[index]
                for k in h.enum(st, i, mover, [*chain, i], no_destroy):
                    key = (i * len(HANDLER_LIST) + h.uid) << 32 | k
                    number = REPEAT_NUMBER.get(key)
                    if number is None:
                        number = REPEAT_NUMBER[key] = len(REPEATED)
                        REPEATED.append({"target": FIELDS[i], "effect": h.effect_of(k)})
                    out.append(number)
        return out

    def effect_of(self, k: int) -> dict[str, Any]:
        return REPEATED[k]

    def check(self, st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
        i = field_index(eff["target"])
        if i not in NEIGH[self.set][0][src]:
            raise bad_effect(f"{field_name(i)} is not a {self.set} neighbour of {describe(st, src)}")
        if not self.ok(st, i, chain):
            raise bad_effect(f"{describe(st, i)} has no immediate effect that can be repeated")
        return check_effect(st, i, mover, eff["effect"], [*chain, i])

    def run(self, st: ClashState, src: int, mover: int, eff: dict[str, Any]) -> None:
        i = field_index(eff["target"])
        st.log.append({"event": "repeat", "field": FIELDS[i], "tile": st.tile[i]})
        HANDLERS[st.tile[i]].run(st, i, mover, eff["effect"])  # type: ignore[index]


#: N04/N05's effects, numbered as they are first met and shared: ``REPEATED[k]``, and the number of a repeat of
#: the neighbour on field i with its handler's effect number e: ``REPEAT_NUMBER[(i * handlers + uid) << 32 | e]``.
REPEATED: Final[list[dict[str, Any]]] = []
REPEAT_NUMBER: Final[dict[int, int]] = {}


def any_in(mask: int, fields: list[int]) -> bool:
    """Whether one of ``fields`` is in the field bit mask ``mask`` (compiled, ``any`` of a generator is a loop)."""
    return any(mask >> i & 1 for i in fields)


HANDLER_KINDS: Final[dict[str, type[Handler]]] = {
    "destroy:one_of": OneOf,
    "flip:one_of": OneOf,
    "discard:one_of": OneOf,
    "flip:all_of": AllOf,
    "flip:pattern": Pattern,
    "flip:ray": Ray,
    "move:board": Bribe,
    "repeat:one_of": Repeat,
    "zone_transfer:board": Crisis,
    "zone_transfer:zone:opponent_zone": Agent,
    "zone_transfer:zone:removed": Hacker,
    "zone_transfer:zone:pool": Elections,
}


def _handler_key(effect: JSONDict) -> str:
    scope = effect["scope"]
    key = f"{effect['kind']}:{scope['type']}"
    return f"{key}:{scope['from']}" if scope["type"] == "zone" else key


HANDLERS: Final[dict[str, Handler]] = {
    t["id"]: HANDLER_KINDS[_handler_key(t["effect"])](t["id"]) for t in DATA["tiles"] if t["id"] in IMMEDIATE
}
# Pairs share one handler object so legal_moves can cache per handler.
for _b, _g in zip(BLUE_TILES, GREEN_TILES, strict=True):
    if _g in HANDLERS:
        HANDLERS[_g] = HANDLERS[_b]
#: Every distinct handler, ``HANDLER_LIST[h.uid] is h``.
HANDLER_LIST: Final[list[Handler]] = []
for _h in HANDLERS.values():
    if _h.uid < 0:
        _h.uid = len(HANDLER_LIST)
        HANDLER_LIST.append(_h)


def check_effect(st: ClashState, src: int, mover: int, eff: dict[str, Any], chain: list[int]) -> bool:
    t = st.tile[src]
    h = HANDLERS[t]  # type: ignore[index]
    keys = frozenset(eff)
    if keys != h.keys and not (isinstance(h, Agent) and keys in h.KEYSETS):
        raise bad_effect(f"{NAMES[t]} ({t}) takes an effect with keys {sorted(h.keys) or '{}'}, not {sorted(keys)}")  # type: ignore[index]
    return h.check(st, src, mover, eff, chain)


