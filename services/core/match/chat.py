"""Chat in a match: seats (and, where the match allows it, spectators) post short plain-text messages that every
reader of the match receives on every channel (long-poll, SSE, WebSocket, replay).

Chat is beside the match, not part of it: posting never changes the match's ``version`` (a move decided at a
version stays valid after a chat). It lives in the match's own Cluster slot and expires with it:

* ``match:{id}:chat`` — a list, message ``n`` at index ``n - 1``: ``{"seat", "text", "preset", "at",
  "redacted"}`` (its ``id`` is its position, so appending needs no JSON in Lua);
* ``match:{id}:chat:events`` — the chat's *topic*: one entry per change (a message or a redaction), id
  ``<seq>-1`` with ``kind`` and ``id``, announced on the events channel as a match's versions are (see
  :mod:`.events`), so the gateway's hub wakes chat waiters exactly as it wakes move waiters;
* ``match:{id}:chat:rate:<speaker>`` — a sorted set of the speaker's messages in the rate window.

The store's compare-and-set gives both chat keys the match's TTL at every update, and each chat write copies the
match's TTL, so chat never outlives its match (nor dies before it).

Limits (the contract's ``limits.py`` states the same numbers; ``tests/contract/test_limits.py`` holds them
equal): text 1..:data:`TEXT_MAX` characters after stripping surrounding whitespace, no control characters;
``MEEPLE_CHAT_RATE`` messages per ``MEEPLE_CHAT_RATE_WINDOW_S`` per speaker; ``MEEPLE_CHAT_MAX_MESSAGES`` per
match; ``MEEPLE_CHAT_AFTER_FINISH_S`` seconds of chat after the match finished. Bots never chat: nothing in the
server posts for a seat.
"""

from __future__ import annotations

import json
import time
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import orjson

from services import redisconn
from services.core.access import Caller, MatchAccess
from services.core.errors import DomainError, Kind
from services.core.limits import ip_ident
from services.core.record.store import (
    EVENTS_CHANNEL,
    Match,
    chat_cursor_of,
    chat_keys,
    entry_seq,
    queue_chat_cursor,
    version_key,
)
from services.core.service import Core
from services.core.tenancy import webhooks

#: The longest message (characters, after stripping surrounding whitespace).
TEXT_MAX = 200
#: Entries a chat topic keeps (a reader further behind reads the messages themselves, which are all kept).
TOPIC_KEEP = 2000

_POST = """
local now, window, most, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now - window)
if redis.call('ZCARD', KEYS[3]) >= most then
  local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {-1, tostring(tonumber(oldest[2]) + window - now)}
end
if redis.call('LLEN', KEYS[1]) >= cap then return {-2, '0'} end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[3], now, n)
redis.call('PEXPIRE', KEYS[3], math.ceil(window * 1000) + 1000)
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local seq = 1
if last[1] then seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], seq .. '-1', 'kind', 'message', 'id', n)
redis.call('PUBLISH', ARGV[7], KEYS[2] .. ' ' .. seq .. ' ')
local ttl = redis.call('PTTL', KEYS[4])
for i = 1, 2 do
  if ttl > 0 then redis.call('PEXPIRE', KEYS[i], ttl) else redis.call('PERSIST', KEYS[i]) end
end
if KEYS[5] then redis.call('XADD', KEYS[5], '*', 'record', ARGV[8] .. n .. ARGV[9]) end
return {n, tostring(seq)}
"""

_REDACT = """
local n = tonumber(ARGV[1])
if redis.call('LINDEX', KEYS[1], n - 1) ~= ARGV[2] then return {0, '0'} end
redis.call('LSET', KEYS[1], n - 1, ARGV[3])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local seq = 1
if last[1] then seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], seq .. '-1', 'kind', 'redacted', 'id', n)
redis.call('PUBLISH', ARGV[5], KEYS[2] .. ' ' .. seq .. ' ')
if KEYS[3] then redis.call('XADD', KEYS[3], '*', 'record', ARGV[6]) end
return {1, tostring(seq)}
"""

#: Where a message's id goes in the outbox record the post script completes (``"id":`` then the number).
_ID_MARK = b'"id":-1'


@dataclass
class News:
    """What a reader at chat position ``seq`` (having seen messages up to ``last_id``) has not heard yet."""

    seq: int
    last_id: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    redacted: list[int] = field(default_factory=list)


# -- presets --------------------------------------------------------------------------------------------------

