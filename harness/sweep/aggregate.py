"""Per-point means and 95 % confidence intervals over replications (Student t).

Why t intervals: a sweep has few replications (3 to 30), their metric values are means over
many sessions (close to normal by the central limit theorem) and the variance is unknown; the t
interval is the honest small-sample interval. With one replication, or no variation at all, the
interval collapses to the mean or is missing rather than being invented.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
from scipy import stats

__all__ = ["CONFIDENCE", "aggregate", "t_interval"]

CONFIDENCE = 0.95


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


def aggregate(runs: pd.DataFrame, params: Sequence[str], metrics: Sequence[str]) -> pd.DataFrame:
    """One row per (point, metric): the point's parameters, n, mean, std, ci_low, ci_high."""
    rows: list[dict[str, Any]] = []
    for _point, group in runs.groupby("point", sort=True):
        for metric in metrics:
            values = [float(v) for v in group[metric].tolist()]
            clean = [v for v in values if not math.isnan(v)]
            low, high = t_interval(values)
            rows.append(
                {
                    "point": int(group["point"].iloc[0]),
                    **{p: group[p].iloc[0] for p in params},
                    "metric": metric,
                    "n": len(clean),
                    "mean": sum(clean) / len(clean) if clean else math.nan,
                    "std": float(pd.Series(clean).std()) if len(clean) > 1 else math.nan,
                    "ci_low": low,
                    "ci_high": high,
                }
            )
    return pd.DataFrame(rows)
