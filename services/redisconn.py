"""Every Redis client of the project comes from here: ``REDIS_URL`` picks one server or a Redis Cluster.

* ``redis://host:port/0`` (and ``rediss://``, ``unix://``): redis-py's plain client;
* ``redis+cluster://host:port`` (``rediss+cluster://`` with TLS), or any ``redis://`` URL with
  ``?cluster=true``: redis-py's :class:`~redis.cluster.RedisCluster`, which discovers the other nodes
  from that one, routes each command to the primary of its key's slot and follows failovers.

Code on top must stay cluster-correct: a script or a MULTI/EXEC touches one slot (the ``{hash tag}`` in
its keys), and structures every process shares are spread over several keys (:func:`spread_tags`), one
per slot range, so a cluster's primaries share their load.

On a cluster, a command that hits a primary which just died is retried with backoff while the replica
takes over (``cluster_retry_s`` in all); after that it raises ``ConnectionError`` (the gateway answers 503).
"""

from __future__ import annotations

import binascii
import contextlib
import functools
import time
from collections.abc import Callable
from typing import Any, TypeAlias
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import RedisCluster
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot
from redis.retry import Retry

#: Either client: both speak the same commands; only multi-slot operations differ.
Client: TypeAlias = "redis.Redis | RedisCluster"
_TRUE = {"1", "true", "yes", "on"}
#: What a store that is down or failing over raises (a cluster also answers CLUSTERDOWN, TRYAGAIN,
#: MOVED/ASK for a moment, or has a slot without a primary): the gateway's 503, a bot job left for later.
UNAVAILABLE = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterError,
               redis.exceptions.TryAgainError, redis.exceptions.AskError, redis.exceptions.SlotNotCoveredError)
#: Whatever the client raises while Redis fails: a RedisError, or on a cluster whose every node is unreachable a
#: RedisClusterException, which is no RedisError. A background loop that must outlive an outage catches these.
FAILURES = (redis.RedisError, redis.exceptions.RedisClusterException)
#: A failover takes ``cluster-node-timeout`` plus an election (about 1 s); retries cover this much of it.
CLUSTER_RETRY_S = 6.0


