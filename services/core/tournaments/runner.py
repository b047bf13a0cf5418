"""The tournament runner: drives every live tournament, from any number of processes.

It claims due tournaments (:func:`.store.claim`, leased like the timekeeper's deadlines), and for each one
repeats until nothing changes: create the matches of new tables (idempotent on the table's key), end the
matches a deadline or a cancel overtook, read the running matches, compute the next state
(:func:`.machine.advance`), save it with its events (compare-and-set; a runner that lost the race loads
again), and hand the saved events to the core's webhooks (:meth:`.port.TournamentCore.emit`, then removed from
the outbox). It releases the tournament with the time it must be looked at again. A runner that dies at any
point leaves a state another one completes after the lease runs out: nothing is lost, and no match is made
twice.

The timekeeper (or a worker of its own) calls :meth:`TournamentRunner.run_once` in its loop; the core calls
:func:`.store.wake` when a match tagged ``tournament:<id>`` finishes. Wired in phase 2, with the core's
implementation of :class:`.port.TournamentCore`.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from services.core.errors import Kind
from services.core.tournaments import machine, store
from services.core.tournaments.port import MatchResult, TournamentCore

log = logging.getLogger("meeple.tournaments")
#: Saves per tournament per claim at most (a round's creation, its aborts, the step itself: a few).
MAX_STEPS = 20


class TournamentRunner:
    def __init__(self, client: Any, core: TournamentCore, lease_s: float = 30.0) -> None:
        self.client, self.core, self.lease_s = client, core, lease_s

    def run_once(self, now: float | None = None) -> int:
        """Drive every tournament due now; returns how many."""
        now = time.time() if now is None else now
        taken = store.claim(self.client, now, self.lease_s)
        for tournament_id in taken:
            due: float | None = now + machine.POLL_S
            try:
                due = self.drive(tournament_id, now)
            except Exception:  # one broken tournament must not stop the others: it is retried after POLL_S
                log.exception("tournament %s: step failed", tournament_id)
            store.release(self.client, tournament_id, due)
        return len(taken)

    def _results(self, doc: dict[str, Any]) -> dict[str, MatchResult]:
        return {mid: self.core.match_result(doc["tenant"], mid) for mid in machine.running_matches(doc)}

    def _ratings_of(self, doc: dict[str, Any]) -> machine.RatingsOf:
        return lambda names: self.core.player_ratings(doc["tenant"], doc["game"], names)

    def drive(self, tournament_id: str, now: float) -> float | None:
        """Bring one tournament up to date; returns when to look at it again."""
        due: float | None = now + machine.POLL_S
        for _ in range(MAX_STEPS):
            found = store.load(self.client, tournament_id)
            if found is None:
                return None
            version, doc, players = found
            try:
                creates = machine.pending_creates(doc)
                if creates:
                    made = {t["key"]: self.core.create_match(machine.spec(doc, t)) for t in creates}
                    store.save(self.client, tournament_id, version, machine.with_matches(doc, made), [])
                    continue
                aborts = machine.pending_aborts(doc)
                if aborts:
                    for table in aborts:
                        self.core.abort_match(doc["tenant"], table["match_id"], str(table["result"]["ended_by"]))
                    store.save(self.client, tournament_id, version,
                               machine.with_aborted(doc, {t["key"] for t in aborts}), [])
                    continue
                step = machine.advance(doc, players, self._results(doc), self._ratings_of(doc),
                                       self.core.bot_ladder(doc["game"]), now)
                due = step.due
                if step.doc == doc and not step.events:
                    break
                store.save(self.client, tournament_id, version, step.doc, step.events)
            except store.StaleState:
                continue
        self.forward(tournament_id)
        return due

    def forward(self, tournament_id: str) -> None:
        """Hand the saved events to the core (at least once), oldest first; none while a table of the state is
        still to be made (``round.started`` names its match: a backend may join it at once)."""
        found = store.load(self.client, tournament_id)
        tenant = found[1]["tenant"] if found and not machine.pending_creates(found[1]) else None
        while tenant is not None:
            events = store.outbox(self.client, tournament_id)
            if not events:
                return
            for _, event_id, event in events:
                self.core.emit(tenant, event_id, event)
            store.ack(self.client, tournament_id, [entry for entry, _, _ in events])

    def cancel(self, tenant: str, tournament_id: str, now: float | None = None) -> dict[str, Any]:
        """The tenant cancels: standings so far are final; running matches are ended by the next drive."""
        now = time.time() if now is None else now
        for _ in range(MAX_STEPS):
            version, doc, players = store.get(self.client, tenant, tournament_id)
            step = machine.cancel(doc, players, self._results(doc), now)
            try:
                store.save(self.client, tournament_id, version, step.doc, step.events)
            except store.StaleState:
                continue
            store.wake(self.client, tournament_id, now)
            return machine.view(step.doc, players)
        raise machine.TournamentError(Kind.CONFLICT, "busy", "the tournament changed too often; retry")
