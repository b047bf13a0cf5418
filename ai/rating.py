"""Bradley-Terry ratings of bot rungs from head-to-head games, with 95% intervals, on the players' scale.

The model is the two-sided case of the Plackett-Luce model the gateway rates players with (openskill,
``services/core/competition/ratings.py``): rung ``i`` beats rung ``j`` with probability
``1 / (1 + exp(-(r_i - r_j) / SCALE))``, ``SCALE = sqrt(2) * beta`` and openskill's default ``beta = 25/6``,
so a rating difference here means what it means between two players. Five points are a 70% win rate,
ten 85%, fifteen 93%.

Why a fit of its own: openskill rates sequentially (the order of the games moves the result, and its
``sigma`` is not a confidence interval), and ``choix`` (the maintained Bradley-Terry library) gives point
estimates only. A maximum-likelihood fit of a handful of rungs is a few Newton steps, and its information
matrix gives the intervals.

* A game is won by the rung that won it, or, if both or neither did (a shared win; Fierce Women's automa
  beating both), by the better score; an equal result counts half a win each (``ai/ladder.py``).
* Every pair that played gets one virtual drawn game (a weak prior), so that a pair one rung always won
  still has a finite distance.
* ``anchor``: the rung pinned at 0 (the uniformly random player), so that ratings of different games sit
  on one scale: "30" means the same distance from random play in every game. Without an anchor the rungs
  are centred on ``centre``.
* Two covariances: ``anchored`` (how far each rung is from the anchor: it grows along the ladder, since
  every rung is reached through the rungs below it) and ``centred`` (each rung's place among the rated
  rungs, with their mean held fixed: what tells adjacent rungs apart). ``sigma`` and the 95% interval
  are the centred ones; the anchored ones are reported too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: openskill's default beta (25/6) times sqrt(2): the logistic scale of one two-player game.
SCALE = math.sqrt(2.0) * 25.0 / 6.0
Z95 = 1.959964


@dataclass
class Fit:
    ratings: list[float]
    #: standard errors: of each rung's place among the rated rungs (mean held), and of its distance to the anchor
    centred_se: list[float]
    anchored_se: list[float]
    iterations: int


def win_probability(diff: float) -> float:
    """Chance that a rung rated ``diff`` above another wins a game against it."""
    return 1.0 / (1.0 + math.exp(-diff / SCALE))


def fit(count: int, games: dict[tuple[int, int], tuple[float, int]], anchor: int | None = None,
        centre: float = 25.0, prior: float = 1.0, rated: list[int] | None = None) -> Fit:
    """Maximum-likelihood ratings of ``count`` rungs from ``games[(i, j)] = (score of i, games)``.

    ``rated``: the rungs whose mean the centred covariance holds fixed (default: all but the anchor).
    """
    pinned = anchor if anchor is not None else 0
    free = [k for k in range(count) if k != pinned]
    index = {k: n for n, k in enumerate(free)}
    x = [0.0] * count
    pairs = [(i, j, w + prior / 2, n + prior) for (i, j), (w, n) in games.items() if n > 0 or prior > 0]
    steps = 0
    info: list[list[float]] = [[0.0] * len(free) for _ in free]
    while steps < 100:
        steps += 1
        grad = [0.0] * len(free)
        info = [[0.0] * len(free) for _ in free]
        for i, j, w, n in pairs:
            p = win_probability(x[i] - x[j])
            g = (w - n * p) / SCALE
            h = n * p * (1 - p) / SCALE ** 2
            for a, sign in ((i, 1.0), (j, -1.0)):
                if a in index:
                    grad[index[a]] += sign * g
                    info[index[a]][index[a]] += h
            if i in index and j in index:
                info[index[i]][index[j]] -= h
                info[index[j]][index[i]] -= h
        step = _solve(info, grad)
        for k, n in index.items():
            x[k] += step[n]
        if max((abs(s) for s in step), default=0.0) < 1e-9:
            break
    cov_free = _inverse(info)
    cov = [[0.0] * count for _ in range(count)]
    for a, na in index.items():
        for b, nb in index.items():
            cov[a][b] = cov_free[na][nb]
    anchored_se = [math.sqrt(max(cov[k][k], 0.0)) for k in range(count)]
    group = rated if rated is not None else [k for k in range(count) if k != anchor]
    m = len(group)
    # Var(x_k - mean(group)) = C_kk - 2 mean_g C_kg + mean_gh C_gh
    mean_cov = sum(cov[g][h] for g in group for h in group) / (m * m)
    centred_se = [math.sqrt(max(cov[k][k] - 2 * sum(cov[k][g] for g in group) / m + mean_cov, 0.0))
                  for k in range(count)]
    if anchor is None:
        shift = centre - sum(x[g] for g in group) / m
        x = [v + shift for v in x]
    return Fit(x, centred_se, anchored_se, steps)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """``matrix^-1 vector`` by Gaussian elimination with partial pivoting (a handful of rungs)."""
    n = len(vector)
    a = [[*row, vector[k]] for k, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) < 1e-300:
            raise ValueError("the games do not connect every rung to the anchor")
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(n):
            if r != col and a[r][col]:
                f = a[r][col] / a[col][col]
                a[r] = [v - f * p for v, p in zip(a[r], a[col], strict=True)]
    return [a[k][n] / a[k][k] for k in range(n)]


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    n = len(matrix)
    columns = [_solve(matrix, [1.0 if r == c else 0.0 for r in range(n)]) for c in range(n)]
    return [[columns[c][r] for c in range(n)] for r in range(n)]
