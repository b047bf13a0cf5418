"""Sideboards in words: dresser cards with their 5 coloured drawers and handles, the goals, move descriptions and
the result explained.

Spec ``shared/rules/sideboards.md``: "Components" (cards S01-S60 and their drawers, exchange cards, goal cards
1-30 with their patterns and row rules), "Flow" (simultaneous steps: a submission stays hidden until the step
resolves, then the cards not placed pass left), "Hidden information" (a description reads only the viewer's
views: ``my_submission``, ``my_passes``, ``my_received``, its own hand, the public dressers and discard),
"End and scoring" (the result's per-seat breakdown, rank bonuses, solo rating).
"""

from __future__ import annotations

from ..base import JSONDict, Move
from ..words import TIMES, count, join_sentences, listing
from .components import DATA

CARDS: dict[str, JSONDict] = {c["id"]: c for c in DATA["cards"]}
GOALS: dict[int, JSONDict] = {g["id"]: g for g in DATA["goals"]}
#: The exchange is public at once (spec "Hidden information"); a start/place submission is not.
PUBLIC_MOVES = frozenset({"exchange"})
#: Display colours of the five drawer colours (CSS colour names a client may use as they are).
SWATCH = {"red": "#dc2626", "turquoise": "#14b8a6", "pink": "#f472b6", "orange": "#f97316", "black": "#111827"}
MODES = {"longest": "your longest run", "two_longest": "your two longest runs (anywhere, even in one row)",
         "longest_per_row": "the longest run in each of those rows"}


def _card_text(c: JSONDict) -> str:
    parts = [f"{d['colour']}{' with a ' + d['handle'] + ' handle' if d['handle'] else ''}" for d in c["drawers"]]
    return "Drawers from top to bottom (turned 0°): " + "; ".join(parts) + ". Turned 180° the order reverses."


def _picture(cells: list[list[int]]) -> list[str]:
    width = 1 + max(x for x, _ in cells)
    height = 1 + max(y for _, y in cells)
    return ["".join("X" if [x, y] in cells else "." for x in range(width)) for y in range(height)]


def goal_text(g: JSONDict) -> str:
    """The goal's rule in words (spec "Goal cards 1-30" and "End and scoring")."""
    if g["kind"] in ("colour_pattern", "handle_pattern"):
        what = "drawers of one colour" if g["kind"] == "colour_pattern" else "handles of one shape"
        return (f"{g['points']} points for each occurrence of {len(g['cells'])} {what} in this shape "
                f"({' / '.join(_picture(g['cells']))}), turned or mirrored as you like; occurrences may not share "
                "drawers.")
    rule = g["row_rule"]
    value = rule["value"] or ("one colour" if rule["attribute"] == "colour" else "one handle shape")
    rows = "any row" if rule["rows"] == [1, 2, 3, 4, 5] else f"rows {listing([str(r) for r in rule['rows']])}"
    solo = ", ".join(f"{t}+: +{b}" for t, b in rule["solo_bonus"])
    return (f"2 points per drawer in {MODES[rule['mode']]} of side-by-side drawers of {value} in {rows}; rank bonus "
            f"by player count ({', '.join(f'{n} players: {b}' for n, b in DATA['row_rank_bonus'].items())}); "
            f"solo bonus {solo}.")


def components() -> JSONDict:
    """Cards with their 5 drawers (colour + handle), exchange cards and goals (spec "Components")."""
    cards = [{"id": c["id"], "kind": "card", "name": f"Dresser card {c['id']}",
              "drawers": [dict(d) for d in c["drawers"]],
              "colours": [d["colour"] for d in c["drawers"]],
              "handles": [d["handle"] for d in c["drawers"]], "text": _card_text(c)} for c in DATA["cards"]]
    exchange = [{"id": e, "kind": "exchange", "name": f"Exchange card of seat {i}", "seat": i,
                 "text": "Once per game, before you choose your card in a step: discard both cards of your hand and "
                         "draw two new ones. Unused at the end, it scores +1."}
                for i, e in enumerate(DATA["exchange_cards"])]
    goals = []
    for g in DATA["goals"]:
        entry: JSONDict = {"id": g["id"], "kind": "goal", "goal_kind": g["kind"], "name": g["name"],
                           "points": g["points"], "text": goal_text(g)}
        if "cells" in g:
            entry["cells"] = g["cells"]
            entry["picture"] = _picture(g["cells"])
        if "row_rule" in g:
            entry["row_rule"] = g["row_rule"]
        goals.append(entry)
    return {"colours": [{"id": c, "name": c, "swatch": SWATCH[c]} for c in DATA["colours"]],
            "handles": list(DATA["handles"]), "cards": cards, "exchange_cards": exchange, "goals": goals,
            "row_rank_bonus": DATA["row_rank_bonus"], "exchange_bonus": DATA["exchange_bonus"]}


def who(seat: int, viewer: int | None) -> str:
    return "you" if seat == viewer else f"seat {seat}"


def _placed(before: list[JSONDict], after: list[JSONDict]) -> list[str]:
    """What a dresser gained, in words (a start puts two cards; a place adds one at an end)."""
    if not before:
        return [f"{c['card']} turned {c['orientation']}°" for c in after]
    out = []
    if len(after) > len(before):
        if after[-len(before):] == before:
            for c in after[:len(after) - len(before)]:
                out.append(f"{c['card']} on the left, turned {c['orientation']}°")
        else:
            for c in after[len(before):]:
                out.append(f"{c['card']} on the right, turned {c['orientation']}°")
    return out


