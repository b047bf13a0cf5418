"""Reading the stack's /metrics: scrape, take the difference over a run, estimate histogram quantiles.

The quantile estimate is the one PromQL's ``histogram_quantile`` makes (linear inside the bucket), so
the report's server-side figures match what the Grafana dashboard shows for the same window.
"""

from __future__ import annotations

import math
import urllib.request
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

Labels = tuple[tuple[str, str], ...]
#: sample name -> labels -> value
Samples = dict[str, dict[Labels, float]]


def parse(text: str) -> Samples:
    samples: Samples = defaultdict(dict)
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name][tuple(sorted(sample.labels.items()))] = float(sample.value)
    return samples


def scrape(url: str, timeout: float = 5.0) -> Samples:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return parse(response.read().decode())


def merge(many: Iterable[Samples]) -> Samples:
    """Add up samples of several processes (counters and histograms add; so do per-process gauges)."""
    total: Samples = defaultdict(dict)
    for samples in many:
        for name, series in samples.items():
            for labels, value in series.items():
                total[name][labels] = total[name].get(labels, 0.0) + value
    return total


def delta(after: Samples, before: Samples) -> Samples:
    """What happened between two scrapes (for counters and histograms)."""
    return {name: {labels: value - before.get(name, {}).get(labels, 0.0) for labels, value in series.items()}
            for name, series in after.items()}


@dataclass(frozen=True)
class HistogramSummary:
    count: float
    total: float
    p50: float
    p95: float
    p99: float

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else math.nan


def quantile(q: float, buckets: list[tuple[float, float]]) -> float:
    """``histogram_quantile`` over cumulative ``(upper bound, count)`` pairs sorted by bound."""
    if not buckets or buckets[-1][1] <= 0:
        return math.nan
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if math.isinf(bound):
                return lower  # beyond the last finite bucket: its bound is all we know
            inside = cumulative - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = bound, cumulative
    return lower


def histograms(samples: Samples, name: str, by: Iterable[str]) -> dict[tuple[str, ...], HistogramSummary]:
    """Summaries of histogram ``name`` grouped by the labels ``by`` (other labels are added together)."""
    keys = tuple(by)
    buckets: dict[tuple[str, ...], dict[float, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[tuple[str, ...], float] = defaultdict(float)
    sums: dict[tuple[str, ...], float] = defaultdict(float)
    for labels, value in samples.get(f"{name}_bucket", {}).items():
        label_map = dict(labels)
        buckets[tuple(label_map.get(k, "") for k in keys)][float(label_map["le"])] += value
    for labels, value in samples.get(f"{name}_count", {}).items():
        counts[tuple(dict(labels).get(k, "") for k in keys)] += value
    for labels, value in samples.get(f"{name}_sum", {}).items():
        sums[tuple(dict(labels).get(k, "") for k in keys)] += value
    result = {}
    for group, by_bound in buckets.items():
        if counts[group] <= 0:
            continue
        ordered = sorted(by_bound.items())
        result[group] = HistogramSummary(counts[group], sums[group], quantile(0.5, ordered),
                                         quantile(0.95, ordered), quantile(0.99, ordered))
    return result


def totals(samples: Samples, name: str, by: Iterable[str]) -> dict[tuple[str, ...], float]:
    """Counter ``name`` grouped by the labels ``by``."""
    keys = tuple(by)
    grouped: dict[tuple[str, ...], float] = defaultdict(float)
    for labels, value in samples.get(name, {}).items():
        grouped[tuple(dict(labels).get(k, "") for k in keys)] += value
    return dict(grouped)


def value(samples: Samples, name: str, labels: Mapping[str, str] | None = None) -> float:
    wanted = tuple(sorted((labels or {}).items()))
    return sum(v for lab, v in samples.get(name, {}).items() if set(wanted) <= set(lab))
