"""Words for every log entry, per viewer (issue 33): what the events and the replay give each reader.

A move's words are written by the game's engine (the rules service's ApplyMove with ``describe``), one
description per viewer (the spectator and every seat), and stored in the move's log entry under ``words``;
a reader gets only its own (:func:`for_viewer`). Entries that are not moves (created, joined, left, timeout,
reclaimed, abandoned, rematch, resign) get their words here, game-agnostic.
"""

from __future__ import annotations

from typing import Any

#: The key a stored entry keeps its descriptions under: ``{"-1": {...}, "0": {...}, ...}``.
WORDS_KEY = "words"


def stored(descriptions: dict[int, Any]) -> dict[str, Any]:
    """What a move's log entry stores of the rules service's descriptions (nothing if there are none)."""
    if not descriptions:
        return {}
    return {WORDS_KEY: {str(viewer): doc for viewer, doc in descriptions.items()}}


def _seat(seat: Any, viewer: int | None) -> str:
    if seat is None:
        return "someone"
    return "you" if seat == viewer else f"seat {seat}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def non_move_text(entry: dict[str, Any], viewer: int | None) -> str:
    """Words for an entry the server itself made (game-agnostic)."""
    kind, seat = entry.get("kind"), entry.get("seat")
    who = _seat(seat, viewer)
    if kind == "created":
        return "The match was created."
    if kind == "joined":
        return f"{_capital(who)} joined the match."
    if kind == "left":
        whose = "your" if seat == viewer else "that"
        return f"{_capital(who)} left the match; a bot plays {whose} seat if the match goes on."
    if kind == "timeout":
        policy = entry.get("policy")
        then = {"bot": "a bot plays for it until it is reclaimed", "forfeit": "the seat forfeits",
                "random": "a random legal move was played for it"}.get(str(policy), f"policy: {policy}")
        return f"{_capital(who)} ran out of time; {then}."
    if kind == "reclaimed":
        return f"{_capital(who)} took the seat back from the bot."
    if kind == "abandoned":
        return "The match was abandoned: no player acted for too long."
    if kind == "aborted":
        return "The match was ended without a result (its tournament round's deadline, or a cancelled tournament)."
    if kind == "rematch":
        return f"{_capital(who)} started a rematch."
    if kind in ("resign", "resigned"):
        if entry.get("to_act") == []:  # the resignation ended the match: nothing is left to play
            return f"{_capital(who)} resigned, so the match is over."
        return f"{_capital(who)} resigned; an easy bot plays the seat's remaining decisions and its side cannot win."
    return f"{kind} ({who})."


def for_viewer(entry: dict[str, Any], viewer: int | None, move_visible: bool) -> dict[str, Any]:
    """``{"text", "summary"}`` of ``entry`` for ``viewer`` (None: a spectator), never another viewer's.

    A move entry stored before descriptions existed gets plain words (the move's type only when the reader
    may see the move: ``move_visible``)."""
    if entry.get("kind") == "move":
        words = entry.get(WORDS_KEY) or {}
        mine = words.get("-1" if viewer is None else str(viewer))
        if mine is not None:
            return {"text": mine.get("text", ""), "summary": mine.get("summary", {})}
        kind = (entry.get("move") or {}).get("type") if move_visible else None
        text = f"{_capital(_seat(entry.get('seat'), viewer))} moved" + (f" ({kind})." if kind else ".")
        return {"text": text, "summary": {"seat": entry.get("seat"), "type": kind}}
    summary = {"kind": entry.get("kind"), "seat": entry.get("seat")}
    if entry.get("kind") == "timeout":
        summary["policy"] = entry.get("policy")
    if entry.get("kind") == "rematch" and entry.get("rematch"):
        summary["rematch"] = entry["rematch"]
    return {"text": non_move_text(entry, viewer), "summary": summary}
