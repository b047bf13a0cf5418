"""``meeple-play`` (also ``meeple play``): play any game in a terminal against bots or friends.

A line-based screen, so it works in any terminal, over ssh and under tmux: the board, the log in the server's
words, a move chosen in steps as on the browser page (CLASH: tile -> field -> side -> effect, each step offering
only the legal choices, numbered, in words), ``h`` for a hint, the clock and the result. Built only on the SDK.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from typing import Any, TextIO

from .chooser import PROMPTS, ChooserState, Words, chooser_state, index_components, step_back, steps_of, value_key
from .client import Client, Match, MatchSocket
from .errors import ApiError, StaleVersion, TransportError
from .render import identity, render_clock, render_log, render_result, render_view

DEFAULT_URL = os.environ.get("MEEPLE_URL", "http://127.0.0.1:8000")
PAGE = 30  # choices listed at once; "f TEXT" narrows a long step (a CLASH effect may have dozens of targets)
HELP = "number = choose | b = one step back | h = hint | f TEXT = filter | r = refresh | R = resign | q = quit"
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
    parser.add_argument("--resume", metavar="MATCH", help="resume a match with --token")
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
                 components: dict[str, Any] | None = None, socket: MatchSocket | None = None) -> None:
        self.match = match
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
        return f"resume later with: meeple play --resume {m.id} --token {m.token}"

    def log_lines(self) -> list[str]:
        """The match's log in the server's words for this seat (the same words the browser shows)."""
        try:
            return render_log([dict(entry) for entry in self.match.replay()["log"]], width=min(self.width(), 200))
        except ApiError:
            return []

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
            if not m.my_turn:
                others = [s for s in m.to_act if s != m.seat]
                plural = "s" if len(others) != 1 else ""
                waiting = f"seat{plural} {', '.join(map(str, others))}" if others else "the others"
                self.say(f"waiting for {waiting} ...")
                self.wait_turn()
                continue
            self.draw_chooser()
            if not self.ask("your move> "):
                return 0

    def ask(self, prompt: str) -> bool:
        """Read one line and act on it; False once the player quits (or the input ends)."""
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        return bool(line) and self.act(line.strip())

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
        """Until this seat must act or the match is over: the socket's updates while it is open (the status is
        read again when seats, a clock or the outcome may have changed), else a long-poll."""
        m = self.match
        if self.updates is None:
            if self.taken_over():  # the bot plays this seat: the next change, not this seat's turn
                m.poll(until="change", wait=25)
            else:
                m.wait_turn(timeout=30)
            return
        try:
            doc = next(self.updates, None)
        except TransportError:
            self.drop_socket()
            return
        if doc is None or m.finished or any(e.get("kind") != "move" for e in doc.get("events") or []):
            m.refresh()

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


def open_match(api: Client, args: argparse.Namespace) -> Match:
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
        try:
            match = open_match(api, args)
        except ApiError as err:
            print(f"error: {err.code}: {err.message}", file=sys.stderr)
            return 2
        print(f"seat {match.seat} of match {match.id}; your token (to resume): {match.token}")  # also on every screen
        try:
            components = api.game(match.game).get("components")
        except ApiError:  # an older server: the choices are still in words, with bare ids for the cards
            components = None
        socket = open_socket(match)
        try:
            return Screen(match, components=components, socket=socket).loop()
        except KeyboardInterrupt:
            print(f"\nbye. resume with: meeple play --resume {match.id} --token {match.token}")
            return 0
        finally:
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
