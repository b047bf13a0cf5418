"""Timekeeper: fires seat-clock deadlines, exactly once each, from any number of processes.

Deadlines are indexed in Redis (``MatchStore.schedule``) by the update that starts a seat's clock. A
timekeeper leases the due ones with one atomic script, so two timekeepers never take the same entry; a
lease that runs out (its timekeeper died) returns the entry to the index, so a restart loses nothing.
Acting on an entry is itself a compare-and-set on the match that requires the very decision the entry
names — ``(match, seat, turn)`` — to be still pending: a duplicate, late or stale entry changes nothing.

On a timeout the match's policy applies: ``bot`` hands the seat to a bot of the match's takeover level
until its owner reclaims it; ``forfeit`` puts the seat out for good (the easy bot plays its remaining
decisions, its side cannot win, and the match ends when a single side is left).

It also gives every match a lifetime: each match is indexed in ``{idle}:matches`` when it is created,
and an active match with no human action (a join, a human move, a reclaim) for ``MEEPLE_IDLE_MATCH_TTL``
seconds is finished as abandoned — ``outcome = {"ended_by": "abandoned", "winners": [], ...}`` — and then
expires like any finished match. A match that is still alive is looked at again when it could be idle.

It also drives the tenants' tournaments and closes their leaderboard seasons (every
:data:`COMPETITIONS_EVERY_S`): :meth:`TournamentRunner.run_once` claims the tournaments due now (a match of one
finished, a round's deadline, an arena's next wave, a start time) and brings each up to date; ``close_due_seasons``
applies the ratings policy of the seasons that ended. Both lease what they take, as the deadlines are leased:
a timekeeper that dies mid-way leaves leases that run out after ``--lease-s``, and another one goes on.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import threading
import time
from typing import Any

import msgspec
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from services import redisconn
from services.core.competition import leaderboards
from services.core.config import Config
from services.core.errors import DomainError
from services.core.match import clocks, legacy
from services.core.match.commit import MAX_REBASES, commit
from services.core.meta import MatchMeta, Outcome
from services.core.record import control
from services.core.record.store import DEADLINE_SHARDS, StaleVersion
from services.core.service import Core
from services.core.tournaments.matches import TournamentMatches
from services.core.tournaments.runner import TournamentRunner

log = logging.getLogger("meeple.timekeeper")
#: How often the idle-match index is looked at (matches live for days: no need to look every poll).
IDLE_EVERY_S = 1.0
#: How often due tournaments and season ends are looked for (a finished match wakes its tournament: it is
#: driven within this long).
COMPETITIONS_EVERY_S = 0.25
LAG_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class TimekeeperMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.timeouts = Counter("meeple_clock_timeouts_total", "Seat clocks that ran out, by policy", ["policy"],
                                registry=self.registry)
        self.lag = Histogram("meeple_clock_fire_lag_seconds", "How late a deadline fired after it was due",
                             buckets=LAG_BUCKETS, registry=self.registry)
        self.abandoned = Counter("meeple_matches_abandoned_total", "Active matches finished after no human "
                                 "action for MEEPLE_IDLE_MATCH_TTL", registry=self.registry)
        self.pending = Gauge("meeple_clock_deadlines_pending", "Deadlines indexed and not yet due or fired",
                             registry=self.registry)
        self.tournaments = Counter("meeple_tournament_steps_total", "Tournaments driven (claimed when due and "
                                   "brought up to date)", registry=self.registry)
        self.seasons = Counter("meeple_leaderboard_seasons_closed_total", "Leaderboard seasons closed (their "
                               "ratings policy applied)", registry=self.registry)


def timed_out(meta: MatchMeta, seat: int) -> MatchMeta:
    """The match meta after ``seat`` ran out of time, under the match's policy (a match with a clock)."""
    assert meta.clock is not None
    forfeit = meta.clock.on_timeout == "forfeit"
    new = control.forfeit(meta, seat) if forfeit else meta.with_seat(seat, control="bot")
    return msgspec.structs.replace(new, clock=clocks.expire(meta.clock, seat))


def abandoned(meta: MatchMeta) -> MatchMeta:
    """The match meta of an active match nobody has played for the idle lifetime: finished, no winner."""
    outcome = Outcome(ended_by="abandoned", winners=[], forfeited=control.forfeited(meta), scores=None, ratings=None)
    return msgspec.structs.replace(meta, status="finished", to_act=[], outcome=outcome)


def due_again(now: float, next_at: float, every_s: float) -> bool:
    """Is work done every ``every_s`` due again at ``now``, its next run set for ``next_at``? Also when the wall
    clock went back past the last run (an NTP step, a caller's ``now`` from the future): waiting for the clock
    to catch up would pause the tournaments and the idle sweep for as long as it stepped."""
    return now >= next_at or now < next_at - every_s


