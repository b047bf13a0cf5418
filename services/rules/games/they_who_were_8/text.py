"""They Who Were 8 in words: gods and action cards, move descriptions, the result explained.

Spec ``shared/rules/they-who-were-8.md``: "Components" (gods G1-G8 and action cards A01-A10 with their texts
from the data file), "Effects" (the powers), "Hidden information" (the per-viewer redacted log events, which is
all a description reads: hidden cards are ``null`` there), "End and scoring" (team points, end reasons).
"""

from __future__ import annotations

from typing import Any

from ..base import JSONDict, Move
from ..words import TIMES, count, join_sentences, listing
from .model import DATA

GODS: dict[str, JSONDict] = {g["id"]: g for g in DATA["gods"]}
CARDS: dict[str, JSONDict] = {a["id"]: a for a in DATA["actions"]}
TEAMS: list[list[int]] = DATA["setup"]["teams"]
#: Public once played: a card played, a power used, a window declined (the log shows them to everyone).
PUBLIC_MOVES = frozenset({"play", "use_power", "decline"})
WINDOWS = {"turn_start": "before the turn", "targeted": "when a card was aimed", "passing": "at passing",
           "dealing": "at dealing"}
REASONS = {"glory_exhausted": "the glory supply ran out", "infamy_exhausted": "the infamy supply ran out",
           "both_exhausted": "both supplies ran out", "round_limit": "the round limit was reached"}
WINDOW_NAMES = {"turn_start": "turn start", "targeted": "targeted", "passing": "passing", "dealing": "dealing",
                "endymina_discard": "Endymina", "kymele_take": "Kymele"}


def components() -> JSONDict:
    """Gods with their power texts and action cards with their effects (spec "Components", data file)."""
    gods = [{"id": g["id"], "kind": "god", "name": g["name"], "title": g["title"], "full_name": g["full_name"],
             "name_pl": g["name_pl"], "aliases": g.get("aliases", []), "power": g["power_key"],
             "window": g["window"], "text": g["text"]} for g in DATA["gods"]]
    actions = [{"id": a["id"], "kind": "action", "name": a["title"], "title_pl": a["title_pl"],
                "flavour": a["flavour_en"], "always_playable": a["always_playable"],
                "fields": [f["name"] for f in a["fields"]], "text": a["text"]} for a in DATA["actions"]]
    teams = [{"team": i, "seats": list(seats), "colour": ("blue", "green")[i]} for i, seats in enumerate(TEAMS)]
    return {"gods": gods, "actions": actions, "teams": teams,
            "scoring": {k: DATA["scoring"][k] for k in ("per_glory", "per_infamy", "per_power_used")}}


def team_of(seat: int) -> int:
    return next(i for i, t in enumerate(TEAMS) if seat in t)


def who(seat: int | None, viewer: int | None) -> str:
    if seat is None:
        return "someone"
    return "you" if seat == viewer else f"seat {seat} (team {team_of(seat)})"


def god(gid: Any) -> str:
    if isinstance(gid, dict):
        gid = gid.get("god")
    g = GODS.get(str(gid))
    return f"{gid} {g['name']}" if g else str(gid)


def card(cid: Any) -> str:
    c = CARDS.get(str(cid)) if cid is not None else None
    return f"{cid} {c['title']}" if c else "a card"


def cards(ids: Any, what: str = "card") -> str:
    ids = list(ids or [])
    if ids and all(i is not None for i in ids):
        return listing([card(i) for i in ids])
    return count(len(ids), what) if ids else f"no {what}s"


def _owner(view: JSONDict, gid: Any) -> int | None:
    return next((g["owner"] for g in view.get("gods", []) if g["id"] == gid), None)


def _power(e: JSONDict, viewer: int | None) -> str:
    used = god(e["god"])
    as_ = e.get("as")
    acting = GODS.get(str(as_ or e["god"]), {})
    head = f"{who(e['seat'], viewer)} used {used}" + (f" as {god(as_)}" if as_ else "")
    key = acting.get("power_key", "")
    if key == "arystyfan_swap" and e.get("gods"):
        return f"{head}, swapping all tokens of {god(e['gods'][0])} and {god(e['gods'][1])}"
    if key == "kasana_extra_glory" and e.get("target"):
        return f"{head}, putting 1 extra glory on {god(e['target'])}"
    if key == "rymon_redirect" and e.get("new"):
        return f"{head}, redirecting the card from {god(e.get('old'))} to {god(e['new'])}"
    if key == "endymina_draw_two":
        return f"{head}: draw two cards, then discard two"
    if key == "nanos_keep_card":
        return f"{head}: keep their card instead of passing it"
    if key == "kymele_choose_deal":
        return f"{head}: look at four cards of the pile and take one"
    return head


