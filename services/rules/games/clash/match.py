"""CLASH flow: setup and drafts, turn resolution, end of a game and of the match, move validation."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Final

from ..base import (
    IllegalMove,
    JSONDict,
    Move,
    below,
    is_int,
)
from .board import (
    BLUE_TILES,
    COLOUR_SEAT,
    COLOURS,
    DIRECTIONS,
    EFFECT_KEYSETS,
    FIELDS,
    GREEN_TILES,
    KABOOM,
    NAMES,
    NEUTRALS,
    NO_EFFECT,
    NOBEL,
    ORDER,
    PATTERNS,
    SECRET_STEPS,
    START,
    ClashState,
    blocked_by,
    canon,
    cell_doc,
    describe,
    draw,
    face_up_count,
    field_index,
    field_name,
    insert_canon,
    make_public,
    secured,
    stabilised,
)
from .effects import (
    HANDLERS,
    Handler,
    check_effect,
)

# -- setup ------------------------------------------------------------------------------------------------


def start_game(st: ClashState, f: int) -> None:
    o = st.options
    st.game_no += 1
    st.first_player = st.current = f
    st.move_no = 0
    st.tile, st.cov, st.sup, st.down = [None] * 9, [None] * 9, [0] * 9, [-1] * 9
    st.removed = []
    st.start_placed = False
    st.open = [list(BLUE_TILES), list(GREEN_TILES)]
    st.hidden = [[], []]
    st.neutral = []
    st.know = [{"slots": [], "in_pool": []}, {"slots": [], "in_pool": []}]
    st.draft = None
    st.phase, st.to_act = "play", [f]
    dealt: list[list[str] | None] = [None, None]
    if o["random_support"]:
        for s in (f, 1 - f):
            got = draw(st, 2)
            dealt[s] = got
            if o["hidden_support"]:
                st.hidden[s].extend(got)
            else:
                st.open[s] = canon(st.open[s] + got)
        if o["hidden_support"]:
            for s in (0, 1):
                st.know[s]["slots"] = [None] * len(st.hidden[1 - s])
    elif o["secret_draft"]:
        st.phase = "secret_draft"
        st.draft = {"step": 0, "seat": f, "offer": [], "returned": [], "passed": []}
    elif not o["beginner"]:
        st.neutral = canon(draw(st, 5))
        if o["draft"]:
            order = [f, 1 - f, f, 1 - f, 1 - f][: len(st.neutral)]
            st.draft = {"order": order, "index": 0}
            st.phase = "draft"
    st.log.append({"event": "setup", "game": st.game_no, "first_player": f, "neutral_zone": list(st.neutral),
                   "dealt": dealt, "private": bool(o["hidden_support"])})
    if st.phase == "draft":  # the setup event first, then the draft's own events
        advance_open_draft(st)
    elif st.phase == "secret_draft":
        advance_secret(st)


def advance_open_draft(st: ClashState) -> None:
    d = st.draft
    assert d is not None
    rest = d["order"][d["index"]:]
    if st.neutral and len(set(rest)) == 1:
        seat = rest[0]
        for t in st.neutral:
            insert_canon(st.open[seat], t)
            st.log.append({"event": "pick", "seat": seat, "tile": t})
        st.neutral = []
    if not st.neutral:
        st.phase, st.to_act, st.draft = "play", [st.first_player], None
    else:
        st.to_act = [rest[0]]


def advance_secret(st: ClashState) -> None:
    """Move to the next secret-draft step needing a decision (empty offers skip, 1-tile offers auto-pick)."""
    d = st.draft
    assert d is not None
    f = st.first_player
    while True:
        if d["offer"] and len(d["offer"]) > 1:
            st.to_act = [d["seat"]]
            return
        if d["offer"]:
            secret_pick(st, d["offer"][0])
            continue
        if d["step"] >= 4:
            st.pool = canon(st.pool + d["returned"])
            st.draft = None
            st.phase, st.to_act = "play", [f]
            return
        d["step"] += 1
        d["seat"] = f if SECRET_STEPS[d["step"]] == 0 else 1 - f
        d["offer"] = canon(draw(st, 4)) if d["step"] in (1, 3) else d["passed"]
        d["passed"] = []
        if d["offer"]:
            st.log.append({"event": "offer", "step": d["step"], "seat": d["seat"], "tiles": list(d["offer"]),
                           "private": d["step"] in (1, 3)})


def secret_pick(st: ClashState, tile: str) -> None:
    d = st.draft
    assert d is not None
    step, seat = d["step"], d["seat"]
    offer = list(d["offer"])
    rest = [t for t in offer if t != tile]
    st.hidden[seat].append(tile)
    if step in (1, 3):
        st.know[1 - seat]["slots"].append(None)
        d["passed"] = rest
    else:
        st.know[1 - seat]["slots"].append(offer)
        st.know[seat]["in_pool"].extend(rest)
        d["returned"].extend(rest)
    d["offer"] = []
    st.log.append({"event": "pick", "seat": seat, "tile": tile, "private": True})


# -- flow ---------------------------------------------------------------------------------------------------


def can_place(st: ClashState, seat: int) -> bool:
    tiles = st.open[seat] + st.hidden[seat] + st.neutral
    if any(t != NOBEL for t in tiles):
        return None in st.tile
    if not tiles:
        return False
    return any(st.tile[i] is not None and st.down[i] < 0 and st.sup[i] == seat and not secured(st, i)
               for i in range(9))


def end_game(st: ClashState, reason: str, stuck: int | None) -> None:
    tiles = [0, 0]
    kaboom = None
    for i in range(9):
        if st.tile[i] is not None and st.down[i] < 0:
            tiles[st.sup[i]] += 1
            if st.tile[i] == KABOOM:
                kaboom = st.sup[i]
    if kaboom is not None:
        winner: int | None = 1 - kaboom
    elif stuck is not None:
        winner = 1 - stuck
    else:
        winner = 0 if tiles[0] > tiles[1] else 1 if tiles[1] > tiles[0] else None
    pts = list(tiles)
    if kaboom is not None:
        pts[kaboom] = 0
    record = {"game": st.game_no, "first_player": st.first_player, "reason": reason, "stuck": stuck,
              "tiles": tiles, "kaboom": kaboom, "winner": winner, "points": pts, "moves": st.move_no,
              "final_board": [[cell_doc(st, r * 3 + c) for c in range(3)] for r in range(3)],
              "final_zones": [{"open": list(st.open[s]), "hidden": list(st.hidden[s])} for s in (0, 1)]}
    st.games.append(record)
    if winner is not None:
        st.wins[winner] += 1
    st.points = [st.points[0] + pts[0], st.points[1] + pts[1]]
    st.log.append({"event": "game_end", "record": record})
    if not st.options["beginner"]:
        st.set_aside = [t for t in NEUTRALS if t not in st.pool]
    o = st.options
    n = len(st.games)
    if o["match"] == "single":
        over = True
    elif o["match"] == "best_of_3":
        over = max(st.wins) >= 2 or n >= 3
    else:
        over = n >= o["games"]
    if over:
        st.phase, st.to_act = "match_over", []
        st.result = result_doc(st)
    else:
        st.phase = "choose_first"
        st.to_act = [1 - winner if winner is not None else 1 - st.first_player]


def result_doc(st: ClashState) -> JSONDict:
    scores = list(st.points) if st.options["match"] == "points" else list(st.wins)
    ranking = sorted(({"seat": s, "score": scores[s], "rank": 1 + sum(1 for x in scores if x > scores[s])}
                      for s in (0, 1)), key=lambda e: (e["rank"], e["seat"]))
    return {"finished": st.phase == "match_over", "match": st.options["match"], "games": list(st.games),
            "wins": list(st.wins), "points": list(st.points), "scores": scores, "ranking": ranking,
            "winners": [e["seat"] for e in ranking if e["rank"] == 1]}


# -- moves --------------------------------------------------------------------------------------------------


def _malformed(message: str) -> IllegalMove:
    return IllegalMove("malformed_move", message)


def _is_field(v: Any) -> bool:
    return (type(v) is list and len(v) == 2 and is_int(v[0]) and is_int(v[1])
            and 0 <= v[0] <= 2 and 0 <= v[1] <= 2)


def _check_effect_shape(eff: Any, depth: int) -> None:
    if type(eff) is not dict:
        raise _malformed("effect must be null or an object")
    if depth > 3:
        raise _malformed("effect nesting is deeper than 3 objects")
    if frozenset(eff) not in EFFECT_KEYSETS:
        raise _malformed(f"effect keys {sorted(eff)} are not a known effect shape")
    for k, v in eff.items():
        if k in ("target", "to"):
            if not _is_field(v):
                raise _malformed(f"effect {k} must be [r, c] with r, c in 0..2")
        elif k == "direction":
            if type(v) is not str or v not in DIRECTIONS:
                raise _malformed("direction must be north, east, south or west")
        elif k == "pattern":
            if type(v) is not str or v not in PATTERNS:
                raise _malformed("pattern must be orthogonal or diagonal")
        elif k == "hidden":
            if not is_int(v) or v < 0:
                raise _malformed("hidden must be a slot number >= 0")
        elif k == "tile":
            if type(v) is not str or v not in ORDER:
                raise _malformed(f"unknown tile id {v!r}")
        elif k == "effect":
            if v is None:
                raise _malformed("a nested effect may not be null")
            _check_effect_shape(v, depth + 1)


PLACE_FIELDS: Final = frozenset({"type", "tile", "from", "field", "supports", "effect"})


def check_shape(move: Any) -> str:
    if type(move) is not dict:
        raise _malformed("a move must be a JSON object with a 'type'")
    kind = move.get("type")
    if kind == "place":
        if frozenset(move) != PLACE_FIELDS:
            raise _malformed("place needs exactly: tile, from, field, supports, effect")
        if type(move["tile"]) is not str or move["tile"] not in ORDER:
            raise _malformed(f"unknown tile id {move['tile']!r}")
        if type(move["from"]) is not str or move["from"] not in ("own", "neutral", "start"):
            raise _malformed("from must be own, neutral or start")
        if not _is_field(move["field"]):
            raise _malformed("field must be [r, c] with r, c in 0..2")
        if type(move["supports"]) is not str or move["supports"] not in COLOUR_SEAT:
            raise _malformed("supports must be blue or green")
        if move["effect"] is not None:
            _check_effect_shape(move["effect"], 1)
    elif kind == "pick":
        if frozenset(move) != {"type", "tile"}:
            raise _malformed("pick needs exactly: tile")
        if type(move["tile"]) is not str or move["tile"] not in ORDER:
            raise _malformed(f"unknown tile id {move['tile']!r}")
    elif kind == "choose_first":
        if frozenset(move) != {"type", "seat"}:
            raise _malformed("choose_first needs exactly: seat")
        if not is_int(move["seat"]) or move["seat"] not in (0, 1):
            raise _malformed("seat must be 0 or 1")
    else:
        raise _malformed(f"unknown move type {kind!r}; expected place, pick or choose_first")
    return kind  # type: ignore[no-any-return]


PHASE_MOVES: Final = {"draft": "pick", "secret_draft": "pick", "play": "place", "choose_first": "choose_first"}


def _place(st: ClashState, m: int, move: Move) -> None:
    """Validate the whole placement (on a tentatively placed tile), then resolve Flow steps 1-6."""
    t, frm, eff = move["tile"], move["from"], move["effect"]
    i = field_index(move["field"])
    s = COLOUR_SEAT[move["supports"]]
    if not st.start_placed and (t != START or frm != "start"):
        raise IllegalMove("start_tile_required", "the first move of a game places Mustafa (M0) from the start spot")
    if frm == "start":
        ok = t == START and not st.start_placed
    elif frm == "own":
        ok = t in st.open[m] or t in st.hidden[m]
    else:
        ok = t in st.neutral
    if not ok:
        raise IllegalMove("tile_not_available", f"{t} is not available from {frm}")
    if t == NOBEL:
        if st.tile[i] is None or st.down[i] >= 0:
            raise IllegalMove("bad_cover", "Nobel prize must cover a face-up tile that supports you; "
                              + (f"the field {field_name(i)} is empty" if st.tile[i] is None
                                 else f"{describe(st, i)} is face down"))
        if st.sup[i] != m:
            raise IllegalMove("bad_cover", "Nobel prize must cover a face-up tile that supports you; "
                              f"{describe(st, i)} supports {COLOURS[st.sup[i]]}")
        if secured(st, i):
            raise IllegalMove("bad_cover", f"Nobel prize must cover a tile without Security; {describe(st, i)} "
                              "has Security")
        if s != m:
            raise IllegalMove("bad_support", f"Nobel prize must support {COLOURS[m]}")
    elif st.tile[i] is not None:
        raise IllegalMove("field_occupied", f"the field {field_name(i)} is occupied by {st.tile[i]}")
    if eff is not None:
        if t in NO_EFFECT:
            raise IllegalMove("no_effect_to_use", f"{NAMES[t]} ({t}) has no immediate effect: use effect null")
        b = blocked_by(st, i)
        if b >= 0 and not stabilised(st, i):
            raise IllegalMove("effect_blocked", f"the field {field_name(i)} is blocked by {describe(st, b)}: "
                              "place with effect null")
        old_sup = st.sup[i]
        st.tile[i], st.sup[i], st.down[i], st.cov[i] = t, s, -1, None
        try:  # validated on the tentatively placed tile (the effect sees the state after step 1)
            destroys = check_effect(st, i, m, eff, [i])
        finally:
            st.tile[i], st.sup[i] = None, old_sup
        if destroys and face_up_count(st) == 8:
            raise IllegalMove("last_field_no_destroy", f"{t} fills the last field: nothing may be destroyed")
    # -- mutate
    if frm == "start":
        st.start_placed = True
    elif frm == "own":
        if t in st.open[m]:
            st.open[m].remove(t)
        else:
            k = st.hidden[m].index(t)
            del st.hidden[m][k]
            del st.know[1 - m]["slots"][k]
            make_public(st, t)
    else:
        st.neutral.remove(t)
    covered = None
    if t == NOBEL:
        covered = st.cov[i] = st.tile[i]
        st.tile[i] = NOBEL
    else:
        st.tile[i], st.sup[i], st.down[i], st.cov[i] = t, s, -1, None
    st.log.append({"event": "place", "game": st.game_no, "move": st.move_no + 1, "seat": m, "tile": t,
                   "from": frm, "field": FIELDS[i], "supports": COLOURS[s], "covered": covered})
    if eff is not None:
        HANDLERS[t].run(st, i, m, eff)
    if frm == "neutral" and st.options["long_game"]:
        for x in draw(st, 1):
            insert_canon(st.neutral, x)
            make_public(st, x)
            st.log.append({"event": "refill", "tile": x})
    st.move_no += 1
    gone = []
    for j in range(9):
        if st.tile[j] is not None and st.down[j] == 1 - m:
            if st.cov[j] is not None:
                gone.append(st.cov[j])
            gone.append(st.tile[j])
            st.tile[j] = st.cov[j] = None
            st.down[j] = -1
    if gone:
        st.removed.extend(gone)  # type: ignore[arg-type]
        st.log.append({"event": "removed", "tiles": gone})
    if face_up_count(st) == 9:
        end_game(st, "board_full", None)
    elif st.move_no >= st.options["max_moves"]:
        end_game(st, "move_limit", None)
    elif not can_place(st, 1 - m):
        end_game(st, "no_placement", 1 - m)
    else:
        st.current = 1 - m
        st.to_act = [1 - m]


def _pick(st: ClashState, m: int, move: Move) -> None:
    t = move["tile"]
    if st.phase == "draft":
        if t not in st.neutral:
            raise IllegalMove("tile_not_offered", f"{t} is not in the neutral zone")
        st.neutral.remove(t)
        insert_canon(st.open[m], t)
        st.log.append({"event": "pick", "seat": m, "tile": t})
        st.draft["index"] += 1  # type: ignore[index]
        advance_open_draft(st)
    else:
        if t not in st.draft["offer"]:  # type: ignore[index]
            raise IllegalMove("tile_not_offered", f"{t} is not in your offer")
        secret_pick(st, t)
        advance_secret(st)


def _choose_first(st: ClashState, m: int, move: Move) -> None:
    st.log.append({"event": "choose_first", "chooser": m, "seat": move["seat"]})
    start_game(st, move["seat"])


MOVES: Final[dict[str, Callable[[ClashState, int, Move], None]]] = {
    "place": _place, "pick": _pick, "choose_first": _choose_first}


class _Scope:
    """What the placements of one position share: the empty fields, and per field whether it is blocked
    and which fields an effect placed there may reach. Per-field facts are computed on first use, so a
    sampler that looks at one field pays for one."""

    __slots__ = ("_blocked", "_occupied", "_reach", "eight", "empty", "st")

    def __init__(self, st: ClashState) -> None:
        self.st = st
        self.empty = [i for i in range(9) if st.tile[i] is None]
        self.eight = face_up_count(st) == 8
        self._occupied = -1  # bit mask of the fields holding an affectable tile; -1: not computed yet
        self._blocked = [-1] * 9  # per field: 1 blocked, 0 not, -1 not computed yet
        self._reach = [-1] * 9  # per field: bit mask, -1 not computed yet

    def blocked(self, i: int) -> bool:
        known = self._blocked[i]
        if known < 0:
            known = self._blocked[i] = 1 if blocked_by(self.st, i) >= 0 and not stabilised(self.st, i) else 0
        return known == 1

    def reach(self, i: int) -> int:
        """The fields an effect of a tile placed on ``i`` may affect, as a bit mask (``i`` itself included
        unless a UN beside it stabilises it)."""
        mask = self._reach[i]
        if mask < 0:
            occupied = self._occupied
            if occupied < 0:
                st = self.st
                occupied = 0
                for j in range(9):
                    if st.tile[j] is not None and st.down[j] < 0 and not secured(st, j):
                        occupied |= 1 << j
                self._occupied = occupied
            mask = self._reach[i] = occupied if stabilised(self.st, i) else occupied | 1 << i
        return mask


def _available(st: ClashState, m: int) -> list[tuple[str, str]]:
    """(tile, from) pairs the seat may place, in catalogue order."""
    avail = [(t, "own") for t in st.open[m]] + [(t, "own") for t in st.hidden[m]] + [(t, "neutral") for t in st.neutral]
    avail.sort(key=lambda x: ORDER[x[0]])
    return avail


def _nobel_fields(st: ClashState, m: int) -> list[int]:
    """Nobel prize covers a face-up, unsecured tile that supports the placer."""
    return [i for i in range(9) if st.tile[i] is not None and st.down[i] < 0 and st.sup[i] == m and not secured(st, i)]


def _effects(st: ClashState, scope: _Scope, h: Handler, t: str, i: int, m: int) -> tuple[list[int], list[int]]:
    """Every effect choice of tile ``t`` (its handler ``h``) placed on empty field ``i``, supporting blue and
    supporting green, as effect numbers (-1: effect null)."""
    if scope.blocked(i):
        return [-1], [-1]
    tile, sup, down, cov = st.tile, st.sup, st.down, st.cov
    st.aff = scope.reach(i)
    if h.orient or h.reads_source:
        old_sup = sup[i]
        tile[i], sup[i], down[i], cov[i] = t, 0, -1, None
        effs = [-1, *h.enum(st, i, m, [i], scope.eight)]
        if h.orient:
            sup[i] = 1
            effs1 = [-1, *h.enum(st, i, m, [i], scope.eight)]
        else:
            effs1 = effs
        tile[i], sup[i] = None, old_sup
    else:  # symmetric scope around an empty centre: the tile need not be placed to enumerate
        effs = effs1 = [-1, *h.enum(st, i, m, [i], scope.eight)]
    return effs, effs1


#: Every place move, built on first use and shared read-only (``legal_moves`` returns fresh lists of them, as
#: the other games do; ``apply`` never changes a move): a position offers hundreds of placements, and building
#: each as a new object was most of ``legal_moves``. ``PLACE_ROWS[tile][source * 18 + field * 2 + side][e + 1]``
#: is the move with the tile's effect number e (-1: effect null; see effects.Handler), or None until first made.
PLACE_ROWS: Final[dict[str, list[list[Move | None]]]] = {
    t: [[None] * (1 + (HANDLERS[t].size if t in HANDLERS else 0)) for _ in range(3 * 9 * 2)] for t in ORDER}


def place_move(t: str, frm: str, i: int, side: int, e: int) -> Move:
    """The shared place move of tile ``t`` from ``frm`` on field ``i`` supporting ``side`` with effect number
    ``e`` of the tile's handler (-1: effect null)."""
    return _shared(PLACE_ROWS[t][(0 if frm == "own" else 1 if frm == "neutral" else 2) * 18 + i * 2 + side],
                   t, frm, i, side, e)


