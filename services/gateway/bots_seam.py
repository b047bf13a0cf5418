"""Where bot turns leave the gateway: called after every update with the bot seats now to act.

The bot workers (``services/bots``) consume these jobs from a Redis Stream; until they run, a match
with a bot seat to act waits (see docs/api.md).
"""

from __future__ import annotations

import orjson

from .store import MatchStore

BOT_JOBS_STREAM = "bots:jobs"


def on_bot_turn(store: MatchStore, match_id: str, game: str, version: int, seats: list[int]) -> None:
    """Enqueue one job per bot seat to act at ``version`` (workers skip jobs that went stale)."""
    for seat in seats:
        store.redis.xadd(BOT_JOBS_STREAM, {"job": orjson.dumps(
            {"match_id": match_id, "game": game, "version": version, "seat": seat})}, maxlen=100_000)
