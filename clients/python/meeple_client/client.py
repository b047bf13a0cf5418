"""The synchronous client: :class:`Client`, the :class:`Match` a seat plays, matchmaking :class:`Ticket`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from typing import Any

import httpx
from httpx_sse import SSEError, connect_sse
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidMessage, InvalidStatus
from websockets.sync.client import connect as ws_connect

from . import _core
from ._core import Flow, MatchFlows, T, create_body, parse_sse_update, prepare, ticket_wait_flow
from .errors import TransportError, TransportUnavailable
from .models import (
    BoardAround,
    BoardRank,
    BoardSettings,
    ChatMessage,
    DeadLetter,
    EventsDoc,
    Game,
    Hint,
    HistoryDoc,
    HistoryMatch,
    Leaderboard,
    RatingsDoc,
    Registration,
    ReplayDoc,
    Season,
    Tournament,
    TournamentPlayer,
    TournamentRounds,
    Tournaments,
    Unregistered,
    WatchToken,
    Webhook,
)


def base_of(url: str) -> str:
    """Accept the server's root or its ``/v1`` URL (what ``make run`` prints)."""
    url = url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class Client:
    """One connection pool to a Meeple server. Thread-safe as httpx.Client is; close it (or use ``with``).

    ``api_key`` (``mk_...``) makes it an app's backend: every call whose security allows the key carries it
    (creating, joining and queueing for the tenant, reading its matches), and the tenant calls (history,
    ratings, webhooks) become available. Seat calls still go with the seat's own token.

    ``on_retry(name, error, delay)`` is called before each safe retry (logging, metrics): the error it absorbed
    and the seconds it will wait; the call's outcome is still what it returns or raises. ``name`` is the
    operation's (``move`` for a socket move's resend too), ``ws`` for a match socket opened again. A 429 or 503
    waits what the server asked (``Retry-After``, a socket reply's ``retry_after``; at most 10 s), anything else
    the SDK's short backoff."""

    def __init__(self, base_url: str, *, api_key: str | None = None, retries: int = _core.DEFAULT_RETRIES,
                 timeout: float = 10.0, http: httpx.Client | None = None,
                 on_retry: Callable[[str, Exception, float], None] | None = None) -> None:
        self.base_url = base_of(base_url)
        self.api_key = _core.check_api_key(api_key)
        self.retries = retries
        self.timeout = timeout
        self.http = http or httpx.Client(base_url=self.base_url, timeout=timeout)
        self.on_retry = on_retry

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def call(self, name: str, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
             body: Any = None, token: str | None = None, timeout: float | None = None,
             idempotency_key: str | None = None) -> Any:
        """One operation of the table, with the safe retries; returns the JSON body or raises a typed error."""
        req = prepare(name, path, query, body, token, timeout or self.timeout, self.api_key, idempotency_key)
        delays = _core.retry_delays(self.retries)
        while True:
            try:
                response = self.http.request(req.method, req.url, params=req.params, headers=req.headers,
                                             content=_core.content(req), timeout=req.timeout)
                return _core.answer(response)
            except (httpx.TransportError, _core.ApiError) as exc:
                delay = _core.retry_or_raise(req, exc, delays)
                if self.on_retry is not None:
                    self.on_retry(name, exc, delay)
                time.sleep(delay)

    def run(self, flow: Flow[T]) -> T:
        """Drive a flow of :mod:`meeple_client._core`: perform each call it yields, send back the answer."""
        try:
            step = next(flow)
            while True:
                step = flow.send(self.call(step.name, step.path, step.query, step.body, step.token, step.timeout,
                                           step.idempotency_key))
        except StopIteration as done:
            result: T = done.value
            return result

    def games(self) -> list[Game]:
        """The catalogue: ``[{id, title, min_players, max_players, simultaneous, options}]``."""
        games: list[Game] = self.call("games")["games"]
        return games

    def game(self, game: str) -> dict[str, Any]:
        """One game with its ``components``: every card, tile, god and goal with its name and rules text."""
        doc: dict[str, Any] = self.call("game", {"game": game})
        return doc

    def create_match(self, game: str, players: int, *, options: dict[str, Any] | None = None,
                     seats: list[dict[str, Any]] | None = None, join: bool = True,
                     clock: dict[str, Any] | None = None, takeover_level: str | None = None,
                     seed: int | None = None, spectator_chat: bool = False) -> Match:
        """Create a match; with ``join`` (default) the caller holds seat 0 and its token. With an API key a
        human seat may name the tenant's user: ``seats=[{"kind": "human", "player": "u42"}, ...]``. ``spectator_chat``:
        spectators may post to its chat too (seats always may)."""
        doc = self.call("create_match", body=create_body(game, players, options, seats, join, clock,
                                                         takeover_level, seed, spectator_chat))
        return Match.from_doc(self, doc, refresh=join)

    def join(self, match_id: str, seat: int | None = None, *, player: str | None = None) -> Match:
        """Take a free seat (or that one), for the tenant's ``player`` with an API key; the token is kept in the
        returned match (a backend hands it to that player's client)."""
        doc = self.call("join", {"match_id": match_id}, body=_core.join_body(seat, player))
        return Match.from_doc(self, {"id": match_id, **doc})

    def match(self, match_id: str, token: str | None = None) -> Match:
        """A match to resume with a token you kept, or to spectate without one."""
        return Match(self, match_id, token).refresh()

    def replay(self, match_id: str, token: str | None = None, *, views: bool = False) -> ReplayDoc:
        """The move log; a seat's ``token`` adds that seat's own moves before the match ends. ``views`` (a
        finished match only) adds to each entry the view after it: the seat's, or a spectator's."""
        replay: ReplayDoc = self.call("replay", {"match_id": match_id}, {"include": "views" if views else None},
                                      token=token, timeout=max(self.timeout, 60) if views else None)
        return replay

    def matchmaking(self, game: str, players: int, options: dict[str, Any] | None = None, *,
                    player: str | None = None, party: list[dict[str, Any]] | None = None) -> Ticket:
        """Queue; with an API key, for the tenant's ``player`` (grouped with the tenant's players only). ``party``
        queues friends together, ``[{"player": ..., "name": ...}, ...]`` (both optional): one match, one team
        where it fits; :meth:`Ticket.wait_party` gives each member's seat."""
        doc = self.call("matchmaking", body=_core.matchmaking_body(game, players, options, player, party))
        return Ticket(self, doc)

    queue = matchmaking

    # For backends (API key required).

    def matches(self, *, limit: int | None = None, before: float | None = None) -> HistoryDoc:
        """One page of the tenant's matches, newest first; pass the page's ``next`` as ``before``."""
        return self.run(_core.history_flow(None, limit, before))

    def player_matches(self, player: str, *, limit: int | None = None, before: float | None = None) -> HistoryDoc:
        """One page of the matches the tenant's ``player`` sat in (``seat`` is theirs), newest first."""
        return self.run(_core.history_flow(player, limit, before))

    def history(self, player: str | None = None, *, limit: int | None = None) -> Iterator[HistoryMatch]:
        """Every match of the tenant (or of its ``player``), newest first, fetching pages of ``limit`` lazily."""
        before: float | None = None
        while True:
            page = self.run(_core.history_flow(player, limit, before))
            yield from page["matches"]
            before = page["next"]
            if before is None:
                return

    def ratings(self, player: str, game: str | None = None) -> RatingsDoc:
        """The tenant's player's rating per game it played rated matches of (``game``: only that one)."""
        return self.run(_core.ratings_flow(player, game))

    def add_webhook(self, url: str, events: list[str]) -> Webhook:
        """Register ``url`` for ``events``; the answer's ``secret`` (signing key) is shown this once."""
        return self.run(_core.add_webhook_flow(url, events))

    def webhooks(self) -> list[Webhook]:
        return self.run(_core.webhooks_flow())

    def delete_webhook(self, hook_id: str) -> str:
        """Stop a webhook (its pending deliveries are dropped); :class:`NotFound` if there is none."""
        return self.run(_core.delete_webhook_flow(hook_id))

    def dead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        """Deliveries given up on after a day of retries, newest first."""
        return self.run(_core.dead_letters_flow(limit))

    def clear_dead_letters(self) -> int:
        """Empty the dead letters; how many there were."""
        return self.run(_core.clear_dead_letters_flow())

    # Leaderboards, seasons and tournaments (API key required; docs/guides/leaderboards-tournaments.md).

    def leaderboard(self, game: str, *, season: str | None = None, limit: int | None = None,
                    offset: int | None = None) -> Leaderboard:
        """A page of a board, best first (``season``: ``all`` by default, ``current`` or a season's name)."""
        return self.run(_core.call_flow("leaderboard", {"game": game},
                                        {"season": season, "limit": limit, "offset": offset}))

    def leaderboard_rank(self, game: str, player: str, *, season: str | None = None) -> BoardRank:
        """The player's entry (``rank`` None while below ``min_matches``); :class:`NotFound` if not on the board."""
        return self.run(_core.call_flow("leaderboard_player", {"game": game, "player": player}, {"season": season}))

    def leaderboard_around(self, game: str, player: str, *, season: str | None = None,
                           span: int | None = None) -> BoardAround:
        return self.run(_core.call_flow("leaderboard_around", {"game": game, "player": player},
                                        {"season": season, "span": span}))

    def leaderboard_settings(self, game: str) -> BoardSettings:
        return self.run(_core.call_flow("leaderboard_settings", {"game": game}))

    def set_leaderboard_settings(self, game: str, min_matches: int) -> BoardSettings:
        return self.run(_core.call_flow("set_leaderboard_settings", {"game": game}, body={"min_matches": min_matches}))

    def seasons(self, game: str) -> list[Season]:
        return list(self.run(_core.call_flow("seasons", {"game": game}))["seasons"])

    def season(self, game: str, name: str) -> Season:
        return self.run(_core.call_flow("season", {"game": game, "name": name}))

    def create_season(self, game: str, name: str, starts_at: float, ends_at: float, *, policy: str = "keep",
                      decay: float | None = None) -> Season:
        return self.run(_core.call_flow("create_season", {"game": game},
                                        body=_core.season_body(name, starts_at, ends_at, policy, decay)))

    def update_season(self, game: str, name: str, **changes: Any) -> Season:
        """``changes``: any of ``starts_at``, ``ends_at``, ``policy``, ``decay``."""
        return self.run(_core.call_flow("update_season", {"game": game, "name": name}, body=changes))

    def delete_season(self, game: str, name: str) -> str:
        return str(self.run(_core.call_flow("delete_season", {"game": game, "name": name}))["deleted"])

    def create_tournament(self, settings: dict[str, Any]) -> Tournament:
        """A new tournament (the settings of ``POST /v1/tournaments``), registering until it starts."""
        return self.run(_core.call_flow("create_tournament", body=settings))

    def tournaments(self, *, limit: int | None = None, before: float | None = None) -> Tournaments:
        return self.run(_core.call_flow("tournaments", query={"limit": limit, "before": before}))

    def tournament(self, tournament_id: str) -> Tournament:
        """Settings, status, the current round's tables (with their matches) and the standings."""
        return self.run(_core.call_flow("tournament", {"tournament_id": tournament_id}))

    def tournament_rounds(self, tournament_id: str, *, after: int | None = None,
                          limit: int | None = None) -> TournamentRounds:
        """The tournament's history: its rounds after round ``after`` (an arena's waves), oldest first, each with
        every table, its match and result; ``next`` is the ``after`` of the next page (None: no more yet)."""
        return self.run(_core.call_flow("tournament_rounds", {"tournament_id": tournament_id},
                                        query={"after": after, "limit": limit}))

    def register_player(self, tournament_id: str, player: str) -> Registration:
        """Register (Swiss: until the start; arena: until its end). A registered player's registration again, as
        it is (a retry is safe); a withdrawn or absent player is brought back."""
        return self.run(_core.call_flow("register", {"tournament_id": tournament_id}, body={"player": player}))

    def unregister_player(self, tournament_id: str, player: str) -> Unregistered:
        return self.run(_core.call_flow("unregister", {"tournament_id": tournament_id, "player": player}))

    def tournament_player(self, tournament_id: str, player: str) -> TournamentPlayer:
        """The player's standing and the table they play at now (its ``match_id``: join it with ``player``)."""
        return self.run(_core.call_flow("tournament_player", {"tournament_id": tournament_id, "player": player}))

    def cancel_tournament(self, tournament_id: str) -> Tournament:
        return self.run(_core.call_flow("cancel_tournament", {"tournament_id": tournament_id}, body={}))

    # -- watch links (a tenant's key mints them; anyone holding one watches) -------------------------------------
    def watch_token(self, match_id: str, *, ttl_s: int | None = None, player_ids: bool = False) -> WatchToken:
        """A read-only spectator token for one of the tenant's matches (``token``: in this answer only), to hand
        to an app's user; ``ttl_s`` 60..604800 (the server's default: a day); ``player_ids``: show player ids."""
        return self.run(_core.mint_watch_flow(match_id, None, ttl_s, player_ids))

    def tournament_watch_token(self, tournament_id: str, *, ttl_s: int | None = None,
                               player_ids: bool = False) -> WatchToken:
        """A read-only spectator token for every match of one of the tenant's tournaments, current and future."""
        return self.run(_core.mint_watch_flow(None, tournament_id, ttl_s, player_ids))

    def describe_watch_token(self, token_id: str) -> WatchToken:
        """A token the tenant minted: its match or tournament, expiry and revocation (never the token)."""
        return self.run(_core.call_flow("watch_token", {"token_id": token_id}))

    def revoke_watch_token(self, token_id: str) -> None:
        """Revoke at once: its next request is refused, and its open streams end."""
        self.run(_core.call_flow("revoke_watch_token", {"token_id": token_id}))

    def watch(self, match_id: str, token: str) -> Match:
        """A read-only handle of a match held with a watch token: refresh, poll, events, socket updates, replay
        (acting calls raise ValueError before sending anything)."""
        return Match(self, match_id, _core.check_watch_token(token)).refresh()


