"""Gateway configuration, read from the environment once (12-factor): no module-level globals."""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


@dataclass(frozen=True)
class GatewayConfig:
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: Comma-separated host:port list, or a gRPC target such as ``dns:///rules:50051``.
    rules_addr: str = "127.0.0.1:50051"
    rules_timeout_s: float = 5.0
    rules_retries: int = 3
    finished_ttl_s: int = 7 * 24 * 3600
    waiting_ttl_s: int = 24 * 3600
    max_body_bytes: int = 64 * 1024
    rate_limit_per_minute: int = 600
    long_poll_max_s: int = 30
    #: Matchmaking fills empty seats with bots after this many seconds (0 = wait for humans forever).
    bot_fill_s: int = 0
    #: A seat counts as connected this long after its last authenticated request (or long-poll/stream).
    presence_s: float = 30.0
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    #: Waiting requests (long-polls, SSE streams, WebSockets, ticket long-polls) one process holds at most
    #: (past it: 503 + Retry-After), and per token, or per IP address without one (past it: 429).
    waiters_max: int = 20_000
    waiters_per_client: int = 50

    @classmethod
    def from_env(cls) -> GatewayConfig:
        origins = tuple(o.strip() for o in os.environ.get("MEEPLE_CORS_ORIGINS", "").split(",") if o.strip())
        return cls(
            redis_url=os.environ.get("REDIS_URL", cls.redis_url),
            rules_addr=os.environ.get("MEEPLE_RULES_ADDR", cls.rules_addr),
            rules_timeout_s=float(os.environ.get("MEEPLE_RULES_TIMEOUT_S", cls.rules_timeout_s)),
            rules_retries=_int("MEEPLE_RULES_RETRIES", cls.rules_retries),
            finished_ttl_s=_int("MEEPLE_FINISHED_TTL_S", cls.finished_ttl_s),
            waiting_ttl_s=_int("MEEPLE_WAITING_TTL_S", cls.waiting_ttl_s),
            max_body_bytes=_int("MEEPLE_MAX_BODY_BYTES", cls.max_body_bytes),
            rate_limit_per_minute=_int("MEEPLE_RATE_LIMIT_PER_MINUTE", cls.rate_limit_per_minute),
            long_poll_max_s=_int("MEEPLE_LONG_POLL_MAX_S", cls.long_poll_max_s),
            bot_fill_s=_int("MEEPLE_BOT_FILL_S", cls.bot_fill_s),
            presence_s=float(os.environ.get("MEEPLE_PRESENCE_S", cls.presence_s)),
            cors_origins=origins,
            waiters_max=_int("MEEPLE_WAITERS_MAX", cls.waiters_max),
            waiters_per_client=_int("MEEPLE_WAITERS_PER_CLIENT", cls.waiters_per_client),
        )
