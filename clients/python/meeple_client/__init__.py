"""Meeple's Python SDK: a typed client of the REST API (docs/api.md), sync and asyncio.

``Client`` / ``AsyncClient`` create, join, spectate and matchmake; a ``Match`` is one seat's picture of a
match (version, view, legal moves) and submits moves at the version it read. With ``api_key=`` the client
acts for an app's backend (a tenant): it names its players in seats and reads their history and ratings.
"""

from .aio import AsyncClient, AsyncMatch, AsyncMatchSocket, AsyncTicket
from .client import Client, Match, MatchSocket, Ticket
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
    TransportUnavailable,
    Unauthorized,
    Unavailable,
)
from .models import (
    ChatMessage,
    DeadLetter,
    EventsDoc,
    Game,
    Hint,
    HistoryDoc,
    HistoryMatch,
    MatchDoc,
    Rating,
    RatingsDoc,
    ReplayDoc,
    TicketDoc,
    Webhook,
)

__all__ = ["ApiError", "AsyncClient", "AsyncMatch", "AsyncMatchSocket", "AsyncTicket", "BadRequest", "ChatMessage",
           "Client", "Conflict", "DeadLetter", "EventsDoc", "Forbidden", "Game", "Hint", "HistoryDoc", "HistoryMatch",
           "IllegalMove", "Match", "MatchDoc", "MatchSocket", "MeepleError", "NotFound", "NotYourTurn", "RateLimited",
           "Rating", "RatingsDoc", "ReplayDoc", "StaleVersion", "Ticket", "TicketDoc", "TransportError",
           "TransportUnavailable", "Unauthorized", "Unavailable", "Webhook"]
