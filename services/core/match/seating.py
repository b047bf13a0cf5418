"""What a match's seats may be: the players they name, the seats a create asks for, all of them taken."""

from __future__ import annotations

from typing import Any

from services.core.errors import DomainError, Kind
from services.core.meta import Seat
from services.core.tenancy import tenants

#: Weakest first (the levels of ``ai/bot.py``; the core does not import ``ai/``).
BOT_LEVELS = ("novice", "easy", "casual", "normal", "strong", "hard")


#: Players a match may be created for (each game's own range is narrower; the rules service checks it).
MAX_PLAYERS = 16


#: Match and ticket ids longer than this are unknown without a lookup.
MAX_ID = 64


def parse_player(raw: Any, tenant: tenants.Tenant | None) -> str:
    """A tenant's user id (``"player"``): only with an API key, 1-64 characters of ``[A-Za-z0-9._:@-]``."""
    if tenant is None:
        raise DomainError(Kind.MALFORMED, "player_needs_api_key", "'player' names a tenant's user: send it with "
                                                                  "an API key")
    if not isinstance(raw, str) or not tenants.NAME_RE.match(raw):
        raise DomainError(Kind.MALFORMED, "bad_player", "player must be 1-64 characters: letters, digits and "
                                                        ". _ : @ - (not first)")
    return raw


def parse_seats(raw: Any, players: int, tenant: tenants.Tenant | None = None) -> list[Seat]:
    def bad(message: str) -> DomainError:
        return DomainError(Kind.MALFORMED, "bad_seats", message)

    if raw is None:
        return [Seat(kind="human") for _ in range(players)]
    if len(raw) != players:
        raise bad(f"seats must list exactly {players} seats")
    seats: list[Seat] = []
    named: set[str] = set()
    for i, seat in enumerate(raw):
        if not isinstance(seat, dict) or seat.get("kind") not in ("human", "bot"):
            raise bad(f"seat {i}: kind must be 'human' or 'bot'")
        if set(seat) - {"kind", "level", "player"}:
            raise bad(f"seat {i}: only 'kind', 'level' and 'player' are allowed")
        if "player" in seat:
            if seat["kind"] != "human":
                raise bad(f"seat {i}: only a human seat names a player")
            player = parse_player(seat["player"], tenant)
            if player in named:
                raise bad(f"seat {i}: player {player!r} already sits in another seat")
            named.add(player)
            seats.append(Seat(kind="human", player=player))
            continue
        if seat["kind"] == "bot":
            level = seat.get("level", "normal")
            if level not in BOT_LEVELS:
                raise bad(f"seat {i}: level must be one of {', '.join(BOT_LEVELS)}")
            seats.append(Seat(kind="bot", level=level))
        else:
            if "level" in seat:
                raise bad(f"seat {i}: a human seat has no level")
            seats.append(Seat(kind="human"))
    return seats


def all_seated(seats: list[Seat]) -> bool:
    """Every seat has its player: a bot, a token, a matchmaking ticket that holds it, a named player it is kept for
    (a tournament's table), or a human who left."""
    return all(s.kind == "bot" or s.token_hash or s.reserved or s.kept or s.left for s in seats)
