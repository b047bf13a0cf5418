"""The words every client shows (issue 33): each game's component catalogue against the spec (its data file and
its own tables), and every move's description against each viewer's view: words for every move, no hidden card
named, and no card id that the viewer's views before and after the move do not already show."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from services.rules.games import GAMES, words
from tests.games.fixtures import leaked_secrets, walk_strings

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "services" / "rules" / "games" / "data"
#: The specs: ``shared/`` beside the clone (CI, developers' worktrees under /work).
SPEC_DIRS = [ROOT.parent / "shared" / "rules", ROOT / "shared" / "rules", Path("/work/shared/rules")]
#: Card, tile and god ids as they appear in words, per game.
IDS = {"clash": r"\b(M0|[BG][1-7]|N\d\d)\b", "sideboards": r"\b(S\d\d|E[1-6])\b",
       "fierce-women": r"\b(W\d\d|A[1-8])\b", "they-who-were-8": r"\b(A\d\d)\b"}
CONFIGS: list[tuple[str, int, dict[str, Any]]] = [
    ("clash", 2, {"match": "best_of_3"}), ("clash", 2, {"match": "single", "secret_draft": True}),
    ("clash", 2, {"match": "single", "random_support": True, "hidden_support": True}),
    ("clash", 2, {"match": "points", "games": 2, "draft": True}),
    ("sideboards", 1, {}), ("sideboards", 3, {}), ("sideboards", 4, {"four_card_hand": True}),
    ("fierce-women", 2, {"action_cards": True}), ("fierce-women", 3, {}), ("fierce-women", 5, {"action_cards": True}),
    ("they-who-were-8", 4, {}),
]


def spec(name: str) -> str:
    for folder in SPEC_DIRS:
        if (folder / name).exists():
            return (folder / name).read_text(encoding="utf-8")
    pytest.fail(f"spec {name} not found in {[str(f) for f in SPEC_DIRS]}")


def data(name: str) -> Any:
    for folder in [*(f / "data" for f in SPEC_DIRS), DATA]:
        if (folder / name).exists():
            return json.loads((folder / name).read_text(encoding="utf-8"))
    raise AssertionError(name)


def table_rows(text: str, first: str) -> list[list[str]]:
    """Cells of the markdown table rows whose first cell matches ``first`` (a regex)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and re.fullmatch(first, cells[0]):
                rows.append(cells)
    return rows


def test_clash_catalogue_has_every_tile_with_the_specs_names_and_texts() -> None:
    comp = words.components("clash")
    tiles = {t["id"]: t for t in comp["tiles"]}
    source = data("clash.json")
    assert list(tiles) == [t["id"] for t in source["tiles"]]  # all 32, canonical order
    for t in source["tiles"]:
        entry = tiles[t["id"]]
        assert (entry["name"], entry["name_pl"], entry["side"], entry["effect"]) == (
            t["name_en"], t["name_pl"], t["side"], t["effect"]["kind"])
    texts = {}
    for row in table_rows(spec("clash.md"), r"(M0|[BGN]\d+(/[BGN]\d+)?)"):
        if len(row) != 2:  # the "Tile texts" table has two columns
            continue
        ids, text = row
        for tid in ids.split("/"):
            texts[tid] = text
    assert len(texts) == 32
    for tid, text in texts.items():  # the spec's "Tile texts" table, word for word
        assert tiles[tid]["text"] == text, tid
    names = [r for r in table_rows(spec("clash.md"), r"(M0|[BG]\d / [BG]\d|N\d\d)") if len(r) == 7]
    assert len(names) == 25  # the tiles table: M0, 7 pairs, 17 neutrals
    for row in names:
        for tid, name in zip(row[0].split(" / "), row[1].split(" / "), strict=True):
            assert tiles[tid]["name"] == name
    assert {f["colour"] for f in comp["factions"]} == {"blue", "green"}


