"""What every door and worker holds to act on matches: the config, the store, the rules client, the metrics.

The gateway builds one in its app factory; the bot worker, the timekeeper and the webhook worker build their
own with :meth:`Core.connect`. Nothing here is global: two cores (two tests, two tenants' servers) never share
state except through Redis.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from services import redisconn
from services.core.config import Config
from services.core.metrics import CoreMetrics, timed_redis
from services.core.record.store import MatchStore
from services.core.rules_client import RulesClient
from services.core.tenancy.tenants import KeyCache


@dataclass
class Core:
    config: Config
    store: MatchStore
    rules: RulesClient
    metrics: CoreMetrics
    #: API keys this process has read (see :class:`~services.core.tenancy.tenants.KeyCache`), per core.
    keys: KeyCache = field(init=False)

    def __post_init__(self) -> None:
        self.keys = KeyCache(self.config.key_cache_s, self.config.key_stale_s,
                             on_stale=self.metrics.stale_keys.inc)
        redisconn.slot_tags()  # (once per process, about 0.1 s: here rather than in a tenant's first commit)

    @classmethod
    def connect(cls, config: Config, registry: CollectorRegistry | None = None, **redis_options: Any) -> Core:
        """A core on ``config``'s Redis (timed into ``registry``'s metrics) and rules service."""
        metrics = CoreMetrics(registry)
        client = timed_redis(config.redis_url, metrics.redis, **redis_options)
        return cls(config, MatchStore.from_config(client, config),
                   RulesClient(config.rules_addr, config.rules_timeout_s, config.rules_retries), metrics)

    @property
    def redis(self) -> Any:
        return self.store.redis
