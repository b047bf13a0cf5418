"""The step-wise move chooser for terminals, the same as the browser page's (services/gateway/static/play/chooser.js).

A legal move is chosen one part at a time (CLASH: tile -> field -> side -> effect), each step offering only the
values that some legal move still has, in words built from the game's component catalogue
(``GET /v1/games/{game}``). The parts come from the moves themselves (their keys, in the spec's order), so every
game and every option works without a list of its own. A step with a single possible value is taken at once and
shown in the trail; once one move is left, its remaining parts fill the trail and the move waits for a confirm.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

TYPE_WORDS: dict[str, dict[str, str]] = {
    "clash": {"place": "Place a tile", "pick": "Pick a tile", "choose_first": "Choose who starts the next game"},
    "sideboards": {"start": "Choose your two starting cards", "place": "Add a card to your dresser",
                   "exchange": "Use your exchange card: discard your hand, draw 2 new cards"},
    "fierce-women": {"draw": "Draw a card", "place": "Place a woman in a column", "play_action": "Play an action card",
                     "discard": "Discard a card", "remove_column": "Remove one of your columns",
                     "remove_cards": "Remove women from your table", "rearrange": "Rearrange your free columns"},
    "they-who-were-8": {"play": "Play an action card", "discard_and_draw": "Discard a card and draw (none is playable)",
                        "discard": "Discard a card (none is playable)", "use_power": "Use a god's power",
                        "decline": "Use no power now", "endymina_discard": "Discard two cards (Endymina)",
                        "kymele_take": "Take one card (Kymele)"},
}

PROMPTS = {"type": "What do you do?", "tile": "Which tile?", "from": "From where?", "field": "On which field?",
           "supports": "Which side does it support?", "effect": "Use its effect?", "seat": "Who starts?",
           "cards": "Which cards?", "card": "Which card?", "orientations": "Turned how?",
           "side": "Which end of your dresser?", "orientation": "Turned how?", "pile": "From which pile?",
           "column": "Into which column?", "columns": "How?", "target": "On which god?", "to": "To which god?",
           "swap_with": "Swap with which god?", "god": "Which god's power?", "as": "Copy which god?",
           "gods": "Which two gods?"}

FIELD_NAMES = {(0, 0): "top-left", (0, 1): "top", (0, 2): "top-right", (1, 0): "left", (1, 1): "centre",
               (1, 2): "right", (2, 0): "bottom-left", (2, 1): "bottom", (2, 2): "bottom-right"}


def index_components(doc: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The catalogue as one lookup, id -> entry (goals as ``goal:N``), as the page's ``indexComponents``."""
    by_id: dict[str, dict[str, Any]] = {}
    for kind, entries in (doc or {}).items():
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if isinstance(entry, dict) and entry.get("id") is not None:
                by_id[f"goal:{entry['id']}" if kind == "goals" else str(entry["id"])] = entry
    return by_id


def steps_of(move: dict[str, Any]) -> list[str]:
    return ["type", *(k for k in move if k != "type")]


