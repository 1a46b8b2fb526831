"""Scenario checks of runs, their events, deletion and assets.

A run's request body is not shown by the seed; the harness builds one from the model's own
``request_schemas`` (or takes ``--run-json``) and uses whatever the target accepted once
(``Context.run_plan``). Run status values and transitions are gaps too, so nothing here waits for
a named status: a run has finished when it shows ``completed_at``, deletion is retried while the
target answers 409 (the seed's "conflicts with run state"), and a check that cannot get a run
says what would give it one.

Assets are reached the way a customer reaches them: the organization's list, and when it is
empty, a run of a model whose outputs include a medium (its output items name an ``asset_id``).
"""

from __future__ import annotations

import uuid
from typing import Any

from harness.conformance.checks import LATE, CheckFailed, Incomplete, envelope_of, scenario_check
from harness.conformance.context import Context, expect_status, is_success, refusal_type
from harness.conformance.scenarios import expect_scope_required, judge_page_size, walk
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__: list[str] = []

_DELETE_WITHIN = 120.0
_EVENTS_WITHIN = 60.0
_ASSET_WITHIN = 120.0


@scenario_check("run_lifecycle", "EP-RUN-1", "CONV-7", "LIM-5")
def run_lifecycle(ctx: Context) -> None:
    """A created run is retrieved, polled and listed under its id, for its model; the same
    Idempotency-Key and body replay it, and the same key with another body is 409 conflict."""
    plan = ctx.run_plan()
    run = ctx.first_run()
    run_id = str(run.get("id"))
    if run.get("model") != plan.model:
        raise CheckFailed(f"a run of {plan.model} answered model {run.get('model')!r}")
    target = ctx.target
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/status"):
        exchange = target.request("GET", path)
        body = expect_status(exchange, what=f"GET {path}")
        if not isinstance(body, dict) or body.get("id") != run_id:
            raise CheckFailed(f"GET {path} answered another resource", exchange)
    if run_id not in walk(target, "/v1/runs"):
        raise CheckFailed(f"the created run {run_id} is not in GET /v1/runs")
    headers = {"Idempotency-Key": f"conformance-run-{uuid.uuid4()}"}
    first = target.request(
        "POST", plan.path, json_body=dict(plan.body), headers=headers, operation="createRun"
    )
    if first.status in (402, 429, 503):
        raise Incomplete(f"the target refused a second run ({first.status})")
    created = expect_status(first, what=f"POST {plan.path} with an Idempotency-Key")
    again = target.request(
        "POST", plan.path, json_body=dict(plan.body), headers=headers, operation="createRun"
    )
    replayed = expect_status(again, first.status, what="the replay of an idempotent run create")
    if not isinstance(replayed, dict) or replayed.get("id") != created.get("id"):
        raise CheckFailed("the replay of an idempotent run create answered another run", again)
    other = {**dict(plan.body), "metadata": {"conformance": "another body"}}
    conflict = target.request(
        "POST", plan.path, json_body=other, headers=headers, operation="createRun"
    )
    if conflict.status != 409 or refusal_type(conflict) != "conflict":
        raise CheckFailed(
            f"the same Idempotency-Key with another run body answered {conflict.status} "
            f"{refusal_type(conflict)!r}, not 409 conflict",
            conflict,
        )
    ctx.proves(conflict)


@scenario_check("run_events", "EP-RUN-2", "RES-RUN-4", order=LATE)
def run_events(ctx: Context) -> None:
    """A run's events answer limits 1 and 500 with an integer next_cursor, in sequence order,
    and refuse limits 0 and 501."""
    run_id = str(ctx.first_run().get("id"))
    path = f"/v1/runs/{run_id}/events"

    def page() -> Any:
        params = {"limit": SEED.run_events_page_max}
        return ctx.target.request("GET", path, params=params).json()

    # A run that has progressed shows several events to order (it had the run so far to do so).
    ctx.poll(
        page,
        lambda b: isinstance(b, dict) and len(b.get("data") or []) >= 2,
        within=_EVENTS_WITHIN,
        step=1.0,
        why="the run to record a few events",
    )
    for limit in (SEED.page_min, SEED.run_events_page_max):
        exchange = ctx.target.request("GET", path, params={"limit": limit})
        body = expect_status(exchange, 200, what=f"GET {path}?limit={limit}")
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) > limit:
            raise CheckFailed(f"GET {path}?limit={limit} answered {data!r:.200}", exchange)
        cursor = body.get("next_cursor")
        if body.get("has_more") and (not isinstance(cursor, int) or isinstance(cursor, bool)):
            raise CheckFailed(f"run events' next_cursor is {cursor!r}, not an integer", exchange)
    for limit in (SEED.page_min - 1, SEED.run_events_page_max + 1):
        exchange = ctx.target.request("GET", path, params={"limit": limit})
        judge_page_size(
            exchange, path, limit, SEED.page_min, SEED.run_events_page_max, f"limit {limit}"
        )
        ctx.proves(exchange)


def _credits_charged(ctx: Context) -> Any:
    exchange = ctx.target.request("GET", "/v1/usage", params={"period": "current_month"})
    body = expect_status(exchange, 200, what="GET /v1/usage?period=current_month")
    return body.get("credits_charged") if isinstance(body, dict) else None


def _delete(ctx: Context, run_id: str) -> Exchange:
    path = f"/v1/runs/{run_id}"

    def attempt() -> Exchange:
        return ctx.target.request("DELETE", path, operation="deleteRun")

    exchange = attempt()
    if exchange.status == 409:
        exchange = ctx.poll(
            attempt,
            lambda e: e.status != 409,
            within=_DELETE_WITHIN,
            step=1.0,
            why="the run to finish before it can be deleted",
        )
    return exchange


