"""Scenario checks of usage and quota: the window parameters the seed fixes, and the quota read.

The usage window is either ``period`` or the ``period_start`` + ``period_end`` pair, never both,
never half a pair. The pair the harness sends is the window the target itself answered for
``current_month``, so it is valid on any deployment whatever its clock says. The time-zone
parameter's name is a gap, so it is not sent.

``by_model`` leaves out charges not attributed to a model and those of internal models, so it need
not add up to ``credits_charged``, and which models are internal is not shown. What it must do is
attribute every charge of a model it does name: once by_model names a model, a further charged run
of that model raises the model's slice by that charge (its whole credits). The check
runs models from the catalog until one shows up in by_model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from harness.conformance.checks import LATE, CheckFailed, Incomplete, scenario_check
from harness.conformance.context import Context, expect_status
from harness.conformance.scenarios import expect_refused

_SETTLED_WITHIN = 120.0

__all__: list[str] = []


@scenario_check("billing_reads", "EP-USAGE-1", "EP-BILL-1")
def billing_reads(ctx: Context) -> None:
    """The quota answers 200; usage answers each named period and the explicit pair, and
    refuses half a pair and a period given with the pair."""
    target = ctx.target
    expect_status(target.request("GET", "/v1/billing/quota"), 200, what="GET /v1/billing/quota")
    window: dict[str, str] = {}
    for period in ("current_month", "previous_month"):
        exchange = target.request("GET", "/v1/usage", params={"period": period})
        body = expect_status(exchange, 200, what=f"GET /v1/usage?period={period}")
        if period == "current_month" and isinstance(body, dict):
            window = {
                k: body[k] for k in ("period_start", "period_end") if isinstance(body.get(k), str)
            }
    if len(window) != 2:
        raise CheckFailed("the current_month usage names no period_start and period_end")
    exchange = target.request("GET", "/v1/usage", params=window)
    expect_status(exchange, 200, what="GET /v1/usage with period_start and period_end")
    for name in ("period_start", "period_end"):
        alone = target.request("GET", "/v1/usage", params={name: window[name]})
        expect_refused(alone, f"GET /v1/usage with {name} alone")
    both = target.request("GET", "/v1/usage", params={"period": "current_month", **window})
    expect_refused(both, "GET /v1/usage with period and the explicit pair")


@scenario_check("usage_by_model", "RES-USAGE-2", order=LATE, budget=6 * _SETTLED_WITHIN)
def usage_by_model(ctx: Context) -> None:
    """A charged run of a model that by_model names raises that model's slice by its charge;
    by_model never adds up to more than credits_charged (usage_shape)."""
    tried: list[str] = []
    for plan in ctx.candidates():
        if plan.model in tried:
            continue
        if len(tried) >= _MODELS_TRIED:
            break
        tried.append(plan.model)
        charged = _charged_run(ctx, plan.path, plan.body)
        if charged is None:
            continue
        before = _slice(_usage(ctx), plan.model)
        if before is None:
            continue  # not named: an internal model, or its charge not there yet
        again = _charged_run(ctx, plan.path, plan.body)
        if again is None:
            raise Incomplete(f"a second run of {plan.model} was not charged")
        wanted = before + math.floor(again)  # usage counts whole credits
        usage = ctx.poll(
            lambda: _usage(ctx),
            _reaches(plan.model, wanted),
            within=_SETTLED_WITHIN,
            step=5.0,
            why="a run's charge to reach the usage summary",
        )
        if (_slice(usage, plan.model) or 0.0) < wanted:
            raise CheckFailed(
                f"by_model gave {plan.model} {before} credits; a further run of it was charged "
                f"{again}, but by_model then gave {_slice(usage, plan.model)}",
                ctx.proof,
            )
        return
    raise Incomplete(
        f"no charged run of {', '.join(tried) or 'any listed model'} showed up in by_model "
        "(the seed lets internal models stay out of it)",
        "--model (a model that is not internal)",
    )


_MODELS_TRIED = 3


def _reaches(model: str, wanted: float) -> Callable[[Any], bool]:
    return lambda usage: (_slice(usage, model) or 0.0) >= wanted


def _charged_run(ctx: Context, path: str, body: Any) -> float | None:
    """Create a run and wait for it to finish; its charge, or ``None`` when it had none."""
    exchange = ctx.target.request("POST", path, json_body=dict(body), operation="createRun")
    run = exchange.json() if 200 <= exchange.status < 300 else None
    if not isinstance(run, dict) or not isinstance(run.get("id"), str):
        return None
    finished = ctx.finished_run(run["id"], _SETTLED_WITHIN)
    credits = finished.get("credits")
    charged = credits.get("charged") if isinstance(credits, dict) else None
    return float(charged) if isinstance(charged, int | float) and charged > 0 else None


def _usage(ctx: Context) -> Any:
    exchange = ctx.target.request("GET", "/v1/usage", params={"period": "current_month"})
    ctx.proves(exchange)
    return expect_status(exchange, 200, what="GET /v1/usage?period=current_month")


def _slice(usage: Any, model: str) -> float | None:
    by_model = usage.get("by_model") if isinstance(usage, dict) else None
    value = by_model.get(model) if isinstance(by_model, dict) else None
    return float(value) if isinstance(value, int | float) else None