def cluster_url(url: str) -> str | None:
    """The URL redis-py's cluster client takes if ``url`` names a cluster, else None."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    query = parse_qsl(parts.query, keep_blank_values=True)
    flagged = any(k.lower() == "cluster" and v.lower() in _TRUE for k, v in query)
    if not scheme.endswith("+cluster") and not flagged:
        return None
    rest = urlencode([(k, v) for k, v in query if k.lower() != "cluster"])
    path = "" if parts.path in ("", "/", "/0") else parts.path  # a cluster has database 0 only
    return urlunsplit((scheme.removesuffix("+cluster"), parts.netloc, path, rest, parts.fragment))


def is_cluster(client: Any) -> bool:
    return isinstance(client, RedisCluster)


def connect(url: str, patient: bool = True, **kwargs: Any) -> Client:
    """A client for ``url`` (see the module docstring); ``kwargs`` are connection options (timeouts).
    ``patient=False``: on a cluster, a command whose node is down fails at once instead of waiting out a
    failover (for a caller with other work to do meanwhile, such as a bot worker's other matches)."""
    return connect_as(url, redis.Redis, TimedRedisCluster, patient=patient, **kwargs)


def connect_as(url: str, plain: type[redis.Redis], cluster: type[RedisCluster], patient: bool = True,
               **kwargs: Any) -> Any:
    """:func:`connect` building ``plain`` or ``cluster`` (subclasses that time every command)."""
    target = cluster_url(url)
    if target is None:
        return plain.from_url(url, **kwargs)
    kwargs.pop("health_check_interval", None)  # per-node pools check their connections themselves
    retries = 12 if patient else 1  # (impatient: one more try after re-reading the slot table: a slot that moved)
    backoff = ExponentialBackoff(cap=CLUSTER_RETRY_S / retries * 2, base=0.05)
    client = cluster(url=target, retry=Retry(backoff, retries), **kwargs)
    if isinstance(client, TimedRedisCluster):
        client.patient = patient
    return client


class TimedRedisCluster(RedisCluster):
    """A cluster client that can time commands like :class:`services.gateway.metrics.TimedRedis`.

    ``observe(name, seconds)`` is called per command and per pipeline (``PIPELINE``) when set.
    """

    observe: Callable[[str, float], None] | None = None
    #: Wait out a failover (see :func:`ride_out_failover`), or fail at once (see :func:`connect`).
    patient: bool = True

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            if not self.patient:
                return super().execute_command(*args, **kwargs)
            return ride_out_failover(lambda: super(TimedRedisCluster, self).execute_command(*args, **kwargs))
        finally:
            if self.observe is not None:
                name = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
                self.observe(name.split(" ", 1)[0].upper(), time.perf_counter() - start)

    def _get_command_keys(self, *args: Any) -> Any:
        """The streams of XREAD/XREADGROUP read here: for a command whose keys can move, redis-py asks
        the server (``COMMAND GETKEYS``: a round trip) on every call, and a bot worker's every take is one."""
        name = args[0].upper() if isinstance(args[0], str) else ""
        if name in ("XREAD", "XREADGROUP"):
            words = [(a.decode("latin-1") if isinstance(a, bytes) else str(a)).upper() for a in args]
            start = 4 if name == "XREADGROUP" else 1  # (after GROUP <group> <consumer>: names may be anything)
            if "STREAMS" in words[start:]:
                streams = args[words.index("STREAMS", start) + 1:]
                return list(streams[:len(streams) // 2])
        return super()._get_command_keys(*args)

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        observe = self.observe
        if observe is not None:  # (a pipeline is not retried here: it empties itself when it runs)
            run = pipe.execute

            def execute(raise_on_error: bool = True) -> Any:
                start = time.perf_counter()
                try:
                    return run(raise_on_error)
                finally:
                    observe("PIPELINE", time.perf_counter() - start)

            pipe.execute = execute
        return pipe


#: A cluster's answers meaning "not this node, or not now": the commands did not run.
SLOT_ELSEWHERE = (redis.exceptions.MovedError, redis.exceptions.AskError, redis.exceptions.TryAgainError,
                  redis.exceptions.ClusterDownError, redis.exceptions.SlotNotCoveredError)


def ride_out_failover(call: Callable[[], Any], routed_by: RedisCluster | None = None) -> Any:
    """``call()``, again every 100 ms for up to ``CLUSTER_RETRY_S`` while a node refuses connections.

    redis-py's cluster client retries at once (re-reading the slot table each time), so all its retries
    land inside the few seconds a failover takes. A refused connection sent nothing, so trying again is
    safe for any command; an error after the command went out is raised (it may have run).

    ``routed_by``: ``call`` picks its node from this client's slot table itself (:func:`on_slot`), so a
    slot that moved is retried too (nothing ran), after the table is read again.
    """
    retried: tuple[type[Exception], ...] = (redis.ConnectionError,)
    if routed_by is not None:
        retried += SLOT_ELSEWHERE
    give_up = None
    while True:
        try:
            return call()
        except retried as err:
            now = time.monotonic()
            give_up = give_up or now + CLUSTER_RETRY_S
            if (isinstance(err, redis.ConnectionError) and not never_sent(err)) or now >= give_up:
                raise
            if routed_by is not None:
                refresh(routed_by)
            time.sleep(0.1)


def spread_tags(prefix: str, count: int) -> tuple[str, ...]:
    """``count`` hash tags whose slots fall one in each ``1/count`` of the slot range.

    A cluster formed with ``redis-cli --cluster create`` gives each primary a contiguous, equal share of
    the slots, so keys ``...{tag}...`` over these tags spread evenly over the primaries (a shard per
    primary or more when ``count`` is at least the number of primaries). Deterministic: every process
    computes the same tags.
    """
    width = REDIS_CLUSTER_HASH_SLOTS / count
    tags = []
    for k in range(count):
        i = 0
        while not k * width <= key_slot(f"{prefix}{k}.{i}".encode()) < (k + 1) * width:
            i += 1
        tags.append(f"{prefix}{k}.{i}")
    return tuple(tags)


#: The length of every tag :func:`slot_tags` gives.
SLOT_TAG_LEN = 7


@functools.cache
def slot_tags() -> tuple[str, ...]:
    """A hash tag for every slot: ``slot_tags()[s]`` (``"w<n>"``, n in 6 digits: the first such name, all of
    :data:`SLOT_TAG_LEN` characters) hashes to slot ``s``.

    For a structure that must sit in the very slot of whatever it indexes (a key ``...{slot_tags()[s]}...``
    is on the node of every key of slot ``s``, whatever the cluster's layout), one key per slot in use.
    Computed once per process (about 0.1 s), the same in every process."""
    tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    left, n = REDIS_CLUSTER_HASH_SLOTS, 0
    while left:
        slot = binascii.crc_hqx(b"w%06d" % n, 0) % REDIS_CLUSTER_HASH_SLOTS  # (= key_slot: no braces in it)
        if tags[slot] is None:
            tags[slot], left = f"w{n:06d}", left - 1
        n += 1
    return tuple(t for t in tags if t is not None)


def slot_of(key: str) -> int:
    """The cluster slot of ``key`` (its hash tag's, if it has one)."""
    return int(key_slot(key.encode()))


def slot_ranges(client: Client) -> list[tuple[str, redis.Redis, list[tuple[int, int]]]]:
    """Each primary the slot table knows (name, a plain client on it) and the slot ranges it serves, first to
    last inclusive; a single server serves them all (its name: ``"single"``). A slot without a primary now
    (failing over) is left out."""
    if not isinstance(client, RedisCluster):
        return [("single", client, [(0, REDIS_CLUSTER_HASH_SLOTS - 1)])]
    table = client.nodes_manager.slots_cache  # (a new dict each time the client reads the slot table; a MOVED
    # edits it in place: a scan on a node that lost slots fails, and its caller reads the table again)
    known = getattr(client, "_meeple_slot_ranges", None)
    if known is not None and known[0] is table:
        return list(known[1])
    ranges: dict[str, list[list[int]]] = {}
    nodes: dict[str, Any] = {}
    for slot, serving in sorted(table.items()):
        if not serving:
            continue
        node = serving[0]
        nodes[node.name] = node
        own = ranges.setdefault(node.name, [])
        if own and own[-1][1] == slot - 1:
            own[-1][1] = slot
        else:
            own.append([slot, slot])
    found = [(name, client.get_redis_connection(nodes[name]), [(a, b) for a, b in spans])
             for name, spans in ranges.items()]
    client._meeple_slot_ranges = (table, found)  # type: ignore[attr-defined]
    return list(found)


def shard_of(name: str, count: int) -> int:
    """The shard ``name`` (a match id) belongs to: stable, and spread like the slots themselves."""
    return key_slot(name.encode()) * count // REDIS_CLUSTER_HASH_SLOTS


def primary_client(client: Client, key: str) -> redis.Redis:
    """A plain client on the primary that holds ``key`` (itself for a single server).

    For what must run on one connection of that node, such as a write followed by ``WAIT``.
    """
    if isinstance(client, RedisCluster):
        return client.get_redis_connection(client.get_node_from_key(key))
    return client


def replicas_of(client: Client, key: str) -> int:
    """How many replicas serve ``key``'s slot now (from the cluster's slot table; INFO on one server)."""
    if isinstance(client, RedisCluster):
        nodes = client.nodes_manager.slots_cache.get(client.keyslot(key)) or []
        return max(0, len(nodes) - 1)
    info: Any = client.info("replication")
    return int(info.get("connected_slaves", 0))


def on_slot(client: Client, key: str, queue: Callable[[Any], None], transaction: bool = True,
            name: str = "PIPELINE", patient: bool = True) -> list[Any]:
    """Run the commands ``queue(pipe)`` adds, all on ``key``'s slot, in one round trip; their replies.
    ``name``: what a cluster client's ``observe`` times the round trip as; ``patient=False``: raise at
    once instead of waiting out a failover.

    On a cluster this is a plain pipeline on the slot's primary (one node, one slot: MULTI/EXEC works as on
    one server), about a third of the CPU of redis-py's cluster pipeline, which plans every command's node
    on every call. A slot that moved (a failover) or a node that refused the connection is retried
    (:func:`ride_out_failover`): nothing ran then. An error after the commands went out is raised.
    """
    if not isinstance(client, RedisCluster):
        pipe = client.pipeline(transaction=transaction)
        queue(pipe)
        return list(pipe.execute())
    cluster = client
    observe = getattr(cluster, "observe", None)

    def attempt() -> list[Any]:
        start = time.perf_counter()
        try:
            pipe = cluster.get_redis_connection(cluster.get_node_from_key(key)).pipeline(transaction=transaction)
            queue(pipe)
            return list(pipe.execute())
        finally:
            if observe is not None:
                observe(name, time.perf_counter() - start)

    return ride_out_failover(attempt, cluster) if patient else attempt()


def each_primary(client: RedisCluster, call: Callable[[redis.Redis], Any]) -> list[Any]:
    """``call(node)`` on each primary the slot table knows, without waiting for one that is failing over
    (it is left out); raises only when no primary answers."""
    answers, error = [], None
    for node in client.get_primaries():
        try:
            answers.append(call(client.get_redis_connection(node)))
        except (redis.ConnectionError, redis.TimeoutError) as err:
            error = err
    if not answers and error is not None:
        raise error
    return answers


def never_sent(err: Exception) -> bool:
    """Did ``err`` happen while connecting (so the command never reached a server, and retrying is safe)?"""
    return isinstance(err, redis.ConnectionError) and "connecting to" in str(err)


def refresh(client: Client, failed: str | None = None) -> None:
    """Re-read the cluster's slot table (after a failover), asking another node first than ``failed`` (a node
    name seen down); nothing for a single server."""
    if isinstance(client, RedisCluster):
        with contextlib.suppress(*FAILURES):  # still failing over, or no node answers: the next command looks again
            client.nodes_manager.initialize(last_failed_node_name=failed)
