"""What a game's refusal means to the rules service's callers: the codes it passes on as "malformed" (gRPC
``INVALID_ARGUMENT``, HTTP 400) and as "conflict" (HTTP 409), beside the gRPC contract in
``proto/meeple/v1/rules.proto``.

A module of its own that loads no engine: the rules service (``services.rules.server``) classes refusals with it,
and the HTTP contract (``services.contract.errors``) lists the conflict codes without importing the games.
"""

from __future__ import annotations

from typing import Final

#: Error codes that mean "this request could never be right" (gRPC INVALID_ARGUMENT, HTTP 400).
MALFORMED_CODES: Final = frozenset({"malformed_move", "no_such_seat"})
#: Error codes that mean "not now, for you" (HTTP 409): the client's picture of the match is stale.
CONFLICT_CODES: Final = frozenset({"not_your_turn", "already_submitted"})
