"""The games on offer (public): the catalogue, and one game with its components, as the rules service has them,
and its rules for people (guides)."""

from __future__ import annotations

from typing import Any

from services.core import guides
from services.core.access import Caller
from services.core.errors import DomainError, Kind
from services.core.limits import count_request
from services.core.match import chat
from services.core.service import Core


def catalogue(core: Core, caller: Caller) -> dict[str, Any]:
    count_request(core, caller)
    return {"games": [{**game, "chat_presets": chat.presets(game["id"])} for game in core.rules.list_games()]}


def game(core: Core, caller: Caller, game_id: str) -> dict[str, Any]:
    """The game's catalogue entry plus ``components``; 404 ``game_not_found`` for a game not on offer."""
    count_request(core, caller)
    try:
        doc = core.rules.game_components(game_id)
    except DomainError as err:
        if err.code == "unknown_game":
            raise DomainError(Kind.NOT_FOUND, "game_not_found", err.message) from None
        raise
    return {**doc, "rules": guides.rules(game_id), "chat_presets": chat.presets(game_id)}