class Timekeeper:
    def __init__(self, redis_url: str, lease_s: float = 10.0, poll_s: float = 0.1,
                 metrics: TimekeeperMetrics | None = None, config: Config | None = None,
                 competitions_every_s: float = COMPETITIONS_EVERY_S) -> None:
        self.metrics = metrics or TimekeeperMetrics()
        # the gateways' settings (TTLs) on this keeper's Redis; its core's metrics go to the keeper's registry
        config = dataclasses.replace(config or Config.from_env(), redis_url=redis_url)
        self.core = Core.connect(config, self.metrics.registry, socket_timeout=10)
        self.redis, self.store = self.core.redis, self.core.store
        self.lease_s, self.poll_s = lease_s, poll_s
        self.stopping = threading.Event()
        self._idle_at = 0.0
        self.tournaments = TournamentRunner(self.redis, TournamentMatches(self.core), lease_s=lease_s)
        self.competitions_every_s, self._competitions_at = competitions_every_s, 0.0
        legacy.migrate(self.store)  # deadlines an older version indexed in one sorted set

    def check_idle(self, match_id: str, now: float) -> tuple[str, float | None]:
        """Look at one match due for an idle check: ("abandoned" | "gone" | "later", due-if-later)."""
        ttl = self.store.idle_ttl_s
        for _ in range(MAX_REBASES):
            match = self.store.load(match_id)
            if match is None or match.meta.status == "finished":
                return "gone", None  # expired, or finished: its TTL ends it
            if match.meta.status == "waiting":  # expires by its own TTL unless someone joins: look again
                return "later", now + ttl
            due = float(match.meta.human_at or match.meta.created_at or now) + ttl
            if due > now:
                return "later", due
            try:
                commit(self.core, match, abandoned(match.meta), None,
                       {"kind": "abandoned", "seat": None, "to_act": []}, now=now)
            except StaleVersion:
                continue
            self.metrics.abandoned.inc()
            log.info("match %s: no human action for %d s, finished as abandoned", match_id, ttl)
            return "abandoned", None
        return "later", now + self.poll_s

    def sweep_idle(self, now: float) -> int:
        """Finish every match whose idle lifetime is over; returns how many."""
        return self._settle(self.store.claim_idle(now, self.lease_s), self.check_idle, now, "abandoned", idle=True)

    def _settle(self, members: list[str], act: Any, now: float, counted: str, idle: bool = False) -> int:
        """Act on each leased entry and release it (back into its index when it is due later); a malformed
        entry is dropped. Returns how many came out as ``counted``."""
        done = 0
        for member in members:
            try:
                outcome, later = act(member, now)
            except (ValueError, KeyError, IndexError, TypeError):
                log.exception("dropping malformed entry %r", member)
                outcome, later = "stale", None
            self.store.release(member, later, idle=idle)
            done += outcome == counted
        return done

    def fire(self, member: str, now: float) -> tuple[str, float | None]:
        """Act on one leased deadline: ("timeout" | "stale" | "expired" | "later", due-if-later)."""
        match_id, seat_text, turn_text = member.split("|")
        seat, turn = int(seat_text), int(turn_text)
        for _ in range(MAX_REBASES):
            match = self.store.load(match_id)
            if match is None:
                return "expired", None
            clock = match.meta.clock
            if (match.meta.status != "active" or clock is None or seat >= len(clock.seats)
                    or clock.seats[seat].turn != turn):
                return "stale", None
            due = clocks.deadline(clock, seat)
            if due is None:
                return "stale", None
            if due > now:
                return "later", due
            meta = timed_out(match.meta, seat)
            policy = clock.on_timeout
            try:
                commit(self.core, match, meta, None, {"kind": "timeout", "seat": seat, "policy": policy,
                                                       "to_act": meta.to_act}, now=now)
            except StaleVersion:
                continue  # the match moved: look again (the seat may just have made its move)
            self.metrics.timeouts.labels(policy).inc()
            self.core.metrics.takeovers.labels("timeout").inc()
            self.metrics.lag.observe(max(0.0, now - due))
            log.info("match %s: seat %d ran out of time (%s)", match_id, seat, policy)
            return "timeout", None
        return "later", now + self.poll_s  # too busy to settle now: try again shortly

    def run_once(self, now: float | None = None) -> int:
        """Fire every deadline due now; returns how many timed out."""
        now = time.time() if now is None else now
        fired = self._settle(self.store.claim_due(now, self.lease_s), self.fire, now, "timeout")
        if due_again(now, self._idle_at, IDLE_EVERY_S):  # (the gauge too: a scrape every few seconds will do)
            self._idle_at = now + IDLE_EVERY_S
            self.metrics.pending.set(self.store.deadlines_pending())
            self.sweep_idle(now)
        if due_again(now, self._competitions_at, self.competitions_every_s):
            self._competitions_at = now + self.competitions_every_s
            self.run_competitions(now)
        return fired

    def run_competitions(self, now: float) -> None:
        """Drive the tournaments due at ``now`` and close the leaderboard seasons that ended."""
        self.metrics.tournaments.inc(self.tournaments.run_once(now))
        try:
            closed = leaderboards.close_due_seasons(self.redis, now, self.lease_s)
        except DomainError as err:  # settings changed too often meanwhile: the season is due again
            log.warning("closing seasons: %s", err.message)
            return
        self.metrics.seasons.inc(len(closed))

    def run(self) -> None:
        log.info("timekeeper watching %d deadline shards", len(DEADLINE_SHARDS))
        while not self.stopping.is_set():
            try:
                self.run_once()
            except redisconn.UNAVAILABLE as err:
                log.warning("redis unavailable: %s", err)
                redisconn.refresh(self.redis)
                self.stopping.wait(1)
                continue
            self.stopping.wait(self.poll_s)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics-port", type=int,
                        default=int(os.environ.get("MEEPLE_TIMEKEEPER_METRICS_PORT", "9103")))
    parser.add_argument("--poll-s", type=float, default=float(os.environ.get("MEEPLE_TIMEKEEPER_POLL_S", "0.1")),
                        help="how often to look for due deadlines")
    parser.add_argument("--lease-s", type=float, default=float(os.environ.get("MEEPLE_TIMEKEEPER_LEASE_S", "10")),
                        help="a deadline taken by a timekeeper that died returns after this long")


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("timekeeper", help="the seat-clock timekeeper")
    add_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    metrics = TimekeeperMetrics()
    start_http_server(args.metrics_port, registry=metrics.registry)
    keeper = Timekeeper(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"), args.lease_s, args.poll_s, metrics)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: keeper.stopping.set())
    keeper.run()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="meeple serve timekeeper", description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
