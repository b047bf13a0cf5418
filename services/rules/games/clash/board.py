"""CLASH board: tile data, geometry tables, the state class and board predicates (spec Components, Terms)."""

from __future__ import annotations

import json
import random
from importlib import resources
from typing import Any, Final

from ..base import (
    IllegalMove,
    JSONDict,
)

GAME_ID: Final = "clash"
DATA: Final[JSONDict] = json.loads(  # not __file__: a compiled module's __file__ is not its source's
    resources.files(__package__.rsplit(".", 1)[0]).joinpath("data/clash.json").read_text(encoding="utf-8"))

TILES: Final[dict[str, JSONDict]] = {t["id"]: t for t in DATA["tiles"]}
ORDER: Final[dict[str, int]] = {t["id"]: i for i, t in enumerate(DATA["tiles"])}
TILE_IDS: Final[list[str]] = [t["id"] for t in DATA["tiles"]]  # by catalogue number, ORDER's inverse
NEUTRALS: Final[list[str]] = [t["id"] for t in DATA["tiles"] if t["side"] == "neutral"]
BLUE_TILES: Final[list[str]] = [t["id"] for t in DATA["tiles"] if t["side"] == "blue"]
GREEN_TILES: Final[list[str]] = [t["id"] for t in DATA["tiles"] if t["side"] == "green"]
COLOURS: Final = ("blue", "green")
COLOUR_SEAT: Final = {"blue": 0, "green": 1}
NAMES: Final[dict[str, str]] = {t["id"]: t["name_en"] for t in DATA["tiles"]}
SECURITY_TILES: Final = frozenset(t["id"] for t in DATA["tiles"] if t["effect"]["kind"] == "security")
IMMEDIATE: Final = frozenset(t["id"] for t in DATA["tiles"] if t["effect"]["timing"] == "immediate")
NO_EFFECT: Final = frozenset(t["id"] for t in DATA["tiles"] if t["effect"]["params"] is None)
UN, NOBEL, KABOOM, START = "N12", "N13", "N17", "M0"
BLOCKERS: Final[dict[str, str]] = {
    t["id"]: t["effect"]["scope"]["set"] for t in DATA["tiles"] if t["effect"]["kind"] == "block"}

FIELDS: Final[list[list[int]]] = [[r, c] for r in range(3) for c in range(3)]
DIRECTIONS: Final[list[str]] = list(DATA["board"]["directions"])  # north, east, south, west
PATTERNS: Final = ("orthogonal", "diagonal")
SECRET_STEPS: Final = {1: 0, 2: 1, 3: 1, 4: 0}  # step -> 0 for the first player f, 1 for 1-f


def _offsets(name: str, sup: int, i: int) -> list[int]:
    """Fields (row-major indices) reached from field ``i`` by the tile-frame offset set ``name``."""
    frame = DATA["board"]["tile_frame"][COLOURS[sup]]
    r, c = divmod(i, 3)
    out = []
    for f, s in DATA["offset_sets"][name]:
        rr = r + f * frame["forward"][0] + s * frame["right"][0]
        cc = c + f * frame["forward"][1] + s * frame["right"][1]
        if 0 <= rr < 3 and 0 <= cc < 3:
            out.append(rr * 3 + cc)
    return sorted(out)


#: NEIGH[set][sup][field] -> target fields, row-major.
NEIGH: Final[dict[str, list[list[list[int]]]]] = {
    name: [[_offsets(name, sup, i) for i in range(9)] for sup in (0, 1)] for name in DATA["offset_sets"]
}


def _ray(i: int, d: str) -> list[int]:
    dr, dc = DATA["board"]["directions"][d]
    r, c = divmod(i, 3)
    out = []
    r, c = r + dr, c + dc
    while 0 <= r < 3 and 0 <= c < 3:
        out.append(r * 3 + c)
        r, c = r + dr, c + dc
    return out


RAYS: Final[list[list[list[int]]]] = [[_ray(i, d) for d in DIRECTIONS] for i in range(9)]
SIDES: Final = NEIGH["sides"][0]
#: The effect objects legal_moves offers, built once and shared read-only, as the place moves holding them are
#: (match.py, ``place_move``): the same effect is the same object, so a move can be found by its effect's id.
TARGET_EFF: Final[list[dict[str, Any]]] = [{"target": f} for f in FIELDS]
EMPTY_EFF: Final[dict[str, Any]] = {}
#: N11 Bribe: ``MOVE_EFF[i * 9 + j]`` moves the tile of field i to field j.
MOVE_EFF: Final[list[dict[str, Any]]] = [{"target": FIELDS[i], "to": FIELDS[j]} for i in range(9) for j in range(9)]
#: N06 Agent and N07 Hacker name a tile; Agent names a hidden tile by its slot.
TILE_EFF: Final[dict[str, dict[str, Any]]] = {t: {"tile": t} for t in ORDER}
HIDDEN_EFF: Final[list[dict[str, Any]]] = [{"hidden": k} for k in range(len(ORDER))]
EFFECT_KEYSETS: Final = [frozenset(k) for k in ((), ("target",), ("direction",), ("pattern",), ("target", "to"),
                                         ("tile",), ("hidden",), ("target", "effect"))]


