"""What a plan sizes for: fresh days of demand drawn from a recording (PLAN-6), every client with
the limits that would refuse some named per step (PLAN-7), and baselines read from the rate with
reasons given only beyond noise (PLAN-8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from harness import cli
from harness.erlang import mmc_deterministic_patience
from harness.examples import example
from harness.plan import PlanResult, plan_capacity
from harness.plan.demand import plan_demand
from harness.runner import run_scenario
from harness.runner.engine import session_arrivals
from harness.runner.metrics import summarize
from harness.scenarios import load_scenario, parse_scenario

OBJECTIVE = "no_capacity_rate<=0.01"


def _day(hours: int, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "fifty",
        "seed": 21,
        "duration": f"{hours}h",
        "cooldown": "30m",
        "sample_every": "1m",
        "config": {"scheduler": {"workers": 30}},
        "limits": {"concurrency": "off", "rate": "off", "idle_timeout": "off"},
        "organizations": [{"name": "Acme", "plan": "enterprise"}],
        "sessions": {
            "length": {"kind": "lognormal", "median": 240, "sigma": 0.6, "cap": 1800},
            "audio": None,
        },
        "client": {"max_attempts": 1, "idempotency_keys": False},
        "usage_timezones": [],
    }
    data.update(overrides)
    return data


def _recorded_day(tmp_path: Path, hours: int) -> Path:
    """One recorded day of about 50 sessions an hour (a run of a Poisson day) and the scenario
    that plays it."""
    poisson = _day(hours, arrivals=[{"kind": "poisson", "rate_per_hour": 50}])
    run_scenario(parse_scenario(poisson)).write_parquet(tmp_path / "run")
    path = tmp_path / "day.yaml"
    data = _day(hours, arrivals=[{"kind": "recorded", "path": "run/sessions.parquet"}])
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _fresh_days_met(result: PlanResult, hours: int, days: int = 40) -> int:
    """On how many fresh Poisson days at the recorded rate (seeds the plan never used) the
    plan's schedule keeps the day's no_capacity_rate within the objective."""
    fresh = parse_scenario(
        _day(hours, arrivals=[{"kind": "poisson", "rate_per_hour": 50}], records="summary",
             config={"scheduler": {"workers": result.schedule[0][1]}},
             pool_schedule=[{"at": at, "workers": w} for at, w in result.schedule])
    )  # fmt: skip
    met = 0
    for day in range(days):
        metrics = summarize(run_scenario(fresh, seed=10_000 + day), (0.0, fresh.duration))
        met += metrics["no_capacity_rate"] <= 0.01
    return met


def _recorded_day_is_planned_for_tomorrow(tmp_path: Path, hours: int) -> None:
    path = _recorded_day(tmp_path, hours)
    result = plan_capacity(path, [OBJECTIVE], workers=2)
    assert result.demand is not None and result.demand.days == 1
    assert "demand as fitted from 1 recorded day" in result.demand.covers
    assert "One recorded day is one sample of demand" in result.demand.covers
    assert _fresh_days_met(result, hours) >= 36  # at least 90 % of 40 fresh days
    result.write(tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "What the 95 % covers.** The 95 % covers" in report
    assert "from 1 recorded day" in report


@pytest.mark.req("PLAN-6")
def test_a_plan_of_one_recorded_day_meets_its_objective_on_fresh_days(tmp_path: Path) -> None:
    """Two recorded hours at about 50 sessions an hour: the plan (each replication a fresh day
    fitted to the recording) keeps no_capacity_rate <= 0.01 on at least 36 of 40 fresh Poisson
    days at that rate, and its report says it rests on one recorded day."""
    _recorded_day_is_planned_for_tomorrow(tmp_path, 2)


@pytest.mark.slow
@pytest.mark.req("PLAN-6")
def test_a_plan_of_a_recorded_day_of_24_hours_meets_its_objective_on_fresh_days(
    tmp_path: Path,
) -> None:
    """The full size: 24 recorded hours at about 50 an hour, 40 fresh 24-hour days."""
    _recorded_day_is_planned_for_tomorrow(tmp_path, 24)


@pytest.mark.req("PLAN-6")
def test_replications_draw_fresh_days_unless_an_exact_replay_is_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = load_scenario(_recorded_day(tmp_path, 2))
    fitted, statement = plan_demand(scenario, 3600.0)
    one, two = (session_arrivals(fitted, seed) for seed in (1, 2))
    assert one != two and abs(len(one) - len(two)) < 40  # two fresh days of the same rates
    exact, said = plan_demand(scenario, 3600.0, exact_replay=True)
    assert session_arrivals(exact, 1) == session_arrivals(exact, 2)  # the recorded day itself
    assert statement.methods == ("fitted",) and said.methods == ("exact",)
    assert "that one day, not the next" in said.covers
    out = tmp_path / "exact"
    argv = ["plan", str(tmp_path / "day.yaml"), "--slo", OBJECTIVE, "--exact-replay",
            "--replications", "2", "--max-replications", "2", "--out", str(out),
            "--no-progress", "--workers", "1", "--step", "2h"]  # fmt: skip
    assert cli.main(argv) in (0, 1)
    assert "that one day, not the next" in capsys.readouterr().out
    overlay = yaml.safe_load((out / "plan.yaml").read_text(encoding="utf-8"))
    assert [a["demand"] for a in overlay["arrivals"]] == ["exact"]


def _rush(tmp_path: Path) -> Path:
    """The README's example, shortened to its first three hours: morning_rush's clients share
    one key, whose create rate limit (10 a minute) the flash crowd at 02:20 runs into."""
    data = yaml.safe_load(Path(example("scenarios", "morning_rush.yaml")).read_text())
    data["duration"] = "3h"
    data["arrivals"] = [a for a in data["arrivals"] if a.get("start") != "3h"]
    path = tmp_path / "rush.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.req("PLAN-7", "NB-8")
def test_the_readme_example_plans_every_client_and_names_the_limit_at_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The search sizes for every client (the limits lifted in it); the overlay as configured
    refuses some of the flash crowd's clients at the rate limit, which the plan names at that
    step, on standard error, in plan.csv and in the report, with the pool beside it; the plan
    is also confirmed with the limits lifted."""
    out = tmp_path / "out"
    argv = ["plan", str(_rush(tmp_path)), "--slo", OBJECTIVE, "--replications", "3",
            "--max-replications", "6", "--out", str(out), "--no-progress",
            "--workers", "2"]  # fmt: skip
    assert cli.main(argv) in (0, 1)
    err = capsys.readouterr().err
    line = next(w for w in err.splitlines() if w.startswith("warning: step 2 (Thu 02:00)"))
    assert "the create rate limit (`rate_limited`)" in line and "serve the unthrottled" in line
    table = pd.read_csv(out / "plan.csv")
    assert table.loc[2, "binding_limits"] == "rate_limit"
    assert table.loc[2, "refused_by_limits_share"] > 0
    assert table["binding_limits"].isna().iloc[:2].all()
    confirmation = pd.read_csv(out / "confirmation.csv")
    assert {"plan", "erlang_c", "plan_unthrottled"} == set(confirmation["plan"])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "step 2 (Thu 02:00): as configured, the create rate limit" in report


