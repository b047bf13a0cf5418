"""When each live tournament must be looked at: a sharded index of due work with leases.

``tourdue:{<tag>}:due`` / ``tourdue:{<tag>}:leases`` (:data:`DUE_SHARDS`: 8 tags from ``redisconn.spread_tags``,
spread over a cluster's primaries; a tournament in the shard of its id). The due set holds each live tournament
scored by when it must be looked at; a runner claims due ones into the lease set (:mod:`.store`). Kept apart from
the rest of the tournaments so that the match core's commit pipeline can wake a tournament (:func:`schedule`)
without importing the tournament machine.
"""

from __future__ import annotations

import time
from typing import Any

from services import redisconn

SHARDS = 8
DUE_SHARDS = tuple((f"tourdue:{{{tag}}}:due", f"tourdue:{{{tag}}}:leases")
                   for tag in redisconn.spread_tags("tr", SHARDS))
#: The tag a match of tournament ``<id>`` carries in its meta.
TAG_PREFIX = "tournament:"


def due_keys(tournament_id: str) -> tuple[str, str]:
    return DUE_SHARDS[redisconn.shard_of(tournament_id, SHARDS)]


def schedule(client: Any, tournament_id: str, due: float) -> None:
    """Look at the tournament at ``due`` at the latest (an earlier due time already set is kept). ``client`` may
    be a pipeline."""
    client.zadd(due_keys(tournament_id)[0], {tournament_id: due}, lt=True)


def wake(client: Any, tournament_id: str, now: float | None = None) -> None:
    """Look at the tournament now (a match of it finished, a player registered)."""
    schedule(client, tournament_id, time.time() if now is None else now)


def tournament_of(tag: Any) -> str | None:
    """The tournament id of a match's ``tag`` (None: not a tournament's match)."""
    if isinstance(tag, str) and tag.startswith(TAG_PREFIX) and len(tag) > len(TAG_PREFIX):
        return tag[len(TAG_PREFIX):]
    return None
