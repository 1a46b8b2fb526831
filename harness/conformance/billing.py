"""Scripts that drive usage and quota; the model judges every answer (``usage_window``,
``usage_accounting``).

``billing_reads`` asks for every window form: the two named periods, the explicit pair (the
current month's own bounds, valid whatever the target's clock says), half a pair, a period with
the pair, an unknown period, and a window far in the future. The time-zone parameter's name is a
gap, so it is not sent.

``usage_probe`` makes usage between two reads of one window: a session that runs a few
seconds (billable seconds at its tier) and a run of each listed model (credits under
``by_model``, keyed by the model id: a model a customer runs from the catalog is not an internal
one), then holds the second read to at least what was made once it has had time to settle,
and its ``sessions`` to no more than the sessions that billed (a session canceled while queued
is made between the reads too; the organization must have no other traffic meanwhile).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import LATE, scenario_check
from harness.conformance.context import Context
from harness.conformance.model.usage_book import FAR_FUTURE, Expected
from harness.conformance.runs import usage_now
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange
from harness.conformance.watch import TERMINAL

__all__: list[str] = []

_SETTLED_WITHIN = 120.0
#: Target seconds between two reads of usage that must agree before it counts as settled.
_STILL_STEP = 5.0
#: The session that bills a few seconds (target seconds of max duration).
_BILLED_SECONDS = 5
_MODELS_RUN = 3


@scenario_check("billing_reads", "EP-BILL-1")
def billing_reads(ctx: Context) -> None:
    """The quota answers 200; usage is asked for each named period, the explicit pair, half a
    pair, a period with the pair, an unknown period and a far-future window (the model judges
    each)."""
    target = ctx.target
    expect_status(target.request("GET", "/v1/billing/quota"), 200, what="GET /v1/billing/quota")
    target.request("GET", "/v1/usage", params={"period": "previous_month"})
    current = usage_now(ctx)
    window = {
        k: current[k] for k in ("period_start", "period_end") if isinstance(current.get(k), str)
    }
    for params in (
        window,
        {"period_start": window.get("period_start", FAR_FUTURE["period_start"])},
        {"period_end": window.get("period_end", FAR_FUTURE["period_end"])},
        {"period": "current_month", **window},
        {"period": "last_week"},
        FAR_FUTURE,
    ):
        ctx.proves(target.request("GET", "/v1/usage", params=params))


def _window(usage: Mapping[str, Any]) -> dict[str, str]:
    return {
        k: str(usage[k]) for k in ("period_start", "period_end") if isinstance(usage.get(k), str)
    }


@scenario_check("usage_probe", order=LATE + 20, creates=2, budget=4 * _SETTLED_WITHIN)
def usage_probe(ctx: Context) -> None:
    """Usage read, then a session billed a few seconds and a run of each listed model (up to
    three), then usage read until it accounts for them or two minutes pass: the model holds it
    to at least what was made, by quality and by model, and reads the far-future window again."""
    ctx.settle()
    ctx.quiesce_runs(_SETTLED_WITHIN)
    window = _window(usage_now(ctx))
    target = ctx.target

    def read() -> Exchange:
        params = window or {"period": "current_month"}
        return target.request("GET", "/v1/usage", params=params, operation="getUsage")

    # Usage lags what happened: start from a window that has stopped moving.
    before = read().json()
    for _ in range(int(_SETTLED_WITHIN // _STILL_STEP)):
        ctx.wait(_STILL_STEP, "usage to stop moving before the window is read")
        now = read().json()
        if now == before:
            break
        before = now
    seconds, billed = _billed_session(ctx)
    unbilled = _unbilled_session(ctx)
    made = Expected(seconds, billed, _charged_runs(ctx), unbilled)
    assert ctx.model is not None
    book = ctx.model.usage
    after = ctx.poll(
        read,
        lambda e: book.expect(before, e.json(), made, e).failure is None,
        within=_SETTLED_WITHIN,
        step=5.0,
        why="usage to account for what the run made",
    )
    ctx.record(book.expect(before, after.json(), made, after))
    ctx.proves(target.request("GET", "/v1/usage", params=FAR_FUTURE))


def _billed_session(ctx: Context) -> tuple[dict[str, int], int]:
    """A session that runs until its max duration ends it: its billable seconds by quality,
    and 1 (or nothing, when it billed none)."""
    _, session = ctx.new_session(
        "billed", idle_timeout_seconds=SEED.idle_max, max_duration_seconds=_BILLED_SECONDS
    )
    final = ctx.poll(
        lambda: ctx.get_session(str(session["id"]))[1],
        lambda s: s.get("status") in TERMINAL,
        within=_SETTLED_WITHIN,
        step=1.0,
        why="a short session to end and bill",
    )
    usage = final.get("usage")
    billed = usage.get("billable_seconds") if isinstance(usage, dict) else None
    if isinstance(billed, int) and not isinstance(billed, bool) and billed > 0:
        return {str(final.get("quality")): billed}, 1
    return {}, 0


def _unbilled_session(ctx: Context) -> int:
    """A session ended while still queued (canceled): it contributes no usage. 1, or 0 when
    it ran all the same before the end arrived."""
    _, session = ctx.new_session("unbilled")
    answer = ctx.end(str(session["id"])).json()
    return 1 if isinstance(answer, dict) and answer.get("status") == "canceled" else 0


def _charged_runs(ctx: Context) -> dict[str, float]:
    """A run of each listed model (up to three), finished: the credits charged by model."""
    charges: dict[str, float] = {}
    ran: set[str] = set()
    for plan in ctx.candidates():
        if plan.model in ran or len(ran) >= _MODELS_RUN:
            continue
        ran.add(plan.model)
        exchange = ctx.target.request(
            "POST", plan.path, json_body=dict(plan.body), operation="createRun"
        )
        run = exchange.json() if is_success(exchange) else None
        if not isinstance(run, dict) or not isinstance(run.get("id"), str):
            continue
        credits = ctx.finished_run(run["id"], _SETTLED_WITHIN).get("credits")
        charged = credits.get("charged") if isinstance(credits, dict) else None
        if isinstance(charged, int | float) and not isinstance(charged, bool) and charged > 0:
            charges[plan.model] = charges.get(plan.model, 0.0) + float(charged)
    return charges
