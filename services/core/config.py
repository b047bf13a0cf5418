"""The configuration every process of the server shares, read from the environment once: no globals."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Config:
    """Every setting of the server's processes, read from the environment once (12-factor)."""

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
    #: An active match with no human action for this long is finished as abandoned (then expires).
    idle_match_ttl_s: int = 7 * 24 * 3600
    #: Per client IP: matches (and matchmaking tickets) that are waiting or active at once.
    max_active_matches_per_ip: int = 20
    #: Per client IP: bot seats in its waiting or active matches, and of those at level ``hard``.
    max_bot_seats_per_ip: int = 20
    max_hard_bots_per_ip: int = 4
    #: New matches are refused (503 ``store_full``) once Redis uses this share of its ``maxmemory``,
    #: keeping the rest for the matches already running.
    store_full_ratio: float = 0.9
    #: How long ``/hint`` waits for a bot worker's answer, the search budget, and hints per seat a minute.
    hint_wait_s: float = 5.0
    hint_budget_s: float = 2.0
    hints_per_seat_minute: int = 10
    #: Replicas a match update must reach before it is acknowledged (``WAIT``); -1 = one when the match's
    #: primary has a replica, none otherwise. ``redis_wait_ms`` bounds the wait (then 503, not acknowledged).
    redis_wait_replicas: int = -1
    redis_wait_ms: int = 500
    #: Waiting requests (long-polls, SSE streams, WebSockets, ticket long-polls) one process holds at most
    #: (past it: 503 + Retry-After), and per token, or per IP address without one (past it: 429).
    waiters_max: int = 20_000
    waiters_per_client: int = 50
    #: Requests without an API key may create matches, join and queue (``make run`` demos); deploy configs
    #: set ``MEEPLE_ANONYMOUS=0`` so that only tenants' keys (and the seat tokens they hand out) get in.
    anonymous: bool = True
    #: Skill matchmaking: a group may play when its rating spread (openskill mu) is within
    #: ``MEEPLE_MM_WINDOW + MEEPLE_MM_WIDEN_PER_S * wait`` of its longest-waiting ticket.
    mm_window: float = 2.0
    mm_widen_per_s: float = 0.5
    #: Networks (CIDR) webhooks may reach although not public, or ``all``: the SSRF guard's allow-list.
    webhook_allow_private: tuple[str, ...] = field(default_factory=tuple)
    #: An API key's record (and its tenant's quotas) is read again after this long (a revocation takes effect
    #: within it), and while Redis cannot answer, the one read before serves for ``key_stale_s`` more.
    key_cache_s: float = 5.0
    key_stale_s: float = 60.0
    #: The gateway serves its Prometheus metrics on this port of its own (0: on the API port, ``/metrics``,
    #: without the series that name tenants); the API port's ``/metrics`` is then 404.
    metrics_port: int = 0
    #: Chat (see :mod:`.chat`): messages per speaker (a seat, or a spectator's key or address) in a sliding window
    #: of ``chat_rate_window_s`` seconds (past it: 429 ``chat_rate_limited``), messages a match holds at most (409
    #: ``chat_full``), and how long a finished match still takes chat (then 409 ``chat_closed``).
    chat_rate: int = 5
    chat_rate_window_s: int = 10
    chat_max_messages: int = 500
    chat_after_finish_s: int = 300

    @classmethod
    def from_env(cls) -> Config:
        """Every setting its environment variable names (``ENV``), parsed as the field's default is typed."""
        defaults, values = cls(), dict[str, Any]()  # every field has a default
        for name, var in ENV.items():
            raw = os.environ.get(var)
            if raw is None:
                continue
            default = getattr(defaults, name)
            if isinstance(default, bool):
                values[name] = raw.strip().lower() not in ("0", "false", "no", "off")
            elif isinstance(default, tuple):
                values[name] = tuple(item.strip() for item in raw.split(",") if item.strip())
            else:
                values[name] = type(default)(raw)
        return cls(**values)


#: The environment variable of each setting (docs/api.md "Configuration" lists them with their meaning).
ENV: dict[str, str] = {
    "redis_url": "REDIS_URL",
    "rules_addr": "MEEPLE_RULES_ADDR",
    "rules_timeout_s": "MEEPLE_RULES_TIMEOUT_S",
    "rules_retries": "MEEPLE_RULES_RETRIES",
    "finished_ttl_s": "MEEPLE_FINISHED_TTL_S",
    "waiting_ttl_s": "MEEPLE_WAITING_TTL_S",
    "max_body_bytes": "MEEPLE_MAX_BODY_BYTES",
    "rate_limit_per_minute": "MEEPLE_RATE_LIMIT_PER_MINUTE",
    "long_poll_max_s": "MEEPLE_LONG_POLL_MAX_S",
    "bot_fill_s": "MEEPLE_BOT_FILL_S",
    "presence_s": "MEEPLE_PRESENCE_S",
    "idle_match_ttl_s": "MEEPLE_IDLE_MATCH_TTL",
    "max_active_matches_per_ip": "MEEPLE_MAX_ACTIVE_MATCHES_PER_IP",
    "max_bot_seats_per_ip": "MEEPLE_MAX_BOT_SEATS_PER_IP",
    "max_hard_bots_per_ip": "MEEPLE_MAX_HARD_BOTS_PER_IP",
    "store_full_ratio": "MEEPLE_STORE_FULL_RATIO",
    "hint_wait_s": "MEEPLE_HINT_WAIT_S",
    "hint_budget_s": "MEEPLE_HINT_BUDGET_S",
    "hints_per_seat_minute": "MEEPLE_HINTS_PER_SEAT_MINUTE",
    "redis_wait_replicas": "MEEPLE_REDIS_WAIT_REPLICAS",
    "redis_wait_ms": "MEEPLE_REDIS_WAIT_MS",
    "waiters_max": "MEEPLE_WAITERS_MAX",
    "waiters_per_client": "MEEPLE_WAITERS_PER_CLIENT",
    "mm_window": "MEEPLE_MM_WINDOW",
    "mm_widen_per_s": "MEEPLE_MM_WIDEN_PER_S",
    "anonymous": "MEEPLE_ANONYMOUS",
    "cors_origins": "MEEPLE_CORS_ORIGINS",
    "webhook_allow_private": "MEEPLE_WEBHOOK_ALLOW_PRIVATE",
    "key_cache_s": "MEEPLE_KEY_CACHE_S",
    "key_stale_s": "MEEPLE_KEY_STALE_S",
    "metrics_port": "MEEPLE_METRICS_PORT",
    "chat_rate": "MEEPLE_CHAT_RATE",
    "chat_rate_window_s": "MEEPLE_CHAT_RATE_WINDOW_S",
    "chat_max_messages": "MEEPLE_CHAT_MAX_MESSAGES",
    "chat_after_finish_s": "MEEPLE_CHAT_AFTER_FINISH_S",
}
