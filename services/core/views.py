"""The documents a reader asks for — a seat's view, its legal moves — at the version it loaded.

They come from the cache the compare-and-set keeps beside the state (``MatchStore.derived``), passed
through as JSON text (``orjson.Fragment``) without being decoded; only when the cache cannot answer
(a newer state landed meanwhile, or the match predates the cache) is the rules service asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from .store import Match

if TYPE_CHECKING:
    from services.gateway.context import Gateway

SPECTATOR = -1


def seat_view(gw: Gateway, match: Match, seat: int | None) -> Any:
    key = SPECTATOR if seat is None else seat
    cached = gw.store.derived(match, f"view:{key}")
    if cached is not None:
        return orjson.Fragment(cached)
    return gw.rules.view(match.game, match.state, seat)


def seat_legal_moves(gw: Gateway, match: Match, seat: int) -> Any:
    """The seat's legal moves; [] without a rules call when it has nothing to decide (not to act, the match
    not running, or a bot plays the seat)."""
    info = match.meta["seats"][seat]
    if (seat not in match.meta["to_act"] or match.meta["status"] != "active" or info["kind"] == "bot"
            or info.get("control") == "bot"):
        return []
    cached = gw.store.derived(match, f"legal:{seat}")
    if cached is not None:
        return orjson.Fragment(cached)
    return gw.rules.legal_moves(match.game, match.state, seat)
