"""The asyncio flavour: the same calls as :mod:`meeple_client.client`, awaitable, on httpx.AsyncClient.
Both flavours drive the same flows (:mod:`meeple_client._core`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidMessage, InvalidStatus

from . import _core
from ._core import Flow, MatchFlows, T, create_body, parse_sse_update, prepare, ticket_wait_flow
from .client import DROPPED, base_of
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


class AsyncClient:
    """Awaitable twin of :class:`meeple_client.Client` (use ``async with``)."""

    def __init__(self, base_url: str, *, api_key: str | None = None, retries: int = _core.DEFAULT_RETRIES,
                 timeout: float = 10.0, http: httpx.AsyncClient | None = None,
                 on_retry: Callable[[str, Exception, float], None] | None = None) -> None:
        self.base_url = base_of(base_url)
        self.api_key = _core.check_api_key(api_key)
        self.retries = retries
        self.timeout = timeout
        self.http = http or httpx.AsyncClient(base_url=self.base_url, timeout=timeout)
        self.on_retry = on_retry

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def call(self, name: str, path: dict[str, Any] | None = None, query: dict[str, Any] | None = None,
                   body: Any = None, token: str | None = None, timeout: float | None = None,
                   idempotency_key: str | None = None) -> Any:
        req = prepare(name, path, query, body, token, timeout or self.timeout, self.api_key, idempotency_key)
        delays = _core.retry_delays(self.retries)
        while True:
            try:
                response = await self.http.request(req.method, req.url, params=req.params, headers=req.headers,
                                                   content=_core.content(req), timeout=req.timeout)
                return _core.answer(response)
            except (httpx.TransportError, _core.ApiError) as exc:
                delay = _core.retry_or_raise(req, exc, delays)
                if self.on_retry is not None:
                    self.on_retry(name, exc, delay)
                await asyncio.sleep(delay)

    async def run(self, flow: Flow[T]) -> T:
        try:
            step = next(flow)
            while True:
                answer = await self.call(step.name, step.path, step.query, step.body, step.token, step.timeout,
                                         step.idempotency_key)
                step = flow.send(answer)
        except StopIteration as done:
            result: T = done.value
            return result

    async def games(self) -> list[Game]:
        games: list[Game] = (await self.call("games"))["games"]
        return games

    async def game(self, game: str) -> dict[str, Any]:
        """One game with its ``components`` (as :meth:`meeple_client.Client.game`)."""
        doc: dict[str, Any] = await self.call("game", {"game": game})
        return doc

    async def create_match(self, game: str, players: int, *, options: dict[str, Any] | None = None,
                           seats: list[dict[str, Any]] | None = None, join: bool = True,
                           clock: dict[str, Any] | None = None, takeover_level: str | None = None,
                           seed: int | None = None, spectator_chat: bool = False) -> AsyncMatch:
        doc = await self.call("create_match", body=create_body(game, players, options, seats, join, clock,
                                                               takeover_level, seed, spectator_chat))
        return await AsyncMatch.from_doc(self, doc, refresh=join)

    async def join(self, match_id: str, seat: int | None = None, *, player: str | None = None) -> AsyncMatch:
        doc = await self.call("join", {"match_id": match_id}, body=_core.join_body(seat, player))
        return await AsyncMatch.from_doc(self, {"id": match_id, **doc})

    async def match(self, match_id: str, token: str | None = None) -> AsyncMatch:
        return await AsyncMatch(self, match_id, token).refresh()

    async def replay(self, match_id: str, token: str | None = None, *, views: bool = False) -> ReplayDoc:
        """The move log; a seat's ``token`` adds that seat's own moves before the match ends. ``views``: each
        entry's view too (a finished match only)."""
        replay: ReplayDoc = await self.call("replay", {"match_id": match_id}, {"include": "views" if views else None},
                                            token=token, timeout=max(self.timeout, 60) if views else None)
        return replay

    async def matchmaking(self, game: str, players: int, options: dict[str, Any] | None = None, *,
                          player: str | None = None, party: list[dict[str, Any]] | None = None) -> AsyncTicket:
        doc = await self.call("matchmaking", body=_core.matchmaking_body(game, players, options, player, party))
        return AsyncTicket(self, doc)

    queue = matchmaking

    # For backends (API key required): the same flows as the sync client's.

    async def matches(self, *, limit: int | None = None, before: float | None = None) -> HistoryDoc:
        return await self.run(_core.history_flow(None, limit, before))

    async def player_matches(self, player: str, *, limit: int | None = None,
                             before: float | None = None) -> HistoryDoc:
        return await self.run(_core.history_flow(player, limit, before))

    async def history(self, player: str | None = None, *, limit: int | None = None) -> AsyncIterator[HistoryMatch]:
        before: float | None = None
        while True:
            page = await self.run(_core.history_flow(player, limit, before))
            for match in page["matches"]:
                yield match
            before = page["next"]
            if before is None:
                return

    async def ratings(self, player: str, game: str | None = None) -> RatingsDoc:
        return await self.run(_core.ratings_flow(player, game))

    async def add_webhook(self, url: str, events: list[str]) -> Webhook:
        return await self.run(_core.add_webhook_flow(url, events))

    async def webhooks(self) -> list[Webhook]:
        return await self.run(_core.webhooks_flow())

    async def delete_webhook(self, hook_id: str) -> str:
        return await self.run(_core.delete_webhook_flow(hook_id))

    async def dead_letters(self, limit: int | None = None) -> list[DeadLetter]:
        return await self.run(_core.dead_letters_flow(limit))

    async def clear_dead_letters(self) -> int:
        return await self.run(_core.clear_dead_letters_flow())

    # Leaderboards, seasons and tournaments (API key required; docs/guides/leaderboards-tournaments.md).

    async def leaderboard(self, game: str, *, season: str | None = None, limit: int | None = None,
                    offset: int | None = None) -> Leaderboard:
        """A page of a board, best first (``season``: ``all`` by default, ``current`` or a season's name)."""
        return await self.run(_core.call_flow("leaderboard", {"game": game},
                                        {"season": season, "limit": limit, "offset": offset}))

    async def leaderboard_rank(self, game: str, player: str, *, season: str | None = None) -> BoardRank:
        """The player's entry (``rank`` None while below ``min_matches``); :class:`NotFound` if not on the board."""
        return await self.run(_core.call_flow("leaderboard_player", {"game": game, "player": player},
                                              {"season": season}))

    async def leaderboard_around(self, game: str, player: str, *, season: str | None = None,
                           span: int | None = None) -> BoardAround:
        return await self.run(_core.call_flow("leaderboard_around", {"game": game, "player": player},
                                        {"season": season, "span": span}))

    async def leaderboard_settings(self, game: str) -> BoardSettings:
        return await self.run(_core.call_flow("leaderboard_settings", {"game": game}))

    async def set_leaderboard_settings(self, game: str, min_matches: int) -> BoardSettings:
        return await self.run(_core.call_flow("set_leaderboard_settings", {"game": game},
                                              body={"min_matches": min_matches}))

    async def seasons(self, game: str) -> list[Season]:
        return list((await self.run(_core.call_flow("seasons", {"game": game})))["seasons"])

    async def season(self, game: str, name: str) -> Season:
        return await self.run(_core.call_flow("season", {"game": game, "name": name}))

    async def create_season(self, game: str, name: str, starts_at: float, ends_at: float, *, policy: str = "keep",
                      decay: float | None = None) -> Season:
        return await self.run(_core.call_flow("create_season", {"game": game},
                                        body=_core.season_body(name, starts_at, ends_at, policy, decay)))

    async def update_season(self, game: str, name: str, **changes: Any) -> Season:
        """``changes``: any of ``starts_at``, ``ends_at``, ``policy``, ``decay``."""
        return await self.run(_core.call_flow("update_season", {"game": game, "name": name}, body=changes))

    async def delete_season(self, game: str, name: str) -> str:
        return str((await self.run(_core.call_flow("delete_season", {"game": game, "name": name})))["deleted"])

    async def create_tournament(self, settings: dict[str, Any]) -> Tournament:
        """A new tournament (the settings of ``POST /v1/tournaments``), registering until it starts."""
        return await self.run(_core.call_flow("create_tournament", body=settings))

    async def tournaments(self, *, limit: int | None = None, before: float | None = None) -> Tournaments:
        return await self.run(_core.call_flow("tournaments", query={"limit": limit, "before": before}))

    async def tournament(self, tournament_id: str) -> Tournament:
        """Settings, status, the current round's tables (with their matches) and the standings."""
        return await self.run(_core.call_flow("tournament", {"tournament_id": tournament_id}))

    async def tournament_rounds(self, tournament_id: str, *, after: int | None = None,
                                limit: int | None = None) -> TournamentRounds:
        """The tournament's history: its rounds after round ``after`` (an arena's waves), oldest first, each with
        every table, its match and result; ``next`` is the ``after`` of the next page (None: no more yet)."""
        return await self.run(_core.call_flow("tournament_rounds", {"tournament_id": tournament_id},
                                              query={"after": after, "limit": limit}))

    async def register_player(self, tournament_id: str, player: str) -> Registration:
        """Register (Swiss: until the start; arena: until its end). A registered player's registration again, as
        it is (a retry is safe); a withdrawn or absent player is brought back."""
        return await self.run(_core.call_flow("register", {"tournament_id": tournament_id}, body={"player": player}))

    async def unregister_player(self, tournament_id: str, player: str) -> Unregistered:
        return await self.run(_core.call_flow("unregister", {"tournament_id": tournament_id, "player": player}))

    async def tournament_player(self, tournament_id: str, player: str) -> TournamentPlayer:
        """The player's standing and the table they play at now (its ``match_id``: join it with ``player``)."""
        return await self.run(_core.call_flow("tournament_player", {"tournament_id": tournament_id, "player": player}))

    async def cancel_tournament(self, tournament_id: str) -> Tournament:
        return await self.run(_core.call_flow("cancel_tournament", {"tournament_id": tournament_id}, body={}))

    # -- watch links (a tenant's key mints them; anyone holding one watches) -------------------------------------
    async def watch_token(self, match_id: str, *, ttl_s: int | None = None, player_ids: bool = False) -> WatchToken:
        """A read-only spectator token for one of the tenant's matches (``token``: in this answer only), to hand
        to an app's user; ``ttl_s`` 60..604800 (the server's default: a day); ``player_ids``: show player ids."""
        return await self.run(_core.mint_watch_flow(match_id, None, ttl_s, player_ids))

    async def tournament_watch_token(self, tournament_id: str, *, ttl_s: int | None = None,
                               player_ids: bool = False) -> WatchToken:
        """A read-only spectator token for every match of one of the tenant's tournaments, current and future."""
        return await self.run(_core.mint_watch_flow(None, tournament_id, ttl_s, player_ids))

    async def describe_watch_token(self, token_id: str) -> WatchToken:
        """A token the tenant minted: its match or tournament, expiry and revocation (never the token)."""
        return await self.run(_core.call_flow("watch_token", {"token_id": token_id}))

    async def revoke_watch_token(self, token_id: str) -> None:
        """Revoke at once: its next request is refused, and its open streams end."""
        await self.run(_core.call_flow("revoke_watch_token", {"token_id": token_id}))

    async def watch(self, match_id: str, token: str) -> AsyncMatch:
        """A read-only handle of a match held with a watch token: refresh, poll, events, socket updates, replay
        (acting calls raise ValueError before sending anything)."""
        return await AsyncMatch(self, match_id, _core.check_watch_token(token)).refresh()