def describe(before: JSONDict, after: JSONDict, seat: int, move: Move, viewer: int | None) -> tuple[str, JSONDict]:
    """From the viewer's own views only: a submission stays "chose a card" to others until the step resolves."""
    kind = move.get("type")
    sentences: list[str] = []
    summary: JSONDict = {}
    if kind == "exchange":
        gone = after.get("discard", [])[len(before.get("discard", [])):]
        sentences.append(f"{who(seat, viewer)} used {'your' if seat == viewer else 'their'} exchange card: "
                         f"discarded {listing(gone) or 'their hand'} and drew two new cards")
        summary["discarded"] = gone
        if viewer == seat:
            drawn = [c for c in after.get("hand", []) if c not in before.get("hand", [])]
            if drawn:
                sentences.append(f"you drew {listing(drawn)}")
    elif kind in ("start", "place"):
        if viewer == seat and "card" in move:
            sentences.append(f"you chose {move['card']} for the {move['side']} end, turned {move['orientation']}°")
        elif viewer == seat and "cards" in move:
            sentences.append(f"you chose {listing(move['cards'])} to start your dresser")
        else:
            sentences.append(f"{who(seat, viewer)} chose {'their starting cards' if kind == 'start' else 'a card'}")
    resolved = after.get("step") != before.get("step") or after.get("phase") != before.get("phase")
    if resolved:
        placed = []
        for s, (b, a) in enumerate(zip(before.get("dressers", []), after.get("dressers", []), strict=False)):
            gained = _placed(b, a)
            if gained:
                placed.append(f"{who(s, viewer)}: {listing(gained)}")
        if placed:
            sentences.append("Everyone revealed their choice. " + "; ".join(placed))
        summary["placed"] = [[c["card"] for c in d] for d in after.get("dressers", [])]
        passes = [p for p in after.get("my_passes", []) if p not in before.get("my_passes", [])]
        received = [p for p in after.get("my_received", []) if p not in before.get("my_received", [])]
        for p in passes:
            sentences.append(f"you passed {listing(p['cards'])} to seat {p['to']}")
        for p in received:
            sentences.append(f"seat {p['from']} passed you {listing(p['cards'])}")
        if after.get("phase") != "game_over" and after.get("players", 0) > 1:
            n = len(after.get("hand_counts", [])) or after.get("players", 0)
            if viewer is None or not (passes or received):
                sentences.append(f"the cards not chosen passed to the left ({count(n, 'seat')})")
        if viewer is not None and after.get("phase") != "game_over":
            got = {c for p in received for c in p["cards"]}
            drawn = [c for c in after.get("hand", []) if c not in before.get("hand", []) and c not in got]
            if drawn:
                sentences.append(f"you drew {listing(drawn)}")
        if after.get("phase") == "game_over":
            sentences.append("The game is over: every dresser has 8 cards")
    return join_sentences(sentences), summary


def explain(result: JSONDict, view: JSONDict) -> JSONDict:
    """Each seat's total from the three goals, the rank bonus and the exchange card (spec "End and scoring")."""
    goals = view.get("goals", {})
    names = {k: GOALS.get(goals.get(k), {}).get("name", "?") for k in ("colour", "handle", "row")}
    ranks = {r["seat"]: r["rank"] for r in result.get("ranking", [])}
    seats = []
    def goal(k: str) -> str:
        return f"{k} goal {goals.get(k)} \u201c{names[k]}\u201d"

    for s in result.get("scores", []):
        seats.append({"seat": s["seat"], "label": f"Seat {s['seat']}", "score": s["total"],
                      "rank": ranks.get(s["seat"]), "unit": "points", "breakdown": [
                          {"label": f"{goal('colour')}: {count(s['colour_count'], 'occurrence')}",
                           "value": s["colour_points"]},
                          {"label": f"{goal('handle')}: {count(s['handle_count'], 'occurrence')}",
                           "value": s["handle_points"]},
                          {"label": f"{goal('row')}: {count(s['row_drawers'], 'drawer')} {TIMES} 2",
                           "value": s["row_points"]},
                          {"label": "row goal rank bonus" if view.get("players", 2) > 1 else "row goal solo bonus",
                           "value": s["row_bonus"]},
                          {"label": "exchange card never used", "value": s["exchange_bonus"]}]})
    winners = result.get("winners", [])
    top = max((s["score"] for s in seats), default=0)
    if len(seats) == 1:
        rating = result.get("solo_rating") or {}
        headline = f"Solo game over: {top} points. {rating.get('text', '')}".strip()
    elif len(winners) == 1:
        headline = f"Every dresser has 8 cards. Seat {winners[0]} wins with {top} points."
    else:
        headline = (f"Every dresser has 8 cards. Seats {listing([str(w) for w in winners])} share the win with {top} "
                    "points.")
    return {"end_reason": "dressers_full", "reason_text": "every dresser has 8 cards", "headline": headline,
            "winners": winners, "seats": seats, "goals": {k: {"id": goals.get(k), "name": names[k]} for k in names},
            "solo_rating": result.get("solo_rating")}
