"""The synchronous client: :class:`Client`, the :class:`Match` a seat plays, matchmaking :class:`Ticket`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
from httpx_sse import connect_sse

from . import _core
from ._core import Flow, MatchFlows, T, create_body, parse_sse_update, prepare, ticket_wait_flow
from .models import EventsDoc, Game, Hint, ReplayDoc


def base_of(url: str) -> str:
    """Accept the server's root or its ``/v1`` URL (what ``make run`` prints)."""
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class Client:
    """One connection pool to a Meeple server. Thread-safe as httpx.Client is; close it (or use ``with``)."""

    def __init__(self, base_url: str, *, retries: int = _core.DEFAULT_RETRIES, timeout: float = 10.0,
                 http: httpx.Client | None = None) -> None:
        self.base_url = base_of(base_url)
        self.retries = retries
        self.timeout = timeout
        self.http = http or httpx.Client(base_url=self.base_url, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def call(self, name: str, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
             body: Any = None, token: str | None = None, timeout: float | None = None) -> Any:
        """One operation of the table, with the safe retries; returns the JSON body or raises a typed error."""
        req = prepare(name, path, query, body, token, timeout or self.timeout)
        delays = _core.retry_delays(self.retries)
        while True:
            try:
                response = self.http.request(req.method, req.url, params=req.params, headers=req.headers,
                                             content=_core.content(req), timeout=req.timeout)
                return _core.answer(response)
            except (httpx.TransportError, _core.ApiError) as exc:
                time.sleep(_core.retry_or_raise(req, exc, delays))

    def run(self, flow: Flow[T]) -> T:
        """Drive a flow of :mod:`meeple_client._core`: perform each call it yields, send back the answer."""
        try:
            step = next(flow)
            while True:
                step = flow.send(self.call(step.name, step.path, step.query, step.body, step.token, step.timeout))
        except StopIteration as done:
            result: T = done.value
            return result

    def games(self) -> list[Game]:
        """The catalogue: ``[{id, title, min_players, max_players, simultaneous, options}]``."""
        games: list[Game] = self.call("games")["games"]
        return games

    def create_match(self, game: str, players: int, *, options: dict[str, Any] | None = None,
                     seats: list[dict[str, Any]] | None = None, join: bool = True,
                     clock: dict[str, Any] | None = None, takeover_level: str | None = None,
                     seed: int | None = None) -> Match:
        """Create a match; with ``join`` (default) the caller holds seat 0 and its token."""
        doc = self.call("create_match", body=create_body(game, players, options, seats, join, clock,
                                                         takeover_level, seed))
        return Match.from_doc(self, doc, refresh=join)

    def join(self, match_id: str, seat: int | None = None) -> Match:
        """Take a free seat (or that one); the token is kept in the returned match."""
        doc = self.call("join", {"match_id": match_id}, body={} if seat is None else {"seat": seat})
        return Match.from_doc(self, {"id": match_id, **doc})

    def match(self, match_id: str, token: str | None = None) -> Match:
        """A match to resume with a token you kept, or to spectate without one."""
        return Match(self, match_id, token).refresh()

    def replay(self, match_id: str, token: str | None = None) -> ReplayDoc:
        """The move log; a seat's ``token`` adds that seat's own moves before the match ends."""
        replay: ReplayDoc = self.call("replay", {"match_id": match_id}, token=token)
        return replay

    def matchmaking(self, game: str, players: int, options: dict[str, Any] | None = None) -> Ticket:
        doc = self.call("matchmaking", body={"game": game, "players": players, "options": options or {}})
        return Ticket(self, doc)


class Match(MatchFlows):
    """A match as one seat (or a spectator) sees it. Attributes mirror the last status document."""

    def __init__(self, client: Client, match_id: str, token: str | None = None) -> None:
        super().__init__(match_id, token)
        self.client = client

    @classmethod
    def from_doc(cls, client: Client, doc: dict[str, Any], refresh: bool = True) -> Match:
        match = cls(client, doc["id"], doc.get("token"))
        match.update(doc)
        return match.refresh() if refresh else match

    def refresh(self) -> Match:
        """Reload the status, the view and (for a seat) the legal moves."""
        self.client.run(self.refresh_flow())
        return self

    def move(self, move: dict[str, Any]) -> Match:
        """Submit ``move`` at the version this object read. Raises :class:`StaleVersion` (409) if the match
        moved on so that the decision is no longer pending: call :meth:`refresh` and decide again."""
        self.client.run(self.move_flow(move))
        return self

    def wait_turn(self, timeout: float | None = None) -> Match:
        """Block until this seat must act or the match is over (long-polls ``until=turn``)."""
        self.client.run(self.wait_turn_flow(timeout))
        return self

    def poll(self, until: str = "change", wait: int = _core.LONG_POLL_S) -> EventsDoc:
        """One long-poll after the current version; folds the answer in and returns the Events document."""
        return self.client.run(self.poll_flow(until, wait))

    def events(self, transport: str = "long-poll", until: str = "change") -> Iterator[EventsDoc]:
        """Every Events document from now until the match is finished, over ``long-poll`` or ``sse``."""
        yield from TRANSPORTS[transport](self, until)

    def hint(self) -> Hint:
        """The easy bot's suggestion for this seat: ``{version, seat, move}``."""
        return self.client.run(self.hint_flow())

    def replay(self) -> ReplayDoc:
        return self.client.replay(self.id, self.token)

    def leave(self) -> Match:
        self.client.run(self.leave_flow())
        return self

    def reclaim(self) -> Match:
        self.client.run(self.reclaim_flow())
        return self

    def rematch(self) -> Match:
        """This seat in the next match (same game, options and seats), with its new token."""
        return Match.from_doc(self.client, self.client.run(self.rematch_flow()))


def _long_poll(match: Match, until: str) -> Iterator[EventsDoc]:
    while not match.finished:
        doc = match.poll(until=until)
        if doc["events"]:
            yield doc


def _sse(match: Match, until: str) -> Iterator[EventsDoc]:
    """Server-Sent Events; reconnects after the server's stream limit with ``after`` = the last version."""
    del until  # the stream sends every version; callers filter
    while not match.finished:
        req = prepare("events_stream", match._path(), {"after": match.version}, token=match.token)
        with connect_sse(match.client.http, "GET", match.client.base_url + req.url, params=req.params,
                         headers=req.headers, timeout=httpx.Timeout(match.client.timeout, read=60)) as source:
            if not source.response.is_success:
                source.response.read()
                _core.answer(source.response)
            for sse in source.iter_sse():
                doc = parse_sse_update(sse.event, sse.data)
                if doc is not None:
                    match.update(doc)
                    yield doc
                    if match.finished:
                        return


#: Event transports by name; a WebSocket transport adds itself here.
TRANSPORTS = {"long-poll": _long_poll, "sse": _sse}


class Ticket:
    """A matchmaking ticket. Its id is a secret; once matched it carries the match, the seat and the token."""

    def __init__(self, client: Client, doc: dict[str, Any]) -> None:
        self.client = client
        self.doc = doc

    @property
    def status(self) -> str:
        return str(self.doc["status"])

    def wait(self, timeout: float = 300.0) -> Match:
        """Long-poll until matched; returns the seat's :class:`Match`."""
        match_id, token = self.client.run(ticket_wait_flow(self.doc, timeout))
        return Match(self.client, match_id, token).refresh()

    def cancel(self) -> Ticket:
        self.doc = self.client.call("cancel_ticket", {"ticket": self.doc["ticket"]})
        return self
