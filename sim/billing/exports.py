"""What billing hands out as tables (``sim.columns.Table``): quotas and usage summaries.

The ledger exports its own rows (``LedgerRows.export``); these two are answers of the API as the
service computes them (``GET /v1/quota``, ``GET /v1/usage``), one row per organization (and
timezone, and local day and billing surface), so a collector reads them like any other store's
records and never the resources' shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sim.columns import Column, Table

__all__ = ["QUOTA_COLUMNS", "USAGE_COLUMNS", "quota_table", "usage_tables"]

#: The quota fields a table keeps (ints), then ``can_start_session`` (bool).
QUOTA_COLUMNS: tuple[str, ...] = (
    "balance_credits",
    "included_credits_limit",
    "low_balance_threshold_credits",
)
#: The usage summary's totals a table keeps (ints).
USAGE_COLUMNS: tuple[str, ...] = ("billable_seconds", "sessions", "credits_charged")


def quota_table(quotas: Sequence[tuple[str, dict[str, Any]]]) -> Table:
    """``(org_id, Quota resource)`` pairs as rows: ``org_id`` (text), each of
    ``QUOTA_COLUMNS`` (ints) and ``can_start_session`` (bool)."""
    return Table(
        len(quotas),
        {
            "org_id": Column("text", [org_id for org_id, _ in quotas]),
            **{
                name: Column("int", [int(quota[name]) for _, quota in quotas])
                for name in QUOTA_COLUMNS
            },
            "can_start_session": Column(
                "bool", [bool(quota["can_start_session"]) for _, quota in quotas]
            ),
        },
    )


def usage_tables(answers: Sequence[tuple[str, str, dict[str, Any]]]) -> tuple[Table, Table]:
    """``(org_id, timezone, usage summary)`` triples as two tables: one row per answer
    (``org_id``, ``timezone``, each of ``USAGE_COLUMNS``), and one per local day and billing
    surface of its ``daily_credits_by_billing_surface`` (``org_id``, ``timezone``, ``day``,
    ``surface``, ``credits``), in the answers' order."""
    daily: dict[str, list[Any]] = {
        name: [] for name in ("org_id", "timezone", "day", "surface", "credits")
    }
    for org_id, timezone, body in answers:
        for day, surfaces in body["daily_credits_by_billing_surface"].items():
            for surface, credits in surfaces.items():
                for name, value in zip(
                    daily, (org_id, timezone, day, surface, int(credits)), strict=True
                ):
                    daily[name].append(value)
    summary = Table(
        len(answers),
        {
            "org_id": Column("text", [org_id for org_id, _, _ in answers]),
            "timezone": Column("text", [timezone for _, timezone, _ in answers]),
            **{
                name: Column("int", [int(body[name]) for _, _, body in answers])
                for name in USAGE_COLUMNS
            },
        },
    )
    texts = ("org_id", "timezone", "day", "surface")
    by_day = Table(
        len(daily["credits"]),
        {
            **{name: Column("text", daily[name]) for name in texts},
            "credits": Column("int", daily["credits"]),
        },
    )
    return summary, by_day
