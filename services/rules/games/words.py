"""Words for people, for every game: the component catalogue, a description of every move for every viewer,
and the result explained.

* ``components(game_id)``: every card, tile, god and goal with its name, colours or categories and its rules
  text, built from the spec's data file (``data/*.json``, the same file as ``shared/rules/data``) and the
  spec's own texts. Each game's ``text`` module cites the spec sections it follows.
* ``describe(game, before, seat, move, after, viewer)``: ``{"text", "summary"}`` for one viewer. A description
  is made **only from that viewer's own views** before and after the move (and from the move itself where the
  game says a move of that type is public once played, or the viewer made it), so it can never say more than
  the viewer's views say: the spec's "Hidden information" section holds for descriptions by construction.
* ``explain(game, state)``: the end reason, each seat's score breakdown, teams and the automa where a game has
  them, each game of a CLASH match; ``result_document`` is the engine's ``result`` with ``"explanation"`` added.

Nothing here imports from the project outside ``services.rules.games`` (the layer rule: games import nothing).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import cache
from types import ModuleType
from typing import Any

from .base import Game, JSONDict, Move

#: Where each game's words live (a ``text`` module beside the engine, or a sibling for one-module games).
_TEXT_MODULES = {
    "clash": "clash.text",
    "sideboards": "sideboards.text",
    "fierce-women": "fierce_women.text",
    "they-who-were-8": "they_who_were_8.text",
}


@cache
def _text(game_id: str) -> ModuleType:
    try:
        name = _TEXT_MODULES[game_id]
    except KeyError:
        raise KeyError(f"no words for game {game_id!r}") from None
    return importlib.import_module(f"{__package__}.{name}")


@cache
def components(game_id: str) -> JSONDict:
    """The game's component catalogue (built once per process: it depends only on the data file)."""
    doc: JSONDict = _text(game_id).components()
    return doc


def visible_move(game_id: str, seat: int, move: Move, viewer: int | None) -> Move:
    """The move as ``viewer`` may know it: whole for its own seat and for public move types, else its type only."""
    if viewer == seat or move.get("type") in _text(game_id).PUBLIC_MOVES:
        return move
    return {"type": move.get("type")}


def describe(game: Game[Any], before: Any, seat: int, move: Move, after: Any, viewer: int | None, *,
             before_view: JSONDict | None = None, after_view: JSONDict | None = None) -> JSONDict:
    """``{"text": ..., "summary": {...}}``: what ``seat``'s ``move`` did, told to ``viewer`` (None: a spectator).

    ``before_view``/``after_view`` may be given when the caller has them already (they must be
    ``game.view(before, viewer)`` and ``game.view(after, viewer)``).
    """
    if before_view is None:
        before_view = game.view(before, viewer)
    if after_view is None:
        after_view = game.view(after, viewer)
    text, summary = _text(game.id).describe(before_view, after_view, seat, visible_move(game.id, seat, move, viewer),
                                            viewer)
    return {"text": text, "summary": {"seat": seat, "type": move.get("type"), **summary}}


def describe_all(game: Game[Any], before: Any, seat: int, move: Move, after: Any,
                 after_views: Mapping[int | None, JSONDict] | None = None) -> dict[int | None, JSONDict]:
    """The description for every seat and the spectator (``None``), keyed by viewer."""
    viewers: list[int | None] = [None, *range(game.seat_count(after))]
    out: dict[int | None, JSONDict] = {}
    for viewer in viewers:
        given = after_views.get(viewer) if after_views is not None else None
        out[viewer] = describe(game, before, seat, move, after, viewer, after_view=given)
    return out


def explain(game: Game[Any], state: Any) -> JSONDict | None:
    """The finished game's result explained (None while it runs)."""
    if not game.is_over(state):
        return None
    result = game.result(state)
    if result is None:
        return None
    doc: JSONDict = _text(game.id).explain(result, game.view(state, None))
    return doc


def result_document(game: Game[Any], state: Any) -> JSONDict | None:
    """The engine's ``result`` plus ``"explanation"`` once the game is over (what the rules service returns)."""
    result = game.result(state)
    if result is None or not game.is_over(state):
        return result
    return {**result, "explanation": explain(game, state)}


# -- shared phrasing --------------------------------------------------------------------------------

#: The multiplication sign of score breakdowns.
TIMES = "\u00d7"


def listing(items: Sequence[str], conj: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    items = [i for i in items if i]
    if not items:
        return ""
    if len(items) == 1:
        return items[0]
    return f"{', '.join(items[:-1])} {conj} {items[-1]}"


def count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def sentence(text: str) -> str:
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."


def join_sentences(parts: Sequence[str]) -> str:
    return " ".join(sentence(p) for p in parts if p and p.strip())


def ranking_of(scores: Sequence[float]) -> list[int]:
    """Rank = 1 + the number of seats with a strictly higher score."""
    return [1 + sum(1 for other in scores if other > s) for s in scores]