@cache
def _presets() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(resources.files(__package__).joinpath("chat_presets.json").read_text("utf-8"))
    return raw


def presets(game: str) -> list[dict[str, str]]:
    """The game's quick-chat phrases (``chat_presets`` of the catalogue): the common ones, then its own."""
    data = _presets()
    return [dict(p) for p in (*data["common"], *data["games"].get(game, ()))]


def preset_text(game: str, preset: str) -> str:
    """The text of ``game``'s preset ``preset``, or 400 ``bad_chat``."""
    for item in presets(game):
        if item["id"] == preset:
            return item["text"]
    raise DomainError(Kind.MALFORMED, "bad_chat", f"no chat preset {preset!r} for {game} (GET /v1/games lists them)")


# -- checks ---------------------------------------------------------------------------------------------------

def clean_text(text: str) -> str:
    """The text as stored: stripped of surrounding whitespace, 1..TEXT_MAX characters, without control characters
    (Unicode category Cc: they would let one message forge lines or terminal codes in another client)."""
    stripped = text.strip()
    if not stripped:
        raise DomainError(Kind.MALFORMED, "bad_chat", "a chat message needs text (or a preset)")
    if len(stripped) > TEXT_MAX:
        raise DomainError(Kind.MALFORMED, "bad_chat", f"a chat message is at most {TEXT_MAX} characters")
    if any(unicodedata.category(c) == "Cc" for c in stripped):
        raise DomainError(Kind.MALFORMED, "bad_chat", "a chat message may not contain control characters")
    return stripped


def check_open(core: Core, match: Match, now: float) -> None:
    """A finished match takes chat for ``MEEPLE_CHAT_AFTER_FINISH_S`` after it finished, then 409 ``chat_closed``."""
    if match.meta.status != "finished":
        return
    finished_at = match.meta.finished_at
    if finished_at is None:  # finished before the finish time was kept: its last log entry is when
        last = core.store.log(match.id, -1)
        finished_at = last[0]["at"] if last else 0.0
    if now - float(finished_at) > core.config.chat_after_finish_s:
        raise DomainError(Kind.CONFLICT, "chat_closed", f"the match finished more than "
                          f"{core.config.chat_after_finish_s} s ago: its chat is closed")


def speaker_of(caller: Caller, access: MatchAccess) -> str:
    """Whose rate window a message counts in: the seat's, else the spectator's tenant or address."""
    if access.seat is not None:
        return f"s{access.seat}"
    return f"k:{caller.tenant.name}" if caller.tenant is not None else ip_ident(caller.address)


# -- writing --------------------------------------------------------------------------------------------------

def check_body(text: str | None, preset: str | None) -> None:
    if (text is None) == (preset is None):
        raise DomainError(Kind.MALFORMED, "bad_chat", "send either text or a preset")


def post(core: Core, caller: Caller, match: Match, access: MatchAccess, *, text: str | None = None,
         preset: str | None = None) -> dict[str, Any]:
    """The message of ``caller`` (whom the access policy let post as ``access``), as every reader will receive it
    (the door, ``matches.post_chat``, opened the match)."""
    check_body(text, preset)
    now = time.time()
    check_open(core, match, now)
    body = clean_text(text) if text is not None else preset_text(match.game, str(preset))
    message = {"seat": access.seat, "text": body, "preset": preset, "at": round(now, 3), "redacted": False}
    return _append(core, match, speaker_of(caller, access), message, now)


def _append(core: Core, match: Match, speaker: str, message: dict[str, Any], now: float) -> dict[str, Any]:
    cfg, redis = core.config, core.store.redis
    chat, topic = chat_keys(match.id)
    script_keys = [chat, topic, rate_key(match.id, speaker), version_key(match.id)]
    head, tail = b"", b""
    if match.meta.tenant:  # its webhook: appended to the outbox by the same script
        webhooks.mark(redis, match.id)
        script_keys.append(webhooks.outbox_key(match.id))
        record = webhooks.outbox_record(match.id, match.version, match.meta,
                                        [{"type": "chat.message", "message": {"id": -1, **message}}])
        head, _, tail = record.partition(_ID_MARK)
        head += b'"id":'
    n, extra = redis.eval(_POST, len(script_keys), *script_keys, orjson.dumps(message), now,
                          cfg.chat_rate_window_s, cfg.chat_rate, cfg.chat_max_messages, TOPIC_KEEP,
                          EVENTS_CHANNEL, head, tail)
    n = int(n)
    if n == -1:
        wait = max(1, int(float(extra) + 0.999))
        raise DomainError(Kind.LIMITED, "chat_rate_limited", f"at most {cfg.chat_rate} chat messages per "
                          f"{cfg.chat_rate_window_s} s; retry in {wait} s", retry_after=wait)
    if n == -2:
        raise DomainError(Kind.CONFLICT, "chat_full", f"the match holds {cfg.chat_max_messages} chat messages, "
                                                      "the most it may")
    return {"id": n, **message}


