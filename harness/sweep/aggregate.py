"""Per-point estimates and 95 % confidence intervals over replications, by the metric's kind.

Why two methods:

- A **proportion** (``no_capacity_rate``, ``wait_probability``, ...) is a count of successes out
  of a count of trials, both of which every replication records. Its interval is the **Wilson**
  score interval on the counts pooled over the replications (``scipy.stats.binomtest``): it
  stays inside [0, 1] and behaves with few successes, where a t interval over two or three
  replication ratios runs below 0. It treats the pooled trials as independent; sessions that
  share a busy period are not quite, so the replication spread (``std``) is kept beside it.
- Any other metric gets the **Student t** interval of the replication means (few replications,
  unknown variance), **clipped** to the metric's range (utilization within [0, 1], waits and
  counts at 0): an interval never claims values the metric cannot take.

Every row names its method in the ``method`` column, so a table or a figure can say how its
interval was computed. With one replication, or no variation at all, a t interval collapses to
the mean or is missing rather than being invented.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from scipy import stats

from harness.runner.metrics import METRICS

__all__ = [
    "CONFIDENCE",
    "METHODS",
    "METHOD_LABELS",
    "aggregate",
    "clip",
    "t_interval",
    "wilson_interval",
]

CONFIDENCE = 0.95

#: ``method`` column value → how to say it under a table or a figure.
METHODS: dict[str, str] = {
    "wilson": "Wilson score interval on the counts pooled over the replications",
    "t-clipped": "Student t interval over the replications, clipped to the metric's range",
}
#: ``method`` → a few words for a figure's title.
METHOD_LABELS: dict[str, str] = {
    "wilson": "Wilson intervals (pooled counts)",
    "t-clipped": "t intervals (clipped to range)",
}


def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided t confidence interval of the mean of ``values`` (NaNs ignored)."""
    clean = [v for v in values if not math.isnan(v)]
    n = len(clean)
    if n == 0:
        return math.nan, math.nan
    mean = sum(clean) / n
    if n == 1:
        return math.nan, math.nan
    if min(clean) == max(clean):
        # Identical replications: the interval is the point itself (scipy's sem can come out an
        # ulp above zero here, from rounding in its own mean).
        return mean, mean
    sem = float(stats.sem(clean))
    if sem == 0 or math.isnan(sem):
        return mean, mean
    low, high = stats.t.interval(confidence, n - 1, loc=mean, scale=sem)
    return float(low), float(high)


def clip(interval: tuple[float, float], bounds: tuple[float, float]) -> tuple[float, float]:
    """``interval`` clipped into ``bounds`` (NaN stays NaN)."""
    low, high = interval
    lower, upper = bounds
    return (
        low if math.isnan(low) else min(max(low, lower), upper),
        high if math.isnan(high) else min(max(high, lower), upper),
    )


def wilson_interval(
    successes: int, trials: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``trials`` (NaN without trials)."""
    if trials <= 0:
        return math.nan, math.nan
    ci = stats.binomtest(successes, trials).proportion_ci(confidence, method="wilson")
    return float(ci.low), float(ci.high)


def _row(metric: str, group: pd.DataFrame) -> dict[str, Any]:
    spec = METRICS[metric]
    values = [float(v) for v in group[metric].tolist()]
    clean = [v for v in values if not math.isnan(v)]
    std = float(pd.Series(clean).std()) if len(clean) > 1 else math.nan
    if spec.kind == "proportion" and spec.numerator in group and spec.denominator in group:
        successes = int(group[spec.numerator].sum())
        trials = int(group[spec.denominator].sum())
        low, high = wilson_interval(successes, trials)
        mean = successes / trials if trials else math.nan
        return {"n": len(values), "mean": mean, "std": std, "ci_low": low, "ci_high": high,
                "method": "wilson", "trials": trials}  # fmt: skip
    low, high = clip(t_interval(values), spec.bounds)
    mean = sum(clean) / len(clean) if clean else math.nan
    return {"n": len(clean), "mean": mean, "std": std, "ci_low": low, "ci_high": high,
            "method": "t-clipped", "trials": math.nan}  # fmt: skip


def aggregate(runs: pd.DataFrame, params: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per (point, metric): the point's parameters, n (replications), mean, std,
    ci_low, ci_high, the interval's ``method`` and, for proportions, the pooled ``trials``."""
    rows: list[dict[str, Any]] = []
    for _point, group in runs.groupby("point", sort=True):
        for metric in metrics:
            rows.append(
                {
                    "point": int(group["point"].iloc[0]),
                    **{p: group[p].iloc[0] for p in params},
                    "metric": metric,
                    **_row(metric, group),
                }
            )
    frame = pd.DataFrame(rows)
    if "trials" in frame:
        frame["trials"] = frame["trials"].astype("Int64")
    return frame