class AsyncMatch(MatchFlows):
    """Awaitable twin of :class:`meeple_client.Match`: while its socket is open, moves go over it."""

    def __init__(self, client: AsyncClient, match_id: str, token: str | None = None) -> None:
        super().__init__(match_id, token)
        self.client = client
        #: the socket held open, that moves go over (None: they go over REST)
        self.live: AsyncMatchSocket | None = None

    @classmethod
    async def from_doc(cls, client: AsyncClient, doc: dict[str, Any], refresh: bool = True) -> AsyncMatch:
        match = cls(client, doc["id"], doc.get("token"))
        match.update(doc)
        return await match.refresh() if refresh else match

    async def refresh(self) -> AsyncMatch:
        await self.client.run(self.refresh_flow())
        return self

    async def move(self, move: dict[str, Any], wait: int = 0) -> AsyncMatch:
        """Submit at the version read; :class:`StaleVersion` if the decision is no longer pending. ``wait`` > 0:
        answer once this seat must act again or the match is over (see :meth:`Match.move`). Over the match's
        socket while one is open, else REST."""
        if self.live is not None and self.token:  # (without a seat's token REST refuses it before sending)
            return await self.live.move(move, wait)
        await self.client.run(self.move_flow(move, wait))
        return self

    async def wait_turn(self, timeout: float | None = None) -> AsyncMatch:
        """The open socket's updates, else long-polls (``until=turn``)."""
        if self.live is not None:
            await self.live.wait_turn(timeout)
        else:
            await self.client.run(self.wait_turn_flow(timeout))
        return self

    async def poll(self, until: str = "change", wait: int = _core.LONG_POLL_S) -> EventsDoc:
        return await self.client.run(self.poll_flow(until, wait))

    async def events(self, transport: str = "auto", until: str = "change") -> AsyncIterator[EventsDoc]:
        """As :meth:`meeple_client.Match.events`: ``auto`` (WebSocket, else SSE, else long-poll), ``ws``,
        ``sse`` or ``long-poll``."""
        name = _core.check_transport(transport)
        for stream in {"auto": (_ws, _sse), "ws": (_ws,), "sse": (_sse,), "long-poll": ()}[name]:
            try:
                async for doc in stream(self):
                    yield doc
                return
            except TransportUnavailable:
                if name != "auto":
                    raise
        while not self.finished:
            doc = await self.poll(until=until)
            if doc["events"]:
                yield doc

    def socket(self) -> AsyncMatchSocket:
        """The match's WebSocket held open (``async with match.socket() as ws: async for doc in ws.updates():
        ... await match.move(m)``); while it is open every move of this match goes over it."""
        return AsyncMatchSocket(self)

    async def hint(self) -> Hint:
        return await self.client.run(self.hint_flow())

    async def chat(self, text: str | None = None, *, preset: str | None = None) -> ChatMessage:
        """As :meth:`meeple_client.client.Match.chat`: over the open socket, else REST."""
        if self.live is not None:
            return await self.live.chat(text, preset=preset)
        return await self.client.run(self.chat_flow(text, preset))

    async def wait_chat(self, timeout: float | None = None) -> list[ChatMessage]:
        """As :meth:`meeple_client.client.Match.wait_chat`."""
        if self.live is not None:
            seen, live = self.chat_after, self.live
            await live._until(lambda: self.chat_after > seen, live._deadline(timeout))
            return [m for m in self.chat_messages if m["id"] > seen]
        return await self.client.run(self.wait_chat_flow(timeout))

    async def redact_chat(self, message_id: int) -> None:
        """Redact a chat message (the match's tenant's API key)."""
        await self.client.call("redact_chat", {"match_id": self.id, "message_id": message_id})

    async def leave(self) -> AsyncMatch:
        await self.client.run(self.leave_flow())
        return self

    async def resign(self) -> AsyncMatch:
        await self.client.run(self.resign_flow())
        return self

    async def reclaim(self) -> AsyncMatch:
        await self.client.run(self.reclaim_flow())
        return self

    async def rematch(self) -> AsyncMatch:
        return await AsyncMatch.from_doc(self.client, await self.client.run(self.rematch_flow()))


