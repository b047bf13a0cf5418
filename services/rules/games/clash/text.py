"""CLASH in words: the tile catalogue, move descriptions and the match result explained.

Spec ``shared/rules/clash.md``: "Components" (the tiles table, "Tile texts", the data file's ``effect_kinds``),
"Geometry" (fields, rows 0 = Blue's side), "Hidden information" (the redacted ``log`` of each view, which is
all a description reads), "End and scoring" (game records, match result).
"""

from __future__ import annotations

from typing import Any

from ..base import JSONDict, Move
from ..words import count, join_sentences, listing
from .board import DATA

TILES: dict[str, JSONDict] = {t["id"]: t for t in DATA["tiles"]}
EFFECT_NAMES: dict[str, str] = {k: v["en"] for k, v in DATA["effect_kinds"].items()}
COLOURS = ("blue", "green")
FACTIONS = {s["seat"]: s["faction"] for s in DATA["board"]["seats"]}
#: Move types anyone may see in full once played (a secret-draft ``pick`` is not: the log redacts it).
PUBLIC_MOVES = frozenset({"place", "choose_first"})
SIDE_COLOURS = {"start": "purple", "blue": "blue", "green": "green", "neutral": "grey"}
#: Where the spec's "Tile texts" table words a text differently from the data file's ``text_en``, the spec
#: wins ("This spec is authoritative"; checked word for word by tests/games/test_words.py).
SPEC_TEXTS = {"N13": "Cover with it one of the face-up tiles on the board that support you. That tile gains the "
                     "Security effect and loses its own effect. From then on the two are treated as one tile with "
                     "the Security effect."}
FIELD_WORDS = {(0, 0): "top-left", (0, 1): "top", (0, 2): "top-right", (1, 0): "left", (1, 1): "centre",
               (1, 2): "right", (2, 0): "bottom-left", (2, 1): "bottom", (2, 2): "bottom-right"}
#: Log events told by a template alone: (words, whether they continue the move's sentence as its effect).
EVENT_TEXTS: dict[str, tuple[str, bool]] = {
    "destroy": ("destroying {tile} on {field}", True),
    "discard": ("discarding {tile} from {field} to the removed pile", True),
    "move": ("moving {tile} from {field} to {to}", True),
    "repeat": ("repeating the effect of {tile} on {field}", True),
    "hacker": ("taking {tile} from the removed pile", True),
    "elections": ("drawing {tile} from the unused neutral tiles", True),
    "refill": ("The neutral zone was refilled with {tile}", False),
}
#: The events a tile's effect adds to its placement (those told as the rest of the placement's sentence).
EFFECT_EVENTS = frozenset({*(kind for kind, (_, continues) in EVENT_TEXTS.items() if continues),
                           "flip", "take", "agent"})
REASONS = {"board_full": "all nine fields hold face-up tiles",
           "move_limit": "the move limit was reached",
           "no_placement": "{stuck} could not place a tile"}


def dots(t: JSONDict) -> list[JSONDict]:
    """The dots printed on a tile, which its text refers to ("the 4 adjacent tiles marked by the coloured dots"):
    each set's colour (coloured, white or black) and its offsets in the tile's frame, ``[f, s]`` = steps towards
    the tip and to the right looking along it (spec "Geometry"). Tiles whose text names no dots have none."""
    scope = t["effect"]["scope"]
    if "dots" in scope:  # the Banker / Sheikh: white dots one pattern, black dots the other
        return [{"colour": colour, "at": scope["patterns"][pattern]} for colour, pattern in scope["dots"].items()]
    offsets = scope.get("offsets") or DATA["offset_sets"].get(scope.get("set") or "", [])
    return [{"colour": colour, "at": offsets} for colour in ("coloured", "white", "black")
            if f"{colour} dots" in t["text_en"] and offsets]


