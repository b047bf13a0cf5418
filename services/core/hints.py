"""``/hint`` as a job for the bot workers: the gateway never searches (it must not import ``ai/``), it asks.

The gateway appends a job to the Redis Stream ``bots:hints`` and blocks (``MEEPLE_HINT_WAIT_S`` at most)
on a reply list in the match's own slot, ``hint:{<match>}:reply:<request>``; a bot worker runs the easy
bot for the seat with its own small budget (``MEEPLE_HINT_BUDGET_S``) and pushes the answer there. A
job whose gateway has stopped waiting is skipped. Each seat may ask ``MEEPLE_HINTS_PER_SEAT_MINUTE``
times a minute, so hints cannot take over the workers' CPU.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import orjson

from .store import Match

HINTS_STREAM = "bots:hints"
#: A reply nobody read (the gateway gave up) is dropped after this long.
REPLY_TTL_S = 60


class HintLimited(Exception):
    def __init__(self, limit: int, retry_after: int) -> None:
        super().__init__(f"at most {limit} hints a minute per seat; retry in {retry_after} s")
        self.retry_after = retry_after


class HintStale(Exception):
    """The decision the hint was asked for has been made meanwhile."""


class NoAnswer(Exception):
    """No bot worker answered in time."""


def ask(client: Any, match: Match, seat: int, wait_s: float, budget_s: float, per_minute: int) -> Any:
    """The hint for ``seat`` at ``match.version`` from a bot worker (raises one of the exceptions above)."""
    now = time.time()
    if per_minute > 0:
        key = f"hint:{{{match.id}}}:count:{seat}:{int(now // 60)}"
        pipe = client.pipeline(transaction=False)
        pipe.incr(key)
        pipe.expire(key, 60)
        if int(pipe.execute()[0]) > per_minute:
            raise HintLimited(per_minute, 60 - int(now) % 60)
    reply = f"hint:{{{match.id}}}:reply:{secrets.token_hex(8)}"
    job = {"match_id": match.id, "game": match.game, "version": match.version, "seat": seat, "reply": reply,
           "deadline": now + wait_s, "budget_s": budget_s}
    client.xadd(HINTS_STREAM, {"job": orjson.dumps(job)}, maxlen=10_000, approximate=True)
    got = client.blpop([reply], timeout=wait_s)
    if not got:
        raise NoAnswer()
    answer = orjson.loads(got[1])
    if "move" not in answer:
        raise HintStale()
    return answer["move"]


def answer(client: Any, job: dict[str, Any], doc: dict[str, Any]) -> None:
    """A worker's reply to a hint job: ``{"move": ...}``, or ``{"stale": true}`` if the decision was made."""
    pipe = client.pipeline(transaction=False)
    pipe.rpush(job["reply"], orjson.dumps(doc))
    pipe.expire(job["reply"], REPLY_TTL_S)
    pipe.execute()
