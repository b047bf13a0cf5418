"""The one access policy: who is asking (:func:`authenticate`), and what they may do (the ``authorize_*``).

Every door — REST, long-poll, SSE, WebSocket, matchmaking tickets, replay, hints, the backends' routes — and
nothing else decides access. A caller is resolved once per request (or per WebSocket hello) from what it
presents: nothing, a seat token (``<seat>.<secret>``), a watch token (``w_...``, :mod:`.watching`), an API key
(``mk_...``, as ``X-API-Key`` or as a bearer), or both a key and a token. An unknown, malformed or revoked key is
refused at once, and so is a watch token that is unknown, revoked or expired (its record is read on every request).

The rules (docs/api.md "Who may do what" is generated from :data:`RULES`, and the authorization matrix test
checks every route against its own table of expected answers):

* A **tenant's match** (created with its key) is private: its key and its seat tokens, nobody else. Any other
  key, and a caller without a credential, are told it does not exist (404), whatever the anonymous setting.
* An **anonymous match** (created without a key, only while anonymous access is on) is public to read and to
  join while anonymous access is on; its seat tokens always work. A tenant's key gets 404 for it (a key acts
  for its tenant, and this is not the tenant's).
* **Acting for a seat** (legal moves, moves, hints, leave, resign, reclaim, rematch, ``until=turn``) needs
  that seat's token; a token that holds no seat in the match is 401 ``wrong_token``.
* **Spectators** read a match without a seat: its tenant's key, a watch token that covers it, or anyone on an
  anonymous match while anonymous access is on: whoever :func:`authorize_match` lets READ with
  :attr:`MatchAccess.spectator` true. An action a spectator may take besides reading (a chat) asks that.
* A **watch token** (a watch link, minted by a tenant's key for one of its matches or tournaments) reads the
  spectator view of the matches it covers and nothing else: another match is 404, acting for a seat 401
  ``wrong_token``, creating, joining, tickets and the tenant's own data 401 ``api_key_required``.
* **Player ids** (``seats[].player``, ``outcome.ratings[].player``) are the tenant's own: shown to its key
  only (and to a watch token minted with ``player_ids``), never to seat holders or anyone else.
* **Tickets** follow their match's rule: a tenant's ticket is its key's alone; an anonymous one is read by
  anyone holding its id while anonymous access is on.
* A **tenant's own data** (history, ratings, webhooks, leaderboards and seasons, its list of tournaments) needs its
  key; each tenant reads and writes its own (another tenant's key reaches that tenant's own, never this one's).
* A **tenant's tournament** is its key's alone: any other key is told it does not exist (404).
* With anonymous access **off**, a request without any credential is 401 on every route but the public ones
  (the catalogue, health, metrics, the docs); creating, joining and queueing need a key.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

from services.core import watching
from services.core.errors import DomainError, Kind
from services.core.meta import Outcome
from services.core.record.store import Match
from services.core.tenancy import tenants


class Action(enum.Enum):
    CATALOGUE = "catalogue"      # the games on offer: public
    CREATE = "create"            # make a match or a matchmaking ticket
    JOIN = "join"                # take a free seat of a match
    READ = "read"                # a match's status, events, stream, WebSocket, replay (as a seat or a spectator)
    ACT = "act"                  # act for one's own seat
    TICKET = "ticket"            # read a ticket (taking its seat token once) or cancel it
    TENANT = "tenant"            # a tenant's own data: history, ratings, webhooks, leaderboards, seasons
    TOURNAMENT = "tournament"    # one tournament of a tenant: read, register, cancel (and mint its watch tokens)
    SHARE = "share"              # mint a watch token for one of the tenant's matches
    WATCH_TOKEN = "watch_token"  # describe or revoke a watch token the tenant minted
    CHAT = "chat"                # post a chat message to a match (as a seat, or as a spectator where allowed)
    MODERATE = "moderate"        # redact a match's chat message: the match's tenant


#: Who may do each action: the words docs/api.md's table shows (a test keeps them the same).
RULES: dict[Action, str] = {
    Action.CATALOGUE: "anyone (a key that is presented must be valid)",
    Action.CREATE: "an API key; without one only while anonymous access is on",
    Action.JOIN: "a tenant's match: its key; an anonymous match: anyone while anonymous access is on",
    Action.READ: "the match's seat tokens (that seat's view); a tenant's match: its key (spectator view, with "
                 "player ids) and its watch tokens (spectator view, player ids if minted with them); an anonymous "
                 "match: anyone while anonymous access is on (spectator view)",
    Action.ACT: "the seat's own token (also for `events?until=turn`)",
    Action.TICKET: "a tenant's ticket: its key; an anonymous ticket: anyone holding its id while anonymous "
                   "access is on",
    Action.TENANT: "the tenant's API key",
    Action.TOURNAMENT: "the API key of the tournament's tenant (another tenant's key: 404)",
    Action.SHARE: "the API key of the match's tenant (another tenant's key, or an anonymous match: 404)",
    Action.WATCH_TOKEN: "the API key of the tenant that minted the watch token (another tenant's key: 404)",
    Action.CHAT: "the match's seat tokens (speaking as that seat); in a match created with `spectator_chat`, also "
                 "whoever may read it as a spectator (else 403 `chat_spectators_off`)",
    Action.MODERATE: "the API key of the match's tenant (another key: 404; without a key: 401)",
}


@dataclass(frozen=True)
class Caller:
    """Who is asking, as resolved once from what the request presents."""

    address: str
    #: The tenant of a valid API key (None: no key).
    tenant: tenants.Tenant | None = None
    #: A seat token as presented: unverified until it is checked against a match.
    token: str | None = None
    #: Whether callers without a key may create, join and read anonymous matches (``MEEPLE_ANONYMOUS``).
    anonymous: bool = True
    #: A watch token's grant, checked (valid now) when the caller was resolved.
    watch: watching.Grant | None = None

    @property
    def credentialed(self) -> bool:
        return self.tenant is not None or self.token is not None or self.watch is not None

    @property
    def watching(self) -> bool:
        """A watch token without a key: a spectator of the matches it covers, and nothing more."""
        return self.watch is not None and self.tenant is None

    @property
    def owner(self) -> str:
        """Whom quotas charge for what this caller creates: its tenant, else its address."""
        return self.tenant.owner if self.tenant is not None else f"ip:{self.address}"


@dataclass(frozen=True)
class MatchAccess:
    """What a caller may see of one match."""

    #: The caller's seat (its token verified), or None: the spectator's view.
    seat: int | None
    #: May see the tenant's player ids.
    players: bool

    @property
    def spectator(self) -> bool:
        """Reads without a seat: the spectator's view (a tenant's key, a watch token, an anonymous reader)."""
        return self.seat is None


def parse_authorization(header: str | None) -> str | None:
    """The credential of an ``Authorization`` header: None without one, 401 if it is not ``Bearer <x>``."""
    if not header:
        return None
    scheme, _, credential = header.partition(" ")
    if scheme.lower() != "bearer" or not credential.strip():
        raise DomainError(Kind.UNAUTHENTICATED, "bad_authorization",
                          "use 'Authorization: Bearer <seat token, watch token or API key>'")
    return credential.strip()


def authenticate(client: Any, *, authorization: str | None, api_key: str | None, address: str, anonymous: bool,
                 on_bad_key: Any = None, keys: tenants.KeyCache | None = None) -> Caller:
    """The caller of a request: ``authorization`` is the bearer credential (see :func:`parse_authorization`),
    ``api_key`` the ``X-API-Key`` header. An API key that is unknown, malformed or revoked is 401
    ``invalid_api_key``; ``on_bad_key()`` runs first (the door counts such requests against the address, so
    that guessing keys costs requests). ``keys``: the process's key cache (see :mod:`.tenants`)."""
    key = api_key.strip() if api_key is not None else None
    token = authorization
    if key is None and tenants.is_api_key(token):
        key, token = token, None
    elif tenants.is_api_key(token):
        token = None  # a key in both places: X-API-Key speaks for the tenant
    tenant = None
    if key is not None:
        tenant = tenants.lookup(client, key, keys) if tenants.is_api_key(key) else None
        if tenant is None:
            if on_bad_key is not None:
                on_bad_key()
            raise DomainError(Kind.UNAUTHENTICATED, "invalid_api_key", "that API key is unknown or revoked")
    return with_token(client, Caller(address, tenant, None, anonymous), token)


