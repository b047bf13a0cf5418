"""Every state of a finished match, rebuilt with the engine from its replay (seed and move log): what tests
compare the views a client received against (``leaked_secrets``), version by version."""

from __future__ import annotations

from typing import Any

from services.rules.games import GAMES


def engine_states(replay: dict[str, Any]) -> tuple[Any, dict[int, Any]]:
    """(the game, {version: state}) of a finished match's ``GET /replay`` document."""
    game = GAMES[replay["game"]]
    state = game.new_game(replay["players"], int(replay["seed"]), replay["options"])  # a number or a decimal string
    states = {0: state}
    for entry in replay["log"]:
        if entry["kind"] == "move":
            state = game.apply(state, entry["seat"], entry["move"])
        states[entry["version"]] = state
    return game, states
