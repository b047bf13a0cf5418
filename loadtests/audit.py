"""Is every stored match what its own move log says it is?

A match is reproducible from (game, players, options, seed, moves). After a load test, every match in the
store is replayed in-process with the engines from its seed and its logged moves, and the replay is
compared with what the store holds: the state bytes, who is to act, the status, the result and the views
and legal moves cached beside the state. A lost or
duplicated update (two writers interleaving the state of one move with the log entry of another) shows
up here even when every HTTP response looked fine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from services.core.record.store import keys
from services.rules.games import RulesError, get_game, words
from services.rules.seal import strip as unsealed

_META_KEY = re.compile(r"^match:\{([^}]+)\}:meta$")


@dataclass(frozen=True)
class Audit:
    match_id: str
    game: str
    status: str
    moves: int
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


def check_match(match_id: str, version: int, meta: dict[str, Any], stored: bytes,
                log: list[dict[str, Any]], derived: dict[bytes, bytes] | None = None) -> Audit:
    """Replay ``log`` from ``meta``'s seed and compare with the stored match; the first problem found wins."""
    game_id, status = str(meta.get("game")), str(meta.get("status"))
    moves = sum(1 for entry in log if entry.get("kind") == "move")

    def bad(problem: str) -> Audit:
        return Audit(match_id, game_id, status, moves, problem)

    if [entry.get("version") for entry in log] != list(range(version + 1)):
        return bad(f"the log does not hold exactly versions 0..{version}")
    try:
        game = get_game(game_id)
        state = game.new_game(meta["players"], meta["seed"], meta["options"])
    except (KeyError, RulesError) as exc:
        return bad(f"cannot set the match up again: {exc}")
    # The server ended it before the game did (a forfeit, or no human action for the idle lifetime): its
    # last entry leaves nobody to act.
    ended_early = (meta.get("outcome") or {}).get("ended_by") in ("forfeit", "abandoned")
    for entry in log:
        if entry["kind"] == "move":
            try:
                state = game.apply(state, entry["seat"], entry["move"])
            except RulesError as exc:
                return bad(f"the move at version {entry['version']} is illegal on replay: {exc}")
        if entry.get("to_act") != game.to_act(state) and not (ended_early and entry is log[-1]):
            return bad(f"version {entry['version']}: the log says {entry.get('to_act')} act next, the replay "
                       f"says {game.to_act(state)}")
    replayed = game.encode(state)
    if replayed != stored:
        try:
            same = game.encode(game.decode(unsealed(stored))) == replayed  # tolerate a non-canonical but equal encoding
        except RulesError:
            same = False
        if not same:
            return bad("the stored state differs from the replay of the log")
    if ended_early:
        return Audit(match_id, game_id, status, moves, None if meta.get("to_act") == [] and status == "finished"
                     else "a match ended by the server must be finished with nobody to act")
    if meta.get("to_act") != game.to_act(state):
        return bad(f"meta says {meta.get('to_act')} act next, the replay says {game.to_act(state)}")
    if (status == "finished") != game.is_over(state):
        return bad(f"status {status!r} but the replayed game is {'over' if game.is_over(state) else 'not over'}")
    if status == "finished" and meta.get("result") != words.result_document(game, state):  # with its explanation
        return bad("the stored result differs from the replayed result")
    bots_own = {i for i, info in enumerate(meta.get("seats") or []) if info.get("kind") == "bot"}
    problem = check_derived(game, state, derived or {}, bots_own)
    if problem:
        return bad(problem)
    return Audit(match_id, game_id, status, moves)


def check_derived(game: Any, state: Any, derived: dict[bytes, bytes], quiet: set[int] | None = None) -> str | None:
    """The views and legal moves cached beside the state must be the engine's for the replayed state. ``quiet``: a
    bot's own seats, which no one reads, so a move need not cache anything of theirs (what is cached must match)."""
    if not derived:
        return None
    quiet = quiet or set()
    for seat in [None, *range(game.seat_count(state))]:
        cached = derived.get(f"view:{-1 if seat is None else seat}".encode())
        if cached is None and seat in quiet:
            continue
        if cached is None or orjson.loads(cached) != orjson.loads(orjson.dumps(game.view(state, seat))):
            return f"the cached view of {'the spectator' if seat is None else f'seat {seat}'} is not the replay's"
    for seat in game.to_act(state):
        cached = derived.get(f"legal:{seat}".encode())
        if cached is None and seat in quiet:
            continue
        if cached is None or orjson.loads(cached) != orjson.loads(orjson.dumps(game.legal_moves(state, seat))):
            return f"the cached legal moves of seat {seat} are not the replay's"
    return None


def audit_match(client: Any, match_id: str) -> Audit:
    """Load one match (version, meta, state, log) from the store and check it."""
    version_key, meta_key, state_key, log_key, _, derived_key = keys(match_id)
    pipe = client.pipeline(transaction=True)  # MULTI/EXEC: one consistent snapshot (the keys share a slot)
    pipe.get(version_key)
    pipe.get(meta_key)
    pipe.get(state_key)
    pipe.lrange(log_key, 0, -1)
    pipe.hgetall(derived_key)
    version, meta_raw, state, raw_log, derived = pipe.execute()
    if version is None or meta_raw is None or state is None:
        return Audit(match_id, "?", "?", 0, "the match's keys are missing (expired?)")
    meta = orjson.loads(meta_raw)
    return check_match(match_id, int(version), meta, state, [orjson.loads(raw) for raw in raw_log], derived)


def lost_acknowledged(client: Any, acknowledged: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The moves a client was told were applied that the store's log does not hold.

    Each record is ``{"match_id", "seat", "move", "version"}`` (the version the move's response named);
    a move counts as kept when the log holds it, by that seat, at that version (or, with no version, at any).
    A match that expired is not "lost" (its TTL ran out): it is reported only if its keys are gone too early.
    """
    by_match: dict[str, list[dict[str, Any]]] = {}
    for record in acknowledged:
        by_match.setdefault(str(record["match_id"]), []).append(record)
    lost = []
    for match_id, records in sorted(by_match.items()):
        log = [orjson.loads(raw) for raw in client.lrange(keys(match_id)[3], 0, -1)]
        for record in records:
            wanted = [e for e in log if e.get("kind") == "move" and e.get("seat") == record["seat"]
                      and e.get("move") == record["move"]]
            version = record.get("version")
            if not wanted or (version is not None and not any(e.get("version") == version for e in wanted)):
                lost.append(record)
    return lost


def stored_match_ids(client: Any) -> Iterator[str]:
    """Every match id in the store (SCAN: it never blocks the server for long)."""
    for key in client.scan_iter(match="match:*:meta", count=1000):
        found = _META_KEY.match(key.decode() if isinstance(key, bytes) else key)
        if found:
            yield found.group(1)


def audit_store(client: Any, match_ids: Iterable[str] | None = None) -> list[Audit]:
    """Check ``match_ids`` (default: every match in the store)."""
    ids = sorted(set(stored_match_ids(client) if match_ids is None else match_ids))
    return [audit_match(client, match_id) for match_id in ids]