def with_token(client: Any, caller: Caller, token: str | None) -> Caller:
    """``caller`` presenting ``token`` (a bearer, or a WebSocket hello's): a seat token as presented (verified
    against a match later), or a watch token's grant, checked now (see :func:`.watching.grant_of`)."""
    if token is None:
        return caller
    if watching.is_watch_token(token):
        return replace(caller, token=None, watch=watching.grant_of(client, token))
    return replace(caller, token=token, watch=None)


def require_credential(caller: Caller) -> None:
    """With anonymous access off, every non-public route needs some credential."""
    if not caller.anonymous and not caller.credentialed:
        raise DomainError(Kind.UNAUTHENTICATED, "missing_token",
                          "anonymous access is off: send a seat token or an API key")


def authorize_create(caller: Caller, what: str) -> None:
    """Creating, joining and queueing: a key, or anyone while anonymous access is on (a watch token only reads)."""
    if caller.tenant is None and (not caller.anonymous or caller.watching):
        raise DomainError(Kind.UNAUTHENTICATED, "api_key_required",
                          f"{what} needs an API key (X-API-Key or Authorization: Bearer mk_...): anonymous access "
                          "is off")


def authorize_tenant(caller: Caller) -> tenants.Tenant:
    if caller.tenant is None:
        raise DomainError(Kind.UNAUTHENTICATED, "api_key_required",
                          "this call needs an API key (X-API-Key or Authorization: Bearer mk_...)")
    return caller.tenant