def _shared(row: list[Move | None], t: str, frm: str, i: int, side: int, e: int) -> Move:
    """:func:`place_move` from its row of ``PLACE_ROWS``."""
    k = e + 1
    if k < len(row):
        move = row[k]
        if move is not None:
            return move
    else:  # Repeat's effect numbers grow as new repeats are met
        row.extend([None] * (k + 1 - len(row)))
    move = {"type": "place", "tile": t, "from": frm, "field": FIELDS[i], "supports": COLOURS[side],
            "effect": None if e < 0 else HANDLERS[t].effect_of(e)}
    row[k] = move
    return move


def _start_places() -> list[Move]:
    return [place_move(START, "start", i, side, -1) for i in range(9) for side in (0, 1)]


def legal_places(st: ClashState, m: int) -> list[Move]:
    if not st.start_placed:
        return _start_places()
    scope = _Scope(st)
    out: list[Move] = []
    for t, frm in _available(st, m):
        rows = PLACE_ROWS[t]
        base = 0 if frm == "own" else 1 if frm == "neutral" else 2
        base *= 18
        if t == NOBEL:
            for i in _nobel_fields(st, m):
                out.append(_shared(rows[base + i * 2 + m], t, frm, i, m, -1))
            continue
        h = HANDLERS.get(t)
        if h is None:
            for i in scope.empty:
                out.append(_shared(rows[base + i * 2], t, frm, i, 0, -1))
                out.append(_shared(rows[base + i * 2 + 1], t, frm, i, 1, -1))
            continue
        for i in scope.empty:
            effs, effs1 = _effects(st, scope, h, t, i, m)
            blue, green = rows[base + i * 2], rows[base + i * 2 + 1]
            for e in effs:
                out.append(_shared(blue, t, frm, i, 0, e))
            for e in effs1:
                out.append(_shared(green, t, frm, i, 1, e))
    return out


def sample_place(st: ClashState, m: int, rng: random.Random) -> Move:
    """A random legal placement for playouts, without enumerating them all: a random tile, then a random
    field for it, then a random side, then a random effect choice. Not uniform over ``legal_places`` (a
    tile with many effect choices is not favoured), which suits a light playout policy."""
    if not st.start_placed:
        starts = _start_places()
        return starts[below(rng, len(starts))]
    scope = _Scope(st)
    tiles = _available(st, m)
    while tiles:
        t, frm = tiles.pop(below(rng, len(tiles)))
        if t == NOBEL:
            targets = _nobel_fields(st, m)
            if not targets:
                continue  # nowhere to put it: another tile
            i = targets[below(rng, len(targets))]
            return place_move(t, frm, i, m, -1)
        if not scope.empty:
            continue
        i = scope.empty[below(rng, len(scope.empty))]
        side = below(rng, 2)
        effect = -1
        h = HANDLERS.get(t)
        if h is not None:
            choices = _effects(st, scope, h, t, i, m)[side]
            effect = choices[below(rng, len(choices))]
        return place_move(t, frm, i, side, effect)
    raise AssertionError("a seat to act always has a placement")  # legal_places would be empty too


