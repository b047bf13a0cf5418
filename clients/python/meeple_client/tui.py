"""``meeple-play`` (also ``meeple play``): play any game in a terminal against bots or friends.

A line-based screen, so it works in any terminal, over ssh and under tmux: the board, the log in the server's
words, a move chosen in steps as on the browser page (CLASH: tile -> field -> side -> effect, each step offering
only the legal choices, numbered, in words), ``h`` for a hint, the clock and the result. Built only on the SDK.

The match's chat: each message is printed as it arrives (a thread of its own follows the match's events with
``chat_after``), the last ones stay under the log on every screen, and ``c`` (or ``c TEXT``) says something,
``c 2`` sends the game's quick-chat preset number 2. ``--watch MATCH --token w_...`` follows a match read-only
with a watch link's token; ``--party NAMES`` queues you and your friends as one party and prints each friend's
command (and page link) holding their seat.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import httpx

from .chooser import PROMPTS, ChooserState, Words, chooser_state, index_components, step_back, steps_of, value_key
from .client import Client, Match, MatchSocket
from .errors import ApiError, StaleVersion, TransportError
from .render import identity, render_clock, render_log, render_result, render_view

DEFAULT_URL = os.environ.get("MEEPLE_URL", "http://127.0.0.1:8000")
PAGE = 30  # choices listed at once; "f TEXT" narrows a long step (a CLASH effect may have dozens of targets)
HELP = ("number = choose | b = one step back | h = hint | f TEXT = filter | c = chat | r = refresh | R = resign | "
        "q = quit")
CHAT_SHOWN = 6  # chat lines kept under the log on each screen
TAKEN_OVER = ("your time ran out, so a bot is playing your seat until you take it back.\n"
              "t = take my seat back | Enter = keep watching | R = resign | q = quit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", nargs="?", help="clash, sideboards, fierce-women, they-who-were-8")
    parser.add_argument("--url", default=DEFAULT_URL, help=f"the server (default {DEFAULT_URL}, or $MEEPLE_URL)")
    parser.add_argument("--vs", default="normal", help="bot level for the other seats: easy, normal, hard, or "
                                                       "'humans' to leave them free for friends")
    parser.add_argument("--players", type=int, default=None, help="seats (default: the game's minimum, 2 or 4)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=JSON", help="a game option")
    parser.add_argument("--clock", default=None, metavar="per_move:S | fischer:BASE:INC",
                        help="a clock for every seat: S seconds a move, or a BASE-second bank plus INC a move "
                             "(when it runs out a bot plays your seat until you take it back with t)")
    parser.add_argument("--join", metavar="MATCH", help="take a free seat of a friend's match")
    parser.add_argument("--seat", type=int, default=None, help="with --join: the seat to take")
    parser.add_argument("--resume", metavar="MATCH", help="resume a match with --token (a seat's, a party member's)")
    parser.add_argument("--watch", metavar="MATCH", help="follow a match read-only: with --token w_... (a watch "
                                                         "link's token), or without one for an anonymous match")
    parser.add_argument("--party", metavar="NAMES", default=None,
                        help="queue GAME with friends as one party (comma-separated names): prints each friend's "
                             "command and page link, which hold their seat")
    parser.add_argument("--token", default=None)


def add_parser(sub: Any) -> None:
    """``meeple play``: the server's command delegates here."""
    parser = sub.add_parser("play", help="play in this terminal (the SDK's meeple-play)")
    add_arguments(parser)
    parser.set_defaults(func=run)


