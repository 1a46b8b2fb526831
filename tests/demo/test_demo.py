"""``avatar-sim demo``: the scripted day, its report, and its determinism (SIM-2, SIM-9)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from harness.demo import DemoResult, render_summary, run_demo
from sim.config import SimConfig
from tests.scenarios.helpers import small

FILES = ("summary.md", "requests.csv", "sessions.csv", "runs.csv", "credits.csv", "records.json")


@pytest.fixture(scope="module")
def day() -> DemoResult:
    return run_demo(seed=0)


def _demo(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    # A small scenario for the report part: the scripted day is what this file checks (the
    # default scenario's report has tests of its own in test_report.py).
    scenario = out.parent / f"{out.name}-scenario.yaml"
    scenario.write_text(yaml.safe_dump(small(duration="10m", cooldown="2m")), encoding="utf-8")
    command = ["demo", "--out", str(out), "--scenario", str(scenario), "--no-progress"]
    return subprocess.run(
        [sys.executable, "-m", "harness", *command, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.req("SIM-2")
def test_the_command_reports_every_refusal_code_and_is_byte_identical_per_seed(
    tmp_path: Path,
) -> None:
    first, second = _demo(tmp_path / "a"), _demo(tmp_path / "b")
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    summary = (tmp_path / "a" / "summary.md").read_text(encoding="utf-8")
    for code in ("rate_limited", "concurrent_sessions", "no_capacity"):
        assert f"`{code}`" in summary
    assert "## Credits per organization" in summary
    assert summary in first.stdout  # what the terminal shows is the written summary
    for name in FILES:
        a, b = (tmp_path / d / name for d in ("a", "b"))
        assert a.read_bytes() == b.read_bytes(), name


@pytest.mark.req("SES-ST-2", "SES-ST-6", "SES-ST-7", "SES-ST-3", "SES-ST-4", "SIM-9")
def test_the_day_ends_sessions_each_way_the_contract_names(day: DemoResult) -> None:
    outcomes = Counter((s["status"], s["end_reason"] or s["error_code"]) for s in day.sessions)
    assert outcomes[("ended", "client_request")] == 1
    assert outcomes[("ended", "idle_timeout")] == 2
    assert outcomes[("ended", "max_duration")] == 1
    assert outcomes[("failed", "no_capacity")] == 1
    assert outcomes[("canceled", None)] == 10
    assert sum(outcomes.values()) == len(day.sessions)


@pytest.mark.req("LIM-1", "LIM-3", "LIM-4", "EP-SESS-4", "EP-SESS-5")
def test_the_refusals_are_the_per_key_cap_the_rate_limit_and_the_plan_gate(
    day: DemoResult,
) -> None:
    refusals = [(r.org, r.status, r.code) for r in day.refusals]
    assert refusals == [
        ("Corner Shop", 429, "concurrent_sessions"),
        ("Delta Labs", 429, "rate_limited"),
        ("Corner Shop", 403, "plan.feature_unavailable"),
    ]
    limited = next(r for r in day.refusals if r.code == "rate_limited")
    assert limited.retry_after is not None and 1 <= int(limited.retry_after) <= 60
    delta_creates = [r for r in day.requests if r.org == "Delta Labs" and r.path == "/v1/sessions"]
    assert [r.status for r in delta_creates] == [201] * 10 + [429]


@pytest.mark.req("SIM-5")
def test_credits_per_organization_match_the_sessions_and_runs_it_billed(day: DemoResult) -> None:
    multipliers = SimConfig().billing.quality_multipliers
    credits = {c["org"]: c for c in day.credits}
    assert {c["plan"] for c in day.credits} == {"enterprise", "pro", "free", "starter"}
    for org, row in credits.items():
        sessions = [s for s in day.sessions if s["org"] == org]
        runs = [r for r in day.runs if r["org"] == org]
        expected = sum(s["billable_seconds"] * multipliers[s["quality"]] for s in sessions)
        expected += sum(r["credits_charged"] for r in runs)
        assert row["credits_charged"] == expected, org
        assert row["billable_seconds"] == sum(s["billable_seconds"] for s in sessions), org
    # The idempotent retry created one session, not two.
    bistro = [s for s in day.sessions if s["org"] == "Bistro Bots"]
    assert len(bistro) == 2
    assert credits["Delta Labs"]["credits_charged"] == 0


@pytest.mark.req("SIM-2")
def test_the_summary_is_a_pure_function_of_the_records(day: DemoResult) -> None:
    again = run_demo(seed=0)
    assert render_summary(again) == render_summary(day)
    assert again.requests == day.requests
    other = run_demo(seed=1)
    assert [s["id"] for s in other.sessions] != [s["id"] for s in day.sessions]
