"""Meeple's games as OpenSpiel Python games, and OpenSpiel's ISMCTS as an arena seat.

Optional: ``pip install -e '.[openspiel]'`` (the ``open-spiel`` wheel). Nothing else in the project
imports this module; ``meeple arena`` loads it only for ``ospiel:`` seats.

Each registered game (``meeple_clash``, ``meeple_fierce_women``, ``meeple_sideboards``,
``meeple_they_who_were_8``; parameters ``players``, ``seed`` and ``options``, a JSON object as a string)
is a sequential, imperfect-information, sampled-stochastic OpenSpiel game over the engine protocol:

* an action is the index of a move in ``legal_moves(state, seat)`` (the engine's order, which is a function
  of what the seat sees, so an index means the same move in every world of one information state);
* the information state (and the observation) of a seat is its view, canonical JSON;
* ``resample_from_infostate`` is the engine's ``determinize``; the engine's randomness (draws) lives in the
  state's generator, which ``determinize`` re-seeds, hence "sampled stochastic" and no chance nodes;
* returns are the reward the project's own search uses (``ai.ismcts.rewards``: a win dominates, the score
  margin breaks ties), in [0, 1] per seat;
* Sideboards' simultaneous steps are sequentialised: the pending seats act one after the other in seat
  order, and a seat's view shows only *that* the earlier seats submitted, never what. Resampling for a seat
  withdraws the other seats' hidden submissions (``determinize``) and lets them submit again with a
  sampled move, so the seat to act and its information state stay as they were.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson
import pyspiel
from open_spiel.python.algorithms import ismcts, mcts

from .ismcts import Move, rewards

if TYPE_CHECKING:
    from services.rules.games.base import Game

#: Bounds OpenSpiel's GameInfo needs: the widest move list (CLASH placements with every effect choice
#: stay well below; ``_legal_actions`` refuses a position that would exceed it) and the longest game.
MAX_ACTIONS = 8192
MAX_LENGTH = 20000
PREFIX = "meeple_"


def short_name(game_id: str) -> str:
    return PREFIX + game_id.replace("-", "_")


def _engine(name: str) -> Game[Any]:
    from services.rules.games import GAMES

    return GAMES[name[len(PREFIX):].replace("_", "-")]


class MeepleGame(pyspiel.Game):
    """One engine as an OpenSpiel game; ``params``: players (int), seed (int), options (JSON string)."""

    def __init__(self, params: dict[str, Any] | None = None, *, name: str) -> None:
        self.engine = engine = _engine(name)
        params = dict(params or {})
        self.players = int(params.get("players", engine.min_players))
        self.seed = int(params.get("seed", 0))
        self.options = orjson.loads(params.get("options", "{}"))
        seats = engine.seat_count(engine.new_game(self.players, self.seed, self.options))
        game_type = _game_type(engine)
        info = pyspiel.GameInfo(num_distinct_actions=MAX_ACTIONS, max_chance_outcomes=0, num_players=seats,
                                min_utility=0.0, max_utility=1.0, max_game_length=MAX_LENGTH)
        super().__init__(game_type, info, {"players": self.players, "seed": self.seed,
                                           "options": orjson.dumps(self.options).decode()})

    def new_initial_state(self) -> MeepleState:
        return MeepleState(self, self.engine.new_game(self.players, self.seed, self.options))

    def wrap(self, state: Any) -> MeepleState:
        """An OpenSpiel state around an engine state (the arena hands a bot the real state this way)."""
        return MeepleState(self, self.engine.clone(state))

    def make_py_observer(self, iig_obs_type: Any = None, params: Any = None) -> ViewObserver:
        return ViewObserver(self.engine)


class MeepleState(pyspiel.State):
    """An engine state; the legal moves of the seat to act are listed once per position."""

    def __init__(self, game: MeepleGame, state: Any) -> None:
        super().__init__(game)
        self.engine = game.engine
        self.state = state
        self._moves: list[Move] | None = None

    def moves(self) -> list[Move]:
        if self._moves is None:
            self._moves = self.engine.legal_moves(self.state, self.current_player())
        return self._moves

    def current_player(self) -> int:
        if self.engine.is_over(self.state):
            return int(pyspiel.PlayerId.TERMINAL)
        return min(self.engine.to_act(self.state))

    def _legal_actions(self, player: int) -> list[int]:
        if player != self.current_player():
            return []
        n = len(self.moves())
        if n > MAX_ACTIONS:
            raise pyspiel.SpielError(f"{n} legal moves exceed the action space of {MAX_ACTIONS}")
        return list(range(n))

    def _apply_action(self, action: int) -> None:
        move = self.moves()[action]
        self.engine.apply_in_place(self.state, self.current_player(), move)
        self._moves = None

    def _action_to_string(self, player: int, action: int) -> str:
        if player == self.current_player() and 0 <= action < len(self.moves()):
            return orjson.dumps(self.moves()[action], option=orjson.OPT_SORT_KEYS).decode()
        return f"move #{action}"

    def is_terminal(self) -> bool:
        return bool(self.engine.is_over(self.state))

    def returns(self) -> list[float]:
        if not self.engine.is_over(self.state):
            return [0.0] * self.engine.seat_count(self.state)
        return rewards(self.engine, self.state)

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> MeepleState:
        """A world ``player_id`` cannot tell apart: ``determinize``, then the other seats that had submitted
        in this simultaneous step submit again (a sampled move), in seat order."""
        rng = random.Random(int(probability_sampler() * 2**52))
        engine = self.engine
        world = engine.determinize(self.state, player_id, rng)
        pending = set(engine.to_act(self.state))
        withdrawn = sorted(set(engine.to_act(world)) - pending)
        if withdrawn:
            world = _resubmitted(engine, world, withdrawn, player_id, engine.view(self.state, player_id), rng)
        return MeepleState(self.get_game(), world)

    def clone(self) -> MeepleState:
        out = MeepleState(self.get_game(), self.engine.clone(self.state))
        out._moves = self._moves
        return out

    def __deepcopy__(self, memo: Any) -> MeepleState:
        return self.clone()

    def __str__(self) -> str:
        return self.engine.encode(self.state).decode()


def _resubmitted(engine: Game[Any], world: Any, seats: list[int], viewer: int, seen: Any,
                 rng: random.Random) -> Any:
    """``world`` after each of ``seats`` submits a random move that ends its decision, such that ``viewer``
    sees exactly what it saw (a public move such as Sideboards' exchange would show; a hidden submission
    does not)."""
    for _ in range(50):
        out = world
        for seat in seats:
            moves = engine.legal_moves(out, seat)
            rng.shuffle(moves)
            out = next((after for after in (engine.apply(out, seat, m) for m in moves)
                        if seat not in engine.to_act(after)), out)
        if engine.view(out, viewer) == seen:
            return out
    raise ValueError(f"no hidden submissions of seats {seats} keep seat {viewer}'s view")


class ViewObserver:
    """The seat's view as the information state and observation string (no tensor)."""

    def __init__(self, engine: Game[Any]) -> None:
        self.engine = engine
        self.tensor = np.zeros(0, np.float32)
        self.dict: dict[str, Any] = {}

    def set_from(self, state: MeepleState, player: int) -> None:
        pass

    def string_from(self, state: MeepleState, player: int) -> str:
        return orjson.dumps(self.engine.view(state.state, player), option=orjson.OPT_SORT_KEYS).decode()


