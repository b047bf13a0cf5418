"""``/hint`` as a job for the bot workers: the core never searches (it must not import ``ai/``), it asks.

The core appends a job to the Redis Stream ``bots:hints`` and blocks (``MEEPLE_HINT_WAIT_S`` at most)
on a reply list in the match's own slot, ``hint:{<match>}:reply:<request>``; a bot worker runs the search of
``HINT_LEVEL`` (normal) for the seat, seeded by the version, with that level's own iteration budget (the easy
bot's 40 iterations did not even look at every move of a CLASH turn, so its hints could help the opponent), and
pushes the answer there; ``MEEPLE_HINT_BUDGET_S`` only caps its think time on a slow machine. A
job whose gateway has stopped waiting is skipped. Each seat may ask ``MEEPLE_HINTS_PER_SEAT_MINUTE``
times a minute, so hints cannot take over the workers' CPU.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson

from services.core.errors import DomainError, Kind
from services.core.record.store import Match

HINTS_STREAM = "bots:hints"
#: A reply nobody read (the gateway gave up) is dropped after this long.
REPLY_TTL_S = 60


#: The bot level whose search gives ``/hint``'s move: the level people play against by default, with its own
#: iteration budget and the match version as its seed, so a hint is the move that level would play there.
HINT_LEVEL = "normal"

def ask(client: Any, match: Match, seat: int, wait_s: float, budget_s: float, per_minute: int) -> Any:
    """The hint for ``seat`` at ``match.version`` from a bot worker: 429 past the seat's per-minute limit, 409 if
    the decision was made meanwhile, 503 if no worker answered in time."""
    now = time.time()
    if per_minute > 0:
        key = f"hint:{{{match.id}}}:count:{seat}:{int(now // 60)}"
        pipe = client.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 60)
        if int(pipe.execute()[0]) > per_minute:
            retry = 60 - int(now) % 60
            raise DomainError(Kind.LIMITED, "hint_limited", f"at most {per_minute} hints a minute per seat; retry in "
                              f"{retry} s", retry_after=retry)
    reply = f"hint:{{{match.id}}}:reply:{secrets.token_hex(8)}"
    job = {"match_id": match.id, "game": match.game, "version": match.version, "seat": seat, "reply": reply,
           "deadline": now + wait_s, "budget_s": budget_s}
    client.xadd(HINTS_STREAM, {"job": orjson.dumps(job)}, maxlen=10_000, approximate=True)
    got = client.blpop([reply], timeout=wait_s)
    if not got:
        raise DomainError(Kind.UNAVAILABLE, "hint_unavailable", f"no bot worker answered within {wait_s:g} s; "
                          "retry shortly", retry_after=1)
    answer = orjson.loads(got[1])
    if "move" not in answer:
        raise DomainError(Kind.CONFLICT, "stale_version", "the match moved on while the hint was computed; ask again")
    return answer["move"]


def answer(client: Any, job: dict[str, Any], doc: dict[str, Any]) -> None:
    """A worker's reply to a hint job: ``{"move": ...}``, or ``{"stale": true}`` if the decision was made."""
    pipe = client.pipeline(transaction=False)
    pipe.rpush(job["reply"], orjson.dumps(doc))
    pipe.expire(job["reply"], REPLY_TTL_S)
    pipe.execute()