#: The refusals the seed lists for a run deletion (EP-RUN-3), and 404 for a run the key cannot
#: see.
_DELETE_REFUSALS = (402, 403, 404, 409, 422, 429)


def _judge_delete_refusal(exchange: Exchange, what: str) -> None:
    if exchange.status not in _DELETE_REFUSALS or envelope_of(exchange) is None:
        raise CheckFailed(
            f"{what} answered {exchange.status}; the seed's refusals are "
            f"{', '.join(map(str, _DELETE_REFUSALS))} with the envelope",
            exchange,
        )


@scenario_check("run_deletion", "RUN-DEL-1", "EP-RUN-3", order=LATE, budget=_DELETE_WITHIN + 30)
def run_deletion(ctx: Context) -> None:
    """A key without runs:write may not delete (403 api_key.scope_required, when a runs:read
    key is given); DELETE answers 202 with a deletion for the run; the run stays listable with
    empty outputs, the credits charged in the period do not go down, and a second DELETE answers
    202 again or one of the seed's refusals."""
    target = ctx.target
    run_id = str(ctx.first_run().get("id"))
    path = f"/v1/runs/{run_id}"
    if target.credentials.runs_read is not None:
        refused = target.request("DELETE", path, role="runs_read", operation="deleteRun")
        expect_scope_required(refused, "a runs:read key deleting a run")
    charged = _credits_charged(ctx)
    exchange = _delete(ctx, run_id)
    if exchange.status == 403:
        _judge_delete_refusal(exchange, f"DELETE {path}")
        raise Incomplete(
            "the target refuses to delete runs for this key (enterprise accounts only)",
            "--api-key (of an enterprise organization)",
        )
    if exchange.status in (402, 429):
        _judge_delete_refusal(exchange, f"DELETE {path}")
        raise Incomplete(f"the target cannot delete a run now ({exchange.status})")
    body = expect_status(exchange, 202, what=f"DELETE {path}")
    if not isinstance(body, dict) or body.get("run_id") != run_id:
        raise CheckFailed(f"the deletion names run {body.get('run_id')!r}", exchange)
    if run_id not in walk(target, "/v1/runs"):
        raise CheckFailed(f"the deleted run {run_id} is no longer listed")
    after = target.request("GET", path, operation="retrieveRun")
    tombstone = expect_status(after, what=f"GET {path} after its deletion")
    if not isinstance(tombstone, dict) or tombstone.get("outputs") not in ([], None):
        raise CheckFailed("the deleted run still has outputs", after)
    later = _credits_charged(ctx)
    if isinstance(charged, int | float) and isinstance(later, int | float) and later < charged:
        raise CheckFailed(f"credits charged fell from {charged} to {later} after a deletion")
    again = target.request("DELETE", path, operation="deleteRun")
    if not is_success(again):
        _judge_delete_refusal(again, f"a second DELETE {path}")
    ctx.proves(exchange)


def _assets(ctx: Context) -> list[dict[str, Any]]:
    exchange = ctx.target.request("GET", "/v1/assets", params={"limit": SEED.page_max})
    body = expect_status(exchange, 200, what="GET /v1/assets")
    return [
        a
        for a in (body.get("data") or [] if isinstance(body, dict) else [])
        if isinstance(a, dict) and a.get("deleted_at") is None and a.get("id")
    ]


def _make_asset(ctx: Context) -> None:
    """Run a model whose outputs include a medium until one of its outputs names an asset."""
    tried = 0
    for plan in ctx.candidates(media_first=True):
        if tried >= 4:
            break
        tried += 1
        exchange = ctx.target.request(
            "POST", plan.path, json_body=dict(plan.body), operation="createRun"
        )
        run = exchange.json() if is_success(exchange) else None
        if not isinstance(run, dict) or not isinstance(run.get("id"), str):
            continue
        outputs = ctx.finished_run(run["id"], _ASSET_WITHIN).get("outputs") or []
        if any(isinstance(o, dict) and o.get("asset_id") for o in outputs):
            return


def an_asset(ctx: Context) -> dict[str, Any]:
    """An asset of the organization: one it lists, else one a run makes."""
    if "asset" not in ctx.cache:
        assets = _assets(ctx)
        if not assets:
            _make_asset(ctx)
            assets = _assets(ctx)
        ctx.cache["asset"] = (
            assets[0]
            if assets
            else Incomplete(
                "the organization lists no asset and no run of a listed model made one",
                "--model and --run-json (a model whose outputs include an asset)",
            )
        )
    value = ctx.cache["asset"]
    if isinstance(value, Incomplete):
        raise value
    assert isinstance(value, dict)
    return value


@scenario_check("asset_content", "EP-ASSET-1", budget=_ASSET_WITHIN + 30)
def asset_content(ctx: Context) -> None:
    """The organization has an asset (it lists one, or a run of a model with media outputs
    makes one), and its content can be downloaded (GET /v1/assets/{id}/content, 2xx)."""
    asset = an_asset(ctx)
    exchange = ctx.target.request("GET", "/v1/assets", params={"limit": SEED.page_max})
    ctx.proves(exchange)
    content = ctx.target.request(
        "GET", f"/v1/assets/{asset['id']}/content", operation="getAssetContent"
    )
    if not is_success(content):
        raise CheckFailed(f"an asset the organization lists answered {content.status}", content)
    if not content.body:
        raise CheckFailed("an asset's content is empty", content)
    ctx.proves(content)