def authorize_tournament(caller: Caller, owner: str | None) -> tenants.Tenant:
    """May ``caller`` act on a tournament of tenant ``owner`` (None: there is no such tournament)? Its tenant's key
    only; another tenant's key is told it does not exist, as is a caller asking for one that does not."""
    tenant = authorize_tenant(caller)
    if owner is None or owner != tenant.name:
        raise DomainError(Kind.NOT_FOUND, "tournament_not_found", "no such tournament (it may have expired)")
    return tenant


def verified_seat(caller: Caller, match: Match) -> int | None:
    """The seat of the caller's token in ``match`` (None without a token); 401 ``wrong_token`` if it holds none."""
    if caller.token is None:
        return None
    seat = match.seat_of(caller.token)
    if seat is None:
        raise DomainError(Kind.UNAUTHENTICATED, "wrong_token",
                          "that token holds no seat in this match (unknown, revoked or another match's)")
    return seat


def authorize_match(caller: Caller, match: Match, action: Action) -> MatchAccess:
    """What ``caller`` may see of ``match`` for ``action`` (READ, ACT, JOIN, CHAT or MODERATE), or the refusal. The
    door has called :func:`require_credential` (READ, ACT, CHAT, MODERATE) or :func:`authorize_create` (JOIN)
    first. A watch token's holder chats as a spectator (where the match allows it) and moderates nothing."""
    if action is Action.CHAT:
        return authorize_chat(caller, match)
    if action is Action.MODERATE:
        return authorize_moderate(caller, match)
    if caller.watching:
        return authorize_watcher(caller, match, action)
    owner = match.meta.tenant
    players = caller.tenant is not None and caller.tenant.name == owner
    seat = verified_seat(caller, match) if action is not Action.JOIN else None
    if seat is not None:
        return MatchAccess(seat, players)
    if action is Action.ACT:  # a caller who may not even read the match is told what a reader would be
        authorize_match(caller, match, Action.READ)
        raise DomainError(Kind.UNAUTHENTICATED, "missing_token",
                          "this call needs your seat token (Authorization: Bearer ...)")
    if caller.tenant is not None:
        if players:
            return MatchAccess(None, True)
        raise DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match.id!r} (it may have expired)")
    # No key and no seat: an anonymous caller (a door lets one this far only while anonymous access is on:
    # ``require_credential`` for reads, ``authorize_create`` for joins).
    if owner is not None:  # a tenant's match is private to its tenant and its seats
        raise DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match.id!r} (it may have expired)")
    return MatchAccess(None, False)