def _event(e: JSONDict, viewer: int | None) -> str:
    kind = e["event"]
    if kind == "round_start":
        verb = "are" if e["first_player"] == viewer else "is"
        return f"Round {e['round']} begins; {who(e['first_player'], viewer)} {verb} First Player"
    if kind == "decline":
        return f"{who(e['seat'], viewer)} used no power ({WINDOWS.get(e['window'], e['window'])})"
    if kind == "power":
        return _power(e, viewer)
    if kind == "redeal":
        mine = e.get("hand")
        return "All hands were shuffled and dealt again" + (f"; your new hand: {cards(mine)}" if mine else "")
    if kind == "draw":
        return f"{who(e['seat'], viewer)} drew {cards(e.get('cards'))}"
    if kind == "discard":
        return f"{who(e['seat'], viewer)} discarded {cards(e.get('cards'))} face down"
    if kind == "play":
        tail = ""
        if e.get("to"):
            tail = f", moving a token to {god(e['to'])}"
        if e.get("swap_with"):
            tail = f", swapping with {god(e['swap_with'])}"
        return f"{who(e['seat'], viewer)} played {card(e['card'])} on {god(e['target'])}{tail}"
    if kind == "resolve":
        changes = []
        for c in e.get("changes", []):
            parts = [f"{'+' if c[k] > 0 else ''}{c[k]} {k}" for k in ("glory", "infamy") if c.get(k)]
            if parts:
                changes.append(f"{god(c['god'])} {' '.join(parts)}")
        supply = e.get("supply", {})
        what = listing(changes) if changes else "nothing changed"
        return (f"{card(e['card'])} resolved: {what} (supply: glory {supply.get('glory')}, "
                f"infamy {supply.get('infamy')})")
    if kind == "keep":
        return f"{who(e['seat'], viewer)} keep{'' if e['seat'] == viewer else 's'} their card this passing"
    if kind == "pass":
        what = card(e["card"]) if e.get("card") else "a card"
        return f"{who(e['from'], viewer)} passed {what} to {who(e['to'], viewer)}"
    if kind == "offer":
        return f"{who(e['seat'], viewer)} looked at {cards(e.get('cards'))} from the pile"
    if kind == "take":
        return f"{who(e['seat'], viewer)} took {card(e['card']) if e.get('card') else 'one of them'}"
    if kind == "deal":
        verb = "were" if e["seat"] == viewer else "was"
        return f"{who(e['seat'], viewer)} {verb} dealt {card(e['card']) if e.get('card') else 'a card'}"
    if kind == "game_end":
        return f"The game is over: {REASONS.get(e.get('reason', ''), e.get('reason'))}"
    return kind


def describe(before: JSONDict, after: JSONDict, seat: int, move: Move, viewer: int | None) -> tuple[str, JSONDict]:
    """Reads only the viewer's redacted log (spec "Hidden information", log events)."""
    events = after.get("log", [])[len(before.get("log", [])):]
    sentences = [_event(e, viewer) for e in events]
    if not sentences:
        sentences = [f"{who(seat, viewer)} made a move ({move.get('type')})"]
    summary: JSONDict = {"events": events}
    if move.get("type") == "play":
        summary.update({k: move[k] for k in ("card", "target", "to", "swap_with") if k in move})
    elif move.get("type") == "use_power":
        summary["god"] = move.get("god")
    return join_sentences(sentences), summary


def explain(result: JSONDict, view: JSONDict) -> JSONDict:
    """Teams' points as 2 x glory - infamy - 2 x powers used (spec "End and scoring")."""
    sc = DATA["scoring"]
    teams = []
    for t in result.get("teams", []):
        breakdown = [{"label": f"glory {t['glory']} {TIMES} {sc['per_glory']}", "value": t["glory"] * sc["per_glory"]},
                     {"label": f"infamy {t['infamy']} {TIMES} {sc['per_infamy']}",
                      "value": t["infamy"] * sc["per_infamy"]},
                     {"label": f"powers used {t['powers_used']} {TIMES} {sc['per_power_used']}",
                      "value": t["powers_used"] * sc["per_power_used"]}]
        teams.append({"team": t["team"], "seats": t["seats"], "label": f"Team {t['team']} (seats "
                      f"{listing([str(s) for s in t['seats']])})", "score": t["points"], "breakdown": breakdown,
                      "glory": t["glory"], "infamy": t["infamy"], "powers_used": t["powers_used"]})
    ranking = result.get("ranking", [])
    seats = []
    for s in result.get("seats", []):
        team = team_of(s["seat"])
        seats.append({"seat": s["seat"], "label": f"Seat {s['seat']} (team {team})", "team": team,
                      "score": result["scores"][s["seat"]],
                      "rank": ranking[s["seat"]] if s["seat"] < len(ranking) else None,
                      "breakdown": [{"label": "glory on own gods", "value": s["glory"]},
                                    {"label": "infamy on own gods", "value": s["infamy"]},
                                    {"label": "powers used", "value": s["powers_used"]}],
                      "unit": "team points"})
    reason = result.get("end_reason") or ""
    wt = result.get("winner_team")
    if wt is None:
        headline = f"The game ended because {REASONS.get(reason, reason)}: a draw, {teams[0]['score']} points each."
    else:
        win, lose = teams[wt], teams[1 - wt]
        by = (f"{count(win['score'], 'point')} to {lose['score']}" if result.get("decided_by") == "points"
              else f"equal points ({win['score']}), more glory ({win['glory']} to {lose['glory']})")
        headline = f"The game ended because {REASONS.get(reason, reason)}. {win['label']} won on {by}."
    return {"end_reason": reason, "reason_text": REASONS.get(reason, reason), "headline": headline,
            "winners": [s for s in range(4) if wt is not None and s in TEAMS[wt]] if wt is not None else [0, 1, 2, 3],
            "decided_by": result.get("decided_by"), "teams": teams, "seats": seats}
