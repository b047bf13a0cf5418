"""Due work any number of processes share, none lost when one dies: an index and its leases.

Two sorted sets in one slot: ``index`` (member -> when it is due) and ``leases`` (member -> when its lease
runs out). :meth:`Leases.claim` moves due members to the leases (due again at the lease's end) and returns
them; expired leases (their holder died) return to the index first. One script, so two processes never take
the same member; the holder removes the lease when done, or puts the member back with a new due time.
Work spread over shards (one slot each) is claimed with :meth:`Leases.claim_shards`. Clock deadlines, idle
matches, tournaments, season ends and webhook deliveries are leased this way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

_CLAIM = """
local back = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(back) do
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZADD', KEYS[1], ARGV[1], m)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], ARGV[2], m)
end
return due
"""


class Leases:
    def __init__(self, client: Any) -> None:
        self.client = client
        self._claim = client.register_script(_CLAIM)

    def claim(self, index: str, leases: str, now: float, lease_s: float, count: int) -> list[str]:
        """Up to ``count`` members of ``index`` due at ``now``, leased for ``lease_s`` seconds."""
        due = self._claim(keys=[index, leases], args=[now, now + lease_s, count])
        return [m.decode() if isinstance(m, bytes) else str(m) for m in due]

    def due_shards(self, shards: Sequence[tuple[str, str]], now: float) -> list[int]:
        """The positions of the ``shards`` (pairs of index and leases, each pair in one slot) that hold a member
        due at ``now`` or a lease run out: read for all of them at once (one pipeline; a cluster client sends
        each node its part)."""
        pipe = self.client.pipeline(transaction=False)
        for index, leases in shards:
            pipe.zrangebyscore(index, "-inf", now, start=0, num=1)
            pipe.zrangebyscore(leases, "-inf", now, start=0, num=1)
        replies = pipe.execute()
        return [i for i in range(len(shards)) if replies[2 * i] or replies[2 * i + 1]]

    def claim_shards(self, shards: Sequence[tuple[str, str]], now: float, lease_s: float, count: int,
                     start: int = 0, per_shard: int | None = None) -> list[tuple[int, str]]:
        """Up to ``count`` members due at ``now`` over ``shards``, from shard ``start`` on (at most ``per_shard``
        from each), leased for ``lease_s``: ``(shard position, member)`` pairs. Which shards have anything due
        is read first, in one round trip, and only those run the claim script (one slot each): pollers that
        find nothing due -- the usual case -- pay one round trip, not one per shard."""
        taken: list[tuple[int, str]] = []
        due = set(self.due_shards(shards, now))
        for i in range(len(shards)):
            shard = (start + i) % len(shards)
            if len(taken) >= count:
                break
            if shard in due:
                index, leases = shards[shard]
                want = count - len(taken) if per_shard is None else min(per_shard, count - len(taken))
                taken += [(shard, member) for member in self.claim(index, leases, now, lease_s, want)]
        return taken

    def release(self, index: str, leases: str, member: str, due: float | None = None) -> None:
        """Done with a leased member; ``due`` puts it back in the index for then."""
        pipe = self.client.pipeline(transaction=False)
        pipe.zrem(leases, member)
        if due is not None:
            pipe.zadd(index, {member: due})
        pipe.execute()