def _game_type(engine: Game[Any]) -> Any:
    return pyspiel.GameType(
        short_name=short_name(engine.id), long_name=f"Meeple {engine.title}",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.SAMPLED_STOCHASTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=pyspiel.GameType.Utility.GENERAL_SUM,
        reward_model=pyspiel.GameType.RewardModel.TERMINAL,
        max_num_players=engine.max_players + 1, min_num_players=engine.min_players,
        provides_information_state_string=True, provides_information_state_tensor=False,
        provides_observation_string=True, provides_observation_tensor=False,
        parameter_specification={"players": engine.min_players, "seed": 0, "options": "{}"})


def register_all() -> list[str]:
    """Register every engine (idempotent); returns the OpenSpiel short names."""
    from services.rules.games import GAMES

    names = []
    known = set(pyspiel.registered_names())
    for gid, engine in GAMES.items():
        name = short_name(gid)
        names.append(name)
        if name not in known:
            pyspiel.register_game(_game_type(engine), _factory(name))
    return names


def _factory(name: str) -> type[MeepleGame]:
    """A class per game: OpenSpiel's registry outlives the interpreter, and a registered closure crashes
    Python's shutdown where a class does not."""
    def init(self: MeepleGame, params: dict[str, Any] | None = None) -> None:
        MeepleGame.__init__(self, params, name=name)
    return type(f"Meeple_{name}", (MeepleGame,), {"__init__": init})