class Screen:
    """The match loop: draw, ask, act. Input and output are streams so tests could drive them too.

    On this seat's turn a move is chosen in steps (``chooser``): the trail of the choices so far, then the
    current step's choices, numbered; once one legal move is left, the whole move in words and ``1`` to play it."""

    def __init__(self, match: Match, out: TextIO = sys.stdout, inp: TextIO = sys.stdin,
                 components: dict[str, Any] | None = None, socket: MatchSocket | None = None, *,
                 presets: list[dict[str, Any]] | None = None, watching: bool = False,
                 party_lines: list[str] | None = None) -> None:
        self.match = match
        #: the game's quick-chat presets (``chat_presets`` of the catalogue): ``c 2`` sends the second one
        self.presets = presets or []
        #: read-only (a watch link's token, or a spectator without one): no moves, no legal moves asked for
        self.watching = watching
        #: a party's join commands, shown on every screen until the match is over
        self.party_lines = party_lines or []
        self.chat: list[dict[str, Any]] = []  # the chat as the last replay read had it (redactions replaced)
        self.prompt: str | None = None  # the prompt waiting for a typed line, reprinted under a chat line
        self.lock = threading.RLock()  # the screen's lines and a chat line heard meanwhile never interleave
        #: the match's WebSocket while it is open: moves go on it and the others' moves come on it
        self.socket = socket
        self.updates: Iterator[Any] | None = socket.updates() if socket is not None else None
        self.out = out
        self.inp = inp
        self.comp = index_components(components)
        self.chosen: list[tuple[str, str, bool]] = []
        self.filter = ""
        self.note = ""
        self.resigning = False

    def say(self, *lines: str) -> None:
        """Print ``lines``, each wrapped at word boundaries to the terminal's width (a terminal would cut a long
        line mid-word); a wrapped line's continuation is indented under it."""
        width = self.width()
        with self.lock:
            self._print(lines, width)

    def _print(self, lines: tuple[str, ...], width: int) -> None:
        for text in lines:
            for line in str(text).split("\n"):
                if len(line) <= width:
                    print(line, file=self.out)
                    continue
                indent = " " * (len(line) - len(line.lstrip()))
                for part in textwrap.wrap(line, width=width, subsequent_indent=indent + "    ",
                                          break_long_words=False, break_on_hyphens=False):
                    print(part, file=self.out)
        self.out.flush()

    def width(self) -> int:
        """The terminal's width now (its own size, not a $COLUMNS inherited from elsewhere), less one column."""
        try:
            return max(40, os.get_terminal_size(self.out.fileno()).columns - 1)
        except (OSError, ValueError, AttributeError):  # not a terminal (a pipe, a test's stream): no wrapping
            return 10_000

    def words(self) -> Words:
        return Words(self.match.game, self.comp, self.match.view or {}, self.match.seat)

    def state(self) -> ChooserState:
        return chooser_state(list(self.match.legal_moves), self.chosen)

    def shown_choices(self, state: ChooserState) -> list[tuple[int, str, str]]:
        """(number, value as JSON, words) of the current step, narrowed by the filter."""
        words, sample = self.words(), state.left[0]
        assert state.step is not None
        shown = [(i, v, words.value(state.step, v, sample)) for i, v in enumerate(state.options, 1)]
        if self.filter:
            shown = [c for c in shown if self.filter.lower() in c[2].lower()]
        return shown

    def resume_hint(self) -> str:
        m = self.match
        if self.watching:
            return f"watch again with: meeple play --watch {m.id}" + (f" --token {m.token}" if m.token else "")
        return f"resume later with: meeple play --resume {m.id} --token {m.token}"

    def log_lines(self) -> list[str]:
        """The match's log in the server's words for this seat (the same words the browser shows); the replay's
        chat is kept for the lines under it."""
        try:
            replay = self.match.replay()
        except ApiError:
            return []
        doc: dict[str, Any] = dict(replay)
        self.chat = list(doc.get("chat") or [])  # (a server with chat)
        return render_log([dict(entry) for entry in replay["log"]], width=min(self.width(), 200))

    def chat_line(self, message: dict[str, Any]) -> str:
        """One chat message in words: who said it (you, a seat, a spectator), then its text, never interpreted."""
        seat = message.get("seat")
        who = "a spectator" if seat is None else "you" if seat == self.match.seat else f"seat {seat}"
        text = "(message removed)" if message.get("redacted") else " ".join(str(message.get("text") or "").split())
        return f"  chat  {who}: {text}"

    def hear(self, message: dict[str, Any]) -> None:
        """A chat message as it arrives (ChatFeed's thread): printed at once, above the prompt being answered."""
        with self.lock:
            self.out.write(("\n" if self.prompt else "") + self.chat_line(message) + "\n" + (self.prompt or ""))
            self.out.flush()

    def draw(self) -> None:
        m = self.match
        seats = " ".join(f"{s['seat']}:{s['kind']}{'(' + s['level'] + ')' if s.get('level') else ''}"
                         for s in m.seats)
        to_act = ", ".join(str(s) for s in m.to_act) or "nobody"
        self.say("\033[2J\033[H" if self.out.isatty() else "",
                 f"match {m.id}  {m.game}  version {m.version}  status {m.status}  "
                 f"{identity(m.game, m.seat, int(m.doc.get('players') or len(m.seats)))}",
                 f"seats {seats}   to act: {to_act}   {render_clock(m.clock)}",
                 self.resume_hint() if m.token else "", "")
        self.say(*render_view(m.game, m.view, self.comp), "")
        log = self.log_lines()
        if log:
            self.say("what happened:", *log, "")
        if self.chat:
            self.say("chat (c TEXT = say it):", *(self.chat_line(c) for c in self.chat[-CHAT_SHOWN:]), "")
        if self.party_lines and not m.finished:
            self.say(*self.party_lines, "")
        if m.status == "waiting":
            self.say(f"Waiting for players. Invite a friend: meeple play --join {m.id}")
        if self.note:
            self.say(self.note)
            self.note = ""

    def draw_chooser(self) -> None:
        """The trail of the choices so far, then the current step's choices, or the whole move to confirm."""
        state, words = self.state(), self.words()
        sample = state.left[0]
        if state.chosen:
            self.say("your move so far: " + " > ".join(words.value(k, v, sample) for k, v, _ in state.chosen))
        if state.step is None:
            self.say(f"the move: {words.move(sample)}", "    1. play this move")
        else:
            shown = self.shown_choices(state)
            self.say(PROMPTS.get(state.step, f"{state.step}?"))
            for number, value, text in shown[:PAGE]:
                self.say(f"  {number:3d}. {text}")
                rules = words.rules(value)
                if rules and state.step not in ("god", "as"):
                    self.say(f"       {rules if len(rules) <= 150 else rules[:147] + '...'}")
            if len(shown) > PAGE:
                self.say(f"  ... {len(shown) - PAGE} more: narrow them with f TEXT (e.g. f centre)")
        self.say(HELP)

    def loop(self) -> int:
        m = self.match
        while True:
            self.draw()
            if m.finished:  # the final screen stays: nothing clears it after this
                self.say(render_result(m.outcome, m.result, m.seat), *self.early_end(), *self.bot_played())
                return 0
            if self.taken_over():
                if not self.ask(TAKEN_OVER + "\nyour choice> "):
                    return 0
                continue
            if self.watching:
                self.say("watching (read-only): c TEXT = chat | q = quit")
                if not self.wait_or_read():
                    return 0
                continue
            if not m.my_turn:
                others = [s for s in m.to_act if s != m.seat]
                plural = "s" if len(others) != 1 else ""
                waiting = f"seat{plural} {', '.join(map(str, others))}" if others else "the others"
                self.say(f"waiting for {waiting} ...  (c TEXT = chat, q = quit)")
                if not self.wait_or_read():
                    return 0
                continue
            self.draw_chooser()
            if not self.ask("your move> "):
                return 0

    def ask(self, prompt: str) -> bool:
        """Read one line and act on it; False once the player quits (or the input ends)."""
        line = self.read_line(prompt)
        return bool(line) and self.act(line.strip())

    def read_line(self, prompt: str) -> str:
        """One typed line after ``prompt`` ('' once the input ends)."""
        with self.lock:
            self.out.write(prompt)
            self.out.flush()
            self.prompt = prompt
        try:
            return self.inp.readline()
        finally:
            self.prompt = None

    def typed(self) -> bool:
        """A whole line is waiting to be read (never blocks; False where the input is not a file)."""
        try:
            return bool(select.select([self.inp], [], [], 0)[0])
        except (ValueError, OSError, TypeError):
            return False

    def wait_or_read(self, timeout: float = 30.0) -> bool:
        """While the others play (or while watching): until the match changes, or a line is typed (``c TEXT``
        chats, ``q`` quits, ``r`` refreshes), in slices of a quarter second. False once the player quits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.typed():
                line = self.inp.readline()
                return bool(line) and self.act(line.strip())
            if self.wait_slice(0.25):
                return True
        return True

    def say_chat(self, text: str) -> None:
        """``c TEXT``: say it; ``c N``: the game's preset N; ``c`` alone: the presets, then a line to send."""
        if not text:
            presets = "  ".join(f"{i}. {p['text']}" for i, p in enumerate(self.presets, 1))
            if presets:
                self.say(f"quick chat: {presets}")
            text = self.read_line("chat> (words, a preset's number, Enter = cancel) ").strip()
            if not text:
                return
        preset = self.presets[int(text) - 1]["id"] if text.isdigit() and 1 <= int(text) <= len(self.presets) else None
        try:  # over the open socket as moves go, else REST (the SDK's Match.chat)
            self.match.chat(None if preset else text, preset=preset)
        except ApiError as err:
            self.note = f"chat not sent: {err.code}: {err.message}"
        except TransportError as err:
            self.note = f"chat not sent: {err}"

    def taken_over(self) -> bool:
        """A bot plays this seat since its time ran out (not a resignation: that one is for good)."""
        m = self.match
        seat = m.seats[m.seat] if m.seat is not None and m.seat < len(m.seats) else {}
        return not m.finished and seat.get("control") == "bot" and not seat.get("forfeited") and not seat.get("left")

    def early_end(self) -> list[str]:
        """Why a match ended before its game did (a resignation, a forfeit on time, an abandonment), in the
        log's words: the result has no explanation then."""
        if (self.match.result or {}).get("explanation"):
            return []
        try:
            log = self.match.replay()["log"]
        except ApiError:
            return []
        early = ("resigned", "timeout", "left", "abandoned", "aborted")
        ends = [e for e in log if e["kind"] in early and e.get("text")]
        return [f"why it ended: {ends[-1]['text']}"] if ends else []

    def bot_played(self) -> list[str]:
        """The result's note when a bot played part of the game for a seat (a timeout), in words."""
        try:
            log = self.match.replay()["log"]
        except ApiError:
            return []
        lines = []
        for seat in dict.fromkeys(e["seat"] for e in log if e["kind"] == "timeout" and e.get("seat") is not None):
            last = [e["kind"] for e in log if e["kind"] in ("timeout", "reclaimed") and e.get("seat") == seat][-1]
            you = seat == self.match.seat
            after = (f"{'you' if you else 'they'} took the seat back later" if last == "reclaimed"
                     else "the bot played on to the end")
            lines.append(f"a bot played part of this game for {'you' if you else f'seat {seat}'}: "
                         f"{'your' if you else 'their'} time ran out, and {after}.")
        return lines

    def drop_socket(self) -> None:
        """The socket could not be reopened: REST and long-polls from now on."""
        if self.socket is not None:
            self.socket.close()
        self.socket = self.updates = None
        self.note = "the live connection was lost: moves now go over HTTP"

    def wait_turn(self) -> None:
        """Until the match changes (a taken-over seat, Enter): slices of :meth:`wait_slice`."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not self.wait_slice(1.0):
            pass

    def wait_slice(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for news: True once the match changed (or this seat must act, or it is over).
        The socket's updates while it is open (the status is read again when seats, a clock or the outcome may
        have changed), else a long-poll (``until=turn`` for a seat, the next change for a spectator or a seat a
        bot plays)."""
        m = self.match
        if self.socket is None or self.updates is None:
            until = "turn" if m.token and not self.watching and not self.taken_over() else "change"
            doc = m.poll(until=until, wait=max(1, round(seconds)))
            news = bool(doc.get("events")) or m.finished
            if news and (m.finished or any(e.get("kind") != "move" for e in doc.get("events") or [])):
                m.refresh()
            return news or m.my_turn
        try:
            self.socket.wait_turn(seconds)
            docs: list[Any] = []
            while self.socket.state.pending:
                update = next(self.updates, None)
                if update is None:
                    break
                docs.append(update)
        except TransportError:
            self.drop_socket()
            return True
        if docs and (m.finished or any(e.get("kind") != "move" for d in docs for e in d.get("events") or [])):
            m.refresh()
        return bool(docs) or m.finished or m.my_turn

    def send(self, move: dict[str, Any]) -> None:
        """One move: over the open socket, else over REST (a socket that cannot be reopened falls back; the
        move's version keeps a resend from being played twice)."""
        if self.socket is not None:
            try:
                self.socket.move(move)
                return
            except TransportError:
                self.drop_socket()
        self.match.move(move)

    def play(self, move: dict[str, Any]) -> None:
        m = self.match
        try:
            self.send(move)
        except StaleVersion:
            m.refresh()
            self.note = "the match moved on: here it is again, decide anew"
        except ApiError as err:
            if err.code == "seat_under_bot_control":
                m.refresh()
                self.note = "too late: your time ran out and a bot took your seat"
            else:
                self.note = f"refused: {err.code}: {err.message}"
        self.chosen.clear()
        self.filter = ""

    def act(self, line: str) -> bool:
        m = self.match
        if line in ("q", "quit"):
            self.say("", "bye: the match goes on without you (a clock, if any, keeps running).", self.resume_hint())
            return False
        if line == "c" or line.startswith("c "):
            self.say_chat(line[2:].strip())
            return True
        if self.watching:
            if line in ("r", ""):
                m.refresh()
            else:
                self.note = "read-only: c TEXT = chat | r = refresh | q = quit"
            return True
        state = self.state() if m.my_turn else None
        if line == "t" and self.taken_over():
            m.reclaim()
            m.refresh()
            self.note = "your seat is yours again"
        elif self.resigning:  # the answer to "resign this match?"
            self.resigning = False
            if line == "y":
                m.resign()
                m.refresh()
                self.note = "you resigned"
        elif line == "R":
            self.resigning = True
            self.note = "resign this match? your side loses. y = yes, anything else = no"
        elif line == "" and self.taken_over():
            self.wait_turn()
        elif line in ("r", ""):
            m.refresh()
        elif line == "b":
            step_back(self.chosen)
            self.filter = ""
        elif line == "h":
            doc = m.hint()
            hint = doc["move"]
            self.chosen[:] = [(k, value_key(hint.get(k)), False) for k in steps_of(hint)]
            level = doc.get("level") or "bot"  # (an older server names none)
            self.note = f"hint: the {level} bot would play {self.words().move(hint)} (1 plays it, b goes back)"
        elif line == "f" or line.startswith("f "):
            self.filter = line[2:].strip()
        elif state is not None and line.isdigit():
            number = int(line)
            if state.step is None and number == 1:
                self.play(state.left[0])
            elif state.step is not None and any(n == number for n, _, _ in self.shown_choices(state)):
                self.chosen.append((state.step, state.options[number - 1], False))
                self.filter = ""
            else:
                self.note = f"? {line}: no such choice"
        else:
            self.note = f"? {line!r}: {HELP}"
        return True


