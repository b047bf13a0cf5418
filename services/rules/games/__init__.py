"""The registry of games: id -> engine. Each game is one module exposing ``GAME``."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from .base import Game, IllegalMove, InvalidOptions, InvalidState, RulesError

#: Modules of the registered games, in catalogue order.
_MODULES: tuple[str, ...] = (
    "fierce_women",
    "sideboards",
    "they_who_were_8",
    "clash",
)


def _load() -> dict[str, Game[Any]]:
    games: dict[str, Game[Any]] = {}
    for name in _MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        _search_own_folder(module)
        game: Game[Any] = module.GAME
        games[game.id] = game
    return games


def _search_own_folder(module: ModuleType) -> None:
    """A game that is a package finds its submodules in its own folder.

    A package compiled by mypyc into the shared library ``services/rules/hotpath__mypyc`` gets a ``__path__``
    made relative to that library's folder (``services/rules/services/rules/games/clash``): its modules that the
    package itself does not import (the words, ``clash/text.py``) would not be found. The import system's own
    spec has the right folder."""
    spec = module.__spec__
    if spec is not None and spec.submodule_search_locations is not None:
        module.__path__ = list(spec.submodule_search_locations)


GAMES: dict[str, Game[Any]] = _load()


def get_game(game_id: str) -> Game[Any]:
    """The engine for ``game_id``; ``KeyError`` names the known ids."""
    try:
        return GAMES[game_id]
    except KeyError:
        raise KeyError(f"unknown game {game_id!r}; known: {', '.join(GAMES)}") from None


__all__ = ["GAMES", "Game", "IllegalMove", "InvalidOptions", "InvalidState", "RulesError", "get_game"]
