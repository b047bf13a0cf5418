"""Speaking in a match's chat, and its tenant redacting what was said (the rules are in :mod:`.chat`)."""

from __future__ import annotations

from typing import Any

from services.core.access import (
    Action,
    Caller,
    authorize_tenant,
)
from services.core.match import chat
from services.core.match.opener import open_match
from services.core.service import Core


def post_chat(core: Core, caller: Caller, match_id: str, *, text: str | None = None,
              preset: str | None = None) -> dict[str, Any]:
    """``POST /v1/matches/{id}/chat`` (and the WebSocket's ``chat``): the caller's message, as a seat or, where the
    match allows it, as a spectator (see :mod:`.chat`)."""
    chat.check_body(text, preset)
    opened = open_match(core, caller, match_id, Action.CHAT)
    return chat.post(core, caller, opened.match, opened.access, text=text, preset=preset)


def redact_chat(core: Core, caller: Caller, match_id: str, message_id: int) -> None:
    """``DELETE /v1/matches/{id}/chat/{message_id}``: the match's tenant's key redacts a message."""
    authorize_tenant(caller)  # a key first: without one, nothing is said of the match
    chat.redact(core, open_match(core, caller, match_id, Action.MODERATE).match, message_id)
