"""``meeple serve webhooks``: turns match outboxes into signed HTTP deliveries, at least once.

Two steps, each safe to crash in (see :mod:`services.core.tenancy.webhooks` for the outbox and its index):

1. **Pump.** For every marked match (the pending sets of the slots, read node by node with one script per
   range of slots, and the legacy shards), read its outbox, make one delivery per (event, subscribed hook) —
   ``whd:{<delivery id>}``, written with NX so a pump repeated after a crash makes no second one — put it
   on the shard's due set ``{webhooks:<k>}:due``, then delete the outbox entry.
2. **Deliver.** Claim due deliveries (moved to ``{webhooks:<k>}:leases`` for :attr:`lease_s`: a worker
   killed mid-delivery leaves a lease that expires and the delivery goes out again), POST them with
   ``Meeple-Signature: t=<unix time>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>``, and on anything but a 2xx
   retry after ``backoff * 2**attempt`` (at most :attr:`backoff_max_s`) until :attr:`retry_for_s` (a day)
   has passed since the event; then the delivery goes to the tenant's dead letters.

The delivery id (``Meeple-Delivery``, and ``id`` in the body) is the same on every attempt: receivers
deduplicate on it.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import logging
import os
import signal
import threading
import time
from typing import Any

import httpx
import orjson
import redis
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from services import redisconn
from services.core.competition import leaderboards
from services.core.record.leases import Leases
from services.core.tenancy import webhooks

log = logging.getLogger("meeple.webhooks")

#: Unmark a drained outbox only if its mark is still the one read (another update may have marked it since).
_UNMARK = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) return 1 end
return 0
"""
USER_AGENT = "Meeple-Webhooks/1"
#: The pending shards of gateways before the per-slot sets (``services/core/tenancy/webhooks.py``): still drained.
LEGACY_KEYS = tuple(webhooks.legacy_pending_key(shard) for shard in range(webhooks.SHARDS))
#: Slots one scan script reads (each a read of an empty or missing key, under 1 us: a script holds its node
#: for about a millisecond at most); a node's scripts go in one round trip.
SCAN_SLOTS = 2048
#: Marks read per pending set and pump (the rest on the next pump).
MARKS_PER_SET = 200
#: Every slot's pending set is scanned at most this often (7-13 ms of Redis CPU for the 16384 slots, spread over
#: the primaries, on a busy 2-core machine: scripts/bench_webhook_scan.py); in between, a pump (every 0.2 s
#: when idle) reads the sets the last reads found marks in, and the legacy shards (about 0.2 ms).
#: So a match's first event waits up to this long more; the events after it, while its mark stays
#: (MARK_GRACE_S after the last), do not.
SCAN_EVERY_S = 1.0


def _scan_script() -> str:
    """The marks in the pending sets of slots ARGV[1]..ARGV[2] (all served by the node it runs on): a flat list
    of set key, [member, score, ...]. Its keys are not declared (they are many slots' of one node: scripts
    without flags may do that, on Redis 6 and 7); the slots' tags, all of one length, are one string in it.
    Almost every set is missing: ``EXISTS`` (a number back) before ``ZRANGE`` (an empty table built in Lua for
    each) made a full scan 2-3 times cheaper (scripts/bench_webhook_scan.py, 2026-11-29: 7-9 ms of Redis CPU
    against 16-27 on one server, 10-13 against 27-32 on three primaries). A multi-key ``EXISTS`` would be cheaper
    still, but in a cluster a script's command may not span slots."""
    tags = "".join(redisconn.slot_tags())
    width = redisconn.SLOT_TAG_LEN
    assert len(tags) == width * len(redisconn.slot_tags()) and tags.isalnum()
    return f"""
local tags = '{tags}'
local out = {{}}
local sub = string.sub
for slot = tonumber(ARGV[1]), tonumber(ARGV[2]) do
  local at = slot * {width}
  local key = 'webhooks:pending:{{' .. sub(tags, at + 1, at + {width}) .. '}}'
  if redis.call('EXISTS', key) == 1 then
    out[#out + 1] = key
    out[#out + 1] = redis.call('ZRANGE', key, 0, {MARKS_PER_SET - 1}, 'WITHSCORES')
  end
end
return out
"""


due_key, leases_key, delivery_key = webhooks.due_key, webhooks.leases_key, webhooks.delivery_key
#: The deliveries' due sets and leases, shard by shard (one slot each).
DUE_SHARDS = tuple((due_key(shard), leases_key(shard)) for shard in range(webhooks.SHARDS))
#: Deliveries one pump takes from each shard (so one busy shard cannot take a whole pump's leases).
DELIVERIES_PER_SHARD = 50


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``v1`` signature: hex HMAC-SHA256 over ``<timestamp>.<body>`` with the hook's secret."""
    return hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


class WebhookMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.deliveries = Counter("meeple_webhook_deliveries_total", "Webhook delivery attempts by outcome "
                                  "(delivered, failed: will retry, dead: gave up)", ["outcome"],
                                  registry=self.registry)
        self.lag = Histogram("meeple_webhook_lag_seconds", "From the change to its delivery (2xx received)",
                             buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400),
                             registry=self.registry)
        self.refused = Counter("meeple_webhook_refused_total", "Delivery attempts not made: the URL's host "
                               "is (now) a non-public address (SSRF guard)", registry=self.registry)
        self.due = Gauge("meeple_webhook_due", "Deliveries waiting to be sent (including retries)",
                         registry=self.registry)


class WebhookWorker:
    def __init__(self, redis_url: str, metrics: WebhookMetrics | None = None, lease_s: float = 30.0,
                 timeout_s: float = 10.0, backoff_s: float = 1.0, backoff_max_s: float = 3600.0,
                 retry_for_s: float = 24 * 3600.0, allow: tuple[webhooks.Network, ...] = (),
                 resolver: webhooks.Resolver = webhooks.resolve, scan_every_s: float = SCAN_EVERY_S) -> None:
        self.redis = redisconn.connect(redis_url, socket_timeout=30)
        self.scan_every_s = scan_every_s
        #: The slots' pending sets the last reads found marks in (read again on every pump), and when every
        #: slot's was last scanned (monotonic).
        self._active: set[str] = set()
        self._scanned_at: float | None = None
        self.allow, self.resolver = allow, resolver  # the SSRF guard (services/core/tenancy/webhooks.py)
        self.metrics = metrics or WebhookMetrics()
        self.lease_s, self.backoff_s = lease_s, backoff_s
        self.backoff_max_s, self.retry_for_s = backoff_max_s, retry_for_s
        self.http = httpx.Client(timeout=timeout_s, headers={"User-Agent": USER_AGENT}, follow_redirects=False)
        self.leases = Leases(self.redis)
        self._unmark = self.redis.register_script(_UNMARK)
        self._scan = _scan_script()
        self._scan_sha = hashlib.sha1(self._scan.encode()).hexdigest()
        self.stopping = threading.Event()

    # -- pump: outboxes -> deliveries ----------------------------------------------------------------------
    def pump(self, now: float) -> int:
        made = 0
        clock = time.monotonic()
        full = self._scanned_at is None or clock - self._scanned_at >= self.scan_every_s
        found = self.marked(None if full else self._active)
        if full:
            self._scanned_at = clock
        self._active = ({key for key, _ in found} if full else
                        self._active & {key for key, _ in found}) - set(LEGACY_KEYS)
        for key, marked in found:
            for member, score in marked:
                match_id = member.decode() if isinstance(member, bytes) else str(member)
                made += self._drain(match_id, webhooks.shard_of(match_id))
                if now - score > webhooks.MARK_GRACE_S:
                    self._unmark(keys=[key], args=[match_id, repr(score)])
        return made

    def marked(self, only: set[str] | None = None) -> list[tuple[str, list[tuple[bytes, float]]]]:
        """Every pending set that holds marks, with (some of) them: the slots' sets, scanned on each primary
        (``only``: just these of them), and the legacy shards (gateways of an older release mark those until
        they are replaced), read on the primary serving each. One round trip per primary; one that cannot
        answer now (failing over) is left for a later pump while the others' marks go on."""
        found: list[tuple[str, list[tuple[bytes, float]]]] = []
        for name, node, ranges in redisconn.slot_ranges(self.redis):
            chunks = [] if only is not None else [
                (lo, min(hi, lo + SCAN_SLOTS - 1)) for a, hi in ranges for lo in range(a, hi + 1, SCAN_SLOTS)]
            sets = [key for key in (*LEGACY_KEYS, *sorted(only or ()))
                    if any(a <= redisconn.slot_of(key) <= b for a, b in ranges)]
            try:
                scanned, read = self._read_node(node, chunks, sets)
            except redisconn.UNAVAILABLE as err:
                log.warning("pending marks on %s not read this time: %s", name, err)
                redisconn.refresh(self.redis)
                continue
            if any(isinstance(reply, redis.ResponseError) for reply in (*scanned, *read)):
                log.warning("pending marks on %s partly unread this time (its slots moved?)", name)
                redisconn.refresh(self.redis)
            for reply in scanned:
                if isinstance(reply, redis.ResponseError):
                    continue
                for i in range(0, len(reply), 2):
                    key, flat = reply[i], reply[i + 1]
                    found.append((key.decode() if isinstance(key, bytes) else str(key),
                                  [(flat[j], float(flat[j + 1])) for j in range(0, len(flat), 2)]))
            found += [(key, marks) for key, marks in zip(sets, read, strict=True)
                      if marks and not isinstance(marks, redis.ResponseError)]
        return found

    def _read_node(self, node: redis.Redis, chunks: list[tuple[int, int]], sets: list[str]
                   ) -> tuple[list[Any], list[Any]]:
        """On ``node``, in one round trip: the scan script over each chunk of slots (loaded first if the node
        has not run it: new, or just promoted), and the marks of the pending ``sets``. A reply that is an
        error stands in its place."""
        for _ in range(2):
            pipe = node.pipeline(transaction=False)
            for lo, hi in chunks:
                pipe.evalsha(self._scan_sha, 0, lo, hi)
            for key in sets:
                pipe.zrange(key, 0, MARKS_PER_SET - 1, withscores=True)
            replies = list(pipe.execute(raise_on_error=False))
            if not any(isinstance(r, redis.exceptions.NoScriptError) for r in replies):
                break
            node.script_load(self._scan)
        return replies[:len(chunks)], replies[len(chunks):]

    def _drain(self, match_id: str, shard: int) -> int:
        made = 0
        while True:
            entries: list[tuple[bytes, dict[bytes, bytes]]] = self.redis.xrange(  # type: ignore[assignment]
                webhooks.outbox_key(match_id), "-", "+", count=100)
            if not entries:
                return made
            for entry_id, fields in entries:
                record = orjson.loads(fields[b"record"])
                for event in record["events"]:  # a gateway that died after the finishing update: rate now
                    if event["type"] == "match.finished":
                        leaderboards.apply_ratings(self.redis, record["tenant"], record["game"], event.get("outcome"))
                made += self._deliveries(record, entry_id.decode(), shard)
                self.redis.xdel(webhooks.outbox_key(match_id), entry_id)

    def _deliveries(self, record: dict[str, Any], entry_id: str, shard: int) -> int:
        made = 0
        hooks = webhooks.hooks(self.redis, record["tenant"])
        for index, event in enumerate(record["events"]):
            for hook in hooks:
                if event["type"] not in hook["events"]:
                    continue
                delivery_id = f"{record['match_id']}-{entry_id}-{index}-{hook['id']}"
                body = {"id": delivery_id, "type": event["type"], "created_at": record["at"],
                        "data": {"match_id": record["match_id"], "game": record["game"],
                                 "version": record["version"], "seats": record["seats"],
                                 **{k: v for k, v in event.items() if k != "type"}}}
                made += webhooks.add_delivery(self.redis, delivery_id, record["tenant"], hook, event["type"], body,
                                              record["at"], shard, keep_s=self.retry_for_s * 2)
        return made

    # -- deliver ------------------------------------------------------------------------------------------
    def deliver(self, now: float) -> int:
        sent = 0
        for shard, member in self.leases.claim_shards(DUE_SHARDS, now, self.lease_s,
                                                      DELIVERIES_PER_SHARD * len(DUE_SHARDS),
                                                      per_shard=DELIVERIES_PER_SHARD):
            sent += self._send(member, shard, now)
        pipe = self.redis.pipeline(transaction=False)
        for due, _ in DUE_SHARDS:
            pipe.zcard(due)
        self.metrics.due.set(sum(int(n) for n in pipe.execute()))
        return sent

    def _send(self, delivery_id: str, shard: int, now: float) -> int:
        raw = self.redis.get(delivery_key(delivery_id))
        if raw is None:
            self.redis.zrem(leases_key(shard), delivery_id)
            return 0
        doc = orjson.loads(raw)
        hook = next((h for h in webhooks.hooks(self.redis, doc["tenant"]) if h["id"] == doc["hook"]), None)
        if hook is None:  # unregistered meanwhile: nobody to tell
            self._finish(delivery_id, shard)
            return 0
        body = doc["body"].encode()
        stamp = int(time.time())
        error = None
        try:
            url, pinned, extensions = self._pin(hook["url"])
            reply = self.http.post(url, content=body, extensions=extensions, headers={
                **pinned, "Content-Type": "application/json", "Meeple-Delivery": delivery_id,
                "Meeple-Event": doc["type"], "Meeple-Signature": f"t={stamp},v1={sign(hook['secret'], stamp, body)}"})
            if 200 <= reply.status_code < 300:
                self._finish(delivery_id, shard)
                self.metrics.deliveries.labels("delivered").inc()
                self.metrics.lag.observe(max(0.0, time.time() - doc["first_at"]))
                return 1
            error = f"HTTP {reply.status_code}"
        except httpx.HTTPError as err:
            error = f"{type(err).__name__}: {err}"
        except webhooks.AddressRefused as err:  # e.g. the name resolves to a private address now
            error = f"{err.code}: {err}"
            self.metrics.refused.inc()
        doc["attempts"] += 1
        doc["last_error"] = error
        if now - doc["first_at"] >= self.retry_for_s:
            pipe = self.redis.pipeline(transaction=False)
            pipe.lpush(webhooks.dead_key(doc["tenant"]), orjson.dumps({
                "id": delivery_id, "hook": doc["hook"], "url": doc["url"], "type": doc["type"],
                "attempts": doc["attempts"], "last_error": error, "first_at": doc["first_at"], "dead_at": now,
                "body": orjson.loads(body)}))
            pipe.ltrim(webhooks.dead_key(doc["tenant"]), 0, webhooks.DEAD_KEEP - 1)
            pipe.execute()
            self._finish(delivery_id, shard)
            self.metrics.deliveries.labels("dead").inc()
            log.warning("webhook %s to %s dead after %d attempts: %s", delivery_id, doc["url"], doc["attempts"], error)
            return 0
        retry_at = now + min(self.backoff_s * 2 ** (doc["attempts"] - 1), self.backoff_max_s)
        pipe = self.redis.pipeline(transaction=False)
        pipe.set(delivery_key(delivery_id), orjson.dumps(doc), xx=True, keepttl=True)
        pipe.zadd(due_key(shard), {delivery_id: retry_at})
        pipe.zrem(leases_key(shard), delivery_id)
        pipe.execute()
        self.metrics.deliveries.labels("failed").inc()
        return 0

    def _pin(self, url: str) -> tuple[httpx.URL, dict[str, str], dict[str, Any]]:
        """Connect to the address just checked, not to whatever the name resolves to a moment later (DNS
        rebinding): the URL gets the address, ``Host`` and TLS (SNI, certificate) keep the name."""
        address = webhooks.checked_address(url, self.allow, self.resolver)
        parsed = httpx.URL(url)
        if address is None:
            return parsed, {}, {}
        extensions = {"sni_hostname": parsed.host} if parsed.scheme == "https" else {}
        return parsed.copy_with(host=address), {"Host": parsed.netloc.decode("ascii")}, extensions

    def _finish(self, delivery_id: str, shard: int) -> None:
        pipe = self.redis.pipeline(transaction=False)
        pipe.delete(delivery_key(delivery_id))
        pipe.zrem(leases_key(shard), delivery_id)
        pipe.zrem(due_key(shard), delivery_id)
        pipe.execute()

    def run_once(self, now: float | None = None) -> int:
        now = time.time() if now is None else now
        self.pump(now)
        return self.deliver(now)

    def run(self, poll_s: float = 0.2) -> None:
        log.info("webhook worker delivering from %d shards", webhooks.SHARDS)
        while not self.stopping.is_set():
            try:
                if not self.run_once():
                    self.stopping.wait(poll_s)
            except redis.ConnectionError as err:
                log.warning("redis unavailable: %s", err)
                self.stopping.wait(1)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    env = os.environ.get
    parser.add_argument("--metrics-port", type=int, default=int(env("MEEPLE_WEBHOOKS_METRICS_PORT", "9104")))
    parser.add_argument("--lease-s", type=float, default=float(env("MEEPLE_WEBHOOKS_LEASE_S", "30")),
                        help="a delivery a worker took and did not finish goes out again after this long")
    parser.add_argument("--backoff-s", type=float, default=float(env("MEEPLE_WEBHOOKS_BACKOFF_S", "1")),
                        help="first retry after this long, doubling each time (at most an hour)")
    parser.add_argument("--retry-for-s", type=float, default=float(env("MEEPLE_WEBHOOKS_RETRY_FOR_S", "86400")),
                        help="give up (dead letter) once this long has passed since the event")
    parser.add_argument("--allow-private", default=env("MEEPLE_WEBHOOK_ALLOW_PRIVATE", ""),
                        help="networks (CIDR, comma-separated) deliveries may reach although not public, or 'all'")
    parser.add_argument("--timeout-s", type=float, default=float(env("MEEPLE_WEBHOOKS_TIMEOUT_S", "10")),
                        help="per HTTP attempt")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("webhooks", help="the webhook delivery worker")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    metrics = WebhookMetrics()
    if args.metrics_port:
        start_http_server(args.metrics_port, registry=metrics.registry)
    worker = WebhookWorker(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), metrics, lease_s=args.lease_s,
                           timeout_s=args.timeout_s, backoff_s=args.backoff_s, retry_for_s=args.retry_for_s,
                           allow=webhooks.allowed_networks([i for i in args.allow_private.split(",") if i.strip()]))
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: worker.stopping.set())
    worker.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="meeple serve webhooks", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