def components() -> JSONDict:
    """Every tile with its name, starting side and colour, effect, printed dots and rules text (spec "Tile
    texts")."""
    tiles = []
    for t in DATA["tiles"]:
        effect = t["effect"]
        tiles.append({
            "id": t["id"], "kind": "tile", "name": t["name_en"], "name_pl": t["name_pl"], "side": t["side"],
            "colour": SIDE_COLOURS[t["side"]], "pair": t["pair"], "timing": effect["timing"],
            "effect": effect["kind"], "effect_name": EFFECT_NAMES.get(effect["kind"], effect["kind"]),
            "text": SPEC_TEXTS.get(t["id"], t["text_en"]), "text_pl": t["text_pl"], "dots": dots(t),
        })
    factions = [{"seat": s["seat"], "colour": s["colour"], "faction": s["faction"], "home_row": s["home_row"]}
                for s in DATA["board"]["seats"]]
    return {"tiles": tiles, "factions": factions, "effect_kinds": EFFECT_NAMES,
            "fields": [{"field": [r, c], "name": name} for (r, c), name in FIELD_WORDS.items()]}


def tile(tid: str | None) -> str:
    if tid is None:
        return "a hidden tile"
    t = TILES.get(tid)
    return f"{tid} {t['name_en']}" if t else tid


def field(f: Any) -> str:
    try:
        return f"the {FIELD_WORDS[(int(f[0]), int(f[1]))]} field"
    except (KeyError, TypeError, ValueError, IndexError):
        return f"field {f}"


def colour(seat: int) -> str:
    return COLOURS[seat].capitalize()


def who(seat: int, viewer: int | None) -> str:
    return f"you ({colour(seat)})" if seat == viewer else f"seat {seat} ({colour(seat)})"


def _supports_now(view: JSONDict, f: Any) -> str | None:
    try:
        cell = view["board"][f[0]][f[1]]
    except (KeyError, IndexError, TypeError):
        return None
    return cell["supports"] if cell and cell.get("face") == "up" else None


def game_record_text(rec: JSONDict) -> str:
    """``Game 1 is over: all nine fields hold face-up tiles. Blue wins it, 6 tiles to 3.``"""
    reason = str(REASONS.get(rec["reason"], rec["reason"])).format(
        stuck=colour(rec["stuck"]) if rec.get("stuck") is not None else "a player")
    tiles = rec.get("tiles") or [0, 0]
    if rec.get("kaboom") is not None:
        why = f"KABOOM!!! supports {colour(rec['kaboom'])}, so {colour(rec['kaboom'])} loses"
    elif rec["reason"] == "no_placement" and rec.get("stuck") is not None:
        why = f"{colour(rec['stuck'])} was stuck"
    else:
        why = f"{tiles[0]} tiles support Blue, {tiles[1]} support Green"
    winner = rec.get("winner")
    verdict = f"{colour(winner)} wins it" if winner is not None else "it is a draw"
    return f"Game {rec['game']} is over: {reason}; {why}. {verdict}"


def _event(e: JSONDict, viewer: int | None, after: JSONDict, mover: int) -> tuple[str, bool]:
    """One log event in words, and whether it continues the move's sentence (an effect) or stands alone."""
    kind = e["event"]
    if kind == "place":
        where = field(e["field"])
        src = {"own": "from their zone", "neutral": "from the neutral zone", "start": "(the start tile)"}.get(
            e["from"], "")
        if e["seat"] == viewer and e["from"] == "own":
            src = "from your zone"
        covered = f", covering {tile(e['covered'])}" if e.get("covered") else ""
        return (f"{who(e['seat'], viewer)} placed {tile(e['tile'])} {src} on {where}{covered}, "
                f"supporting {e['supports'].capitalize()}"), False
    if kind in EVENT_TEXTS:
        template, continues = EVENT_TEXTS[kind]
        return template.format(tile=tile(e.get("tile")), field=field(e.get("field")), to=field(e.get("to"))), continues
    if kind == "flip":
        now = _supports_now(after, e["field"])
        to = f" to support {now.capitalize()}" if now else ""
        return f"turning {tile(e['tile'])} on {field(e['field'])}{to}", True
    if kind == "take":
        whose = "your" if mover == viewer else "their"
        return f"taking {tile(e['tile'])} off {field(e['field'])} into {whose} zone", True
    if kind == "agent":
        what = tile(e["tile"]) if e.get("tile") else "a hidden tile"
        return f"sending {what} from {colour(1 - mover)}'s zone to the removed pile", True
    if kind == "removed":
        tiles = e.get("tiles") or []
        return f"{listing([tile(t) for t in tiles])} left the board (destroyed earlier)", False
    if kind == "game_end":
        return game_record_text(e["record"]), False
    if kind == "choose_first":
        chosen = "themselves" if e["seat"] == e["chooser"] else who(e["seat"], viewer)
        return f"{who(e['chooser'], viewer)} chose {chosen} to start the next game", False
    if kind == "setup":
        return f"Game {e['game']} begins: {who(e['first_player'], viewer)} starts", False
    if kind == "pick":
        return f"{who(e['seat'], viewer)} picked {tile(e['tile']) if e.get('tile') else 'a tile in secret'}", False
    if kind == "offer":
        tiles = e.get("tiles")
        what = listing([tile(t) for t in tiles]) if tiles else "tiles you cannot see"
        return f"{who(e['seat'], viewer)} {'were' if e['seat'] == viewer else 'was'} offered {what}", False
    return kind, False