def load(game_id: str, players: int, options: dict[str, Any] | None = None, seed: int = 0) -> MeepleGame:
    register_all()
    game: MeepleGame = pyspiel.load_game(short_name(game_id), {
        "players": players, "seed": seed, "options": orjson.dumps(options or {}).decode()})
    return game


# -- ISMCTS as an arena player -----------------------------------------------------------------------------


class SampleRolloutEvaluator(mcts.Evaluator):  # type: ignore[misc]
    """Playouts with each game's own ``sample_move`` (a random legal move drawn without enumerating every
    move: CLASH's placements), played on the engine state directly; uniform priors. This is the baseline's
    playout policy, not the project bots' heuristics (``ai.policies``), which are part of what the
    project's search is measured on."""

    def __init__(self, engine: Game[Any], rng: random.Random, max_length: int = 5000) -> None:
        self.engine, self.rng, self.max_length = engine, rng, max_length

    def evaluate(self, state: MeepleState) -> np.ndarray:
        engine, world = self.engine, self.engine.clone(state.state)
        steps = 0
        while not engine.is_over(world) and steps < self.max_length:
            seat = min(engine.to_act(world))
            engine.apply_in_place(world, seat, engine.sample_move(world, seat, self.rng))
            steps += 1
        if not engine.is_over(world):
            return np.full(engine.seat_count(world), 0.5)
        return np.array(rewards(engine, world))

    def prior(self, state: MeepleState) -> list[tuple[int, float]]:
        actions = state.legal_actions()
        return [(a, 1.0 / len(actions)) for a in actions]


class OpenSpielPlayer:
    """OpenSpiel's single-observer ISMCTS (UCT, max-visit final move) with ``sims`` simulations per move.

    ``rollout``: ``sample`` (each game's ``sample_move``, see :class:`SampleRolloutEvaluator`) or
    ``random`` (OpenSpiel's ``RandomRolloutEvaluator``: uniform over ``legal_actions``). The arena may set
    ``sims`` before each move (``--equal-time``).
    """

    def __init__(self, seed: int, sims: int = 300, rollout: str = "sample", c: float = 0.7) -> None:
        self.sims, self.rollout, self.c = sims, rollout, c
        self.seed = seed
        self.np_rng = np.random.RandomState(seed % 2**32)
        self.rng = random.Random(seed)
        self._bots: dict[int, Any] = {}
        self.last_sims = 0

    def _bot(self, game: MeepleGame) -> Any:
        bot = self._bots.get(id(game))
        if bot is None:
            if self.rollout == "sample":
                evaluator: Any = SampleRolloutEvaluator(game.engine, self.rng)
            else:
                evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=self.np_rng)
            bot = ismcts.ISMCTSBot(game, evaluator, self.c, self.sims, random_state=self.np_rng,
                                   final_policy_type=ismcts.ISMCTSFinalPolicyType.MAX_VISIT_COUNT)
            self._bots[id(game)] = bot
        return bot

    def choose(self, game: Game[Any], state: Any, seat: int) -> Move:
        spiel = _spiel_game(game, state)
        wrapped = spiel.wrap(state)
        if wrapped.current_player() != seat:
            raise ValueError(f"seat {seat} is not the first seat to act")
        if len(wrapped.moves()) == 1:
            self.last_sims = 0
            return wrapped.moves()[0]
        bot = self._bot(spiel)
        # The knob ISMCTSBot reads per search; its first simulation only creates the root, so at least 2.
        bot._max_simulations = self.last_sims = max(2, int(self.sims))
        action = bot.step(wrapped)
        return wrapped.moves()[int(action)]


_SPIEL_GAMES: dict[tuple[str, int], MeepleGame] = {}


def _spiel_game(game: Game[Any], state: Any) -> MeepleGame:
    """The OpenSpiel game object of an engine, per number of seats (a bot only ever sees wrapped states,
    so the game's own seed and options do not matter to it)."""
    seats = game.seat_count(state)
    key = (game.id, seats)
    if key not in _SPIEL_GAMES:
        players = next(p for p in range(game.min_players, game.max_players + 1)
                       if game.seat_count(game.new_game(p, 0, {})) == seats)
        _SPIEL_GAMES[key] = load(game.id, players)
    return _SPIEL_GAMES[key]
