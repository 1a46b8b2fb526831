"""A replay's report (``report.md``): its verdict, each metric observed beside its prediction
with the fidelity error, the refusals by cause, and how agreement is judged
(``harness.traffic.agreement``)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from harness.runner.metrics import cause_of, format_value
from harness.sweep.aggregate import METHODS
from harness.traffic.agreement import FAMILY_ALPHA
from harness.traffic.replay import UNOBSERVED, ReplayResult

__all__ = ["report_markdown"]


def _percent(value: object) -> str:
    number = float(str(value))
    return "n/a" if math.isnan(number) else f"{number:+.1f} %"


def report_markdown(result: ReplayResult, target: str) -> str:
    """The replay's report: the traffic, the metrics side by side, how they were judged."""
    scenario, table = result.scenario, result.comparison
    n = int(table["replications"].max()) if len(table) else 0
    lines = [
        f"# Replay of `{result.recording.source}` against {target}",
        "",
        f"**{result.verdict}**",
        "",
        f"{len(result.recording)} recorded sessions, played over {scenario.duration:g} s of the "
        f"deployment's time with idempotency keys of the replay's own (`{result.key_prefix}…`); "
        f"the prediction is {n} runs of the same traffic (`recording.parquet`, its "
        "organization, keys, client behaviour and configuration). Fidelity error: the "
        "prediction's error against the observed value, in percent of it, with the errors at "
        "the ends of the prediction's 95 % interval.",
        "",
        "| metric | observed | predicted (95 % CI) | error % (95 % CI) | next run in (95 %) "
        "| p | agree |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in table.to_dict("records"):
        name = str(row["metric"])

        def shown(column: str, name: str = name, row: dict[Any, Any] = row) -> str:
            return format_value(name, float(row[column]))

        observed = shown("observed")
        if not math.isnan(float(row["observed_low"])):
            observed += f" [{shown('observed_low')}, {shown('observed_high')}]"
        predicted = f"{shown('predicted')} [{shown('predicted_low')}, {shown('predicted_high')}]"
        following = (
            "" if math.isnan(float(row["next_run_low"]))
            else f"[{shown('next_run_low')}, {shown('next_run_high')}]"
        )  # fmt: skip
        p_value = "" if math.isnan(float(row["p_value"])) else f"{float(row['p_value']):.3g}"
        agree = "" if pd.isna(row["agree"]) else ("yes" if row["agree"] else "**no**")
        error = _percent(row["error_percent"])
        if error != "n/a":
            error += (
                f" [{_percent(row['error_low_percent'])}, {_percent(row['error_high_percent'])}]"
            )
        cells = [name, observed, predicted, error, following, p_value, agree]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Session clients refused, by the code of their last answer:", ""]
    lines += ["| code | cause | clients |", "|---|---|---|"]
    for code, count in result.refusals.items():
        lines.append(f"| {code} | {cause_of(code) or 'other'} | {count:,} |")
    if not result.refusals:
        lines.append("| (none) | | 0 |")
    methods = sorted(set(table["method"])) if len(table) else []
    lines += ["", "How they are judged:", ""]
    lines += [f"- `{m}`: {METHODS[m]} (n = {n} replications)." for m in methods]
    judged = int(table["agree"].notna().sum()) if len(table) else 0
    lines += [
        "- Each metric's p: for a proportion, one less the confidence at which its observed "
        "Wilson interval (its own counts) and the predicted one just touch; for any other, "
        "the observed value as one more run (Student t over the replications, sqrt(1 + 1/n) "
        "wide, two-sided). Billable seconds are whole seconds per session, rounded up: the "
        "observed value is taken give or take one second per session that ran, since the "
        "replay hangs up at the deployment's millisecond stamps and a request's latency later.",
        f"- Agreement is judged over the family of the {judged} metrics with a p, by Holm's "
        f"step-down procedure at {FAMILY_ALPHA:.0%} family-wise (the k-th smallest p against "
        f"{FAMILY_ALPHA:g} / ({judged} - k + 1)): a metric may lie outside its own 95 % "
        "interval by chance and still agree.",
        f"- Not observed against a deployment (n/a): {', '.join(UNOBSERVED)}.",
    ]
    lines += [f"- {note}" for note in result.notes]
    return "\n".join(lines) + "\n"
