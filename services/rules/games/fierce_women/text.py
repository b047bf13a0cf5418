"""Fierce Women in words: woman and action cards, move descriptions (the automa's turns included) and the result
explained.

Spec ``shared/rules/fierce-women.md``: "Components" (women W01-W56 with names and categories, actions A1-A8 with
their texts, the six categories), "Seed worked example" (the category colours: blue = feminism, orange =
politics, green = science, pink = art, turquoise = human_rights; culture is unused there), "Effects" E8 (the
automa), "Hidden information" (every move is public once played: a placed card is on the table; a description
reads only the viewer's views), "End and scoring" (the per-column breakdown).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ..base import JSONDict, Move
from ..words import TIMES, count, join_sentences, listing

DATA: JSONDict = json.loads(
    resources.files(__package__.rsplit(".", 1)[0]).joinpath("data/fierce-women.json").read_text())
WOMEN: dict[str, JSONDict] = {w["id"]: w for w in DATA["women"]}
ACTIONS: dict[str, JSONDict] = {a["id"]: a for a in DATA["actions"]}
#: Every move is public once applied (a drawn card was a face-up pile top; a placed card lies on the table).
PUBLIC_MOVES = frozenset({"draw", "place", "play_action", "discard", "remove_column", "remove_cards", "rearrange"})
#: The seed's colours (spec "Seed worked example"); culture has none there, so it gets a gold of our choosing.
CATEGORY_COLOURS = {"art": "pink", "culture": "gold", "feminism": "blue", "human_rights": "turquoise",
                    "politics": "orange", "science": "green"}
CATEGORY_NAMES = {"art": "Art", "culture": "Culture", "feminism": "Feminism", "human_rights": "Human rights",
                  "politics": "Politics", "science": "Science"}
SEED_NAMES = {"art": "Umjetnost", "culture": "Kultura", "feminism": "Feminizam", "human_rights": "Ljudska prava",
              "politics": "Politika", "science": "Znanost"}
PILES = ("left", "middle", "right")
WOMAN_RULE = ("Place her in a column of yours: a column scores only while all its women share exactly one "
              "category, and then each of its women scores as many points as there are such columns of that "
              "category on all tables.")


def components() -> JSONDict:
    """Women with names, categories and blurbs; action cards with their texts; the categories and colours."""
    women = [{"id": w["id"], "kind": "woman", "name": w["name"], "categories": list(w["categories"]),
              "blurb": w["blurb"], "text": f"{w['blurb']} Categories: "
              f"{listing([CATEGORY_NAMES[c] for c in w['categories']])}. {WOMAN_RULE}"} for w in DATA["women"]]
    actions = [{"id": a["id"], "kind": "action", "name": a["name"], "key": a["key"], "text": a["text"]}
               for a in DATA["actions"]]
    categories = [{"id": c, "name": CATEGORY_NAMES[c], "name_hr": SEED_NAMES[c], "colour": CATEGORY_COLOURS[c]}
                  for c in DATA["categories"]]
    return {"women": women, "actions": actions, "categories": categories,
            "automa": {"seat": 2, "players": 2, "text": "With 2 players a scripted third player, the automa, takes "
                       "seat 2: each turn she takes the top card of the leftmost non-empty pile and places a woman in "
                       "her first column that allows it (else a new one); action cards go to the discard. Her score "
                       "counts and she can win."}}


def card(cid: Any) -> str:
    if cid in WOMEN:
        return f"{cid} {WOMEN[cid]['name']}"
    if cid in ACTIONS:
        return f"{cid} {ACTIONS[cid]['name']}"
    return str(cid)


def who(seat: int, viewer: int | None, automa: int | None) -> str:
    if seat == viewer:
        return "you"
    return f"the automa (seat {seat})" if seat == automa else f"seat {seat}"


def _column(view: JSONDict, seat: int, index: int) -> JSONDict | None:
    try:
        col: JSONDict = view["tables"][seat][index]
        return col
    except (IndexError, KeyError, TypeError):
        return None


def _category(col: JSONDict | None) -> str:
    if not col:
        return ""
    cat = col.get("category")
    return f" ({CATEGORY_NAMES.get(cat, cat)})" if cat else " (no single category yet)"


def _automa(before: JSONDict, after: JSONDict, viewer: int | None) -> list[str]:
    """The automa's turn(s) and removals inside this move (spec E8), read from the public views."""
    automa = after.get("automa_seat")
    if automa is None:
        return []
    out = []
    last, prev = after.get("automa_last"), before.get("automa_last")
    if last and last != prev:
        took = f"{who(automa, viewer, automa)} took {card(last['card'])} from the {PILES[last['pile']]} pile"
        if last.get("column") is None:
            out.append(f"{took} and discarded it")
        else:
            col = _column(after, automa, last["column"])
            out.append(f"{took} and placed it in column {last['column'] + 1}{_category(col)}")
    had = [c for col in before.get("tables", [[]] * (automa + 1))[automa] for c in col["cards"]]
    has = {c for col in after.get("tables", [[]] * (automa + 1))[automa] for c in col["cards"]}
    lost = [c for c in had if c not in has]
    if lost:
        out.append(f"{who(automa, viewer, automa)} removed {listing([card(c) for c in lost])}")
    return out