class Match(MatchFlows):
    """A match as one seat (or a spectator) sees it. Attributes mirror the last status document.

    While its WebSocket is open (``with match.socket()``, or ``match.events()`` over the socket), :meth:`move`
    and :meth:`wait_turn` go over it: one message per move, no HTTP request; else over REST."""

    def __init__(self, client: Client, match_id: str, token: str | None = None) -> None:
        super().__init__(match_id, token)
        self.client = client
        #: the socket held open, that moves go over (None: they go over REST)
        self.live: MatchSocket | None = None

    @classmethod
    def from_doc(cls, client: Client, doc: dict[str, Any], refresh: bool = True) -> Match:
        match = cls(client, doc["id"], doc.get("token"))
        match.update(doc)
        return match.refresh() if refresh else match

    def refresh(self) -> Match:
        """Reload the status, the view and (for a seat) the legal moves."""
        self.client.run(self.refresh_flow())
        return self

    def move(self, move: dict[str, Any], wait: int = 0) -> Match:
        """Submit ``move`` at the version this object read. Raises :class:`StaleVersion` (409) if the match
        moved on so that the decision is no longer pending: call :meth:`refresh` and decide again.
        ``wait`` > 0: the answer comes once this seat must act again or the match is over (at most ``wait``
        seconds), so a turn is one request (``doc["events"]`` holds what happened in between).
        Over the match's socket while one is open (the same versions, key, errors and timeout), else REST."""
        if self.live is not None and self.token:  # (without a seat's token REST refuses it before sending)
            return self.live.move(move, wait)
        self.client.run(self.move_flow(move, wait))
        return self

    def wait_turn(self, timeout: float | None = None) -> Match:
        """Block until this seat must act or the match is over: the open socket's updates, else long-polls
        (``until=turn``)."""
        if self.live is not None:
            self.live.wait_turn(timeout)
        else:
            self.client.run(self.wait_turn_flow(timeout))
        return self

    def poll(self, until: str = "change", wait: int = _core.LONG_POLL_S) -> EventsDoc:
        """One long-poll after the current version; folds the answer in and returns the Events document."""
        return self.client.run(self.poll_flow(until, wait))

    def events(self, transport: str = "auto", until: str = "change") -> Iterator[EventsDoc]:
        """Every Events document from now until the match is finished.

        ``transport``: ``ws`` (the match's WebSocket), ``sse``, ``long-poll`` (or ``poll``), or ``auto`` (the
        default): the WebSocket, falling back to SSE and then long-poll when the server (or a proxy) does not
        offer one. Each reconnects after a drop with ``after`` = the last version seen, so no version is
        missed or repeated. ``until="turn"`` applies to long-poll only (the streams send every version)."""
        yield from TRANSPORTS[_core.check_transport(transport)](self, until)

    def socket(self) -> MatchSocket:
        """The match's WebSocket held open, for its updates and moves over it (``with match.socket() as ws:
        for doc in ws.updates(): ... match.move(m)``); while it is open every move of this match goes over it."""
        return MatchSocket(self)

    def hint(self) -> Hint:
        """The easy bot's suggestion for this seat: ``{version, seat, move}``."""
        return self.client.run(self.hint_flow())

    def chat(self, text: str | None = None, *, preset: str | None = None) -> ChatMessage:
        """Post a chat message (plain text, or one of the game's ``chat_presets``) as this seat, or as a spectator
        where the match has ``spectator_chat``. Over the match's socket while one is open, else REST. Every
        transport keeps :attr:`chat_messages` (and calls :attr:`on_chat`) as messages and redactions arrive."""
        if self.live is not None:
            return self.live.chat(text, preset=preset)
        return self.client.run(self.chat_flow(text, preset))

    def wait_chat(self, timeout: float | None = None) -> list[ChatMessage]:
        """Block until a chat message newer than those heard arrives (the open socket, else long-polls with
        ``chat_after``): the new ones (none at ``timeout``)."""
        if self.live is not None:
            return self.live.wait_chat(timeout)
        return self.client.run(self.wait_chat_flow(timeout))

    def redact_chat(self, message_id: int) -> None:
        """Redact a chat message (the match's tenant's API key, ``Client(api_key=...)``)."""
        self.client.call("redact_chat", {"match_id": self.id, "message_id": message_id})

    def replay(self, *, views: bool = False) -> ReplayDoc:
        return self.client.replay(self.id, self.token, views=views)

    def leave(self) -> Match:
        self.client.run(self.leave_flow())
        return self

    def resign(self) -> Match:
        self.client.run(self.resign_flow())
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
        req = prepare("events_stream", match._path(), {"after": match.version, "chat_after": match.chat_after},
                      token=match.token, api_key=match.client.api_key)
        with connect_sse(match.client.http, "GET", match.client.base_url + req.url, params=req.params,
                         headers=req.headers, timeout=httpx.Timeout(match.client.timeout, read=60)) as source:
            if not source.response.is_success:
                source.response.read()
                raise _core.refused(source.response.status_code, _core.handshake_body(source.response.content),
                                    dict(source.response.headers))
            try:
                for sse in source.iter_sse():
                    if _core.hear_sse_chat(match, sse.event, sse.data):
                        continue
                    doc = parse_sse_update(sse.event, sse.data)
                    if doc is not None:
                        match.update(doc)
                        yield doc
                        if match.finished:
                            return
            except SSEError as exc:  # not text/event-stream: something in between answered
                raise TransportUnavailable(str(exc)) from None


