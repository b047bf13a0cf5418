"""Meeple's Python SDK: a typed client of the REST API (docs/api.md), sync and asyncio.

``Client`` / ``AsyncClient`` create, join, spectate and matchmake; a ``Match`` is one seat's picture of a
match (version, view, legal moves) and submits moves at the version it read.
"""

from .aio import AsyncClient, AsyncMatch, AsyncTicket
from .client import Client, Match, Ticket
from .errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    IllegalMove,
    MeepleError,
    NotFound,
    NotYourTurn,
    RateLimited,
    StaleVersion,
    TransportError,
    Unauthorized,
    Unavailable,
)
from .models import EventsDoc, Game, Hint, MatchDoc, ReplayDoc, TicketDoc

__all__ = ["ApiError", "AsyncClient", "AsyncMatch", "AsyncTicket", "BadRequest", "Client", "Conflict", "EventsDoc",
           "Forbidden", "Game", "Hint", "IllegalMove", "Match", "MatchDoc", "MeepleError", "NotFound", "NotYourTurn",
           "RateLimited", "ReplayDoc", "StaleVersion", "Ticket", "TicketDoc", "TransportError", "Unauthorized",
           "Unavailable"]
