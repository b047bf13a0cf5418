"""Every limit, enum and documented default of the HTTP contract, in one place.

The models (``models.py``), the OpenAPI document (``openapi.py``), the docs' tables and both SDKs read these
names; the gateway's views enforce them through the models. The match core keeps its own constants (it does not
import the HTTP contract): ``tests/contract/test_limits.py`` holds them, and the settings' defaults, equal to
these.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Deepest nesting of arrays and objects a JSON body may have (the body itself is level 1).
MAX_JSON_DEPTH = 32
#: Integers anywhere in a JSON body (a move, options) are signed 64-bit: the store and the rules service encode
#: JSON with orjson, which stops there.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
#: ``MEEPLE_MAX_BODY_BYTES``' default: the largest request body (bytes), chunked bodies too.
MAX_BODY_BYTES = 64 * 1024
#: An ``Idempotency-Key`` is 1 to this many characters; a stored answer is kept this long.
IDEMPOTENCY_KEY_MAX = 128
IDEMPOTENCY_TTL_S = 24 * 3600
#: Players a match may be created for (each game's own range is narrower: ``GET /v1/games``).
MAX_PLAYERS = 16
#: Bot levels, weakest first (the search budgets of ``ai/bot.py``), and the default takeover level.
BOT_LEVELS = ("novice", "easy", "casual", "normal", "strong", "hard")
DEFAULT_TAKEOVER_LEVEL = "normal"
#: Match ids, ticket ids and webhook ids are at most this long (longer: 404).
ID_MAX = 64
#: ``seed`` is a non-negative 63-bit integer.
SEED_MAX = 2**63 - 1
#: ``after`` (a version) at most.
VERSION_MAX = 2**31
#: ``MEEPLE_LONG_POLL_MAX_S``' default: a long-poll's ``wait`` at most (seconds).
LONG_POLL_MAX_S = 30
#: An event stream's ``limit`` at most, and by default (seconds).
STREAM_LIMIT_MAX_S = 3600
#: A watch token's lifetime (``ttl_s``): at least, at most, and by default (seconds).
WATCH_TTL_MIN_S = 60
WATCH_TTL_MAX_S = 7 * 86400
WATCH_TTL_DEFAULT_S = 86400
#: Pages of a tenant's or player's matches and of dead letters: ``limit`` at most, and by default.
PAGE_MAX = 100
PAGE_DEFAULT = 20
#: Each tenant's and player's history keeps its newest this many matches; dead letters kept per tenant.
HISTORY_KEEP = 1000
DEAD_LETTERS_KEEP = 1000
#: A tenant's user id: 1-64 characters of letters, digits and ``. _ : @ -``, not starting with punctuation.
PLAYER_ID_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}$"
PLAYER_ID_MAX = 64
#: Webhooks: events a hook may ask for, hooks per tenant, URL length.
WEBHOOK_EVENTS = ("match.created", "match.started", "match.finished", "seat.timeout", "seat.taken_over",
                  "seat.reclaimed", "turn", "chat.message", "chat.redacted", "tournament.started", "round.started",
                  "round.finished", "tournament.finished")
MAX_HOOKS = 20
MAX_URL = 2048
#: Seat clocks: modes, timeout policies, and the bounds of their settings (seconds).
CLOCK_MODES = ("none", "per_move", "fischer", "correspondence")
TIMEOUT_POLICIES = ("bot", "forfeit")
CLOCK_MIN_S = 0.5
CLOCK_MAX_S = 30 * 86400.0
#: What a long-poll waits for: any new version, or the caller's turn (or the end).
UNTIL = ("change", "turn")
#: The WebSocket's hello must arrive this soon after the upgrade (seconds); pings come this often.
WS_HELLO_S = 10
HEARTBEAT_S = 15
#: Matchmaking tickets live this long (seconds).
TICKET_TTL_S = 3600
#: A party member's display name: 1-32 characters, no control characters.
PARTY_NAME_MAX = 32
PARTY_NAME_PATTERN = "^[^\\x00-\\x1f\\x7f-\\x9f]+$"
#: Leaderboards: a page of a board (``limit``) at most and by default, the deepest ``offset``, the neighbours on each
#: side (``span``) at most and by default, the largest ``min_matches``, seasons per (tenant, game), a season's name.
BOARD_LIMIT_MAX = 100
BOARD_LIMIT_DEFAULT = 10
BOARD_OFFSET_MAX = 10_000
BOARD_SPAN_MAX = 25
BOARD_SPAN_DEFAULT = 5
MIN_MATCHES_MAX = 10_000
SEASONS_MAX = 100
SEASON_NAME_MAX = 32
SEASON_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"
#: Tournaments: a name's length, seats per table, Swiss rounds, a round's deadline and an arena's window (seconds:
#: from, to), an arena's grace and wait for bots at most, registrations at most and by default, how far ahead (and
#: how long ago) ``starts_at`` may be.
TOURNAMENT_NAME_MAX = 100
TOURNAMENT_TABLE = (2, 6)
TOURNAMENT_ROUNDS_MAX = 50
TOURNAMENT_ROUND_S = (60.0, 7 * 86400.0)
TOURNAMENT_ROUND_S_DEFAULT = 3600.0
TOURNAMENT_DURATION_S = (60.0, 7 * 86400.0)
TOURNAMENT_GRACE_S_MAX = 86400.0
TOURNAMENT_GRACE_S_DEFAULT = 600.0
TOURNAMENT_BOT_AFTER_S_MAX = 3600.0
TOURNAMENT_BOT_AFTER_S_DEFAULT = 60.0
#: A page of a tournament's rounds (``GET /v1/tournaments/{id}/rounds``): ``limit`` at most, and by default.
TOURNAMENT_ROUNDS_PAGE_MAX = 50
TOURNAMENT_ROUNDS_PAGE_DEFAULT = 10
#: ``after`` (a round number) at most: an arena's waves are its rounds (one every few seconds for a week at most).
TOURNAMENT_ROUND_N_MAX = 2**31
TOURNAMENT_PLAYERS_MAX = 1024
TOURNAMENT_PLAYERS_DEFAULT = 256
TOURNAMENT_STARTS_AHEAD_S = 365 * 86400.0
TOURNAMENT_STARTS_PAST_S = 60.0
#: Chat: a message's text at most (characters, after stripping surrounding whitespace); the defaults of the
#: per-speaker rate (messages per window of seconds), of the messages a match holds, and of how long a finished
#: match still takes chat (seconds). The last four are the operator's settings (``SETTINGS``).
CHAT_TEXT_MAX = 200
CHAT_RATE = 5
CHAT_RATE_WINDOW_S = 10
CHAT_MAX_MESSAGES = 500
CHAT_AFTER_FINISH_S = 300
#: Ratings as the API shows them are rounded: ``rating`` to 3 decimals, ``mu`` and ``sigma`` to 4.
RATING_DECIMALS = 3
MU_SIGMA_DECIMALS = 4


@dataclass(frozen=True)
class Setting:
    """An environment variable an operator may set: its default (as the server reads it), unit and meaning."""

    env: str
    default: str
    unit: str
    meaning: str
    process: str = "gateway"


#: The settings a client author meets in the contract (limits, timings). docs/operators/configuration.md
#: lists these and the rest; ``tests/contract/test_limits.py`` checks the defaults against the processes.
SETTINGS: tuple[Setting, ...] = (
    Setting("MEEPLE_MAX_BODY_BYTES", str(MAX_BODY_BYTES), "bytes", "largest request body"),
    Setting("MEEPLE_RATE_LIMIT_PER_MINUTE", "600", "requests a minute",
            "per verified seat token, else per client IP; 0 turns it off"),
    Setting("MEEPLE_LONG_POLL_MAX_S", str(LONG_POLL_MAX_S), "seconds", "a long-poll's `wait` at most"),
    Setting("MEEPLE_BOT_FILL_S", "0", "seconds",
            "matchmaking seats bots in a ticket's empty seats after this wait; 0 = never (wait for humans)"),
    Setting("MEEPLE_PRESENCE_S", "30", "seconds", "a seat counts as connected this long after a request"),
    Setting("MEEPLE_IDLE_MATCH_TTL", str(7 * 24 * 3600), "seconds",
            "an active match with no human action for this long ends as abandoned"),
    Setting("MEEPLE_FINISHED_TTL_S", str(7 * 24 * 3600), "seconds", "finished matches are kept this long"),
    Setting("MEEPLE_WAITING_TTL_S", str(24 * 3600), "seconds", "never-started matches are kept this long"),
    Setting("MEEPLE_MAX_ACTIVE_MATCHES_PER_IP", "20", "matches",
            "waiting or active matches and tickets per client IP; 0 = no limit"),
    Setting("MEEPLE_MAX_BOT_SEATS_PER_IP", "20", "seats", "bot seats in those matches; 0 = no limit"),
    Setting("MEEPLE_MAX_HARD_BOTS_PER_IP", "4", "seats", "of which at level `hard`; 0 = no limit"),
    Setting("MEEPLE_HINTS_PER_SEAT_MINUTE", "10", "hints a minute", "per seat"),
    Setting("MEEPLE_HINT_WAIT_S", "5.0", "seconds", "how long `/hint` waits for a bot worker"),
    Setting("MEEPLE_HINT_BUDGET_S", "2.0", "seconds", "a hint's think-time cap, a guard on a slow machine (the "
            "search itself is the hint level's iteration budget)"),
    Setting("MEEPLE_STORE_FULL_RATIO", "0.9", "share of maxmemory",
            "new matches and tickets are refused (503 `store_full`) past it"),
    Setting("MEEPLE_WAITERS_MAX", "20000", "waiting requests", "per gateway process (then 503 `too_many_waiters`)"),
    Setting("MEEPLE_WAITERS_PER_CLIENT", "50", "waiting requests",
            "per token, or per address without one (then 429 `too_many_waiters`)"),
    Setting("MEEPLE_MM_WINDOW", "2.0", "rating points (openskill mu)", "skill matching's starting window"),
    Setting("MEEPLE_MM_WIDEN_PER_S", "0.5", "rating points a second", "how fast the window widens"),
    Setting("MEEPLE_ANONYMOUS", "1", "0 or 1", "1: create, join and queue without an API key"),
    Setting("MEEPLE_KEY_CACHE_S", "5.0", "seconds",
            "a gateway reads an API key's record (and its tenant's quotas) again after this long: a revoked key "
            "may still work this long; 0 = read on every request"),
    Setting("MEEPLE_KEY_STALE_S", "60.0", "seconds",
            "while Redis cannot answer (a primary failing over), a key read before keeps working this long past "
            "`MEEPLE_KEY_CACHE_S`; 0 = never"),
    Setting("MEEPLE_WEBHOOKS_LEASE_S", "30", "seconds", "a delivery's lease before another worker may take it",
            "webhooks"),
    Setting("MEEPLE_WEBHOOKS_BACKOFF_S", "1", "seconds", "first retry delay (doubles, at most an hour apart)",
            "webhooks"),
    Setting("MEEPLE_WEBHOOKS_RETRY_FOR_S", "86400", "seconds", "retries stop after this long (dead letter)",
            "webhooks"),
    Setting("MEEPLE_WEBHOOKS_TIMEOUT_S", "10", "seconds", "one delivery's HTTP timeout", "webhooks"),
    Setting("MEEPLE_WEBHOOKS_METRICS_PORT", "9104", "port", "the webhook worker's /metrics", "webhooks"),
    Setting("MEEPLE_CHAT_RATE", str(CHAT_RATE), "messages",
            "chat messages per seat (or per spectator: its key, else its address) in MEEPLE_CHAT_RATE_WINDOW_S "
            "(then 429 `chat_rate_limited` with Retry-After)"),
    Setting("MEEPLE_CHAT_RATE_WINDOW_S", str(CHAT_RATE_WINDOW_S), "seconds", "the chat rate's sliding window"),
    Setting("MEEPLE_CHAT_MAX_MESSAGES", str(CHAT_MAX_MESSAGES), "messages",
            "chat messages a match holds (then 409 `chat_full`)"),
    Setting("MEEPLE_CHAT_AFTER_FINISH_S", str(CHAT_AFTER_FINISH_S), "seconds",
            "a finished match takes chat this long after it finished (then 409 `chat_closed`)"),
    Setting("MEEPLE_METRICS_PORT", "0", "port",
            "the gateway's metrics on a port of their own, every series (the tenants' too), the API port's `/metrics` "
            "then 404; 0 = on the API port, without any series that names a tenant"),
)


def default(env: str) -> str:
    """The documented default of the setting ``env``."""
    return next(s.default for s in SETTINGS if s.env == env)