#: What ends a socket's session without ending the match: it is opened again.
DROPPED: tuple[type[Exception], ...] = (ConnectionClosed, *_core.TRANSIENT)


def _ws(match: Match, until: str) -> Iterator[EventsDoc]:
    """The match's WebSocket (``websockets``' sync client; it answers the server's pings)."""
    del until  # the socket sends every version; callers filter
    if match.live is not None:  # the socket the caller holds open
        yield from match.live.updates()
        return
    with MatchSocket(match) as sock:
        yield from sock.updates()


class MatchSocket:
    """The match's WebSocket held open: its updates, and the match's moves sent over it (``with match.socket()``).

    A move goes at the version the match read, with an idempotency key; its reply is folded in like a REST
    move's answer and an error reply raises the same typed error; a 429 or 503 reply is sent again after the
    same wait as REST's retries (the reply's ``retry_after``, else the backoff). After a drop, a 429 or a 503 the
    socket is reopened (after the refusal's Retry-After, else a short random delay) with ``after`` = the last
    version seen (no version missed or repeated), and a move whose reply was lost is sent again with the same
    key (the server answers its first outcome). A move with no reply within the client's timeout, or whose
    socket cannot be opened again, is sent over REST with the same key and body: the two doors share keys.

    One thread reads the socket at a time (the ``websockets`` library allows one ``recv``); a thread that moves
    while another one iterates the updates gets its reply from the reading thread."""

    def __init__(self, match: Match) -> None:
        self.match = match
        self.state = _core.SocketState(match)
        self.sock: Any = None
        self.failures = 0
        self.turn = threading.Condition()
        self.reading = False

    def __enter__(self) -> MatchSocket:
        try:
            self._open()
        except _core.TRANSIENT as exc:
            self._reopen(exc)
        self.match.live = self
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket: the match's moves go over REST again."""
        if self.match.live is self:
            self.match.live = None
        self._drop()

    def _drop(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _open(self) -> None:
        match = self.match
        try:
            self.sock = ws_connect(_core.ws_url(match.client.base_url, match.id), open_timeout=match.client.timeout,
                                   additional_headers=_core.ws_headers(match.token, match.client.api_key),
                                   max_size=None).__enter__()  # the library's context manager, held open
        except InvalidStatus as exc:
            response = exc.response
            raise _core.refused(response.status_code, _core.handshake_body(response.body),
                                dict(response.headers)) from None
        except InvalidHandshake as exc:
            if isinstance(exc, InvalidMessage):  # the connection dropped mid-handshake: transient
                raise ConnectionError(repr(exc)) from None
            raise TransportUnavailable(repr(exc)) from None  # no upgrade: a proxy in between answered
        for text in self.state.greeting():
            self.sock.send(text)

    def _reopen(self, exc: Exception) -> None:
        """Open the socket again after ``exc`` (a short random delay, or the server's Retry-After)."""
        while True:
            self._drop()
            self.failures += 1
            delay = _core.reconnect_wait(exc, self.failures, self.match.client.retries)
            if self.match.client.on_retry is not None:
                self.match.client.on_retry("ws", exc, delay)
            time.sleep(delay)
            try:
                self._open()
                return
            except _core.TRANSIENT as again:
                exc = again

    def _step(self, timeout: float | None) -> None:
        """Take one message (None within ``timeout``: nothing); after a drop, reopen."""
        try:
            if self.sock is None:
                raise ConnectionError("the socket is closed")
            raw = self.sock.recv(timeout)
        except TimeoutError:
            return
        except DROPPED as exc:
            self._reopen(exc)
            return
        if self.state.receive(raw):
            self.failures = 0

    def _until(self, ready: Callable[[], bool], deadline: float | None) -> bool:
        """Receive until ``ready()`` (True) or the deadline (False). One thread reads at a time; the others wait
        for what it reads."""
        while not ready():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            with self.turn:
                if self.reading:
                    self.turn.wait(left)
                    continue
                self.reading = True
            try:
                self._step(left)
            finally:
                with self.turn:
                    self.reading = False
                    self.turn.notify_all()
        return True

    def updates(self) -> Iterator[EventsDoc]:
        """Every update from now until the match is finished (the seat's ones carry its legal moves)."""
        while True:
            while self.state.pending:
                yield self.state.pending.popleft()
            if self.state.done:
                return
            self._until(lambda: bool(self.state.pending) or self.state.done, None)

    def _send(self, sent: _core.SocketMove) -> dict[str, Any]:
        """Send a move and wait for its reply (its status document), or raise its typed error; a move lost with a
        socket that could not be opened again, or unanswered within the timeout, raises ReplyLost."""
        self.state.send(sent)
        try:
            if self.sock is not None:
                self.sock.send(sent.text)
        except (ConnectionClosed, OSError):
            pass  # the reader sees the drop and reopens: the greeting sends the move again
        try:
            answered = self._until(lambda: self.state.answered(sent),
                                   time.monotonic() + self.match.client.timeout)
        except (TransportError, ConnectionClosed, OSError) as exc:
            raise _core.ReplyLost(repr(exc)) from exc
        if not answered:
            raise _core.ReplyLost(f"no reply within {self.match.client.timeout:g} s")
        return self.state.settle(sent)

    def move(self, move: dict[str, Any], wait: int = 0) -> Match:
        """As :meth:`Match.move` (which calls this while the socket is open)."""
        match, sent = self.match, self.state.move_message(move)
        delays = _core.retry_delays(match.client.retries)
        self.state.heard = [] if wait else None
        try:
            while True:
                try:
                    doc = self._send(sent)
                    break
                except (_core.RateLimited, _core.Unavailable) as exc:  # changed nothing: the same key again
                    delay = _core.retry_reply(exc, delays)
                    if match.client.on_retry is not None:
                        match.client.on_retry("move", exc, delay)
                    time.sleep(delay)
                except _core.ReplyLost:  # the other door, the same key and body: the first outcome, or applied now
                    self.state.forget(sent)
                    match.client.run(match.move_flow(move, wait, version=sent.version, key=sent.key))
                    return match
            match.update(doc)
            if wait:  # applied: the turn's news as far as the socket brings them (REST's answers at its deadline)
                with suppress(*DROPPED, TransportError):
                    self._until(lambda: match.finished or match.my_turn, time.monotonic() + wait)
                match.doc["events"] = _core.waited_events(self.state.heard or [], doc["version"])
        finally:
            self.state.heard = None
        return match

    def chat(self, text: str | None = None, *, preset: str | None = None) -> ChatMessage:
        """As :meth:`Match.chat` (which calls this while the socket is open): one ``chat`` message, answered by a
        reply with the REST status and body. Never sent twice (chat has no idempotency key): a reply lost with the
        socket raises :class:`TransportError`."""
        msg_id, text_out = self.state.chat_message(text, preset)
        try:
            if self.sock is None:
                raise ConnectionError("the socket is closed")
            self.sock.send(text_out)
            answered = self._until(lambda: msg_id in self.state.replies, time.monotonic() + self.match.client.timeout)
        except (ConnectionClosed, OSError) as exc:
            self.state.chatting.discard(msg_id)
            raise TransportError(f"the chat message's reply was lost: {exc!r}") from exc
        if not answered:
            self.state.chatting.discard(msg_id)
            raise TransportError(f"no reply to the chat message within {self.match.client.timeout:g} s")
        return self.state.chat_reply(msg_id)

    def wait_chat(self, timeout: float | None = None) -> list[ChatMessage]:
        """As :meth:`Match.wait_chat`, from the socket's ``chat`` messages."""
        match = self.match
        seen = match.chat_after
        self._until(lambda: match.chat_after > seen, None if timeout is None else time.monotonic() + timeout)
        return [m for m in match.chat_messages if m["id"] > seen]

    def wait_turn(self, timeout: float | None = None) -> Match:
        """As :meth:`Match.wait_turn`, from the socket's updates (which still go to :meth:`updates`)."""
        match = self.match
        self._until(lambda: match.finished or match.my_turn, None if timeout is None else time.monotonic() + timeout)
        if match.finished and match.outcome is None:  # updates carry no outcome
            match.refresh()
        return match


def _auto(match: Match, until: str) -> Iterator[EventsDoc]:
    """The WebSocket, else SSE, else long-poll: each next one starts after the last version the former gave."""
    for stream in (_ws, _sse):
        try:
            yield from stream(match, until)
            return
        except TransportUnavailable:
            continue
    yield from _long_poll(match, until)


#: Event transports by name (``poll`` is an alias of ``long-poll``).
TRANSPORTS = {"auto": _auto, "ws": _ws, "sse": _sse, "long-poll": _long_poll}


class Ticket:
    """A matchmaking ticket. Its id is a secret; once matched it carries the match, each member's seat and, once,
    their tokens (kept here as first seen)."""

    def __init__(self, client: Client, doc: dict[str, Any]) -> None:
        self.client = client
        self.doc = doc
        self.tokens = _core.party_tokens(doc)

    @property
    def status(self) -> str:
        return str(self.doc["status"])

    @property
    def party(self) -> list[dict[str, Any]]:
        """The members as the server last said: ``player``, ``name``, ``seat``, ``team`` (tokens: :attr:`tokens`)."""
        return list(self.doc.get("party") or [])

    def wait(self, timeout: float = 300.0) -> Match:
        """Long-poll until matched; returns the (first member's) seat's :class:`Match`."""
        return self.wait_party(timeout)[0]

    def wait_party(self, timeout: float = 300.0) -> list[Match]:
        """Long-poll until matched; returns every member's seat, a :class:`Match` each, in the party's order."""
        self.doc, tokens = self.client.run(ticket_wait_flow(self.doc, timeout, self.tokens))
        self.tokens = list(tokens)
        return [Match(self.client, self.doc["match_id"], token).refresh() for token in tokens]

    def cancel(self) -> Ticket:
        self.doc = self.client.call("cancel_ticket", {"ticket": self.doc["ticket"]})
        return self
