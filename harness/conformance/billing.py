"""Scenario checks of usage and quota: the window parameters the seed fixes, and the quota read.

The usage window is either ``period`` or the ``period_start`` + ``period_end`` pair, never both,
never half a pair. The pair the harness sends is the window the target itself answered for
``current_month``, so it is valid on any deployment whatever its clock says. The time-zone
parameter's name is a gap, so it is not sent.
"""

from __future__ import annotations

from harness.conformance.checks import CheckFailed, scenario_check
from harness.conformance.context import Context, expect_status
from harness.conformance.scenarios import expect_refused

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
