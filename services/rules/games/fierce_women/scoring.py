"""Fierce Women's "End and scoring": the per-column breakdown, the category values and the ranking."""

from __future__ import annotations

from ..base import JSONDict
from .components import ACTIONS, CATEGORIES, cats_of, common, single, women_in
from .flow import State

# -- End and scoring ---------------------------------------------------------------------------------


def score(s: State) -> JSONDict:
    n = s.seats
    counts = {c: 0 for c in CATEGORIES}
    for table in s.tables:
        for col in table:
            k = common(col)
            if single(k):
                counts[cats_of(k)[0]] += 1
    values = dict(counts)
    if s.popular_min:
        for c in CATEGORIES:
            if counts[c] == n:
                values[c] = 1
    for c, o in s.overrides.items():
        values[c] = o["value"]
    k_count = next((women_in(col) for table in s.tables for col in table
                    if any(ACTIONS.get(x) == "double_by_count" for x in col)), None)
    breakdown, scores = [], []
    for seat, table in enumerate(s.tables):
        defined_n = sum(1 for col in table if single(common(col)))
        bonus_on = s.collect_five_plus_one == seat and defined_n >= 5
        rows, total = [], 0
        for i, col in enumerate(table):
            k = common(col)
            w = women_in(col)
            if single(k):
                cat = cats_of(k)[0]
                value = values[cat]
                doubled = k_count is not None and w == k_count
                base = w * value * (2 if doubled else 1)
                bonus = w if bonus_on else 0
                rows.append({"column": i, "category": cat, "women": w, "value": value, "doubled": doubled,
                             "bonus": bonus, "points": base + bonus})
                total += base + bonus
            else:
                rows.append({"column": i, "category": None, "women": w, "value": 0, "doubled": False, "bonus": 0,
                             "points": 0})
        breakdown.append(rows)
        scores.append(total)
    ranking = sorted(({"seat": i, "score": sc, "rank": 1 + sum(1 for o in scores if o > sc)}
                      for i, sc in enumerate(scores)), key=lambda r: (-r["score"], r["seat"]))
    return {"scores": scores, "category_columns": counts,
            "category_values": {c: values[c] if counts[c] or c in s.overrides else 0 for c in CATEGORIES},
            "double_count": k_count, "breakdown": breakdown, "ranking": ranking,
            "winners": [r["seat"] for r in ranking if r["rank"] == 1]}