def test_sideboards_catalogue_has_every_card_with_five_coloured_drawers_and_three_handles() -> None:
    comp = words.components("sideboards")
    cards = {c["id"]: c for c in comp["cards"]}
    assert len(cards) == 60
    letters = {"R": "red", "T": "turquoise", "P": "pink", "O": "orange", "K": "black",
               "f": "flower", "s": "square", "l": "line", "-": None}
    listed = re.findall(r"(S\d\d) `([^`]+)`", spec("sideboards.md"))
    assert len(listed) == 60
    for cid, drawers in listed:  # the spec's compact list
        expected = [{"colour": letters[d[0]], "handle": letters[d[1]]} for d in drawers.split()]
        assert cards[cid]["drawers"] == expected, cid
        assert sorted(cards[cid]["colours"]) == sorted(["red", "turquoise", "pink", "orange", "black"])
        assert sorted(h for h in cards[cid]["handles"] if h) == ["flower", "line", "square"]
    source = {g["id"]: g for g in data("sideboards.json")["goals"]}
    goals = {g["id"]: g for g in comp["goals"]}
    assert sorted(goals) == list(range(1, 31))
    for row in table_rows(spec("sideboards.md"), r"\d+"):
        if len(row) == 7 and row[1] in ("colour", "handle"):  # pattern goals: id, kind, name, points, cells...
            gid = int(row[0])
            assert (goals[gid]["name"], goals[gid]["points"]) == (row[2], int(row[3]))
            assert " / ".join(goals[gid]["picture"]) == row[5].replace("`", "")
    for gid, g in source.items():
        assert goals[gid]["points"] == g["points"] and goals[gid]["text"]
    assert [c["id"] for c in comp["colours"]] == data("sideboards.json")["colours"]


def test_fierce_women_catalogue_has_every_woman_and_action_as_the_spec_lists_them() -> None:
    comp = words.components("fierce-women")
    women = {w["id"]: w for w in comp["women"]}
    abbrev = {"A": "art", "C": "culture", "F": "feminism", "H": "human_rights", "P": "politics", "S": "science"}
    rows = table_rows(spec("fierce-women.md"), r"W\d\d")
    seen = 0
    for row in rows:
        for i in (0, 3):
            if len(row) > i + 2 and re.fullmatch(r"W\d\d", row[i]):
                w = women[row[i]]
                assert w["name"] == row[i + 1]
                assert w["categories"] == [abbrev[c] for c in row[i + 2].split()]
                seen += 1
    assert seen == 56 == len(women)
    actions = {a["id"]: a for a in comp["actions"]}
    for row in table_rows(spec("fierce-women.md"), r"A[1-8]"):
        assert actions[row[0]]["key"] == row[1].strip("`") and actions[row[0]]["name"] == row[2]
    for a in data("fierce-women.json")["actions"]:
        assert actions[a["id"]]["text"] == a["text"]
    assert [c["id"] for c in comp["categories"]] == data("fierce-women.json")["categories"]
    assert comp["automa"]["seat"] == 2


def test_they_who_were_8_catalogue_has_every_god_and_action_card_with_its_text() -> None:
    comp = words.components("they-who-were-8")
    gods = {g["id"]: g for g in comp["gods"]}
    for row in table_rows(spec("they-who-were-8.md"), r"G[1-8]"):
        if len(row) == 6:  # the gods table: id, name, full name, alias, power_key, window
            assert (gods[row[0]]["name"], gods[row[0]]["full_name"], gods[row[0]]["power"]) == (
                row[1], row[2], row[4].strip("`"))
    actions = {a["id"]: a for a in comp["actions"]}
    titled = [r for r in table_rows(spec("they-who-were-8.md"), r"A\d\d") if r[1].startswith("Their ")]
    assert len({r[0] for r in titled}) == 10
    for row in titled:
        assert actions[row[0]]["name"] == row[1]
    for a in data("they-who-were-8.json")["actions"]:
        assert actions[a["id"]]["text"] == a["text"]
    for g in data("they-who-were-8.json")["gods"]:
        assert gods[g["id"]]["text"] == g["text"]


