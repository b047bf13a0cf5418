"""The registry of games: id -> engine. Each game is one module exposing ``GAME``."""

from __future__ import annotations

import importlib
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
        game: Game[Any] = importlib.import_module(f"{__name__}.{name}").GAME
        games[game.id] = game
    return games


GAMES: dict[str, Game[Any]] = _load()


def get_game(game_id: str) -> Game[Any]:
    """The engine for ``game_id``; ``KeyError`` names the known ids."""
    try:
        return GAMES[game_id]
    except KeyError:
        raise KeyError(f"unknown game {game_id!r}; known: {', '.join(GAMES)}") from None


__all__ = ["GAMES", "Game", "IllegalMove", "InvalidOptions", "InvalidState", "RulesError", "get_game"]