def value_key(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


@dataclass
class ChooserState:
    left: list[dict[str, Any]]  # the legal moves that agree with every choice so far
    chosen: list[tuple[str, str, bool]]  # (part, value as JSON, taken by itself because it was the only one)
    step: str | None  # the part asked for now; None: one move is left, to confirm
    options: list[str] = field(default_factory=list)  # its values, as JSON


def chooser_state(moves: list[dict[str, Any]], chosen: list[tuple[str, str, bool]]) -> ChooserState:
    """Where the chooser stands for these legal moves and these choices (``chosen`` is completed in place).

    Choices that no legal move agrees with any more (the match moved on) are dropped: the chooser starts anew."""
    left = [m for m in moves if all(value_key(m.get(k)) == v for k, v, _ in chosen)]
    if not left:
        chosen.clear()
        left = list(moves)
    while True:
        if len(left) == 1 and chosen:
            taken = {k for k, _, _ in chosen}
            chosen.extend((k, value_key(left[0].get(k)), True) for k in steps_of(left[0]) if k not in taken)
            return ChooserState(left, chosen, None)
        taken = {k for k, _, _ in chosen}
        following = next((k for m in left for k in steps_of(m) if k not in taken), None)
        if following is None:
            return ChooserState(left, chosen, None)
        values: list[str] = []
        for m in left:
            v = value_key(m.get(following))
            if v not in values:
                values.append(v)
        if len(values) == 1:
            chosen.append((following, values[0], True))
            left = [m for m in left if value_key(m.get(following)) == values[0]]
            continue
        return ChooserState(left, chosen, following, values)


def step_back(chosen: list[tuple[str, str, bool]]) -> None:
    """One step back: the last choice the player made, and the parts that followed from it by themselves."""
    while chosen and chosen[-1][2]:
        chosen.pop()
    if chosen:
        chosen.pop()


@dataclass
class Words:
    """What the words of a value need: the game, its catalogue, the viewer's view and seat."""

    game: str
    comp: dict[str, dict[str, Any]]
    view: dict[str, Any]
    you: int | None

    def name(self, cid: Any) -> str:
        entry = self.comp.get(str(cid))
        return str(entry["name"]) if entry and entry.get("name") else str(cid)

    def label(self, cid: Any) -> str:
        if cid is None:
            return "a hidden card"
        name = self.name(cid)
        shown = name if str(cid) in name else f"{cid} {name}"
        cats = (self.comp.get(str(cid)) or {}).get("categories")
        return f"{shown} ({', '.join(self.category(c) for c in cats)})" if cats else shown

    def category(self, cat: Any) -> str:
        """A Fierce Women category's name from the catalogue (``Human rights``), never its key."""
        entry = self.comp.get(str(cat)) or {}
        return str(entry.get("name") or str(cat).replace("_", " "))

    def field(self, f: Any) -> str:
        try:
            return f"the {FIELD_NAMES[(int(f[0]), int(f[1]))]} field"
        except (KeyError, TypeError, ValueError, IndexError):
            return f"field {f}"

    def cell(self, f: Any) -> dict[str, Any] | None:
        try:
            cell: dict[str, Any] | None = self.view["board"][f[0]][f[1]]
            return cell
        except (KeyError, TypeError, IndexError):
            return None

    def god(self, gid: Any) -> str:
        gid = gid.get("god") if isinstance(gid, dict) else gid
        god = next((g for g in self.view.get("gods") or [] if g.get("id") == gid), None)
        extra = f" (seat {god['owner']}, glory {god['glory']}, infamy {god['infamy']})" if god else ""
        return f"{gid} {self.name(gid)}{extra}"

    def clash_effect(self, tile_id: Any, effect: Any, at: Any) -> str:
        """A CLASH effect object in words, for the tile whose effect it is, placed on ``at``."""
        if effect is None:
            return "Do not use the effect"
        entry = self.comp.get(str(tile_id)) or {}
        target = self.cell(effect["target"]) if effect.get("target") else None
        what = (f"{self.label(target['tile'])} on {self.field(effect['target'])}" if target
                else self.field(effect["target"]) if effect.get("target") else "")
        if effect.get("effect"):
            inner = self.clash_effect(target and target.get("tile"), effect["effect"], effect.get("target"))
            return f"Repeat the effect of {what}: {inner}"
        if effect.get("to"):
            return f"Move {what} to {self.field(effect['to'])}"
        if effect.get("direction"):
            return f"Turn every tile to the {effect['direction']} of {self.field(at) if at else 'it'}"
        if effect.get("pattern"):
            return f"Turn the {effect['pattern']} neighbours"
        if "tile" in effect:
            if tile_id == "N07":
                return f"Take {self.label(effect['tile'])} from the removed pile"
            return f"Send {self.label(effect['tile'])} from your opponent's zone to the removed pile"
        if "hidden" in effect:
            return f"Send your opponent's hidden tile no. {effect['hidden'] + 1} to the removed pile"
        if effect.get("target"):
            verb = {"destroy": "Destroy", "flip": "Turn", "discard": "Discard",
                    "zone_transfer": "Take back into your zone"}.get(str(entry.get("effect")), "Target")
            return f"{verb} {what}"
        fixed = {"N09": "Turn the 3 tiles in front", "N10": "Turn every adjacent tile",
                 "N16": "Draw a random unused neutral tile"}
        return fixed.get(str(tile_id)) or str(entry.get("text") or "Use the effect")

    def value(self, step: str, raw: str, move: dict[str, Any]) -> str:
        """Words for one value of one step of ``move`` (the sample move the value belongs to)."""
        v = json.loads(raw)
        game, you = self.game, self.you
        if step == "type":
            return TYPE_WORDS.get(game, {}).get(v, str(v))
        if game == "clash":
            if step == "tile":
                return self.label(v)
            if step == "from":
                return {"own": "from your zone", "neutral": "from the neutral zone",
                        "start": "the start tile"}.get(v, str(v))
            if step == "field":
                return self.field(v)
            if step == "supports":
                side = " (you)" if (you == 0) == (v == "blue") else " (your opponent)"
                return f"supporting {'Blue' if v == 'blue' else 'Green'}{side}"
            if step == "effect":
                return self.clash_effect(move.get("tile"), v, move.get("field"))
            if step == "seat":
                return "I start" if v == you else f"seat {v} starts"
        if game == "sideboards":
            if step == "cards":
                return f"{self.label(v[0])} on the left, {self.label(v[1])} on the right"
            if step == "orientations":
                first, second = (move.get("cards") or ["first", "second"])[:2]
                return f"{first} turned {v[0]}°, {second} turned {v[1]}°"
            if step == "side":
                return f"at the {v} end"
            if step == "orientation":
                return "turned 0° (as printed)" if v == 0 else "turned 180° (upside down)"
            if step == "card":
                return self.label(v)
        if game == "fierce-women":
            if step == "pile":
                piles = self.view.get("piles") or []
                top = piles[v].get("top") if isinstance(v, int) and v < len(piles) else None
                where = ["left", "middle", "right"][v] if isinstance(v, int) and v < 3 else str(v)
                return f"the {where} pile: {self.label(top) if top else 'empty'}"
            if step == "column":
                if v == "new":
                    return "a new column"
                tables = self.view.get("tables") or []
                table = tables[you] if you is not None and you < len(tables) else []
                col = table[v] if isinstance(v, int) and v < len(table) else None
                kind = self.category(col["category"]) if col and col.get("category") else "no single category"
                held = f" ({kind}: {', '.join(col['cards'])})" if col else ""
                return f"column {v + 1}{held}"
            if step == "card":
                return self.label(v)
            if step == "cards":
                return " and ".join(self.label(c) for c in v)
            if step == "columns":
                return " ".join(f"[{' '.join(map(str, c))}]" for c in v)
        if game == "they-who-were-8":
            if step in ("target", "to", "swap_with"):
                return self.god(v)
            if step in ("god", "as"):
                return f"{self.god(v)}: {(self.comp.get(str(v)) or {}).get('text', '')}"
            if step == "gods":
                return " and ".join(self.god(g) for g in v)
            if step == "card":
                return self.label(v)
            if step == "cards":
                return " and ".join(self.label(c) for c in v)
        return json.dumps(v) if isinstance(v, (dict, list)) else str(v)

    def rules(self, raw: str) -> str:
        """The rules text of a value that is a card, tile or god (shown under its choice), else ''."""
        v = json.loads(raw)
        entry = self.comp.get(v) if isinstance(v, str) else None
        return str(entry.get("text") or "") if entry and not entry.get("drawers") else ""

    def move(self, move: dict[str, Any]) -> str:
        """A whole move in words (the confirm line and the hint)."""
        return " · ".join(self.value(k, value_key(move.get(k)), move) for k in steps_of(move))
