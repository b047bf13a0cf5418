"""``below`` and ``shuffle`` (services/rules/games/base.py) draw exactly what ``random.Random`` draws.

The engines use them instead of ``randrange``/``shuffle`` because the standard library's are Python code
that stays interpreted in the compiled build; a seed must still give the game it gave before (issue 30).
"""

from __future__ import annotations

import random

import pytest

from services.rules.games.base import below, shuffle


@pytest.mark.parametrize("seed", range(5))
def test_below_draws_what_randrange_draws(seed: int) -> None:
    ours, theirs = random.Random(seed), random.Random(seed)
    for n in [1, 2, 3, 7, 8, 9, 31, 32, 33, 100, 536, 2**31 - 1, 2**40 + 3] * 20:
        assert below(ours, n) == theirs.randrange(n)
    assert ours.getstate() == theirs.getstate()


@pytest.mark.parametrize("size", [0, 1, 2, 5, 56, 64])
def test_shuffle_makes_the_permutation_random_shuffle_makes(size: int) -> None:
    for seed in range(10):
        ours, theirs = list(range(size)), list(range(size))
        a, b = random.Random(seed), random.Random(seed)
        shuffle(a, ours)
        b.shuffle(theirs)
        assert ours == theirs and a.getstate() == b.getstate()


@pytest.mark.parametrize("n", [0, -3])
def test_below_refuses_an_empty_range_as_randrange_does(n: int) -> None:
    with pytest.raises(ValueError):
        below(random.Random(0), n)