def authorize_watcher(caller: Caller, match: Match, action: Action) -> MatchAccess:
    """A watch token's holder: the spectator view of a match the token covers (player ids if minted with them);
    another match is told it does not exist, and every action but reading is refused."""
    grant = caller.watch
    assert grant is not None
    if not grant.covers(match.id, match.meta):
        raise DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match.id!r} (it may have expired)")
    if action is not Action.READ:
        raise DomainError(Kind.UNAUTHENTICATED, "wrong_token", "a watch token only reads the match (spectator view)")
    return MatchAccess(None, grant.player_ids)


def authorize_share(caller: Caller, match: Match) -> tenants.Tenant:
    """May ``caller`` mint a watch token for ``match``? Its tenant's key only; any other key, and an anonymous
    match, are told it does not exist."""
    tenant = authorize_tenant(caller)
    if match.meta.tenant != tenant.name:
        raise DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match.id!r} (it may have expired)")
    return tenant


def authorize_watch_token(caller: Caller, record: dict[str, Any] | None) -> tenants.Tenant:
    """May ``caller`` describe or revoke this watch token (None: there is none)? The key of the tenant that
    minted it; another tenant's key is told it does not exist."""
    tenant = authorize_tenant(caller)
    if record is None or record["tenant"] != tenant.name:
        raise DomainError(Kind.NOT_FOUND, "watch_token_not_found", "no such watch token (it may have expired)")
    return tenant


def authorize_chat(caller: Caller, match: Match) -> MatchAccess:
    """May ``caller`` post to ``match``'s chat, and as whom? A seat token speaks as its seat; anyone else who may
    read the match speaks as a spectator, only in a match created with ``spectator_chat``."""
    access = authorize_match(caller, match, Action.READ)
    if access.seat is None and not match.meta.spectator_chat:
        raise DomainError(Kind.FORBIDDEN, "chat_spectators_off",
                          "only seats chat in this match (it was created without spectator_chat)")
    return access


def authorize_moderate(caller: Caller, match: Match) -> MatchAccess:
    """May ``caller`` redact ``match``'s chat? The key of the match's tenant only: a seat holder is no moderator,
    and any other key is told the match does not exist, as for reads."""
    tenant = authorize_tenant(caller)
    if tenant.name != match.meta.tenant:
        raise DomainError(Kind.NOT_FOUND, "match_not_found", f"no match {match.id!r} (it may have expired)")
    return MatchAccess(None, True)


def authorize_ticket(caller: Caller, ticket: dict[str, Any]) -> None:
    """May ``caller`` read (and take the seat token of) or cancel this ticket?"""
    owner = ticket.get("tenant")
    if caller.tenant is not None:
        if caller.tenant.name == owner:
            return
        raise DomainError(Kind.NOT_FOUND, "ticket_not_found", "no such ticket (it may have expired)")
    if not caller.anonymous or caller.watching:
        raise DomainError(Kind.UNAUTHENTICATED, "api_key_required",
                          "a ticket is read with its tenant's API key: anonymous access is off")
    if owner is not None:
        raise DomainError(Kind.NOT_FOUND, "ticket_not_found", "no such ticket (it may have expired)")


def redact_outcome(outcome: Outcome | None, players: bool) -> dict[str, Any] | None:
    """An outcome as a caller may see it: its rating changes name the tenant's player ids for its key only."""
    if outcome is None:
        return None
    if players or not outcome.ratings:
        return outcome.doc()
    return {**outcome.doc(), "ratings": [{k: v for k, v in change.items() if k != "player"}
                                         for change in outcome.ratings]}
