"""The terminal's step-wise chooser (meeple_client/chooser.py) is the page's (static/play/chooser.js): on the same
legal moves, view and choices, both offer the same steps with the same values in the same words (node runs the
page's own module), and every walk through the steps ends at a legal move, each step offering only values that
some legal move still has."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from meeple_client.chooser import Words, chooser_state, index_components, step_back, value_key

from services.rules.games import GAMES, words

STATIC = Path(__file__).resolve().parents[2] / "services" / "gateway" / "static" / "play"
CONFIGS: list[tuple[str, int, dict[str, Any]]] = [
    ("clash", 2, {"match": "best_of_3"}), ("clash", 2, {"match": "single", "secret_draft": True}),
    ("sideboards", 2, {}), ("sideboards", 4, {"four_card_hand": True}),
    ("fierce-women", 2, {"action_cards": True}), ("fierce-women", 3, {}), ("they-who-were-8", 4, {}),
]

#: The page's chooser walked with the same picks: each step's (part, values, words), then the move in words.
NODE_WALK = """
import { chooserState, valueWords, moveWords } from "%s/chooser.js";
import { indexComponents } from "%s/boards.js";
import { readFileSync } from "node:fs";
const out = [];
for (const c of JSON.parse(readFileSync(0, "utf8"))) {
  const ctx = { comp: indexComponents(c.components), view: c.view, you: c.you };
  const chosen = [], steps = [];
  for (const pick of c.picks) {
    const st = chooserState(c.moves, chosen);
    if (st.step === null) break;
    const said = st.options.map(v => valueWords(c.game, st.step, v, { ...ctx, move: st.left[0] }));
    steps.push([st.step, st.options, said]);
    chosen.push([st.step, st.options[pick], false]);
  }
  const st = chooserState(c.moves, chosen);
  const done = st.step === null;
  out.push({ steps, move: done ? st.left[0] : null, words: done ? moveWords(c.game, st.left[0], ctx) : null });
}
console.log(JSON.stringify(out));
"""


def decisions(gid: str, players: int, options: dict[str, Any], seed: int, every: int = 3) -> list[dict[str, Any]]:
    """Decisions along a random game: the acting seat's legal moves and view (every ``every``-th state)."""
    game, rng = GAMES[gid], random.Random(seed)
    state = game.new_game(players, seed, options)
    out = []
    for turn in range(400):
        if game.is_over(state) or not game.to_act(state):
            break
        seat = rng.choice(game.to_act(state))
        if turn % every == 0:
            out.append({"game": gid, "moves": game.legal_moves(state, seat), "view": game.view(state, seat),
                        "you": seat, "components": words.components(gid)})
        state = game.apply(state, seat, game.sample_move(state, seat, rng))
    return out


def walk(case: dict[str, Any], rng: random.Random) -> tuple[list[Any], dict[str, Any], str, list[int]]:
    """The terminal chooser walked with random picks: each step's (part, values, words), the move, its words."""
    text = Words(case["game"], index_components(case["components"]), case["view"], case["you"])
    chosen: list[tuple[str, str, bool]] = []
    steps, picks = [], []
    while True:
        st = chooser_state(case["moves"], chosen)
        if st.step is None:
            return steps, st.left[0], text.move(st.left[0]), picks
        left = [m for m in case["moves"] if all(value_key(m.get(k)) == v for k, v, _ in chosen)]
        assert sorted(st.options) == sorted({value_key(m.get(st.step)) for m in left}), st.step  # only legal values
        assert len(st.options) > 1  # a single value is taken by itself
        steps.append([st.step, st.options, [text.value(st.step, v, st.left[0]) for v in st.options]])
        pick = rng.randrange(len(st.options))
        picks.append(pick)
        chosen.append((st.step, st.options[pick], False))


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS, ids=[f"{c[0]}-{c[1]}" for c in CONFIGS])
def test_every_walk_through_the_steps_ends_at_a_legal_move_offering_only_legal_values_in_words(
        gid: str, players: int, options: dict[str, Any]) -> None:
    rng = random.Random(7)
    for case in decisions(gid, players, options, seed=5):
        steps, move, said, _ = walk(case, rng)
        assert move in case["moves"]
        assert said and not any(w.startswith(("{", '"')) for _, _, ws in steps for w in ws), steps
        for part, values, worded in steps:
            assert len(set(worded)) == len(values), (part, worded)  # two choices never read the same


def test_a_step_back_undoes_the_last_choice_and_what_followed_from_it() -> None:
    case = decisions("clash", 2, {"match": "single", "first_player": 0}, seed=3)[0]
    chosen: list[tuple[str, str, bool]] = []
    first = chooser_state(case["moves"], chosen)  # Mustafa from the start spot: type, tile, from taken already
    assert first.step == "field" and [k for k, _, auto in chosen] == ["type", "tile", "from"]
    chosen.append(("field", first.options[0], False))
    assert chooser_state(case["moves"], chosen).step == "supports"
    step_back(chosen)
    assert chooser_state(case["moves"], chosen).step == "field" and len(chosen) == 3


def test_the_terminal_chooser_offers_the_same_steps_in_the_same_words_as_the_page() -> None:
    if shutil.which("node") is None:
        pytest.fail("node is missing: `make test` installs it (make test-tools)")
    rng = random.Random(11)
    cases, expected = [], []
    for gid, players, options in CONFIGS:
        for case in decisions(gid, players, options, seed=9, every=5):
            steps, move, said, picks = walk(case, rng)
            cases.append({**case, "picks": picks})
            expected.append({"steps": steps, "move": move, "words": said})
    script = NODE_WALK % (STATIC.as_uri(), STATIC.as_uri())
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(cases),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    page = json.loads(done.stdout)
    assert len(page) == len(expected) > 30
    for ours, theirs, case in zip(expected, page, cases, strict=True):
        assert [s[0] for s in ours["steps"]] == [s[0] for s in theirs["steps"]], case["game"]
        for (part, values, worded), (_, page_values, page_worded) in zip(ours["steps"], theirs["steps"], strict=True):
            assert [json.loads(v) for v in values] == [json.loads(v) for v in page_values], part
            assert worded == page_worded, (case["game"], part)
        assert ours["move"] == theirs["move"] and ours["words"] == theirs["words"], case["game"]
