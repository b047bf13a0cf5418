"""Watch links: read-only spectator tokens a tenant's key mints for one match, or for one tournament's matches.

A tenant hands them to its app's users, who watch without the tenant proxying every byte. A token reads
``w_<token id>.<secret>``: the ``w_`` prefix tells it from a seat token (``<seat>.<secret>``) and from an API key
(``mk_...``), and the id names its record, so it is checked without a scan. As for API keys, only the SHA-256 of
the whole token is stored: the token exists outside its answer only where the tenant put it.

Keys (each token in its own Redis Cluster slot, ``{<token id>}``):

* ``watch:{<id>}`` — JSON: id, tenant, match_id or tournament_id, hash, player_ids, created_at, expires_at,
  revoked_at. Kept :data:`RETAIN_S` past its expiry, so an expired or revoked token is told so (401 with its own
  code) rather than being unknown; after that it is unknown (401 ``wrong_token``).
* ``watch:{<id>}:events`` — the token's topic: its revocation is one entry (version 1) announced on the events
  channel, so an open SSE stream or WebSocket reading with it ends at once (``services/gateway`` watches it).

The record is read on every request that presents the token (no cache): expiry and revocation hold on the next
request, on every door.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

import orjson

from services import redisconn
from services.core.errors import DomainError, Kind
from services.core.meta import MatchMeta
from services.core.record.store import EVENTS_CHANNEL, hash_token

PREFIX = "w_"
#: How long a record outlives its expiry (its own 401 codes, and ``GET /v1/watch-tokens/{id}``, until then).
RETAIN_S = 7 * 86400
#: The tag a tournament's matches carry (``tournaments.due.TAG_PREFIX``, held equal by a test: the access policy
#: must not import the tournaments, which import the match core and so the policy).
TOURNAMENT_TAG = "tournament:"
#: The version a token's topic passes when it is revoked.
REVOKED_VERSION = 1


@dataclass(frozen=True)
class Grant:
    """What a valid watch token lets its holder read: one match, or every match of one tournament."""

    token_id: str
    tenant: str
    match_id: str | None
    tournament_id: str | None
    player_ids: bool
    expires_at: float

    def covers(self, match_id: str, meta: MatchMeta) -> bool:
        """Whether this token reads the match (its own, or a table of its tournament: current and future)."""
        if self.match_id is not None:
            return match_id == self.match_id and meta.tenant == self.tenant
        return meta.tag == f"{TOURNAMENT_TAG}{self.tournament_id}" and meta.tenant == self.tenant


def is_watch_token(token: str | None) -> bool:
    return bool(token) and str(token).startswith(PREFIX)


def record_key(token_id: str) -> str:
    return f"watch:{{{token_id}}}"


def topic(token_id: str) -> str:
    """The stream a token's revocation is announced on (a waiter's topic, as a match's events are)."""
    return f"watch:{{{token_id}}}:events"


def token_id_of(token: str) -> str | None:
    """The id a token names (None: not the shape of a watch token)."""
    token_id, dot, secret = token[len(PREFIX):].partition(".")
    if not dot or not secret or not token_id.isalnum() or len(token_id) > 32:
        return None
    return token_id


def mint(client: Any, tenant: str, *, match_id: str | None = None, tournament_id: str | None = None,
         ttl_s: int, player_ids: bool) -> dict[str, Any]:
    """A new token for ``tenant`` (the caller checked that the match or tournament is its own): the answer that
    carries it, the only time the token exists here."""
    token_id = secrets.token_hex(8)
    token = f"{PREFIX}{token_id}.{secrets.token_urlsafe(32)}"
    now = time.time()
    record = {"id": token_id, "tenant": tenant, "match_id": match_id, "tournament_id": tournament_id,
              "hash": hash_token(token), "player_ids": player_ids, "created_at": now, "expires_at": now + ttl_s,
              "revoked_at": None}
    _save(client, record)
    return {**public(record), "token": token}


def _save(client: Any, record: dict[str, Any]) -> None:
    client.set(record_key(record["id"]), orjson.dumps(record), pxat=int((record["expires_at"] + RETAIN_S) * 1000))


def public(record: dict[str, Any]) -> dict[str, Any]:
    """A token's description (never its hash)."""
    return {"id": record["id"], "match_id": record["match_id"], "tournament_id": record["tournament_id"],
            "player_ids": record["player_ids"], "created_at": record["created_at"],
            "expires_at": record["expires_at"], "revoked_at": record["revoked_at"]}


def record_of(client: Any, token_id: str) -> dict[str, Any] | None:
    if not token_id.isalnum() or len(token_id) > 32:
        return None
    raw = client.get(record_key(token_id))
    return None if raw is None else dict(orjson.loads(raw))


def revoke(client: Any, record: dict[str, Any]) -> None:
    """Revoke for good: the next request with the token is 401 ``watch_token_revoked``, and the streams open with
    it end now (its topic passes :data:`REVOKED_VERSION`)."""
    if record["revoked_at"] is None:
        record["revoked_at"] = time.time()
        _save(client, record)
    name = topic(record["id"])
    redisconn.on_slot(client, name, lambda pipe: _announce(pipe, name), name="REVOKE")
    client.publish(EVENTS_CHANNEL, f"{name} {REVOKED_VERSION} ".encode())


def _announce(pipe: Any, name: str) -> None:
    pipe.delete(name)  # (a second revocation announces again: XADD refuses an id that is not new)
    pipe.xadd(name, {"revoked": "1"}, id=f"{REVOKED_VERSION}-1")
    pipe.pexpire(name, RETAIN_S * 1000)


def grant_of(client: Any, token: str, now: float | None = None) -> Grant:
    """The grant of a presented watch token, checked now: unknown or malformed 401 ``wrong_token``, revoked 401
    ``watch_token_revoked``, expired 401 ``watch_token_expired``."""
    token_id = token_id_of(token)
    record = record_of(client, token_id) if token_id is not None else None
    if record is None or not secrets.compare_digest(record["hash"], hash_token(token)):
        raise DomainError(Kind.UNAUTHENTICATED, "wrong_token", "that watch token is unknown")
    return _valid(record, time.time() if now is None else now)


def _valid(record: dict[str, Any], now: float) -> Grant:
    if record["revoked_at"] is not None:
        raise DomainError(Kind.UNAUTHENTICATED, "watch_token_revoked", "that watch token was revoked")
    if now >= record["expires_at"]:
        raise DomainError(Kind.UNAUTHENTICATED, "watch_token_expired", "that watch token has expired")
    return Grant(record["id"], record["tenant"], record["match_id"], record["tournament_id"],
                 bool(record["player_ids"]), float(record["expires_at"]))


def refusal(client: Any, grant: Grant, now: float | None = None) -> DomainError | None:
    """Why a grant read earlier no longer holds (revoked, expired, gone), or None: an open stream asks at each
    update and when its token's topic or expiry wakes it."""
    record = record_of(client, grant.token_id)
    if record is None:
        return DomainError(Kind.UNAUTHENTICATED, "wrong_token", "that watch token is unknown")
    try:
        _valid(record, time.time() if now is None else now)
    except DomainError as refused:
        return refused
    return None