def describe(before: JSONDict, after: JSONDict, seat: int, move: Move, viewer: int | None) -> tuple[str, JSONDict]:
    """Reads only the viewer's redacted log: the events this move appended (spec "Hidden information", Log)."""
    events = after.get("log", [])[len(before.get("log", [])):]
    sentences: list[str] = []
    for e in events:
        words, continues = _event(e, viewer, after, seat)
        if continues and sentences:
            sentences[-1] += ", " + words
        else:
            sentences.append(words)
    timing = TILES.get(str(move.get("tile")), {}).get("effect", {}).get("timing")
    if (move.get("type") == "place" and move.get("effect") is None and sentences and timing == "immediate"
            and not any(e["event"] in EFFECT_EVENTS for e in events)):
        sentences[0] += " (effect not used)"
    if after.get("phase") == "choose_first" and before.get("phase") != "choose_first" and after.get("to_act"):
        chooser = after["to_act"][0]
        sentences.append(f"{who(chooser, viewer)} chooses who starts game {after.get('game_no', 0) + 1}")
    if not sentences:
        sentences = [f"{who(seat, viewer)} played {move.get('type')}"]
    summary: JSONDict = {"events": events}
    if move.get("type") == "place":
        summary.update({k: move[k] for k in ("tile", "from", "field", "supports") if k in move})
    return join_sentences(sentences), summary


def explain(result: JSONDict, view: JSONDict) -> JSONDict:
    """The match explained (spec "End and scoring"): each game's winner and reason, the match score."""
    mode = result.get("match", "best_of_3")
    games = []
    for rec in result.get("games", []):
        games.append({"game": rec["game"], "winner": rec.get("winner"), "reason": rec["reason"],
                      "tiles": rec.get("tiles"), "points": rec.get("points"), "kaboom": rec.get("kaboom"),
                      "stuck": rec.get("stuck"), "text": game_record_text(rec) + "."})
    scores = result.get("scores", [0, 0])
    ranks = {r["seat"]: r["rank"] for r in result.get("ranking", [])}
    seats = []
    for s in (0, 1):
        breakdown = []
        for g in games:
            verdict = "won" if g["winner"] == s else "drawn" if g["winner"] is None else "lost"
            value = (1 if g["winner"] == s else 0) if mode != "points" else (g["points"] or [0, 0])[s]
            breakdown.append({"label": f"game {g['game']}: {verdict} ({(g['tiles'] or [0, 0])[s]} tiles)",
                              "value": value})
        seats.append({"seat": s, "label": f"Seat {s}: {colour(s)} ({FACTIONS.get(s, '')})", "colour": COLOURS[s],
                      "score": scores[s], "rank": ranks.get(s), "breakdown": breakdown,
                      "unit": "points" if mode == "points" else "games won"})
    winners = result.get("winners", [])
    if mode == "single":
        reason = "single_game"
        headline = games[-1]["text"] if games else "The game is over."
    elif mode == "points":
        reason = "points_series_complete"
        headline = (f"After {count(len(games), 'game')}: Blue {scores[0]} points, Green {scores[1]} points. "
                    + (f"{colour(winners[0])} wins the match." if len(winners) == 1 else "The match is a draw."))
    else:
        reason = "two_wins" if max(scores) >= 2 else "three_games_played"
        headline = (f"{colour(winners[0])} wins the match {max(scores)} games to {min(scores)}."
                    if len(winners) == 1 else f"The match is drawn, {scores[0]} games each.")
    return {"end_reason": reason, "headline": headline, "winners": winners, "seats": seats, "games": games,
            "match": mode}
