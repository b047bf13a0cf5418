"""CLASH: Jihad vs. McWorld (spec ``shared/rules/clash.md``).

A two-player tile-placement game on a 3x3 board. One move is a whole placement: tile, field,
orientation and every effect choice, validated as a unit. The board is kept as four parallel lists of
nine fields (row-major) so that ``clone`` is a handful of list copies and ``legal_moves`` can place a
tile tentatively, enumerate its effects and take it back.

Effects are dispatched from ``HANDLERS``, keyed by the data file's effect kind and scope
(``destroy:one_of``, ``flip:ray``, ``zone_transfer:zone:removed`` ...). Each handler enumerates its
legal effect objects, checks a submitted one and executes it.

Layout: ``board`` (data, geometry, state, Security/blockade predicates), ``effects`` (E2-E11 handlers),
``match`` (Setup, Flow, Moves, End and scoring), this module (the engine: views, hidden information,
determinize, transport); tests build positions with ``tests/games/fixtures/clash.py``.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping
from typing import Any, Final

import orjson

from ..base import (
    Game,
    IllegalMove,
    InvalidOptions,
    InvalidState,
    JSONDict,
    Move,
    OptionSpec,
    Outcome,
    below,
    dump_document,
    is_int,
    load_document,
    require,
    resolve_options,
    rng_copy,
    rng_dump,
    rng_load,
    shuffle,
)
from .board import (
    BLUE_TILES,
    COLOUR_SEAT,
    DATA,
    FIELDS,
    GAME_ID,
    GREEN_TILES,
    NEUTRALS,
    NOBEL,
    ORDER,
    START,
    ClashState,
    blocked_by,
    canon,
    cell_doc,
    secured,
    stabilised,
)
from .match import (
    MOVES,
    PHASE_MOVES,
    check_shape,
    legal_places,
    result_doc,
    sample_place,
    start_game,
)

# -- the engine ---------------------------------------------------------------------------------------------

OPTION_SPECS: Final = (
    OptionSpec("match", "choice", "best_of_3", "best of 3 games, a single game, or a points series",
               choices=("best_of_3", "single", "points")),
    OptionSpec("games", "int", 3, "number of games with match 'points'", minimum=1, maximum=5),
    OptionSpec("first_player", "choice", "random", "who starts game 1", choices=("random", 0, 1)),
    OptionSpec("beginner", "bool", False, "only Mustafa and the coloured tiles"),
    OptionSpec("random_support", "bool", False, "each seat draws 2 neutral tiles into its own zone"),
    OptionSpec("hidden_support", "bool", False, "with random_support: those tiles are hidden"),
    OptionSpec("draft", "bool", False, "the 5 neutral tiles are drafted openly 1-1-1-2"),
    OptionSpec("secret_draft", "bool", False, "secret pick-and-pass draft of neutral tiles"),
    OptionSpec("long_game", "bool", False, "refill the neutral zone after each tile taken from it"),
    OptionSpec("max_moves", "int", 100, "a game ends after this many placements", minimum=20, maximum=400),
)


class Clash(Game[ClashState]):
    id = GAME_ID
    title = DATA["title"]
    min_players = 2
    max_players = 2
    options = OPTION_SPECS

    # -- setup
    def new_game(self, players: int, seed: int, options: Mapping[str, Any] | None = None) -> ClashState:
        if not is_int(players) or players != 2:
            raise InvalidOptions("CLASH is played by exactly 2 players")
        o = check_options(resolve_options(self, options))
        st = ClashState()
        st.options = o
        st.rng = random.Random(seed)
        f = below(st.rng, 2) if o["first_player"] == "random" else o["first_player"]
        st.pool = [] if o["beginner"] else list(NEUTRALS)
        st.set_aside, st.games, st.wins, st.points, st.log = [], [], [0, 0], [0, 0], []
        st.game_no = 0
        st.result = None
        start_game(st, f)
        return st

    # -- flow
    def to_act(self, state: ClashState) -> list[int]:
        return list(state.to_act)

    def is_over(self, state: ClashState) -> bool:
        return state.phase == "match_over"

    def seat_count(self, state: ClashState) -> int:
        return 2

    def legal_moves(self, state: ClashState, seat: int) -> list[Move]:
        if seat not in state.to_act:
            return []
        ph = state.phase
        if ph == "play":
            return legal_places(state, seat)
        if ph == "draft":
            return [{"type": "pick", "tile": t} for t in state.neutral]
        if ph == "secret_draft":
            return [{"type": "pick", "tile": t} for t in state.draft["offer"]]  # type: ignore[index]
        if ph == "choose_first":
            return [{"type": "choose_first", "seat": seat}, {"type": "choose_first", "seat": 1 - seat}]
        return []

    def sample_move(self, state: ClashState, seat: int, rng: random.Random) -> Move:
        if state.phase == "play" and seat in state.to_act:
            return sample_place(state, seat, rng)
        legal = self.legal_moves(state, seat)  # Game.sample_move, spelt out: mypyc cannot call super() here
        return legal[below(rng, len(legal))]

    def apply_in_place(self, state: ClashState, seat: int, move: Move) -> None:
        kind = check_shape(move)
        if state.phase == "match_over":
            raise IllegalMove("game_over", "the match is over")
        if seat not in state.to_act:
            raise IllegalMove("not_your_turn", f"seat {seat} is not to act (to act: {state.to_act})")
        if PHASE_MOVES.get(state.phase) != kind:
            raise IllegalMove("wrong_phase", f"{kind} is not accepted in phase {state.phase}")
        MOVES[kind](state, seat, move)

    def clone(self, state: ClashState) -> ClashState:
        s = ClashState()
        s.options = state.options
        s.rng = rng_copy(state.rng)
        s.phase, s.game_no, s.first_player, s.current = state.phase, state.game_no, state.first_player, state.current
        s.move_no, s.start_placed, s.result = state.move_no, state.start_placed, state.result
        s.to_act = list(state.to_act)
        s.tile, s.cov, s.sup, s.down = list(state.tile), list(state.cov), list(state.sup), list(state.down)
        s.open = [list(state.open[0]), list(state.open[1])]
        s.hidden = [list(state.hidden[0]), list(state.hidden[1])]
        s.neutral, s.removed, s.pool = list(state.neutral), list(state.removed), list(state.pool)
        s.set_aside = list(state.set_aside)
        d = state.draft
        s.draft = None if d is None else {k: list(v) if isinstance(v, list) else v for k, v in d.items()}
        s.know = [{"slots": [None if x is None else list(x) for x in k["slots"]], "in_pool": list(k["in_pool"])}
                  for k in state.know]
        s.games, s.wins, s.points, s.log = list(state.games), list(state.wins), list(state.points), list(state.log)
        return s

    # -- information
    def view(self, state: ClashState, seat: int | None) -> JSONDict:
        st = state
        zones = []
        for s in (0, 1):
            z: JSONDict = {"open": list(st.open[s]), "hidden_count": len(st.hidden[s])}
            if seat == s:
                z["hidden"] = list(st.hidden[s])
            elif seat is not None:
                z["hidden_slots"] = [{"candidates": None if c is None else canon(c)} for c in st.know[seat]["slots"]]
            zones.append(z)
        board = []
        for r in range(3):
            row = []
            for c in range(3):
                cell = cell_doc(st, r * 3 + c)
                if cell is not None:
                    cell["security"] = secured(st, r * 3 + c)
                row.append(cell)
            board.append(row)
        empty_or_any = range(9)
        doc: JSONDict = {
            "game": GAME_ID, "viewer": seat, "options": dict(st.options), "phase": st.phase,
            "to_act": list(st.to_act), "game_no": st.game_no, "first_player": st.first_player,
            "current": st.current, "move_no": st.move_no, "board": board,
            "blocked": [FIELDS[i] for i in empty_or_any if blocked_by(st, i) >= 0],
            "stabilised": [FIELDS[i] for i in empty_or_any if stabilised(st, i)],
            "start_tile_placed": st.start_placed, "zones": zones, "neutral_zone": list(st.neutral),
            "removed": list(st.removed), "pool_count": len(st.pool), "set_aside": list(st.set_aside),
            "draft": self._draft_view(st, seat), "wins": list(st.wins), "points": list(st.points),
            "games": list(st.games), "result": st.result, "log": [_log_view(e, seat) for e in st.log],
        }
        if seat is not None:
            doc["known_in_pool"] = canon(st.know[seat]["in_pool"])
        return doc

    @staticmethod
    def _draft_view(st: ClashState, seat: int | None) -> JSONDict | None:
        d = st.draft
        if d is None:
            return None
        if st.phase == "draft":
            return {"kind": "open", "order": list(d["order"]), "index": d["index"]}
        public = seat is not None and (d["step"] in (2, 4) or seat == d["seat"])
        returner = 1 - st.first_player
        return {"kind": "secret", "step": d["step"], "seat": d["seat"],
                "offer": list(d["offer"]) if public else None, "offer_size": len(d["offer"]),
                "returned": list(d["returned"]) if seat == returner else None,
                "returned_count": len(d["returned"])}

    def secrets(self, state: ClashState, seat: int | None) -> set[str]:
        st = state
        hidden: set[str] = set(st.pool)
        ended = st.phase in ("choose_first", "match_over")  # hidden tiles revealed in final_zones
        for s in (0, 1):
            if s != seat and not ended:
                hidden.update(st.hidden[s])
        d = st.draft
        if d is not None and st.phase == "secret_draft":
            if d["step"] in (1, 3) and seat != d["seat"]:
                hidden.update(d["offer"])
            if seat != 1 - st.first_player:
                hidden.update(d["returned"])
        if seat is not None:
            kn = st.know[seat]
            hidden -= set(kn["in_pool"])
            for c in kn["slots"]:
                if c is not None:
                    hidden -= set(c)
            # Tiles once offered to the seat stay in its log although they may be back in the pool.
            for e in st.log:
                if e["event"] == "offer" and (e["seat"] == seat or not e["private"]):
                    hidden -= set(e["tiles"])
        return hidden

    def determinize(self, state: ClashState, seat: int, rng: random.Random) -> ClashState:
        """A world ``seat`` cannot tell from ``state``: the opponent's hidden tiles, a private offer, the
        opponent's returned tiles and the pool re-dealt from the tiles ``seat`` has not seen, within what
        ``seat`` knows (candidate lists, tiles known to be in the pool).

        Everything derived from the re-dealt tiles follows them, so the world is consistent and carries
        none of the true hidden tiles: the opponent's private log entries of this game name the sampled
        tiles, and its ``in_pool`` knowledge (the tiles it returned from an offer ``seat`` passed) is the
        offer minus the sampled pick.
        """
        st = self.clone(state)
        v, opp = seat, 1 - seat
        st.rng = random.Random(rng.getrandbits(64))
        if st.phase in ("choose_first", "match_over"):  # every hidden tile is public in final_zones
            return st
        d = st.draft if st.phase == "secret_draft" else None
        priv_offer = d is not None and d["step"] in (1, 3) and d["seat"] != v
        opp_returned = d is not None and v != 1 - st.first_player
        xs = set(st.pool) | set(st.hidden[opp])
        if priv_offer:
            xs |= set(d["offer"])  # type: ignore[index]
        if opp_returned:
            xs |= set(d["returned"])  # type: ignore[index]
        kn = st.know[v]
        slots: list[str | None] = [None] * len(st.hidden[opp])
        assigned: set[str] = set()
        forced: list[str] = []
        for k, cand in enumerate(kn["slots"]):
            if cand is not None and k < len(slots):
                choices = [t for t in canon(cand) if t in xs and t not in assigned]
                pick = rng.choice(choices) if choices else None
                if pick is not None:
                    slots[k] = pick
                    assigned.add(pick)
                    forced.extend(t for t in choices if t != pick)
        # Tiles offered to ``seat`` (or openly) in this game and not placed by a candidate list above are in
        # the pool (or returned): none of them can be in a slot it knows nothing about, nor in a later offer.
        start = max((i for i, e in enumerate(st.log) if e["event"] == "setup"), default=0)
        seen = {t for e in st.log[start:] if e["event"] == "offer" and (e["seat"] == v or not e["private"])
                for t in e["tiles"]}
        known = canon([t for t in xs if (t in seen or t in kn["in_pool"]) and t not in assigned and t not in forced])
        rest = canon([t for t in xs if t not in assigned and t not in forced and t not in known])
        shuffle(rng, rest)
        for k in range(len(slots)):
            if slots[k] is None:
                slots[k] = rest.pop()
        # sigma: true hidden tile -> the sampled tile in its place (log entries follow their tiles).
        st.hidden[opp] = [t for t in slots if t is not None]
        sigma = dict(zip(state.hidden[opp], st.hidden[opp], strict=True))
        if priv_offer:
            true_offer = d["offer"]  # type: ignore[index]
            st.draft["offer"] = canon([rest.pop() for _ in true_offer])  # type: ignore[index]
            sigma.update(zip(true_offer, st.draft["offer"], strict=True))  # type: ignore[index]
        if opp_returned:
            n = len(d["returned"])  # type: ignore[index]
            ret = forced[:n]
            while len(ret) < n:
                ret.append(rest.pop())
            forced = forced[n:]
            st.draft["returned"] = ret  # type: ignore[index]
        st.pool = canon(rest + forced + known)
        # The opponent's in_pool lists the tiles it returned from an offer ``seat`` passed: the offer's
        # candidates minus the opponent's pick, which was just re-sampled.
        their = st.know[opp]["in_pool"]
        for k, cand in enumerate(kn["slots"]):
            if cand is not None and k < len(st.hidden[opp]):
                their = [t for t in their if t not in cand] + [t for t in canon(cand) if t != st.hidden[opp][k]]
        st.know[opp]["in_pool"] = their
        st.log = _log_resampled(st.log, opp, sigma)
        return st

    # -- scoring
    def result(self, state: ClashState) -> JSONDict | None:
        return state.result if state.result is not None else result_doc(state)

    def outcome(self, state: ClashState) -> Outcome:
        doc = self.result(state)
        assert doc is not None
        return Outcome(scores=[float(x) for x in doc["scores"]], winners=list(doc["winners"]))

    # -- transport
    def encode(self, state: ClashState) -> bytes:
        st = state
        return dump_document(GAME_ID, 1, {
            "options": st.options, "rng": rng_dump(st.rng), "phase": st.phase, "to_act": st.to_act,
            "game_no": st.game_no, "first_player": st.first_player, "current": st.current,
            "move_no": st.move_no, "board": [cell_doc(st, i) for i in range(9)],
            "start_tile_placed": st.start_placed,
            "zones": [{"open": st.open[s], "hidden": st.hidden[s]} for s in (0, 1)],
            "neutral_zone": st.neutral, "removed": st.removed, "pool": st.pool, "set_aside": st.set_aside,
            "draft": st.draft, "knowledge": st.know, "games": st.games, "wins": st.wins, "points": st.points,
            "log": st.log, "result": st.result, "history_digest": _history_digest(st.games, st.log, st.result)})

    def decode(self, data: bytes) -> ClashState:
        return self._decode(data, reachable=True)

    def decode_trusted(self, data: bytes) -> ClashState:
        """Sealed bytes: the fields are still checked as they are read; the log, its digest and the game records
        are not re-checked."""
        return self._decode(data, reachable=False)

    def _decode(self, data: bytes, reachable: bool) -> ClashState:
        doc = load_document(data, GAME_ID, 1, _KEYS)
        try:
            st = _decode_body(self, doc, reachable)
            if reachable:
                check_options(dict(st.options))
                _check_records(st)
            return st
        except InvalidState:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, InvalidOptions) as exc:
            raise InvalidState(f"malformed state: {exc}") from None


_KEYS: Final = ("options", "rng", "phase", "to_act", "game_no", "first_player", "current", "move_no", "board",
         "start_tile_placed", "zones", "neutral_zone", "removed", "pool", "set_aside", "draft",
         "knowledge", "games", "wins", "points", "log", "result", "history_digest")


def check_options(o: dict[str, Any]) -> dict[str, Any]:
    """The constraints between options (``new_game`` and ``decode`` alike); raises :class:`InvalidOptions`."""
    if sum(1 for k in ("beginner", "random_support", "draft", "secret_draft") if o[k]) > 1:
        raise InvalidOptions("at most one of beginner, random_support, draft, secret_draft")
    if o["hidden_support"] and not o["random_support"]:
        raise InvalidOptions("hidden_support requires random_support")
    if o["long_game"] and any(o[k] for k in ("beginner", "random_support", "draft", "secret_draft")):
        raise InvalidOptions("long_game needs a neutral zone: no beginner, random_support, draft or secret_draft")
    return o


_RECORD_KEYS: Final = {"game", "first_player", "reason", "stuck", "tiles", "kaboom", "winner", "points", "moves",
                "final_board", "final_zones"}


def _check_records(st: ClashState) -> None:
    """The game records obey "End and scoring", and ``wins``, ``points``, the phase and ``result`` follow from them."""
    o = st.options
    if o["beginner"]:  # "only Mustafa and the coloured tiles": no neutral tile anywhere, in any phase
        placed = [t for t in st.tile + st.cov if t is not None]
        anywhere = placed + st.open[0] + st.open[1] + st.hidden[0] + st.hidden[1] + st.neutral + st.removed
        require(not (set(anywhere) | set(st.pool) | set(st.set_aside)) & set(NEUTRALS),
                "a beginner match has no neutral tiles")
    for i, r in enumerate(st.games):
        require(set(r) == _RECORD_KEYS and r["game"] == i + 1 and r["first_player"] in (0, 1) and
                type(r["first_player"]) is int and r["reason"] in ("board_full", "move_limit", "no_placement"),
                f"game record {i + 1} is malformed")
        tiles, kaboom, stuck = r["tiles"], r["kaboom"], r["stuck"]
        require(type(tiles) is list and len(tiles) == 2 and all(is_int(x) and 0 <= x <= 9 for x in tiles) and
                (kaboom is None or (is_int(kaboom) and kaboom in (0, 1))) and
                (stuck is None if r["reason"] != "no_placement" else is_int(stuck) and stuck in (0, 1)) and
                (r["reason"] != "board_full" or sum(tiles) == 9) and
                is_int(r["moves"]) and 0 <= r["moves"] <= o["max_moves"] and
                type(r["final_board"]) is list and type(r["final_zones"]) is list,
                f"game record {i + 1} is malformed")
        winner = (1 - kaboom if kaboom is not None else 1 - stuck if stuck is not None else
                  0 if tiles[0] > tiles[1] else 1 if tiles[1] > tiles[0] else None)
        points = [0 if kaboom == s else tiles[s] for s in (0, 1)]
        require(r["winner"] == winner and r["points"] == points and type(r["points"][0]) is int,
                f"game record {i + 1}: winner or points do not follow from its tiles")
    n = len(st.games)
    require(st.wins == [sum(1 for r in st.games if r["winner"] == s) for s in (0, 1)],
            "wins do not match the game records")
    require(st.points == [sum(r["points"][s] for r in st.games) for s in (0, 1)],
            "points do not match the game records")
    over = n >= 1 and (o["match"] == "single" or
                       (max(st.wins) >= 2 or n >= 3 if o["match"] == "best_of_3" else n >= o["games"]))
    if st.phase in ("choose_first", "match_over"):
        require(over == (st.phase == "match_over"), "the match is over exactly when its format says so")
    else:
        require(not over, "a new game started after the match was decided")
    if st.phase == "choose_first":
        last = st.games[-1]
        chooser = 1 - last["winner"] if last["winner"] is not None else 1 - last["first_player"]
        require(st.to_act == [chooser], "the loser (or the second player after a draw) chooses who starts")
    if st.phase == "match_over":
        require(st.result == result_doc(st), "result does not match the game records")


def _history_digest(games: Any, log: Any, result: Any) -> str:
    """Integrity check of the append-only history (game records, log, result).

    It cannot be re-validated without a replay, so decode only accepts it unchanged.
    """
    return hashlib.sha256(orjson.dumps([games, log, result])).hexdigest()[:32]


def _log_resampled(log: list[JSONDict], opp: int, sigma: dict[str, str]) -> list[JSONDict]:
    """The log of a determinized world: the opponent's private entries of the current game (its hidden
    deal, secret picks and private offers) name the re-sampled tiles (``sigma``: true -> sampled)."""
    start = max((i for i, e in enumerate(log) if e["event"] == "setup"), default=0)
    out = log[:start]
    for e in log[start:]:
        if e.get("private"):
            if e["event"] == "setup" and e["dealt"][opp] is not None:
                dealt = list(e["dealt"])
                dealt[opp] = [sigma.get(t, t) for t in dealt[opp]]
                e = {**e, "dealt": dealt}
            elif e["event"] == "pick" and e["seat"] == opp:
                e = {**e, "tile": sigma.get(e["tile"], e["tile"])}
            elif e["event"] == "offer" and e["seat"] == opp:
                e = {**e, "tiles": canon([sigma.get(t, t) for t in e["tiles"]])}
        out.append(e)
    return out


def _log_view(entry: JSONDict, seat: int | None) -> JSONDict:
    """Redact private log entries: secret-draft picks and hidden deals are shown to their owner only."""
    out = {k: v for k, v in entry.items() if k != "private"}
    if entry["event"] == "offer" and seat is None:  # a spectator never learns draft contents
        out["tiles"] = None
    if not entry.get("private"):
        return out
    if entry["event"] == "pick" and entry["seat"] != seat:
        out["tile"] = None
    if entry["event"] == "offer" and entry["seat"] != seat:
        out["tiles"] = None
    if entry["event"] == "setup":
        out["dealt"] = [d if s == seat or d is None else [None] * len(d) for s, d in enumerate(entry["dealt"])]
    return out


def _ids(v: Any, what: str) -> list[str]:
    require(type(v) is list and all(type(t) is str and t in ORDER for t in v), f"{what}: list of tile ids expected")
    return list(v)


def _seat(v: Any, what: str) -> int:
    require(is_int(v) and v in (0, 1), f"{what}: seat 0 or 1 expected")
    return int(v)


def _tile_or_null(v: Any) -> bool:
    return v is None or (type(v) is str and v in ORDER)


def _tiles_or_null(v: Any) -> bool:
    return v is None or (type(v) is list and all(_tile_or_null(t) for t in v))


def _field(v: Any) -> bool:
    return type(v) is list and len(v) == 2 and all(is_int(x) and 0 <= x <= 2 for x in v)


def _seat_ok(v: Any) -> bool:
    return is_int(v) and v in (0, 1)


_TILE_FIELD: Final = {"field": _field, "tile": _tile_or_null}
#: The log's events and what each field must be (views and ``secrets`` read them; the spec's "Log").
_EVENTS: Final[dict[str, dict[str, Any]]] = {
    "setup": {"game": is_int, "first_player": _seat_ok, "neutral_zone": _tiles_or_null,
              "private": lambda v: type(v) is bool,
              "dealt": lambda v: type(v) is list and len(v) == 2 and all(_tiles_or_null(d) for d in v)},
    "pick": {"seat": _seat_ok, "tile": _tile_or_null},
    "offer": {"step": is_int, "seat": _seat_ok, "tiles": _tiles_or_null, "private": lambda v: type(v) is bool},
    "place": {"game": is_int, "move": is_int, "seat": _seat_ok, "tile": _tile_or_null, "from": lambda v: type(v) is str,
              "field": _field, "supports": lambda v: v in COLOUR_SEAT, "covered": _tile_or_null},
    "destroy": _TILE_FIELD, "discard": _TILE_FIELD, "flip": _TILE_FIELD, "repeat": _TILE_FIELD, "take": _TILE_FIELD,
    "move": {**_TILE_FIELD, "to": _field},
    "agent": {"tile": _tile_or_null, "hidden": lambda v: v is None or is_int(v)},
    "hacker": {"tile": _tile_or_null}, "refill": {"tile": _tile_or_null}, "removed": {"tiles": _tiles_or_null},
    "elections": {"seat": _seat_ok, "tile": _tile_or_null},
    "game_end": {"record": lambda v: type(v) is dict},
    "choose_first": {"chooser": _seat_ok, "seat": _seat_ok},
}


def _check_event(e: Any) -> None:
    require(type(e) is dict and e.get("event") in _EVENTS, "log: unknown event")
    fields = _EVENTS[e["event"]]
    keys = set(e) - {"event"}
    optional = {"private"} if e["event"] == "pick" else set()
    require(set(fields) <= keys <= set(fields) | optional, f"log: {e['event']} event has the wrong fields")
    require(all(check(e[name]) for name, check in fields.items()) and
            ("private" not in optional or e.get("private", True) is True), f"log: bad {e['event']} event")


def _decode_body(game: Clash, doc: JSONDict, reachable: bool = True) -> ClashState:
    st = ClashState()
    require(type(doc["options"]) is dict, "options must be an object")
    o = resolve_options(game, doc["options"])
    require(o == doc["options"], "options must be complete")
    st.options = o
    st.rng = rng_load(doc["rng"])
    st.phase = doc["phase"]
    require(st.phase in ("play", "draft", "secret_draft", "choose_first", "match_over"), "unknown phase")
    ta = doc["to_act"]
    require(type(ta) is list and len(ta) <= 1 and all(is_int(x) and x in (0, 1) for x in ta), "bad to_act")
    require((len(ta) == 0) == (st.phase == "match_over"), "to_act does not fit the phase")
    st.to_act = list(ta)
    require(is_int(doc["game_no"]) and 1 <= doc["game_no"] <= 5, "bad game_no")
    st.game_no = doc["game_no"]
    st.first_player = _seat(doc["first_player"], "first_player")
    st.current = _seat(doc["current"], "current")
    require(is_int(doc["move_no"]) and 0 <= doc["move_no"] <= o["max_moves"], "bad move_no")
    st.move_no = doc["move_no"]
    board = doc["board"]
    require(type(board) is list and len(board) == 9, "board must list 9 fields")
    st.tile, st.cov, st.sup, st.down = [None] * 9, [None] * 9, [0] * 9, [-1] * 9
    seen: list[str] = []
    for i, cell in enumerate(board):
        if cell is None:
            continue
        require(type(cell) is dict and set(cell) == {"tile", "covered", "supports", "face", "destroyed_by"},
                f"bad cell {i}")
        t = cell["tile"]
        require(type(t) is str and t in ORDER, f"cell {i}: unknown tile")
        cv = cell["covered"]
        require(cv is None or (type(cv) is str and cv in ORDER and t == NOBEL and cv != NOBEL), f"cell {i}: bad cover")
        require(cell["supports"] in COLOUR_SEAT, f"cell {i}: bad supports")
        require(cell["face"] in ("up", "down"), f"cell {i}: bad face")
        db = cell["destroyed_by"]
        if cell["face"] == "up":
            require(db is None, f"cell {i}: face-up cell has destroyed_by")
            st.down[i] = -1
        else:
            st.down[i] = _seat(db, f"cell {i} destroyed_by")
        require(t != NOBEL or cv is not None, f"cell {i}: Nobel prize must cover a tile")
        st.tile[i], st.cov[i], st.sup[i] = t, cv, COLOUR_SEAT[cell["supports"]]
        seen.append(t)
        if cv is not None:
            seen.append(cv)
    require(type(doc["start_tile_placed"]) is bool, "bad start_tile_placed")
    st.start_placed = doc["start_tile_placed"]
    zones = doc["zones"]
    require(type(zones) is list and len(zones) == 2, "zones must have 2 entries")
    st.open, st.hidden = [[], []], [[], []]
    for s in (0, 1):
        require(type(zones[s]) is dict and set(zones[s]) == {"open", "hidden"}, "bad zone")
        st.open[s] = _ids(zones[s]["open"], "open zone")
        require(st.open[s] == canon(st.open[s]), "open zone not in canonical order")
        st.hidden[s] = _ids(zones[s]["hidden"], "hidden zone")
        require(all(t in NEUTRALS for t in st.hidden[s]), "hidden zones hold neutral tiles only")
        seen += st.open[s] + st.hidden[s]
    st.neutral = _ids(doc["neutral_zone"], "neutral_zone")
    require(st.neutral == canon(st.neutral) and all(t in NEUTRALS for t in st.neutral), "bad neutral zone")
    st.removed = _ids(doc["removed"], "removed")
    st.pool = _ids(doc["pool"], "pool")
    require(st.pool == canon(st.pool) and all(t in NEUTRALS for t in st.pool), "bad pool")
    st.set_aside = _ids(doc["set_aside"], "set_aside")
    require(st.set_aside == canon(st.set_aside) and all(t in NEUTRALS for t in st.set_aside), "bad set_aside")
    seen += st.neutral + st.removed
    if not st.start_placed:
        seen.append(START)
    d = doc["draft"]
    st.draft = None
    if st.phase == "draft":
        require(type(d) is dict and set(d) == {"order", "index"}, "bad open draft")
        require(type(d["order"]) is list and all(is_int(x) and x in (0, 1) for x in d["order"]), "bad order")
        require(is_int(d["index"]) and 0 <= d["index"] < len(d["order"]), "bad draft index")
        require(st.to_act == [d["order"][d["index"]]], "draft to_act mismatch")
        st.draft = {"order": list(d["order"]), "index": d["index"]}
    elif st.phase == "secret_draft":
        require(type(d) is dict and set(d) == {"step", "seat", "offer", "returned", "passed"}, "bad secret draft")
        require(is_int(d["step"]) and 1 <= d["step"] <= 4, "bad step")
        st.draft = {"step": d["step"], "seat": _seat(d["seat"], "draft seat"), "offer": _ids(d["offer"], "offer"),
                    "returned": _ids(d["returned"], "returned"), "passed": _ids(d["passed"], "passed")}
        require(len(st.draft["offer"]) >= 2 and st.to_act == [st.draft["seat"]], "bad offer")
        seen += st.draft["offer"] + st.draft["returned"] + st.draft["passed"]
    else:
        require(d is None, "draft must be null outside the draft phases")
    require(len(seen) == len(set(seen)), "a tile appears twice")
    base = [START, *BLUE_TILES, *GREEN_TILES]
    if st.phase in ("choose_first", "match_over"):
        require(set(seen) <= set(ORDER), "unknown tile")
        neutral_all = st.pool + st.set_aside
        require(len(set(neutral_all)) == len(neutral_all), "a neutral tile appears twice")
        if not o["beginner"]:
            require(set(neutral_all) == set(NEUTRALS), "every neutral tile must be in the pool or set aside")
            require(set(seen) - set(base) <= set(st.set_aside), "used neutrals must be set aside")
    else:
        live = seen + st.pool + st.set_aside
        require(len(live) == len(set(live)), "a tile appears twice")
        want = set(base) | (set() if o["beginner"] else set(NEUTRALS))
        require(set(live) == want, "every tile must be somewhere exactly once")
    kn = doc["knowledge"]
    require(type(kn) is list and len(kn) == 2, "bad knowledge")
    st.know = []
    for s in (0, 1):
        k = kn[s]
        require(type(k) is dict and set(k) == {"slots", "in_pool"} and type(k["slots"]) is list, "bad knowledge")
        slots = [None if c is None else _ids(c, "candidates") for c in k["slots"]]
        require(len(slots) == len(st.hidden[1 - s]), "knowledge slots must match the opponent's hidden tiles")
        for c, actual in zip(slots, st.hidden[1 - s], strict=True):
            require(c is None or (c == canon(c) and len(set(c)) == len(c) and actual in c), "bad candidates")
        in_pool = _ids(k["in_pool"], "in_pool")
        returned = st.draft["returned"] if st.draft is not None and "returned" in st.draft else []
        require(len(set(in_pool)) == len(in_pool) and set(in_pool) <= set(st.pool) | set(returned), "bad in_pool")
        st.know.append({"slots": slots, "in_pool": in_pool})
    for name in ("wins", "points"):
        v = doc[name]
        require(type(v) is list and len(v) == 2 and all(is_int(x) and x >= 0 for x in v), f"bad {name}")
    st.wins, st.points = list(doc["wins"]), list(doc["points"])
    require(type(doc["games"]) is list and all(type(g) is dict for g in doc["games"]), "bad games")
    require(len(doc["games"]) == st.game_no - (0 if st.phase in ("choose_first", "match_over") else 1),
            "games do not fit game_no")
    st.games = doc["games"]
    require(type(doc["log"]) is list, "bad log")
    if reachable:  # what a seal vouches for: the log's events and the digest over the history
        for e in doc["log"]:
            _check_event(e)
    st.log = doc["log"]
    require(doc["result"] is None or type(doc["result"]) is dict, "bad result")
    require((doc["result"] is not None) == (st.phase == "match_over"), "result does not fit the phase")
    st.result = doc["result"]
    require(not reachable or doc["history_digest"] == _history_digest(st.games, st.log, st.result),
            "history was altered")
    if st.phase == "play":
        require(st.to_act == [st.current], "to_act must be the current seat")
    return st


GAME: Final = Clash()

__all__ = ["GAME", "Clash", "ClashState"]