class ChatFeed(threading.Thread):
    """The match's chat as it arrives, for :meth:`Screen.hear`: long-polls of the match's events with ``chat_after``
    (docs/api.md "Chat") in a thread of its own, so a message shows while the screen waits for the others or for
    a typed line. The messages said before it starts are not repeated (the screen shows the replay's). A server
    without chat refuses ``chat_after`` (400): then it stops."""

    def __init__(self, match: Match, heard: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(daemon=True, name="meeple-chat")
        self.match, self.heard = match, heard
        self.stopping = threading.Event()

    def run(self) -> None:
        m = self.match
        headers = {"Authorization": f"Bearer {m.token}"} if m.token else {}
        after: int | None = None  # the first read: now (no wait), to learn where the chat stands
        last = 0
        while not self.stopping.is_set():
            params: dict[str, Any] = {"chat_after": last, **({} if after is None else {"after": after, "wait": 25})}
            try:
                response = m.client.http.get(f"/v1/matches/{m.id}/events", params=params, headers=headers, timeout=40)
            except httpx.HTTPError:
                self.stopping.wait(1)
                continue
            if response.status_code in (400, 401, 403, 404):
                return
            if response.status_code != 200:
                self.stopping.wait(2)
                continue
            doc = response.json()
            for message in doc.get("chat") or []:
                last = max(last, int(message["id"]))
                if after is not None and not self.stopping.is_set():
                    self.heard(message)
            after = max(after or 0, int(doc["version"]))


class WatchedMatch(Match):
    """A match followed with a watch link's token: the spectator view, so it never asks for legal moves."""

    def _include(self) -> str | None:
        return None


def open_match(api: Client, args: argparse.Namespace) -> Match:
    if args.watch:
        return WatchedMatch(api, args.watch, args.token).refresh()
    if args.resume:
        return api.match(args.resume, args.token)
    if args.join:
        return api.join(args.join, args.seat)
    if not args.game:
        raise SystemExit("name a game (clash, sideboards, fierce-women, they-who-were-8), or --join MATCH")
    catalogue = {g["id"]: g for g in api.games()}
    if args.game not in catalogue:
        raise SystemExit(f"unknown game {args.game!r}; this server has {', '.join(catalogue)}")
    players = args.players or max(catalogue[args.game]["min_players"], 2)
    other = {"kind": "human"} if args.vs == "humans" else {"kind": "bot", "level": args.vs}
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    return api.create_match(args.game, players, options=options or None, clock=clock_of(args.clock),
                            seats=[{"kind": "human"}] + [other] * (players - 1))


def queue_party(api: Client, args: argparse.Namespace) -> tuple[Match, list[str]]:
    """``--party NAMES``: you and your friends as one matchmaking ticket (docs/api.md "Matchmaking"); once matched,
    your seat, and one line per friend with the command (and the page link) that holds their seat."""
    names = [n.strip()[:32] for n in str(args.party).split(",") if n.strip()]
    if not args.game or not names:
        raise SystemExit("--party takes a game and friends' names: meeple play GAME --party Ann,Bob")
    catalogue = {g["id"]: g for g in api.games()}
    if args.game not in catalogue:
        raise SystemExit(f"unknown game {args.game!r}; this server has {', '.join(catalogue)}")
    players = args.players or max(catalogue[args.game]["min_players"], 2)
    options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    body = {"game": args.game, "players": players, "options": options,
            "party": [{"name": "you"}, *({"name": n} for n in names)]}
    ticket = api.call("matchmaking", body=body)
    party = ticket.get("party") or []
    print("your party is queued: looking for other players (bots fill empty seats after a short wait) ...", flush=True)
    while ticket["status"] == "waiting":
        ticket = api.call("ticket", {"ticket": ticket["ticket"]}, {"wait": 5})
        if any(member.get("token") for member in ticket.get("party") or []):
            party = ticket["party"]  # every member's token, in the one answer that finds the ticket matched
    if ticket["status"] != "matched" or not party:
        raise SystemExit(f"the party's ticket is {ticket['status']}")
    match_id, (me, *friends) = ticket["match_id"], party
    lines = [f"your party: send each friend their own line (it holds their seat) -- match {match_id}"]
    for friend in friends:
        team = f", team {friend['team']}" if friend.get("team") is not None else ""
        lines += [f"  {friend.get('name') or 'a friend'} (seat {friend['seat']}{team}): "
                  f"meeple play --resume {match_id} --token {friend['token']}",
                  f"      or in a browser: {api.base_url}/play#/m/{match_id}?t={friend['token']}"]
    print(*lines, sep="\n", flush=True)
    return Match(api, match_id, me["token"]).refresh(), lines


def clock_of(text: str | None) -> dict[str, Any] | None:
    """``per_move:S`` or ``fischer:BASE:INC`` as the API's clock settings."""
    if not text:
        return None
    mode, *numbers = text.split(":")
    try:
        if mode == "per_move" and len(numbers) == 1:
            return {"mode": "per_move", "seconds": float(numbers[0])}
        if mode == "fischer" and len(numbers) == 2:
            return {"mode": "fischer", "base_s": float(numbers[0]), "increment_s": float(numbers[1])}
    except ValueError:
        pass
    raise SystemExit(f"--clock takes per_move:SECONDS or fischer:BASE:INCREMENT, not {text!r}")


def run(args: argparse.Namespace) -> int:
    with Client(args.url) as api:
        party_lines: list[str] = []
        try:
            if args.party:
                match, party_lines = queue_party(api, args)
            else:
                match = open_match(api, args)
        except ApiError as err:
            print(f"error: {err.code}: {err.message}", file=sys.stderr)
            return 2
        watching = bool(args.watch)
        if not watching:
            print(f"seat {match.seat} of match {match.id}; your token (to resume): {match.token}")  # on every screen
        try:
            game = api.game(match.game)
        except ApiError:  # an older server: the choices are still in words, with bare ids for the cards
            game = {}
        socket = None if watching else open_socket(match)
        screen = Screen(match, components=game.get("components"), socket=socket, presets=game.get("chat_presets"),
                        watching=watching, party_lines=party_lines)
        feed = ChatFeed(match, screen.hear)
        feed.start()
        try:
            return screen.loop()
        except KeyboardInterrupt:
            print(f"\nbye. {screen.resume_hint()}")
            return 0
        finally:
            feed.stopping.set()
            if socket is not None:
                socket.close()


def open_socket(match: Match) -> MatchSocket | None:
    """The match's WebSocket for this seat's moves and updates, or None where the server (or a proxy in
    between) offers none: then REST moves and long-polls."""
    if match.token is None or match.finished:
        return None
    try:
        return match.socket().__enter__()
    except (TransportError, ApiError):
        return None


def main(argv: list[str] | None = None, prog: str = "meeple-play") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
