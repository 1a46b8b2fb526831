"""Benchmark: one organization's usage summary over a month of a large ledger.

Why: ``GET /v1/usage`` must not rescan every organization's history per call. This builds a
ledger of about ``1_000_000 * scale`` rows spread over many organizations within one calendar
month, then times the summary of one organization two ways in the same run:

- ``indexed``: ``Billing.usage`` (bisection into the organization's time-sorted rows);
- ``scan``: the naive baseline, a full pass over every row of the ledger keeping that
  organization's rows in the window, summarized by the same function.

It reports both times and their ratio. Nothing asserts on time; ``same_result`` says whether the
two ways agree.
"""

from __future__ import annotations

import gc
import random
import statistics
import time
from typing import Any

from sim.accounts import AccountRegistry
from sim.billing import Billing
from sim.billing.ledger import attribute
from sim.billing.usage import parse_window, summarize
from sim.config import QUALITIES
from sim.kernel import Kernel

__all__ = ["run"]

_SURFACES = ("api", "playground", "embed", "pipecat", "video_generation")
_MONTH_SECONDS = 31 * 86_400  # January of the default epoch


def _build(scale: float, seed: int) -> tuple[Kernel, Billing, list[str], float]:
    """A billing service whose ledger holds ~1e6*scale January rows; returns the build time."""
    rows = max(1_000, int(1_000_000 * scale))
    org_count = max(10, int(1_000 * scale))
    kernel = Kernel.create()
    billing = Billing(kernel, AccountRegistry(kernel.config, kernel.clock, kernel.ids))
    orgs = [f"org_bench{i:05d}" for i in range(org_count)]
    started = time.perf_counter()
    gc.disable()  # a million long-lived rows: generational GC passes would dominate the build
    for org in orgs:
        billing.open_account(org, "enterprise")
    rng = random.Random(seed)
    record = billing.ledger.append
    step = (_MONTH_SECONDS - 1) / rows
    for i in range(rows):
        org = orgs[rng.randrange(org_count)]
        surface = _SURFACES[rng.randrange(len(_SURFACES))]
        at = 1 + i * step
        if rng.random() < 0.7:  # a session's realtime charge
            seconds = rng.randrange(1, 600)
            record(
                "charge",
                org,
                at,
                seconds * 2,
                session_id=f"sess_b{i}",
                billable_seconds=seconds,
                attribution=attribute(
                    billing_surface=surface,
                    quality=QUALITIES[rng.randrange(len(QUALITIES))],
                    speech_billing_mode="customer_managed",
                    operation="session.realtime",
                    embed_id=f"emb_b{i % 7}" if surface == "embed" else None,
                ),
            )
        else:  # a run's settlement
            record(
                "settlement",
                org,
                at,
                rng.randrange(1, 500),
                run_id=f"run_b{i}",
                attribution=attribute(
                    model="sim/speech",
                    billing_surface=surface,
                    speech_billing_mode="customer_managed",
                    operation="run.sim/speech.synthesize",
                    pricing_version="bench",
                ),
            )
    gc.enable()
    gc.freeze()  # the rows live for the whole run; keep later collections from walking them
    kernel.clock.advance(_MONTH_SECONDS - 3_600)  # late January: the month is the current one
    return kernel, billing, orgs, time.perf_counter() - started


def _timed(repeats: int, call: Any) -> tuple[float, Any]:
    times: list[float] = []
    result: Any = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def run(scale: float = 1.0, *, seed: int = 0, repeats: int = 5) -> dict[str, Any]:
    """Build the ledger, time the indexed summary against a full scan, report both and the ratio."""
    kernel, billing, orgs, build_seconds = _build(scale, seed)
    org = orgs[len(orgs) // 2]
    kernel_clock = kernel.clock
    config = kernel.config.billing
    window = parse_window(kernel_clock, config, period="current_month", timezone="Europe/Berlin")

    def indexed() -> dict[str, Any]:
        return billing.usage(org, period="current_month", timezone="Europe/Berlin")

    ledger = billing.ledger
    org_code = ledger.orgs.code(org)

    def scan() -> dict[str, Any]:
        codes, times = ledger.org_codes, ledger.times
        rows = [
            row
            for row in range(len(ledger))
            if codes[row] == org_code and window.start <= times[row] < window.end
        ]
        rows.sort(key=lambda row: (times[row], row))
        return summarize(ledger, rows, window, kernel_clock, config)

    try:
        indexed_seconds, fast = _timed(repeats, indexed)
        scan_seconds, slow = _timed(max(1, repeats // 2), scan)
    finally:
        gc.unfreeze()  # hand the rows back to the collector once they are no longer timed
    return {
        "entries": len(billing.ledger),
        "organizations": len(orgs),
        "org_entries_in_window": len(ledger.window_rows(org, window.start, window.end)),
        "build_seconds": round(build_seconds, 3),
        "indexed_seconds": indexed_seconds,
        "scan_seconds": scan_seconds,
        "ratio_scan_over_indexed": scan_seconds / indexed_seconds if indexed_seconds else None,
        "same_result": fast == slow,
    }


if __name__ == "__main__":  # pragma: no cover
    import json
    import sys

    print(json.dumps(run(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0), indent=2))
