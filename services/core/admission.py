"""The access decision of a request on its own, before (or without) what the request asks for.

A door answers a request it cannot read (a malformed body, query or header: 400, 413, 415) only to a caller the
access policy (:mod:`.access`) lets make that call; anyone else gets the refusal they would get with a
well-formed request (401 without a credential, 404 for a match or tournament that is not theirs). So the answer
to a caller the policy refuses never depends on what they sent, and tells them nothing of the schema. The
policy's own calls (``authorize_*``) decide; this only asks them in the order the route's core call would,
with the resources the path names, and reads nothing else (the request is not counted: it was not served).
"""

from __future__ import annotations

from collections.abc import Mapping

from services.core import access, watching
from services.core.access import Action, Caller
from services.core.errors import DomainError
from services.core.match import matchmaker
from services.core.match.opener import load
from services.core.service import Core
from services.core.tournaments import store as tournaments


def refusal(core: Core, caller: Caller, action: Action | None, path: Mapping[str, object]) -> DomainError | None:
    """What the policy answers ``caller`` for a call of ``action`` about the resources in ``path`` (the route's
    ``match_id``, ``ticket``, ``tournament_id``), or None if it lets the call through."""
    try:
        _decide(core, caller, action, {name: str(value) for name, value in path.items()})
    except DomainError as refused:
        return refused
    return None


def _decide(core: Core, caller: Caller, action: Action | None, path: Mapping[str, str]) -> None:
    if action in (None, Action.CATALOGUE):
        return
    if action is Action.CREATE:
        access.authorize_create(caller, "this call")
    elif action is Action.JOIN:
        access.authorize_create(caller, "joining a match")
        access.authorize_match(caller, load(core, path["match_id"]), Action.JOIN)
    elif action is Action.MODERATE:  # a key first: without one, nothing is said of the match
        access.authorize_tenant(caller)
        access.authorize_match(caller, load(core, path["match_id"]), action)
    elif action in (Action.READ, Action.ACT, Action.CHAT):
        access.require_credential(caller)
        access.authorize_match(caller, load(core, path["match_id"]), action)
    elif action is Action.TICKET:
        access.require_credential(caller)
        access.authorize_ticket(caller, matchmaker.ticket_record(core, path["ticket"]))
    elif action is Action.TENANT:
        access.authorize_tenant(caller)
    elif action is Action.SHARE:
        access.authorize_tenant(caller)
        access.authorize_share(caller, load(core, path["match_id"]))
    elif action is Action.WATCH_TOKEN:
        access.authorize_tenant(caller)
        access.authorize_watch_token(caller, watching.record_of(core.redis, path["token_id"]))
    elif action is Action.TOURNAMENT:
        access.authorize_tenant(caller)
        tournament_id = path["tournament_id"]
        found = tournaments.load(core.redis, tournament_id) if tournaments.plausible(tournament_id) else None
        access.authorize_tournament(caller, found[1]["tenant"] if found else None)