def redact(core: Core, match: Match, message_id: int) -> None:
    """Replace message ``message_id`` by a redacted one on every channel and in the replay; redacting it again
    changes nothing (the door, ``matches.redact_chat``, let the match's tenant through)."""
    match_id, redis = match.id, core.store.redis
    chat, topic = chat_keys(match_id)
    for _ in range(8):  # the message is compared and replaced in one script; a concurrent redaction wins once
        raw = redis.lindex(chat, message_id - 1) if message_id >= 1 else None
        if raw is None:
            raise DomainError(Kind.NOT_FOUND, "chat_message_not_found", f"no chat message {message_id} in this match")
        current = orjson.loads(raw)
        if current["redacted"]:
            return
        redacted = {**current, "text": None, "preset": None, "redacted": True}
        script_keys, record = [chat, topic], b""
        if match.meta.tenant:
            webhooks.mark(redis, match_id)
            script_keys.append(webhooks.outbox_key(match_id))
            record = webhooks.outbox_record(match_id, match.version, match.meta,
                                            [{"type": "chat.redacted", "id": message_id}])
        done, _ = redis.eval(_REDACT, len(script_keys), *script_keys, message_id, raw, orjson.dumps(redacted),
                             TOPIC_KEEP, EVENTS_CHANNEL, record)
        if int(done) == 1:
            return
    raise DomainError(Kind.CONFLICT, "busy", "the chat changed too often; retry")


# -- reading --------------------------------------------------------------------------------------------------

def rate_key(match_id: str, speaker: str) -> str:
    return f"match:{{{match_id}}}:chat:rate:{speaker}"


def _message(n: int, raw: Any) -> dict[str, Any]:
    doc: dict[str, Any] = orjson.loads(raw)
    return {"id": n, **doc}


def messages(core: Core, match_id: str, after: int = 0) -> list[dict[str, Any]]:
    """The match's messages with an id past ``after``, redacted ones redacted (the replay, a long-poll)."""
    raw = core.store.redis.lrange(chat_keys(match_id)[0], after, -1)
    return [_message(after + i + 1, item) for i, item in enumerate(raw)]


def cursor(core: Core, match_id: str) -> tuple[int, int]:
    """(the chat topic's position, the newest message id) now: where a new reader starts."""
    last, count = redisconn.on_slot(core.store.redis, chat_keys(match_id)[0],
                                    lambda pipe: queue_chat_cursor(pipe, match_id))
    return chat_cursor_of(last, count)


def news(core: Core, match_id: str, seq: int, last_id: int) -> News:
    """What happened in the chat after position ``seq`` for a reader who has the messages up to ``last_id``: the
    newer messages (as they are now) and the redactions of messages it had."""
    chat, topic = chat_keys(match_id)

    def queue(pipe: Any) -> None:
        pipe.xrange(topic, f"({seq}-1" if seq > 0 else "-", "+")
        pipe.lrange(chat, last_id, -1)

    entries, raw = redisconn.on_slot(core.store.redis, chat, queue)
    out = News(entry_seq(entries[-1][0]) if entries else seq, last_id + len(raw),
               [_message(last_id + i + 1, item) for i, item in enumerate(raw)])
    for _, fields in entries:
        n = int(fields[b"id"])
        if fields[b"kind"] == b"redacted" and n <= last_id and n not in out.redacted:
            out.redacted.append(n)
    return out


def poll_part(core: Core, match_id: str, after: int, newest: int | None = None) -> dict[str, Any]:
    """A long-poll's chat: the messages past ``after``, and the ids of every redacted message. ``newest``: the
    newest message id, when the long-poll read it with the match (0: no message at all, so nothing to read)."""
    if newest == 0:
        return {"chat": [], "chat_redacted": []}
    every = messages(core, match_id)
    return {"chat": every[after:], "chat_redacted": [m["id"] for m in every if m["redacted"]]}
