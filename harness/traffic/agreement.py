"""Whether a replay's observed metrics agree with the simulation's prediction, judged as one
family so that twenty-odd metrics at 95 % each do not fail together by chance.

Each judged metric gets a p-value from its own test (below), and the family is judged by Holm's
step-down procedure at ``FAMILY_ALPHA`` (5 %): sort the m p-values, compare the k-th smallest
(k = 1..m) with ``FAMILY_ALPHA / (m - k + 1)``, and call disagreeing every metric up to the
first that passes. Holm holds the family-wise error rate at 5 % whatever the dependence between
the metrics (the mean and the 95th percentile of one wait move together), and loses less power
than Bonferroni: a metric far outside its prediction is still flagged.

The tests, per metric (each at level p is the 95 % judgement the report shows, at 1 - p):

* a proportion: the observed Wilson interval (its own counts) against the predicted one (the
  replications' pooled counts); p is one less the confidence at which the two just touch;
* any other metric: one replay is one draw of the run, not the mean of many, so the observed
  value is set against one more replication: t = |observed - mean| / (s * sqrt(1 + 1/n)) with
  n - 1 degrees of freedom over the n replications; p two-sided. A metric that no replication
  varied (s = 0) agrees only when equal (p 1, else 0);
* billable seconds (whole seconds per session, rounded up): as any other, the observed value
  given one second per session that ran either way, since the replay hangs up at the
  deployment's millisecond stamps and a request's latency later, either of which can carry a
  session across a second's boundary.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

import pandas as pd
from scipy import stats

from harness.runner.metrics import METRICS
from harness.sweep.aggregate import CONFIDENCE, aggregate, clip, wilson_interval

__all__ = [
    "FAMILY_ALPHA",
    "compare",
    "holm",
    "overlap_p_value",
    "prediction_p_value",
    "rejected",
]

#: The family-wise error rate of a replay's verdict over all its judged metrics.
FAMILY_ALPHA = 1.0 - CONFIDENCE
#: The largest normal quantile the bisection of ``overlap_p_value`` looks at (p about 1e-87).
_Z_MAX = 20.0


def _wilson(successes: int, trials: int, z: float) -> tuple[float, float]:
    centre = (successes + z * z / 2) / (trials + z * z)
    spread = math.sqrt(successes * (trials - successes) / trials + z * z / 4)
    half = z / (trials + z * z) * spread
    return max(float(centre - half), 0.0), min(float(centre + half), 1.0)


def overlap_p_value(observed: tuple[int, int], predicted: tuple[int, int]) -> float:
    """One less the confidence at which the Wilson intervals of two (successes, trials) pairs
    just touch: below it they are apart. NaN without trials on either side."""
    (k1, n1), (k2, n2) = observed, predicted
    if n1 <= 0 or n2 <= 0:
        return math.nan

    def apart(z: float) -> bool:
        low1, high1 = _wilson(k1, n1, z)
        low2, high2 = _wilson(k2, n2, z)
        return low1 > high2 or low2 > high1

    if k1 * n2 == k2 * n1 or not apart(0.0):
        return 1.0
    if apart(_Z_MAX):
        return 0.0
    low, high = 0.0, _Z_MAX  # apart at low, touching at high
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if apart(middle) else (low, middle)
    return float(2 * stats.norm.sf(high))


def prediction_p_value(value: float, values: Sequence[float], grain: float = 0.0) -> float:
    """The two-sided p-value of ``value`` (give or take ``grain``) as one more draw of the
    replications ``values``: Student t with n - 1 degrees of freedom, sqrt(1 + 1/n) wide."""
    clean = [v for v in values if not math.isnan(v)]
    n = len(clean)
    if n < 2 or math.isnan(value):
        return math.nan
    mean, sd = statistics.fmean(clean), statistics.stdev(clean)
    distance = max(abs(value - mean) - grain, 0.0)
    if distance == 0:
        return 1.0
    if sd == 0:
        return 0.0
    return float(2 * stats.t.sf(distance / (sd * math.sqrt(1 + 1 / n)), n - 1))


def holm(p_values: Sequence[float], alpha: float = FAMILY_ALPHA) -> list[float]:
    """Holm's threshold for each p-value: ``alpha / (m - k + 1)`` for the k-th smallest of the
    m that are not NaN (ties in their given order), NaN for NaN."""
    judged = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    thresholds = [math.nan] * len(p_values)
    for rank, (_p, index) in enumerate(judged):
        thresholds[index] = alpha / (len(judged) - rank)
    return thresholds


def rejected(p_values: Sequence[float], alpha: float = FAMILY_ALPHA) -> list[bool | None]:
    """Holm's step-down verdict: a p-value is rejected (True) when it and every smaller one lie
    at or below their thresholds (``holm``); kept (False) otherwise; None for NaN."""
    thresholds = holm(p_values, alpha)
    order = sorted((p, i) for i, p in enumerate(p_values) if not math.isnan(p))
    verdict: list[bool | None] = [None] * len(p_values)
    stepping = True
    for p, index in order:
        stepping = stepping and p <= thresholds[index]
        verdict[index] = stepping
    return verdict


def _prediction_interval(
    values: Sequence[float], bounds: tuple[float, float]
) -> tuple[float, float]:
    clean = [v for v in values if not math.isnan(v)]
    n = len(clean)
    if n < 2:
        return math.nan, math.nan
    mean, sd = statistics.fmean(clean), statistics.stdev(clean)
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1)) * sd * math.sqrt(1 + 1 / n)
    return clip((mean - half, mean + half), bounds)


def _fidelity(observed: float, predicted: float, low: float, high: float) -> dict[str, float]:
    """The prediction's error against what was observed, in percent of the observed value, and
    the errors at the ends of the prediction's interval (NaN when nothing was observed)."""

    def error(value: float) -> float:
        if math.isnan(observed) or observed == 0 or math.isnan(value):
            return math.nan
        return (value - observed) / abs(observed) * 100.0

    return {
        "error_percent": error(predicted),
        "error_low_percent": error(low),
        "error_high_percent": error(high),
    }