def play(gid: str, players: int, options: dict[str, Any], seed: int) -> list[tuple[Any, int, Any, Any]]:
    """(before, seat, move, after) for every move of one random game (simultaneous seats in random order)."""
    game, rng = GAMES[gid], random.Random(seed)
    state = game.new_game(players, seed, options)
    out = []
    while not game.is_over(state):
        seat = rng.choice(game.to_act(state))
        move = game.sample_move(state, seat, rng)
        after = game.apply(state, seat, move)
        out.append((state, seat, move, after))
        state = after
    return out


@pytest.mark.parametrize(("gid", "players", "options"), CONFIGS,
                         ids=[f"{c[0]}-{c[1]}-{'-'.join(c[2]) or 'defaults'}" for c in CONFIGS])
def test_every_move_has_words_for_every_viewer_and_names_nothing_that_viewer_cannot_see(
        gid: str, players: int, options: dict[str, Any]) -> None:
    game = GAMES[gid]
    for seed in (1, 2):
        moves = play(gid, players, options, seed)
        for before, seat, move, after in moves:
            for viewer, doc in words.describe_all(game, before, seat, move, after).items():
                assert isinstance(doc["text"], str) and len(doc["text"]) > 8, (viewer, move)
                assert doc["summary"]["seat"] == seat and doc["summary"]["type"] == move["type"]
                assert leaked_secrets(game, after, viewer, doc) == set(), (viewer, move, doc["text"])
                assert leaked_secrets(game, before, viewer, doc) <= leaked_secrets(game, before, viewer, move) | set(
                    walk_strings(game.view(after, viewer))), (viewer, move, doc["text"])
                shown = set(walk_strings(game.view(before, viewer))) | set(walk_strings(game.view(after, viewer)))
                named = set(re.findall(IDS[gid], json.dumps(doc)))
                assert named <= shown, (viewer, named - shown, doc["text"])
                if viewer is not None and viewer != seat and move["type"] not in words._text(gid).PUBLIC_MOVES:
                    assert doc["summary"].get("move") is None  # another seat's hidden move is never repeated


def test_a_hidden_move_is_told_to_its_seat_in_full_and_to_the_others_without_the_card() -> None:
    """Sideboards: "passed 2 cards" to the others; the seat itself reads which."""
    game = GAMES["sideboards"]
    state = game.new_game(3, 4, {})
    first = game.legal_moves(state, 0)[0]
    after = game.apply(state, 0, first)
    described = words.describe_all(game, state, 0, first, after)
    assert first["cards"][0] in described[0]["text"] and first["cards"][1] in described[0]["text"]
    for viewer in (None, 1, 2):
        assert first["cards"][0] not in described[viewer]["text"]
        assert "chose their starting cards" in described[viewer]["text"]


@pytest.mark.parametrize("gid", list(GAMES))
def test_a_finished_games_result_is_explained_with_reason_and_breakdown(gid: str) -> None:
    players = {"they-who-were-8": 4}.get(gid, 2)
    game = GAMES[gid]
    final = play(gid, players, {"match": "best_of_3"} if gid == "clash" else {}, 3)[-1][3]
    doc = words.result_document(game, final)
    assert doc is not None
    explained = doc["explanation"]
    assert explained["end_reason"] and explained["headline"]
    assert explained["winners"] == game.outcome(final).winners or gid == "they-who-were-8"
    for seat in explained["seats"]:
        assert seat["breakdown"] and all(isinstance(b["value"], int) for b in seat["breakdown"])
    if gid == "they-who-were-8":
        assert [t["seats"] for t in explained["teams"]] == [[0, 2], [1, 3]]
        for team in explained["teams"]:
            assert sum(b["value"] for b in team["breakdown"]) == team["score"]
    elif gid == "fierce-women":
        automa = [s for s in explained["seats"] if s["automa"]]
        assert [s["seat"] for s in automa] == [2] and automa[0]["label"].startswith("Automa")
        for s in explained["seats"]:
            assert sum(b["value"] for b in s["breakdown"]) == s["score"]
    elif gid == "sideboards":
        for s in explained["seats"]:
            assert sum(b["value"] for b in s["breakdown"]) == s["score"]
    else:
        assert explained["games"] and all(g["winner"] in (0, 1, None) and g["reason"] for g in explained["games"])
        assert all(f"Game {g['game']} is over" in g["text"] for g in explained["games"])