async def _sse(match: AsyncMatch) -> AsyncIterator[EventsDoc]:
    while not match.finished:
        req = prepare("events_stream", match._path(), {"after": match.version, "chat_after": match.chat_after},
                      token=match.token, api_key=match.client.api_key)
        async with aconnect_sse(match.client.http, "GET", match.client.base_url + req.url, params=req.params,
                                headers=req.headers, timeout=httpx.Timeout(match.client.timeout, read=60)) as source:
            if not source.response.is_success:
                await source.response.aread()
                raise _core.refused(source.response.status_code, _core.handshake_body(source.response.content),
                                    dict(source.response.headers))
            try:
                async for sse in source.aiter_sse():
                    if _core.hear_sse_chat(match, sse.event, sse.data):
                        continue
                    doc = parse_sse_update(sse.event, sse.data)
                    if doc is not None:
                        match.update(doc)
                        yield doc
                        if match.finished:
                            return
            except SSEError as exc:
                raise TransportUnavailable(str(exc)) from None


async def _ws(match: AsyncMatch) -> AsyncIterator[EventsDoc]:
    """As the sync ``_ws``, on ``websockets``' asyncio client."""
    if match.live is not None:  # the socket the caller holds open
        async for doc in match.live.updates():
            yield doc
        return
    async with AsyncMatchSocket(match) as sock:
        async for doc in sock.updates():
            yield doc


