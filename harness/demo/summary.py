"""The scripted day's Markdown summary and the files it is written to (CSV, JSON).

Sessions by final status, the refusals with their codes and credits per organization: what a
reader checks first, in a table each.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pandas as pd

from harness.demo.day import DemoResult

__all__ = ["render_summary", "write_outputs"]


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    def cell(value: Any) -> str:
        return "" if value is None else str(value).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


#: The summary's tables of records: each column's header and the record's field shown in it.
_SESSION_COLUMNS = {
    "organization": "org",
    "session": "id",
    "quality": "quality",
    "status": "status",
    "end reason / error": "ended_by",
    "billable s": "billable_seconds",
}
_RUN_COLUMNS = {
    "organization": "org",
    "run": "id",
    "model": "model",
    "status": "status",
    "credits charged": "credits_charged",
    "deleted": "deleted",
}
_CREDIT_COLUMNS = {
    "organization": "org",
    "plan": "plan",
    "credits charged": "credits_charged",
    "billable s": "billable_seconds",
    "balance": "balance_credits",
    "quota status": "quota_status",
}


def _records_table(columns: Mapping[str, str], records: Iterable[Mapping[str, Any]]) -> list[str]:
    """``records`` as a table: a column per header of ``columns``, showing the field it names."""
    fields = list(columns.values())
    return _table(list(columns), [[record[field] for field in fields] for record in records])


def render_summary(result: DemoResult) -> str:
    """The Markdown summary printed to the terminal and written as ``summary.md``."""
    lines = [f"# avatar-sim demo: one simulated day (seed {result.seed})", ""]
    lines += ["## What happened", ""]
    lines += [f"- `{step.at}` **{step.org}** {step.what}" for step in result.steps]

    lines += ["", "## Sessions by final status", ""]
    by_status = Counter(s["status"] for s in result.sessions)
    lines += _table(["status", "sessions"], [[k, by_status[k]] for k in sorted(by_status)])
    lines += [""]
    lines += _records_table(
        _SESSION_COLUMNS,
        [
            {**s, "ended_by": s["end_reason"] or s["error_code"]}
            for s in result.sessions
            if s["quality"] != "mock"
        ],
    )
    mock = sum(1 for s in result.sessions if s["quality"] == "mock")
    lines += ["", f"({mock} mock-quality sessions of the retry loop are left out of the table.)"]

    lines += ["", "## Refusals and failures", ""]
    lines += _table(
        ["time", "organization", "request", "status", "code", "Retry-After"],
        [
            [r.at, r.org, f"{r.method} {r.path}", r.status, r.code, r.retry_after]
            for r in result.refusals
        ],
    )
    failed = [s for s in result.sessions if s["status"] == "failed"]
    lines += [""]
    lines += [f"- session {s['id']} of {s['org']} failed with `{s['error_code']}`" for s in failed]
    codes = Counter([r.code for r in result.refusals] + [s["error_code"] for s in failed])
    lines += ["", "Codes: " + ", ".join(f"`{c}` x{n}" for c, n in sorted(codes.items()))]

    lines += ["", "## Runs", ""]
    lines += _records_table(_RUN_COLUMNS, result.runs)

    lines += ["", "## Credits per organization (GET /v1/usage, GET /v1/billing/quota)", ""]
    lines += _records_table(_CREDIT_COLUMNS, result.credits)
    return "\n".join(lines) + "\n"


def write_outputs(result: DemoResult, out: Path) -> list[Path]:
    """Write ``summary.md``, one CSV per record kind and ``records.json``; return the paths."""
    out.mkdir(parents=True, exist_ok=True)
    frames = {
        "requests": pd.DataFrame([asdict(r) for r in result.requests]),
        "sessions": pd.DataFrame(result.sessions),
        "runs": pd.DataFrame(result.runs),
        "credits": pd.DataFrame(result.credits),
    }
    written = []
    summary = out / "summary.md"
    summary.write_text(render_summary(result), encoding="utf-8")
    written.append(summary)
    for name, frame in frames.items():
        path = out / f"{name}.csv"
        frame.to_csv(path, index=False, lineterminator="\n")
        written.append(path)
    records = {
        "seed": result.seed,
        "steps": [asdict(s) for s in result.steps],
        "requests": [asdict(r) for r in result.requests],
        "sessions": result.sessions,
        "runs": result.runs,
        "credits": result.credits,
    }
    path = out / "records.json"
    path.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    written.append(path)
    return written
