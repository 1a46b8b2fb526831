"""The figure rules of ``harness.runner.figures.check_figure`` catch what a figure lacks."""

from __future__ import annotations

import pytest
from matplotlib.figure import Figure

from harness.runner.figures import check_figure


@pytest.mark.req("NB-6")
def test_an_unlabelled_figure_is_reported_for_each_missing_part() -> None:
    figure = Figure()
    ax = figure.add_subplot()
    ax.plot([1, 2], label="a")
    ax.plot([2, 3], label="b")
    ax.errorbar([1], [1], yerr=[0.1])
    problems = " | ".join(check_figure(figure))
    for lack in ("no title", "no x label", "no y label", "but no legend", "without n"):
        assert lack in problems
    ax.set(title="Blocking\n95 % Wilson intervals, n = 3 replications", xlabel="x", ylabel="y")
    ax.legend()
    assert check_figure(figure) == []