class AsyncMatchSocket:
    """Awaitable twin of :class:`meeple_client.client.MatchSocket` (``async with match.socket() as ws``): one
    task reads the socket at a time, a task that moves while another iterates the updates gets its reply from
    the reading one."""

    def __init__(self, match: AsyncMatch) -> None:
        self.match = match
        self.state = _core.SocketState(match)
        self.sock: Any = None
        self.failures = 0
        self.turn = asyncio.Condition()
        self.reading = False

    async def __aenter__(self) -> AsyncMatchSocket:
        try:
            await self._open()
        except _core.TRANSIENT as exc:
            await self._reopen(exc)
        self.match.live = self
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the socket: the match's moves go over REST again."""
        if self.match.live is self:
            self.match.live = None
        await self._drop()

    async def _drop(self) -> None:
        if self.sock is not None:
            await self.sock.close()
            self.sock = None

    async def _open(self) -> None:
        match = self.match
        try:
            self.sock = await ws_connect(_core.ws_url(match.client.base_url, match.id),
                                         additional_headers=_core.ws_headers(match.token, match.client.api_key),
                                         open_timeout=match.client.timeout, max_size=None)
        except InvalidStatus as exc:
            response = exc.response
            raise _core.refused(response.status_code, _core.handshake_body(response.body),
                                dict(response.headers)) from None
        except InvalidHandshake as exc:
            if isinstance(exc, InvalidMessage):
                raise ConnectionError(repr(exc)) from None
            raise TransportUnavailable(repr(exc)) from None
        for text in self.state.greeting():
            await self.sock.send(text)

    async def _reopen(self, exc: Exception) -> None:
        while True:
            await self._drop()
            self.failures += 1
            delay = _core.reconnect_wait(exc, self.failures, self.match.client.retries)
            if self.match.client.on_retry is not None:
                self.match.client.on_retry("ws", exc, delay)
            await asyncio.sleep(delay)
            try:
                await self._open()
                return
            except _core.TRANSIENT as again:
                exc = again

    async def _step(self, timeout: float | None) -> None:
        try:
            if self.sock is None:
                raise ConnectionError("the socket is closed")
            raw = await asyncio.wait_for(self.sock.recv(), timeout)  # cancelling recv loses no message
        except TimeoutError:
            return
        except DROPPED as exc:
            await self._reopen(exc)
            return
        if self.state.receive(raw):
            self.failures = 0

    async def _until(self, ready: Callable[[], bool], deadline: float | None) -> bool:
        loop = asyncio.get_running_loop()
        while not ready():
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return False
            async with self.turn:
                if self.reading:
                    with suppress(TimeoutError):
                        await asyncio.wait_for(self.turn.wait(), left)
                    continue
                self.reading = True
            try:
                await self._step(left)
            finally:
                async with self.turn:
                    self.reading = False
                    self.turn.notify_all()
        return True

    def _deadline(self, seconds: float | None) -> float | None:
        return None if seconds is None else asyncio.get_running_loop().time() + seconds

    async def updates(self) -> AsyncIterator[EventsDoc]:
        while True:
            while self.state.pending:
                yield self.state.pending.popleft()
            if self.state.done:
                return
            await self._until(lambda: bool(self.state.pending) or self.state.done, None)

    async def _send(self, sent: _core.SocketMove) -> dict[str, Any]:
        self.state.send(sent)
        try:
            if self.sock is not None:
                await self.sock.send(sent.text)
        except (ConnectionClosed, OSError):
            pass  # the reader sees the drop and reopens: the greeting sends the move again
        try:
            answered = await self._until(lambda: self.state.answered(sent), self._deadline(self.match.client.timeout))
        except (TransportError, ConnectionClosed, OSError) as exc:
            raise _core.ReplyLost(repr(exc)) from exc
        if not answered:
            raise _core.ReplyLost(f"no reply within {self.match.client.timeout:g} s")
        return self.state.settle(sent)

    async def chat(self, text: str | None = None, *, preset: str | None = None) -> ChatMessage:
        """As :meth:`meeple_client.client.MatchSocket.chat`."""
        msg_id, text_out = self.state.chat_message(text, preset)
        try:
            if self.sock is None:
                raise ConnectionError("the socket is closed")
            await self.sock.send(text_out)
            answered = await self._until(lambda: msg_id in self.state.replies,
                                         self._deadline(self.match.client.timeout))
        except (ConnectionClosed, OSError) as exc:
            self.state.chatting.discard(msg_id)
            raise TransportError(f"the chat message's reply was lost: {exc!r}") from exc
        if not answered:
            self.state.chatting.discard(msg_id)
            raise TransportError(f"no reply to the chat message within {self.match.client.timeout:g} s")
        return self.state.chat_reply(msg_id)

    async def move(self, move: dict[str, Any], wait: int = 0) -> AsyncMatch:
        """As :meth:`meeple_client.client.MatchSocket.move`."""
        match, sent = self.match, self.state.move_message(move)
        delays = _core.retry_delays(match.client.retries)
        self.state.heard = [] if wait else None
        try:
            while True:
                try:
                    doc = await self._send(sent)
                    break
                except (_core.RateLimited, _core.Unavailable) as exc:
                    delay = _core.retry_reply(exc, delays)
                    if match.client.on_retry is not None:
                        match.client.on_retry("move", exc, delay)
                    await asyncio.sleep(delay)
                except _core.ReplyLost:
                    self.state.forget(sent)
                    await match.client.run(match.move_flow(move, wait, version=sent.version, key=sent.key))
                    return match
            match.update(doc)
            if wait:
                with suppress(*DROPPED, TransportError):
                    await self._until(lambda: match.finished or match.my_turn, self._deadline(wait))
                match.doc["events"] = _core.waited_events(self.state.heard or [], doc["version"])
        finally:
            self.state.heard = None
        return match

    async def wait_turn(self, timeout: float | None = None) -> AsyncMatch:
        match = self.match
        await self._until(lambda: match.finished or match.my_turn, self._deadline(timeout))
        if match.finished and match.outcome is None:
            await match.refresh()
        return match


class AsyncTicket:
    def __init__(self, client: AsyncClient, doc: dict[str, Any]) -> None:
        self.client = client
        self.doc = doc
        self.tokens = _core.party_tokens(doc)

    @property
    def status(self) -> str:
        return str(self.doc["status"])

    @property
    def party(self) -> list[dict[str, Any]]:
        return list(self.doc.get("party") or [])

    async def wait(self, timeout: float = 300.0) -> AsyncMatch:
        return (await self.wait_party(timeout))[0]

    async def wait_party(self, timeout: float = 300.0) -> list[AsyncMatch]:
        """Every member's seat, an :class:`AsyncMatch` each, in the party's order, once matched."""
        self.doc, tokens = await self.client.run(ticket_wait_flow(self.doc, timeout, self.tokens))
        self.tokens = list(tokens)
        return [await AsyncMatch(self.client, self.doc["match_id"], token).refresh() for token in tokens]
