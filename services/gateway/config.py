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
    hint_budget_s: float = 0.25
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
            idle_match_ttl_s=_int("MEEPLE_IDLE_MATCH_TTL", cls.idle_match_ttl_s),
            max_active_matches_per_ip=_int("MEEPLE_MAX_ACTIVE_MATCHES_PER_IP", cls.max_active_matches_per_ip),
            max_bot_seats_per_ip=_int("MEEPLE_MAX_BOT_SEATS_PER_IP", cls.max_bot_seats_per_ip),
            max_hard_bots_per_ip=_int("MEEPLE_MAX_HARD_BOTS_PER_IP", cls.max_hard_bots_per_ip),
            store_full_ratio=float(os.environ.get("MEEPLE_STORE_FULL_RATIO", cls.store_full_ratio)),
            hint_wait_s=float(os.environ.get("MEEPLE_HINT_WAIT_S", cls.hint_wait_s)),
            hint_budget_s=float(os.environ.get("MEEPLE_HINT_BUDGET_S", cls.hint_budget_s)),
            hints_per_seat_minute=_int("MEEPLE_HINTS_PER_SEAT_MINUTE", cls.hints_per_seat_minute),
            redis_wait_replicas=_int("MEEPLE_REDIS_WAIT_REPLICAS", cls.redis_wait_replicas),
            redis_wait_ms=_int("MEEPLE_REDIS_WAIT_MS", cls.redis_wait_ms),
            waiters_max=_int("MEEPLE_WAITERS_MAX", cls.waiters_max),
            waiters_per_client=_int("MEEPLE_WAITERS_PER_CLIENT", cls.waiters_per_client),
            mm_window=float(os.environ.get("MEEPLE_MM_WINDOW", cls.mm_window)),
            mm_widen_per_s=float(os.environ.get("MEEPLE_MM_WIDEN_PER_S", cls.mm_widen_per_s)),
            anonymous=os.environ.get("MEEPLE_ANONYMOUS", "1").strip().lower() not in ("0", "false", "no", "off"),
        )
