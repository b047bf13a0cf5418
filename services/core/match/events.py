"""What a waiter hears of the store, without the store's key layout (the gateway's hub asks here).

Every change the store makes to a match (the match script), to its chat (the chat scripts: :func:`chat_topic`, at
the chat's own positions) or a matchmaking ticket is a *topic* passing a version: an entry on the topic's stream
(id ``<version>-1``, or Redis's own for a ticket, with the ``wake`` of a match's version) and one message
``<topic> <version> <wake>`` on the events channel. A waiter names the topic it waits on (:func:`match_topic`,
``matchmaker.wake_key`` for a ticket); the hub subscribes once (:func:`subscribe`), turns each message into the
stream entry it announces (:func:`published_entry`), reads what a subscription could not hear
(:func:`read_after`) and asks whether a version is a given seat's turn (:func:`wakes_seat`).
"""

from __future__ import annotations

from typing import Any

from services.core import watching
from services.core.access import Caller
from services.core.limits import ip_ident, token_ident
from services.core.record.store import EVENTS_CHANNEL, chat_keys, events_key, parse_wake, your_turn_or_over

#: One stream entry as Redis returns it: (``b"<version>-1"``, its fields, ``b"wake"`` among them for a match).
Entry = tuple[bytes, dict[bytes, bytes]]

__all__ = ["Entry", "chat_topic", "match_topic", "published_entry", "read_after", "subscribe", "waiter_of",
           "wakes_seat", "watch_topic", "your_turn_or_over"]


def match_topic(match_id: str) -> str:
    """The topic a match's new versions are heard on."""
    return events_key(match_id)


def watch_topic(token_id: str) -> str:
    """The topic a watch token's revocation is heard on (it passes version 1 then)."""
    return watching.topic(token_id)


def chat_topic(match_id: str) -> str:
    """The topic a match's chat changes are heard on (a message or a redaction: position ``<seq>``, no wake), so
    that a waiter wakes for chat exactly as for a new version (see :mod:`.chat`)."""
    return chat_keys(match_id)[1]


def subscribe(pubsub: Any) -> None:
    """Subscribe a Redis pub/sub connection to the events channel every topic is announced on."""
    pubsub.subscribe(EVENTS_CHANNEL)


def published_entry(message: bytes) -> tuple[bytes, list[Entry]] | None:
    """The topic and stream entry a message on the events channel announces; None for a message of another shape."""
    try:
        topic, version, wake = message.split(b" ", 2)
        int(version)
    except ValueError:
        return None
    return topic, [(version + b"-1", {b"wake": wake} if wake else {})]


def read_after(pipe: Any, topic: str, after: int, count: int) -> None:
    """Queue on ``pipe`` the read of ``topic``'s newest ``count`` entries past version ``after`` (newest first)."""
    pipe.xrevrange(topic, "+", f"({after}-1" if after >= 0 else "-", count=count)


def wakes_seat(wake: bytes, seat: int) -> bool:
    """Whether a version whose entry carries ``wake`` is ``seat``'s turn to decide, or the end of the match."""
    return your_turn_or_over(*parse_wake(wake), seat)


def waiter_of(caller: Caller) -> str:
    """Whose waiters these are, for the per-client cap: the seat token (hashed), or the address without one."""
    return token_ident(caller.token) if caller.token else ip_ident(caller.address)