def compare(
    observed: dict[str, float], predicted: pd.DataFrame, ran: int | None = None
) -> pd.DataFrame:
    """One row per metric: the observed value (and, for a proportion, its Wilson interval;
    for billable seconds, the value give or take ``ran``), the predicted mean with its 95 %
    interval and method over the replications, the 95 % interval one more replication falls
    in, the metric's p-value, its Holm threshold, whether it agrees as one of the family (the
    module's docstring), and the fidelity error: the prediction's error against the observed
    value in percent of it, with the errors at the ends of the prediction's interval beside it
    (``error_percent``, ``error_low_percent``, ``error_high_percent``; NaN where nothing was
    observed, a rate of 0 for instance).

    ``ran``: how many observed sessions had a first frame (the grain of billable seconds)."""
    names = [m for m in observed if m in METRICS and m in predicted]
    table = aggregate(predicted.assign(point=0), [], names).set_index("metric")
    rows: list[dict[str, Any]] = []
    for name in names:
        spec = METRICS[name]
        row = {str(k): v for k, v in table.loc[name].to_dict().items()}
        value = observed[name]
        low = high = next_low = next_high = p_value = math.nan
        if spec.kind == "proportion" and spec.numerator and spec.denominator:
            trials = observed.get(spec.denominator, math.nan)
            if not math.isnan(trials) and trials > 0:
                successes = int(observed[spec.numerator])
                low, high = wilson_interval(successes, int(trials))
                pooled = float(row["trials"])
                if not math.isnan(pooled) and pooled > 0:
                    pooled_successes = round(float(row["mean"]) * pooled)
                    p_value = overlap_p_value(
                        (successes, int(trials)), (pooled_successes, int(pooled))
                    )
        else:
            values = predicted[name].tolist()
            next_low, next_high = _prediction_interval(values, spec.bounds)
            grain = 0.0
            if spec.whole and spec.kind == "seconds" and ran is not None and not math.isnan(value):
                grain = float(ran)
                low, high = max(value - ran, 0.0), value + ran
            p_value = prediction_p_value(value, values, grain)
        rows.append(
            {
                "metric": name,
                "kind": spec.kind,
                "observed": value,
                "observed_low": low,
                "observed_high": high,
                "predicted": float(row["mean"]),
                "predicted_low": float(row["ci_low"]),
                "predicted_high": float(row["ci_high"]),
                "method": row["method"],
                "next_run_low": next_low,
                "next_run_high": next_high,
                "replications": int(row["n"]),
                "p_value": p_value,
                **_fidelity(value, float(row["mean"]), float(row["ci_low"]), float(row["ci_high"])),
            }
        )
    frame = pd.DataFrame(rows)
    p_values = [float(p) for p in frame["p_value"]] if len(frame) else []
    frame["holm_threshold"] = holm(p_values)
    verdict = rejected(p_values)
    frame["agree"] = pd.array([None if r is None else not r for r in verdict], dtype="boolean")
    return frame
