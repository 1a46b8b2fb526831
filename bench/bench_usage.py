"""Benchmark: a 30-day ``GET /v1/usage`` at 1,000 and at 100,000 of the organization's rows.

Why: a usage summary must cost what its window costs to answer (its groups and days), not what
the organization's history in it costs (``sim.billing.rollups``); a busy organization of a
served simulator writes tens of thousands of rows a month and is asked for its usage again and
again. Two organizations share one ledger, one with about ``1,000 * scale`` and one with about
``100,000 * scale`` usage rows over January (session charges over every surface and quality, a
few embeds, run settlements), and each summary of the current month in a timezone with daylight
saving time (``Billing.usage``, what ``GET /v1/usage`` calls) is timed: the first one (which
folds the rows into the rollup) and the median of the next ``repeats``.

Goal (judged here, never in tests): the large organization's summary within 2x of the small
one's, measured side by side in the same process (PERF-5). ``same_result`` says whether the
summary equals the one a fresh ledger of the same rows gives on its first read.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from sim.accounts import AccountRegistry
from sim.billing import Billing
from sim.billing.rules import attribute
from sim.config import QUALITIES
from sim.kernel import Kernel

__all__ = ["RATIO_GOAL", "run"]

RATIO_GOAL = 2.0
_SURFACES = ("api", "playground", "embed", "pipecat", "video_generation")
_MONTH_SECONDS = 31 * 86_400  # January of the default epoch
_ZONE = "Europe/Berlin"


def _build(sizes: dict[str, int], seed: int) -> tuple[Kernel, Billing]:
    """A billing service whose organizations have ``sizes[org]`` usage rows each in January."""
    kernel = Kernel.create()
    billing = Billing(kernel, AccountRegistry(kernel.config, kernel.clock, kernel.ids))
    rng = random.Random(seed)
    record = billing.ledger.append
    rows = [(org, i / size) for org, size in sizes.items() for i in range(size)]
    rows.sort(key=lambda pair: pair[1])  # the organizations' rows interleaved, in time order
    for org in sizes:
        billing.open_account(org, "enterprise")
    for number, (org, share) in enumerate(rows):
        surface = _SURFACES[rng.randrange(len(_SURFACES))]
        at = 1 + share * (_MONTH_SECONDS - 7_200)
        if rng.random() < 0.7:  # a session's realtime charge
            seconds = rng.randrange(1, 600)
            record(
                "charge",
                org,
                at,
                seconds * 2,
                session_id=f"sess_b{number}",
                billable_seconds=seconds,
                attribution=attribute(
                    billing_surface=surface,
                    quality=QUALITIES[rng.randrange(len(QUALITIES))],
                    speech_billing_mode="customer_managed",
                    operation="session.realtime",
                    embed_id=f"emb_b{number % 7}" if surface == "embed" else None,
                    avatar_id="av_b" if surface == "embed" else None,
                ),
            )
        else:  # a run's settlement
            record(
                "settlement",
                org,
                at,
                rng.randrange(1, 500),
                run_id=f"run_b{number}",
                attribution=attribute(
                    model="sim/speech",
                    billing_surface=surface,
                    speech_billing_mode="customer_managed",
                    operation="run.sim/speech.synthesize",
                    pricing_version="bench",
                ),
            )
    kernel.clock.advance(_MONTH_SECONDS - 3_600)  # late January: the month is the current one
    return kernel, billing


def _timed(repeats: int, call: Callable[[], Any]) -> tuple[float, float, Any]:
    """The first call's seconds, the median of the next ``repeats``, and the last answer."""
    started = time.perf_counter()
    result = call()
    first = time.perf_counter() - started
    times: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return first, statistics.median(times), result


def run(scale: float = 1.0, *, seed: int = 0, repeats: int = 50) -> dict[str, Any]:
    """Time the small and the large organization's summaries side by side; judge the ratio."""
    sizes = {
        "org_small": max(100, int(1_000 * scale)),
        "org_large": max(1_000, int(100_000 * scale)),
    }
    started = time.perf_counter()
    _kernel, billing = _build(sizes, seed)
    build_seconds = time.perf_counter() - started
    report: dict[str, Any] = {"rows": len(billing.ledger), "build_seconds": round(build_seconds, 3)}
    answers = {}
    for org, size in sizes.items():

        def usage(org: str = org) -> dict[str, Any]:
            return billing.usage(org, period="current_month", timezone=_ZONE)

        first, median, answers[org] = _timed(repeats, usage)
        report[org] = {
            "usage_rows": size,
            "first_seconds": round(first, 6),
            "median_seconds": round(median, 6),
        }
    _fresh_kernel, fresh = _build(sizes, seed)
    report["same_result"] = all(
        fresh.usage(org, period="current_month", timezone=_ZONE) == answers[org] for org in sizes
    )
    ratio = report["org_large"]["median_seconds"] / report["org_small"]["median_seconds"]
    report["ratio_large_over_small"] = round(ratio, 3)
    report["verdicts"] = [
        {
            "figure": (
                f"30-day usage at {sizes['org_large']:,} rows over {sizes['org_small']:,}: "
                f"{ratio:.2f}x (medians of {repeats})"
            ),
            "goal": f"<= {RATIO_GOAL}x",
            "met": ratio <= RATIO_GOAL,
        }
    ]
    return report


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    print(json.dumps(run(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0), indent=2))