def describe(before: JSONDict, after: JSONDict, seat: int, move: Move, viewer: int | None) -> tuple[str, JSONDict]:
    automa = after.get("automa_seat")
    me = who(seat, viewer, automa)
    kind = move.get("type")
    summary: JSONDict = {}
    sentences: list[str] = []
    if kind == "draw":
        pile = move["pile"]
        top = before["piles"][pile]["top"]
        sentences.append(f"{me} drew {card(top)} from the {PILES[pile]} pile")
        summary.update(pile=pile, card=top)
    elif kind == "place":
        col = move["column"]
        index = len(after["tables"][seat]) - 1 if col == "new" else col
        target = _column(after, seat, index)
        where = f"a new column {index + 1}" if col == "new" else f"column {index + 1}"
        sentences.append(f"{me} placed {card(move['card'])} in {where}{_category(target)}")
        summary.update(card=move["card"], column=index, category=(target or {}).get("category"))
    elif kind == "play_action":
        text = ACTIONS.get(move["card"], {}).get("text", "")
        on = ""
        if "column" in move:
            on = f" on column {move['column'] + 1}{_category(_column(before, seat, move['column']))}"
        sentences.append(f"{me} played {card(move['card'])}{on}: {text}")
        summary.update(card=move["card"])
    elif kind == "discard":
        sentences.append(f"{me} discarded {card(move['card'])} (no card could be played)")
        summary.update(card=move["card"])
    elif kind == "remove_column":
        col = _column(before, seat, move["column"])
        cards = col["cards"] if col else []
        sentences.append(f"{me} removed column {move['column'] + 1}: {listing([card(c) for c in cards])}")
        summary.update(cards=cards)
    elif kind == "remove_cards":
        sentences.append(f"{me} removed {listing([card(c) for c in move['cards']])} from the table")
        summary.update(cards=move["cards"])
    elif kind == "rearrange":
        cols = ["[" + ", ".join(c) + "]" for c in move.get("columns", [])]
        sentences.append(f"{me} rearranged their free columns into {' '.join(cols)}")
    if seat != automa:
        sentences.extend(_automa(before, after, viewer) if kind != "draw" else [])
    if after.get("phase") == "game_over" and before.get("phase") != "game_over":
        sentences.append("The game is over: all three piles are empty")
    return join_sentences(sentences), summary


def explain(result: JSONDict, view: JSONDict) -> JSONDict:
    """Per column: women x the category's value, doubled or with a bonus (spec "End and scoring")."""
    automa = view.get("automa_seat")
    ranks = {r["seat"]: r["rank"] for r in result.get("ranking", [])}
    seats = []
    for s, cols in enumerate(result.get("breakdown", [])):
        breakdown = []
        for c in cols:
            if c["category"] is None:
                label = f"column {c['column'] + 1}: {count(c['women'], 'woman', 'women')}, no single category"
            else:
                cat = CATEGORY_NAMES.get(c["category"], c["category"])
                label = (f"column {c['column'] + 1}: {c['women']} {TIMES} {cat} worth {c['value']}"
                         + (f" {TIMES} 2 (doubled)" if c["doubled"] else "")
                         + (f" + {c['bonus']} bonus" if c["bonus"] else ""))
            breakdown.append({"label": label, "value": c["points"]})
        seats.append({"seat": s, "label": f"Automa (seat {s})" if s == automa else f"Seat {s}",
                      "automa": s == automa, "score": result["scores"][s], "rank": ranks.get(s),
                      "breakdown": breakdown, "unit": "points"})
    winners = result.get("winners", [])
    top = max(result.get("scores", [0]))
    names = [("the automa" if w == automa else f"seat {w}") for w in winners]
    verdict = (f"{names[0].capitalize()} wins with {top} points." if len(names) == 1
               else f"{listing(names).capitalize()} share the win with {top} points.")
    values = result.get("category_values", {})
    return {"end_reason": "piles_empty", "reason_text": "all three piles are empty",
            "headline": f"All three piles are empty. {verdict}", "winners": winners, "seats": seats,
            "automa_seat": automa,
            "category_values": {CATEGORY_NAMES.get(k, k): v for k, v in values.items()}}