class ClashState:
    """One match. Board fields are row-major; ``down[i]`` is -1 for a face-up cell, else destroyed_by."""

    __slots__ = (
        "aff",
        "cov",
        "current",
        "down",
        "draft",
        "first_player",
        "game_no",
        "games",
        "hidden",
        "know",
        "log",
        "move_no",
        "neutral",
        "open",
        "options",
        "phase",
        "points",
        "pool",
        "removed",
        "result",
        "rng",
        "set_aside",
        "start_placed",
        "sup",
        "tile",
        "to_act",
        "wins",
    )

    options: dict[str, Any]
    rng: random.Random
    phase: str
    to_act: list[int]
    game_no: int
    first_player: int
    current: int
    move_no: int
    tile: list[str | None]
    cov: list[str | None]
    sup: list[int]
    down: list[int]
    start_placed: bool
    open: list[list[str]]
    hidden: list[list[str]]
    neutral: list[str]
    removed: list[str]
    pool: list[str]
    set_aside: list[str]
    draft: dict[str, Any] | None
    know: list[dict[str, Any]]
    games: list[JSONDict]
    wins: list[int]
    points: list[int]
    log: list[JSONDict]
    result: JSONDict | None
    #: Scratch for legal_moves only: fields holding an affectable tile (placed tile included), bit i for field i.
    aff: int


def canon(ids: list[str]) -> list[str]:
    return sorted(ids, key=ORDER.__getitem__)


def insert_canon(zone: list[str], tile: str) -> None:
    """Insert keeping canonical id order."""
    k = ORDER[tile]
    for j, t in enumerate(zone):
        if ORDER[t] > k:
            zone.insert(j, tile)
            return
    zone.append(tile)


def field_name(i: int) -> str:
    return f"[{i // 3},{i % 3}]"


def describe(st: ClashState, i: int) -> str:
    t = st.tile[i]
    return f"{NAMES[t]} ({t}) on {field_name(i)}" if t else f"the empty field {field_name(i)}"


# -- board predicates -----------------------------------------------------------------------------------


def secured(st: ClashState, i: int) -> bool:
    """Security (Terms): B7/G7, a Nobel stack, or a side field of a face-up UN."""
    t = st.tile[i]
    if t is None or st.down[i] >= 0:
        return False
    if t in SECURITY_TILES or st.cov[i] is not None:
        return True
    tile, down = st.tile, st.down
    return any(tile[j] == UN and down[j] < 0 for j in SIDES[i])


def affectable(st: ClashState, i: int, src: int) -> bool:
    return i != src and st.tile[i] is not None and st.down[i] < 0 and not secured(st, i)


def unaffectable_reason(st: ClashState, i: int, src: int) -> str:
    """Why field ``i`` is not affectable by an effect from ``src`` (for messages; E2's list, in order)."""
    if st.tile[i] is None:
        return "it is empty"
    if i == src:
        return "it is the source itself"
    if st.down[i] >= 0:
        return "it is face down"
    return "it has Security"


def fast_aff(st: ClashState, src: int) -> int:
    """Affectable fields as a bit mask (``src`` included!) precomputed by legal_moves: placing changes no Security.

    Neighbour sets and rays never contain their own centre; board-wide users drop ``src`` themselves.
    """
    return st.aff


def blocked_by(st: ClashState, i: int) -> int:
    """A face-up Picket/Riots field blocking ``i``, or -1."""
    tile, down = st.tile, st.down
    for t, name in BLOCKERS.items():
        for j in NEIGH[name][0][i]:
            if tile[j] == t and down[j] < 0:
                return j
    return -1


def stabilised(st: ClashState, i: int) -> bool:
    return any(st.tile[j] == UN and st.down[j] < 0 for j in SIDES[i])


def face_up_count(st: ClashState) -> int:
    return sum(1 for i in range(9) if st.tile[i] is not None and st.down[i] < 0)


Effects = list[dict[str, Any]]


def bad_effect(message: str) -> IllegalMove:
    return IllegalMove("bad_effect", message)


def field_index(value: Any) -> int:
    return int(value[0]) * 3 + int(value[1])

def draw(st: ClashState, k: int) -> list[str]:
    n = min(k, len(st.pool))
    if n == 0:
        return []
    got = st.rng.sample(st.pool, n)
    for t in got:
        st.pool.remove(t)
    return got


def make_public(st: ClashState, t: str) -> None:
    """Knowledge maintenance: a public tile leaves every candidate list and in_pool list."""
    for kn in st.know:
        for slot in kn["slots"]:
            if slot is not None and t in slot:
                slot.remove(t)
        if t in kn["in_pool"]:
            kn["in_pool"].remove(t)




def cell_doc(st: ClashState, i: int) -> JSONDict | None:
    t = st.tile[i]
    if t is None:
        return None
    return {"tile": t, "covered": st.cov[i], "supports": COLOURS[st.sup[i]],
            "face": "up" if st.down[i] < 0 else "down", "destroyed_by": st.down[i] if st.down[i] >= 0 else None}


