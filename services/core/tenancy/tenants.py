"""API keys and the tenants they act for (the backends of apps that integrate Meeple).

A key reads ``mk_<key id>.<secret>``: the ``mk_`` prefix tells the gateway it is an API key and not a
seat token (``<seat>.<secret>``), and the key id names the record to check without a scan. Only the
SHA-256 of the whole key is stored, so a key is shown once, when ``meeple keys create`` makes it.

Keys (each in its own Redis Cluster slot):

* ``apikey:{<key id>}`` — JSON: tenant, hash of the key, created_at, revoked_at;
* ``tenant:{<name>}:conf`` — JSON: the tenant's quotas (see :data:`DEFAULT_QUOTAS`), created_at;
* ``{apikeys}:index`` — the set of every key id, for ``meeple keys list``.

A tenant is charged under the owner ``tn:<name>`` by :mod:`services.core.tenancy.quotas`, the way an anonymous
client is charged under its IP: a tenant's keys share its quotas and its request budget.

**Key cache.** Every request with a key needs its record and its tenant's quotas: two keys in two slots, so on a
Redis Cluster two primaries that have nothing to do with the match asked about. A gateway keeps what it read
in a :class:`KeyCache` (one per :class:`~services.core.service.Core`) for ``MEEPLE_KEY_CACHE_S`` (5 s): a
revocation, or a quota change, reaches every gateway within that long. When a read fails because a primary is
down or failing over (:data:`services.redisconn.UNAVAILABLE`), the record read before is used for up to
``MEEPLE_KEY_STALE_S`` (60 s) more, and is read again without waiting out the failover: a tenant's requests do
not stall with the one primary that holds its key's record (issue 28). A key never read before still needs it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from services import redisconn

KEY_PREFIX = "mk_"
INDEX_KEY = "{apikeys}:index"
#: Tenant names and player ids: what may appear in a Redis key and a URL without escaping.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$")
#: Per tenant, unless ``--quota`` says otherwise: requests a minute (all its keys together), waiting or active
#: matches and matchmaking tickets at once, bot seats in them, ``hard`` bot seats, hints a minute.
DEFAULT_QUOTAS: dict[str, int] = {"rpm": 6000, "matches": 1000, "bots": 1000, "hard": 100, "hints": 600}
QUOTA_NAMES = tuple(DEFAULT_QUOTAS)
#: ``MEEPLE_KEY_CACHE_S``, ``MEEPLE_KEY_STALE_S``: see "Key cache" above; keys a gateway process remembers at most.
KEY_CACHE_S = 5.0
KEY_STALE_S = 60.0
KEY_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Tenant:
    name: str
    key_id: str
    quotas: dict[str, int]

    @property
    def owner(self) -> str:
        """What quotas and rate limits count this tenant as."""
        return owner_of(self.name)


def owner_of(name: str) -> str:
    return f"tn:{name}"


def is_api_key(token: str | None) -> bool:
    return bool(token) and str(token).startswith(KEY_PREFIX)


def key_record(key_id: str) -> str:
    return f"apikey:{{{key_id}}}"


def tenant_conf(name: str) -> str:
    return f"tenant:{{{name}}}:conf"


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def parse_quota(text: str | None) -> dict[str, int]:
    """``rpm=600,matches=50`` -> the quotas it sets (0 = no limit); ValueError names what is wrong."""
    quotas: dict[str, int] = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or name not in DEFAULT_QUOTAS:
            raise ValueError(f"bad quota {part.strip()!r}: use name=value with a name among {', '.join(QUOTA_NAMES)}")
        if not value.strip().isdigit():
            raise ValueError(f"quota {name} must be a whole number >= 0 (0 = no limit)")
        quotas[name] = int(value)
    return quotas


def create_key(client: Any, name: str, quota: dict[str, int] | None = None) -> tuple[str, dict[str, Any]]:
    """A new key for tenant ``name`` (created on first use; ``quota`` updates its quotas). Returns the key —
    the only time it exists outside the caller — and its public record."""
    if not NAME_RE.match(name):
        raise ValueError("a tenant name is 1-64 characters: letters, digits and . _ : @ - (not first)")
    raw = client.get(tenant_conf(name))
    conf: dict[str, Any] = orjson.loads(raw) if raw else {"created_at": time.time(), "quotas": dict(DEFAULT_QUOTAS)}
    conf["quotas"] = {**DEFAULT_QUOTAS, **conf["quotas"], **(quota or {})}
    key_id = secrets.token_hex(6)
    key = f"{KEY_PREFIX}{key_id}.{secrets.token_urlsafe(32)}"
    record = {"key_id": key_id, "tenant": name, "hash": _digest(key), "created_at": time.time(), "revoked_at": None}
    client.set(tenant_conf(name), orjson.dumps(conf))
    client.set(key_record(key_id), orjson.dumps(record))
    client.sadd(INDEX_KEY, key_id)
    return key, public(record, conf)


def public(record: dict[str, Any], conf: dict[str, Any] | None) -> dict[str, Any]:
    return {"key_id": record["key_id"], "tenant": record["tenant"], "created_at": record["created_at"],
            "revoked_at": record.get("revoked_at"), "quotas": (conf or {}).get("quotas", DEFAULT_QUOTAS)}


def list_keys(client: Any) -> list[dict[str, Any]]:
    out = []
    for key_id in sorted(m.decode() if isinstance(m, bytes) else m for m in client.smembers(INDEX_KEY)):
        raw = client.get(key_record(key_id))
        if raw is None:
            continue
        record = orjson.loads(raw)
        conf = client.get(tenant_conf(record["tenant"]))
        out.append(public(record, orjson.loads(conf) if conf else None))
    return sorted(out, key=lambda r: (r["tenant"], r["created_at"]))


def revoke(client: Any, key_id: str) -> bool:
    """Revoke a key, for good: every gateway refuses it (401) once its key cache's TTL has passed
    (``MEEPLE_KEY_CACHE_S``, 5 s by default; see :class:`KeyCache`). False if there is no such key."""
    if key_id.startswith(KEY_PREFIX):
        key_id = key_id[len(KEY_PREFIX):].partition(".")[0]
    raw = client.get(key_record(key_id))
    if raw is None:
        return False
    record = orjson.loads(raw)
    if record.get("revoked_at") is None:
        record["revoked_at"] = time.time()
        client.set(key_record(key_id), orjson.dumps(record))
    return True


@dataclass(frozen=True)
class _Read:
    """A key's record and its tenant's quotas as read at ``at`` (the cache's clock)."""

    at: float
    record: dict[str, Any]
    quotas: dict[str, int]


class KeyCache:
    """Key records and quotas a process has read (see "Key cache" in the module docstring): fresh for ``ttl_s``,
    then used only while Redis cannot answer, for ``stale_s`` more. At most ``size`` keys (the least recently
    used go first); an unknown key id is never kept (made-up ids cannot fill it). Thread-safe."""

    def __init__(self, ttl_s: float = KEY_CACHE_S, stale_s: float = KEY_STALE_S, size: int = KEY_CACHE_SIZE,
                 clock: Callable[[], float] = time.monotonic, on_stale: Callable[[], None] | None = None) -> None:
        self.ttl_s, self.stale_s, self.size, self.clock = ttl_s, stale_s, size, clock
        self.on_stale = on_stale  # told of each stale answer (the core counts them in its metrics)
        self._reads: OrderedDict[str, _Read] = OrderedDict()
        self._lock = threading.Lock()
        #: Lookups answered from a record past its TTL because Redis could not answer.
        self.stale_served = 0

    def get(self, key_id: str) -> _Read | None:
        with self._lock:
            found = self._reads.get(key_id)
            if found is not None:
                self._reads.move_to_end(key_id)
            return found

    def put(self, key_id: str, record: dict[str, Any], quotas: dict[str, int]) -> None:
        with self._lock:
            self._reads[key_id] = _Read(self.clock(), record, quotas)
            self._reads.move_to_end(key_id)
            while len(self._reads) > self.size:
                self._reads.popitem(last=False)

    def drop(self, key_id: str) -> None:
        with self._lock:
            self._reads.pop(key_id, None)


def lookup(client: Any, key: str, cache: KeyCache | None = None) -> Tenant | None:
    """The tenant a key acts for, or None (unknown, malformed or revoked: all answer 401 alike). With a
    ``cache``, a record read less than its TTL ago is not read again, and one read before is used while Redis
    cannot answer (up to its staleness bound; past it, the error is raised)."""
    key_id, dot, _ = key[len(KEY_PREFIX):].partition(".")
    if not dot or not key_id.isalnum() or len(key_id) > 32:
        return None
    if cache is None:
        record = _record(client, key_id, patient=True)
        return None if record is None else _tenant(key, key_id, record, quotas_of(client, record["tenant"]))
    known = cache.get(key_id)
    now = cache.clock()
    if known is not None and now - known.at < cache.ttl_s:
        return _tenant(key, key_id, known.record, known.quotas)
    try:  # (with a record to fall back on, a node that is down fails at once instead of being waited out)
        record = _record(client, key_id, patient=known is None)
        if record is None:
            cache.drop(key_id)
            return None
        quotas = _quotas(client, record["tenant"], patient=known is None)
    except redisconn.UNAVAILABLE:
        if known is None or now - known.at >= cache.ttl_s + cache.stale_s:
            raise
        cache.stale_served += 1
        if cache.on_stale is not None:
            cache.on_stale()
        return _tenant(key, key_id, known.record, known.quotas)
    cache.put(key_id, record, quotas)
    return _tenant(key, key_id, record, quotas)


def _record(client: Any, key_id: str, patient: bool) -> dict[str, Any] | None:
    raw = _get(client, key_record(key_id), patient)
    return None if raw is None else dict(orjson.loads(raw))


def _get(client: Any, key: str, patient: bool) -> Any:
    if patient:
        return client.get(key)
    return redisconn.on_slot(client, key, lambda pipe: pipe.get(key), transaction=False, name="GET",
                             patient=False)[0]


def _tenant(key: str, key_id: str, record: dict[str, Any], quotas: dict[str, int]) -> Tenant | None:
    if record.get("revoked_at") is not None or not secrets.compare_digest(record["hash"], _digest(key)):
        return None
    return Tenant(record["tenant"], key_id, quotas)


def by_name(client: Any, name: str) -> Tenant:
    """The tenant ``name`` as its matches see it (charging a rematch, a hint): its quotas, no key."""
    return Tenant(name, "", quotas_of(client, name))


def quotas_of(client: Any, name: str) -> dict[str, int]:
    return _quotas(client, name, patient=True)


def _quotas(client: Any, name: str, patient: bool) -> dict[str, int]:
    raw = _get(client, tenant_conf(name), patient)
    stored = orjson.loads(raw)["quotas"] if raw else {}
    return {**DEFAULT_QUOTAS, **stored}