@pytest.mark.req("PLAN-7")
def test_refused_clients_count_in_the_search_so_the_plan_sizes_the_demand(tmp_path: Path) -> None:
    """Sized as limited, the rate limit lets fewer clients reach the pool than arrive; sized for
    every client, the plan needs at least as many workers at the throttled step."""
    scenario = load_scenario(_rush(tmp_path))
    kwargs: dict[str, Any] = {"replications": 3, "max_replications": 3, "confirm": False}
    demand = plan_capacity(scenario, [OBJECTIVE], **kwargs)
    limited = plan_capacity(scenario, [OBJECTIVE], as_limited=True, **kwargs)
    crowd_demand, crowd_limited = demand.steps[2], limited.steps[2]
    clients = crowd_demand.tried[crowd_demand.workers].counts
    refused = crowd_limited.tried[crowd_limited.workers].counts
    assert clients["refused_rate_limit"] == 0 and refused["refused_rate_limit"] > 0
    assert crowd_demand.workers >= crowd_limited.workers


@pytest.mark.req("PLAN-8")
def test_baselines_read_the_declared_rate_so_identical_hours_get_the_same_sizes() -> None:
    """Three identical hours: Erlang C and M/M/c+D give each the same size (one seed's draw
    used to give 9 to 12), M/M/c+D's reading is harness.erlang's, and a stationary day gives no
    reason about demand moving or carry-over."""
    scenario = parse_scenario(_day(3, arrivals=[{"kind": "poisson", "rate_per_hour": 60}]))
    result = plan_capacity(scenario, [OBJECTIVE], replications=3, max_replications=3)
    assert len({s.erlang_c for s in result.steps}) == 1
    assert len({s.erlang_a for s in result.steps}) == 1
    assert [s.demand.arrivals for s in result.steps] == [60.0, 60.0, 60.0]
    step = result.steps[0]
    demand = step.demand
    from harness.plan.baseline import ErlangModel

    model = ErlangModel.of(scenario)
    queue = mmc_deterministic_patience(
        step.erlang_a, demand.rate_per_second, demand.mean_holding_seconds, model.startup_timeout
    )
    assert model.patient_reading(OBJECTIVE.split("<=")[0], step.erlang_a, demand) == (
        pytest.approx(queue.p_abandon)
    )
    assert queue.p_abandon <= 0.01
    assert "erlang_a_workers" in result.table
    from harness.plan.report import render_plan

    report = render_plan(result)
    assert "demand moved within the step" not in report and "carry-over" not in report
    assert "| M/M/c+D |" in report
