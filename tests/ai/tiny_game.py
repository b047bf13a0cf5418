"""A tiny hidden-information game implementing the engine protocol, so the bot tests need no real engine.

"Blind tricks": each of 2-4 seats is dealt 3 cards from 1..3n+3; every round all seats submit one card at
once (a simultaneous step: submissions are hidden until everyone has played), then the highest card
scores the trick's number (1, 2, 3) for each seat that played it, so a good card is worth saving for a
later trick. Hidden: other hands, other pending submissions, the deck.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True)
class Outcome:
    scores: list[float]
    winners: list[int]


@dataclass
class TinyState:
    hands: list[list[int]]
    deck: list[int]
    pending: dict[int, int]
    played: list[list[int]]
    points: list[int]
    rng: random.Random


class TinyGame:
    id = "tiny-tricks"
    title = "Blind tricks"
    min_players = 2
    max_players = 4
    simultaneous = True
    open_move_types: frozenset[str] = frozenset()

    def new_game(self, players: int, seed: int, options: Any = None) -> TinyState:
        rng = random.Random(seed)
        deck = list(range(1, 3 * players + 4))
        rng.shuffle(deck)
        hands = [sorted(deck[3 * s:3 * s + 3]) for s in range(players)]
        return TinyState(hands, deck[3 * players:], {}, [], [0] * players, rng)

    def seat_count(self, state: TinyState) -> int:
        return len(state.hands)

    def to_act(self, state: TinyState) -> list[int]:
        return [s for s, hand in enumerate(state.hands) if hand and s not in state.pending]

    def legal_moves(self, state: TinyState, seat: int) -> list[dict[str, Any]]:
        if seat not in self.to_act(state):
            return []
        return [{"type": "play", "card": c} for c in sorted(state.hands[seat])]

    def sample_move(self, state: TinyState, seat: int, rng: random.Random) -> dict[str, Any]:
        legal = self.legal_moves(state, seat)
        return legal[rng.randrange(len(legal))]

    def apply_in_place(self, state: TinyState, seat: int, move: dict[str, Any]) -> None:
        if move not in self.legal_moves(state, seat):
            raise ValueError(f"illegal {move} for seat {seat}")
        state.hands[seat].remove(move["card"])
        state.pending[seat] = move["card"]
        if len(state.pending) == len(state.hands):
            trick = [state.pending[s] for s in range(len(state.hands))]
            worth = len(state.played) + 1
            for s, card in enumerate(trick):
                state.points[s] += worth if card == max(trick) else 0
            state.played.append(trick)
            state.pending = {}

    def apply(self, state: TinyState, seat: int, move: dict[str, Any]) -> TinyState:
        nxt = self.clone(state)
        self.apply_in_place(nxt, seat, move)
        return nxt

    def clone(self, state: TinyState) -> TinyState:
        rng = random.Random()
        rng.setstate(state.rng.getstate())
        return TinyState([list(h) for h in state.hands], list(state.deck), dict(state.pending),
                         [list(t) for t in state.played], list(state.points), rng)

    def is_over(self, state: TinyState) -> bool:
        return not any(state.hands) and not state.pending

    def view(self, state: TinyState, seat: int | None) -> dict[str, Any]:
        return {"hand": sorted(state.hands[seat]) if seat is not None else None,
                "my_pending": state.pending.get(seat) if seat is not None else None,
                "submitted": sorted(state.pending), "hand_sizes": [len(h) for h in state.hands],
                "played": state.played, "points": state.points}

    def secrets(self, state: TinyState, seat: int | None) -> set[str]:
        return set()  # cards are plain ints; the view above is checked by equality in the tests

    def determinize(self, state: TinyState, seat: int, rng: random.Random) -> TinyState:
        """Re-deal every card the seat cannot see; the pool is sorted first so only the view matters."""
        det = self.clone(state)
        others = [s for s in range(len(state.hands)) if s != seat]
        pool = sorted([c for s in others for c in state.hands[s]] + state.deck
                      + [state.pending[s] for s in others if s in state.pending])
        rng.shuffle(pool)
        for s in others:
            size = len(state.hands[s])
            det.hands[s], pool = sorted(pool[:size]), pool[size:]
            if s in state.pending:
                det.pending[s], pool = pool[0], pool[1:]
        det.deck = pool
        det.rng = random.Random(rng.getrandbits(64))
        return det

    def outcome(self, state: TinyState) -> Outcome:
        best = max(state.points)
        return Outcome([float(p) for p in state.points], [s for s, p in enumerate(state.points) if p == best])

    def result(self, state: TinyState) -> dict[str, Any] | None:
        return {"points": state.points} if self.is_over(state) else None

    def encode(self, state: TinyState) -> bytes:
        return orjson.dumps({"hands": state.hands, "deck": state.deck, "pending": sorted(state.pending.items()),
                             "played": state.played, "points": state.points})


GAME = TinyGame()
