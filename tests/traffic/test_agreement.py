"""HAR-10: a replay's metrics are judged as one family (Holm at 5 % family-wise), so that a
deployment that is the simulation is not called different on twenty-odd metrics by chance,
while a metric far from its prediction still is (``test_replay`` shows a deployment with fewer
workers or slower boots called out)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from harness.runner.metrics import METRICS
from harness.sweep.aggregate import wilson_interval
from harness.traffic.agreement import (
    compare,
    holm,
    overlap_p_value,
    prediction_p_value,
    rejected,
)

pytestmark = pytest.mark.req("HAR-10")


def test_holm_steps_down_from_the_smallest_p() -> None:
    p_values = [0.04, 0.001, math.nan, 0.011, 0.3]
    assert holm(p_values) == pytest.approx([0.05 / 2, 0.05 / 4, math.nan, 0.05 / 3, 0.05 / 1],
                                           nan_ok=True)  # fmt: skip
    # 0.001 <= 0.0125 and 0.011 <= 0.0167 are rejected; 0.04 > 0.025 stops the step-down.
    assert rejected(p_values) == [False, True, None, True, False]
    # Once one is kept, every larger one is too, even below its own threshold.
    assert rejected([0.02, 0.03, 0.049]) == [False, False, False]
    assert rejected([0.01, 0.02, 0.049]) == [True, True, True]


def test_each_p_value_is_its_own_95_percent_judgement() -> None:
    """At p = 0.05 each test is the 95 % interval the report shows: the observed value at the
    edge of one more run's t interval, or two Wilson intervals that just touch."""
    values = [1.0, 1.2, 1.1, 0.9, 1.0]
    mean, sd, n = np.mean(values), np.std(values, ddof=1), len(values)
    edge = mean + stats.t.ppf(0.975, n - 1) * sd * math.sqrt(1 + 1 / n)
    assert prediction_p_value(edge, values) == pytest.approx(0.05)
    assert prediction_p_value(edge + 0.5, values, grain=0.5) == pytest.approx(0.05)
    assert prediction_p_value(3.0, [2.0, 2.0]) == 0.0  # nothing varied, and it differs
    assert prediction_p_value(2.0, [2.0, 2.0]) == 1.0
    # Wilson: apart at 95 % exactly when p < 0.05.
    for observed, pooled in [((30, 100), (33, 300)), ((12, 26), (80, 260)), ((0, 26), (9, 260))]:
        p = overlap_p_value(observed, pooled)
        low1, high1 = wilson_interval(*observed)
        low2, high2 = wilson_interval(*pooled)
        assert (p < 0.05) == (low1 > high2 or low2 > high1)
    assert overlap_p_value((8, 26), (80, 260)) == 1.0  # the same proportion
    assert math.isnan(overlap_p_value((0, 0), (3, 260)))


def test_a_metric_outside_its_own_interval_by_chance_still_agrees_in_the_family() -> None:
    """The failure the served replay met: one wait 2.4 prediction s.d. above its prediction
    (p about 0.04) among the replay's other metrics agrees; alone it would not, and a metric
    far outside (p < 1e-4) is called out in any family."""
    rng = np.random.default_rng(3)
    predicted = pd.DataFrame(
        {
            "mean_first_frame_wait_seconds": rng.normal(2.8, 0.15, 10),
            "p95_first_frame_wait_seconds": rng.normal(4.9, 0.5, 10),
            "billable_seconds": [4742.0] * 10,
            "sessions_created": [26.0] * 10,
            "no_capacity": [8.0] * 10,
            "no_capacity_rate": [8 / 26] * 10,
        }
    )
    waits = predicted["mean_first_frame_wait_seconds"]
    high = waits.mean() + 2.4 * waits.std() * math.sqrt(1 + 1 / 10)
    observed = {
        "mean_first_frame_wait_seconds": high, "p95_first_frame_wait_seconds": 4.9,
        "billable_seconds": 4742.0, "sessions_created": 26.0, "no_capacity": 8.0,
        "no_capacity_rate": 8 / 26,
    }  # fmt: skip
    table = compare(observed, predicted, ran=18).set_index("metric")
    row = table.loc["mean_first_frame_wait_seconds"]
    assert row["observed"] > row["next_run_high"] and 0.01 < row["p_value"] < 0.05
    assert row["holm_threshold"] == pytest.approx(0.05 / 6) and row["agree"]
    assert table["agree"].all()
    alone = compare({"mean_first_frame_wait_seconds": high}, predicted).set_index("metric")
    assert not alone.loc["mean_first_frame_wait_seconds", "agree"]
    far = waits.mean() + 8 * waits.std()
    flagged = compare({**observed, "mean_first_frame_wait_seconds": far}, predicted, ran=18)
    assert flagged.set_index("metric")["agree"].eq(False).tolist() == [
        True, False, False, False, False, False,
    ]  # fmt: skip


def test_a_deployment_that_is_the_simulation_is_rarely_called_different() -> None:
    """n = 200 replays of 23 metrics whose observed value and 10 replications come from one
    normal distribution (numpy seed 0): Holm's family-wise verdict calls at most 18 of them
    different (under a 5 % family-wise rate the count is binomial(200, <= 0.05), above 18 with
    probability under 1 %); judging each metric alone at 95 % would call most of them different
    (1 - 0.95^23 is 0.69)."""
    names = [m for m, spec in METRICS.items() if spec.kind != "proportion"]
    assert len(names) >= 20
    rng = np.random.default_rng(0)
    called, alone = 0, 0
    for _replay in range(200):
        draws = np.abs(rng.normal(100.0, 10.0, size=(11, len(names))))
        table = compare(
            dict(zip(names, draws[0], strict=True)), pd.DataFrame(draws[1:], columns=names)
        )
        called += bool(table["agree"].eq(False).any())
        alone += bool((table["p_value"] < 0.05).any())
    assert called <= 18
    assert alone > 100  # the multiplicity the family verdict answers
