"""Text renderings of each game's view (docs/games/*.md) and short labels for moves, for terminals.

Cards, tiles and gods are named from the game's component catalogue (``GET /v1/games/{game}``, indexed by
``meeple_client.chooser.index_components``) where the caller gives it: ``W12 Ada Lovelace`` rather than a bare
``W12``, a Sideboards card with its drawers, as the browser page shows them."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from typing import Any

#: id -> catalogue entry; empty: ids are shown bare.
Names = Mapping[str, Mapping[str, Any]]
Label = Callable[[Any], str]


def labeller(names: Names | None) -> Label:
    """A card's label: ``W12 Ada Lovelace``; a Sideboards card ``S40(red/knob ...)`` (its 5 drawers, top to
    bottom: colour/handle); the bare id where the catalogue does not know it."""
    def label(cid: Any) -> str:
        entry = (names or {}).get(str(cid)) if cid is not None else None
        if not entry:
            return "-" if cid is None else str(cid)
        if entry.get("drawers"):
            drawers = " ".join(f"{d['colour']}/{d['handle']}" for d in entry["drawers"])
            return f"{cid}({drawers})"
        name = str(entry.get("name") or "")
        shown = name if str(cid) in name else f"{cid} {name}"
        if entry.get("categories"):  # a woman: her categories are what a player plans with
            shown += f" ({', '.join(category_name(names, c) for c in entry['categories'])})"
        return shown
    return label


def category_name(names: Names | None, cat: Any) -> str:
    """A Fierce Women category in words (the catalogue's name: ``Human rights``, not ``human_rights``)."""
    entry = (names or {}).get(str(cat))
    return str(entry.get("name")) if entry and entry.get("name") else str(cat).replace("_", " ")


def _bare(cid: Any) -> str:
    return "-" if cid is None else str(cid)


def identity(game: str, seat: int | None, players: int) -> str:
    """Who the viewer is in the game's own terms, as the page says it: a colour and side, a team, the automa."""
    if seat is None:
        return "you are watching"
    if game == "clash":
        return (f"you are seat {seat}: {'Green (Jihad)' if seat else 'Blue (McWorld)'}, your tiles point "
                f"{'north' if seat else 'south'}")
    if game == "they-who-were-8":
        return f"you are seat {seat}, team {seat % 2} with seat {(seat + 2) % 4}"
    if game == "fierce-women" and players == 2:
        return f"you are seat {seat}; seat 2 is the automa"
    return f"you are seat {seat}"

SUPPORT_ARROW = {"blue": "v", "green": "^"}  # a tile's tip: blue points south (row 2), green north


def _fmt(value: Any) -> str:
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f"[{value[0]},{value[1]}]"
    if isinstance(value, list):
        return "[" + " ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        if set(value) == {"god"}:
            return str(value["god"])
        return "{" + " ".join(f"{k}={_fmt(v)}" for k, v in value.items()) + "}"
    return "-" if value is None else str(value)


def describe_move(move: dict[str, Any]) -> str:
    """A one-line label: the move type, then its fields in the spec's order (``place B1 own [0,0] ...``)."""
    parts = [str(move.get("type", "?"))]
    for key, value in move.items():
        if key == "type":
            continue
        if key == "effect" and value is None:
            parts.append("no effect")
        elif key in ("tile", "card", "cards", "god", "pile"):
            parts.append(_fmt(value))
        else:
            parts.append(f"{key}={_fmt(value)}")
    return " ".join(parts)


def _clash(view: dict[str, Any], label: Label = _bare) -> list[str]:
    lines = [f"CLASH  game {view.get('game_no')}  phase {view.get('phase')}  move {view.get('move_no')}  "
             f"wins blue {view['wins'][0]} - green {view['wins'][1]}",
             "        col 0     col 1     col 2"]
    for r, row in enumerate(view["board"]):
        cells = []
        for cell in row:
            if cell is None:
                cells.append("  .  ")
            elif cell["face"] == "down":
                cells.append(f"({cell['tile']})")
            else:
                arrow = SUPPORT_ARROW.get(cell["supports"], "?")
                cells.append(f"{cell['tile']}{arrow}{'*' if cell['security'] else ''}")
        side = "  <- blue's side" if r == 0 else "  <- green's side" if r == 2 else ""
        lines.append(f"row {r}   " + "".join(c.ljust(10) for c in cells) + side)
    lines.append("(v supports blue, ^ supports green, * Security, (..) face down)")
    up = [c["tile"] for row in view["board"] for c in row if c and c.get("face") == "up"]
    if up and label is not _bare:
        lines.append(f"on the board: {', '.join(label(t) for t in up)}")
    for seat, zone in enumerate(view["zones"]):
        name = "blue " if seat == 0 else "green"
        hidden = ([label(t) for t in zone["hidden"]] if zone.get("hidden") else [f"?x{zone['hidden_count']}"]) \
            if zone.get("hidden_count") else []
        lines.append(f"{name} zone: {', '.join(label(t) for t in zone['open']) or '-'}"
                     + (f"  hidden: {', '.join(hidden)}" if hidden else ""))
    lines.append(f"neutral zone: {', '.join(label(t) for t in view.get('neutral_zone') or []) or '-'}   removed: "
                 f"{', '.join(label(t) for t in view.get('removed') or []) or '-'}")
    return lines


def _sideboards(view: dict[str, Any], label: Label = _bare) -> list[str]:
    goals = view.get("goals", {})
    lines = [f"SIDEBOARDS  step {view.get('step')}  phase {view.get('phase')}  deck {view.get('deck_count')}  "
             f"goals colour {goals.get('colour')} handle {goals.get('handle')} row {goals.get('row')}"]
    for seat, dresser in enumerate(view["dressers"]):
        cards = " ".join(f"{c['card']}{'^' if c['orientation'] == 0 else 'v'}" for c in dresser) or "-"
        prov = view.get("provisional", [{}] * (seat + 1))[seat]
        done = " (submitted)" if view.get("submitted", [False] * (seat + 1))[seat] else ""
        lines.append(f"seat {seat} dresser: {cards}   colour {prov.get('colour_count')} handle "
                     f"{prov.get('handle_count')} row {prov.get('row_drawers')}  exchange "
                     f"{view.get('exchange', ['?'] * (seat + 1))[seat]}{done}")
    if "hand" in view:
        lines.append(f"your hand: {' '.join(label(c) for c in view['hand'])}")
        if label is not _bare:
            lines.append("(each card's drawers from top to bottom, as printed: colour/handle)")
    return lines


def _fierce_women(view: dict[str, Any], label: Label = _bare, names: Names | None = None) -> list[str]:
    where = ("left", "middle", "right")
    lines = [f"FIERCE WOMEN  turn {view.get('turn')}"]
    for i, p in enumerate(view["piles"]):
        lines.append(f"  {where[i] if i < 3 else i} pile ({p['size']} {'card' if p['size'] == 1 else 'cards'}): "
                     f"{label(p['top']) if p['top'] else 'empty'}")
    now = view.get("points_now") or []
    for seat, table in enumerate(view["tables"]):
        hand: dict[str, Any] = view["hands"][seat] if seat < len(view["hands"]) else {"size": 0, "known": []}
        who = "the automa" if view.get("automa_seat") == seat else f"seat {seat}"
        mine = "your hand" if view.get("viewer") == seat else "hand"
        points = f", {now[seat]} points now" if seat < len(now) else ""
        lines.append(f"{who}{' (you)' if view.get('viewer') == seat else ''}{points}: {hand['size']} in hand"
                     + (f"; {mine}: {', '.join(label(c) for c in hand['cards'])}" if "cards" in hand else "")
                     + (f"; drawn face up from the piles: {', '.join(label(c) for c in hand['known'])}"
                        if hand.get("known") and "cards" not in hand else ""))
        for col, column in enumerate(table):
            shared = [category_name(names, c) for c in column.get("common") or []]
            what = (f"collects {category_name(names, column['category'])}" if column.get("category")
                    else f"no single category (they share {', '.join(shared)})" if shared
                    else "no single category (they share none)")
            pts = f", {column['points']} points now" if "points" in column else ""
            lines.append(f"    column {col + 1}: {', '.join(label(c) for c in column['cards'])}   ({what}{pts})")
    if view.get("discard"):
        lines.append(f"discard: {', '.join(label(c) for c in view['discard'])}")
    lines.append("(a column scores only while its women share exactly one category; each woman in it scores as "
                 "many points as there are such columns of that category on all tables)")
    return lines


def _they_who_were_8(view: dict[str, Any], label: Label = _bare) -> list[str]:
    lines = [f"THEY WHO WERE 8  round {view.get('round')}/{view.get('max_rounds')}  phase {view.get('phase')}  "
             f"supply glory {view['supply']['glory']} infamy {view['supply']['infamy']}"]
    for team, seats in enumerate(view["teams"]):
        gods = [g for g in view["gods"] if g["owner"] in seats]
        lines.append(f"team {team} (seats {seats[0]}+{seats[1]}): glory {sum(g['glory'] for g in gods)}  "
                     f"infamy {sum(g['infamy'] for g in gods)}")
    lines.append("gods: " + "  ".join(
        f"{label(g['id'])}(s{g['owner']} +{g['glory']}/-{g['infamy']}{' used' if g['used'] else ''})"
        for g in view["gods"]))
    lines.append(f"hand sizes: {' / '.join(str(n) for n in view['hand_sizes'])}   pile {view.get('pile_size')}")
    if view.get("hand") is not None:
        lines.append(f"your hand: {', '.join(label(c) for c in view['hand']) or '-'}")
    if view.get("current_play"):
        play = view["current_play"]
        target = play.get("target")
        target = target.get("god") if isinstance(target, dict) and set(target) == {"god"} else target
        lines.append(f"in play: seat {play['seat']} plays {label(play['card'])} on "
                     f"{label(target) if isinstance(target, str) else _fmt(target)}")
    return lines


RENDERERS: dict[str, Callable[[dict[str, Any], Label], list[str]]] = {
    "clash": _clash, "sideboards": _sideboards, "fierce-women": _fierce_women, "they-who-were-8": _they_who_were_8}


def render_view(game: str, view: dict[str, Any] | None, names: Names | None = None) -> list[str]:
    if view is None:
        return ["(no view yet)"]
    try:
        if game == "fierce-women":
            return _fierce_women(view, labeller(names) if names else _bare, names)
        return RENDERERS[game](view, labeller(names) if names else _bare)
    except (KeyError, IndexError, TypeError):  # an unknown game or a shape this version does not know
        return [f"{k}: {_fmt(v)}" for k, v in view.items() if k != "log"]


def render_clock(clock: dict[str, Any] | None) -> str:
    if not clock or clock.get("mode") == "none":
        return "clock: none"
    parts = []
    for seat in clock.get("seats", []):
        left = seat.get("remaining_s")
        shown = "-" if left is None else f"{left:.0f}s"
        parts.append(f"seat {seat['seat']} {shown}{' (running)' if seat['running'] else ''}")
    return f"clock ({clock['mode']}): " + ", ".join(parts)


def render_log(entries: list[dict[str, Any]], last: int = 8, width: int = 100) -> list[str]:
    """The last entries of a match's log, in the server's words for this seat (``text`` of each entry), each
    wrapped at word boundaries to ``width`` columns (a terminal would cut a long line mid-word)."""
    lines = []
    for entry in entries[-last:]:
        who = " (bot)" if entry.get("by") == "bot" else ""
        text = f"v{entry.get('version')}{who} {entry.get('text') or str(entry.get('kind')).replace('_', ' ')}"
        lines.extend(textwrap.wrap(text, width=max(20, width), initial_indent="  ", subsequent_indent="      ",
                                   break_long_words=False, break_on_hyphens=False))
    return lines


def _seat_list(seats: list[Any]) -> str:
    return ", ".join(str(s) for s in seats) if seats else "none"


def render_result(outcome: dict[str, Any] | None, result: dict[str, Any] | None, seat: int | None) -> str:
    """The result screen: the verdict, why the game ended, and each seat's (or team's) score breakdown."""
    explained = (result or {}).get("explanation")
    winners = (explained or {}).get("winners") or (outcome or {}).get("winners") or (result or {}).get("winners") or []
    verdict = ("you won" if len(winners) == 1 else "you share the win") if seat in winners else (
        "you lost" if seat is not None else "finished")
    lines = [f"GAME OVER: {verdict}. winners: seat{'s' if len(winners) != 1 else ''} {_seat_list(winners)}"]
    if not explained:  # a forfeit or an abandonment ended it early: the game's own score sheet is null
        scores = (outcome or {}).get("scores") or []
        if scores:
            lines.append("scores: " + " / ".join(f"seat {i}: {s:g}" for i, s in enumerate(scores)))
        return "\n".join(lines)
    lines.append(str(explained.get("headline", "")))
    reason = explained.get("reason_text") or str(explained.get("end_reason", "")).replace("_", " ")
    lines.append(f"why it ended: {reason}")
    for game in explained.get("games") or []:
        lines.append(f"  {game['text']}")
    for row in (explained.get("teams") or []) + (explained.get("seats") or []):
        mark = " (you)" if row.get("seat") == seat and seat is not None else ""
        lines.append(f"  {row['label']}{mark}: {row['score']} {row.get('unit', 'points')}")
        for part in row.get("breakdown", []):
            lines.append(f"      {part['label']}: {part['value']}")
    return "\n".join(lines)
