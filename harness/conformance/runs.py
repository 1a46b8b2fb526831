"""Scripts that drive runs, their events, deletion and assets; the model judges every answer
(``runs``, ``idempotent_replay``, ``creates_answered_once``, ``scopes``, ``list_pages``,
``usage_accounting``, ``asset_content``).

A run's request body is not shown by the seed; the harness builds one from the model's own
``request_schemas`` (or takes ``--run-json``) and uses whatever the target accepted once
(``Context.run_plan``). Run status values and transitions are gaps too, so nothing here waits for
a named status: a run has finished when it shows ``completed_at``, deletion is retried while the
target answers 409 (the seed's "conflicts with run state").

Assets are reached the way a customer reaches them: the organization's list, and when it is
empty, a run of a model whose outputs include a medium (its output items name an ``asset_id``).
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import (
    LATE,
    Incomplete,
    NotApplicable,
    envelope_of,
    scenario_check,
)
from harness.conformance.context import Context
from harness.conformance.inputs import RunPlan
from harness.conformance.listing import walk
from harness.conformance.model import Verdict
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["an_asset", "usage_now"]

_DELETE_WITHIN = 120.0
_EVENTS_WITHIN = 60.0
_ASSET_WITHIN = 120.0
#: Target seconds a replay's effects are given to show (a charge is settled when a run ends).
_SETTLE_WITHIN = 30.0


def usage_now(ctx: Context) -> dict[str, Any]:
    """The current month's usage (a dict; the model judges the answer)."""
    exchange = ctx.target.request("GET", "/v1/usage", params={"period": "current_month"})
    body = expect_status(exchange, 200, what="GET /v1/usage?period=current_month")
    return body if isinstance(body, dict) else {}


def _keyed_body(ctx: Context, plan: RunPlan) -> dict[str, Any]:
    """The plan's body with a nonce in its metadata (``Context.metadata``), so a list shows
    which run a create made; the plain body when the target refuses metadata there."""
    body = {**dict(plan.body), "metadata": ctx.metadata()}
    probe = ctx.target.request("POST", plan.path, json_body=body, operation="createRun")
    if is_success(probe):
        return body
    return dict(plan.body)


@scenario_check("run_lifecycle", order=LATE - 20, budget=2 * _ASSET_WITHIN)
def run_lifecycle(ctx: Context) -> None:
    """A run created, retrieved, polled and listed; a keyed run create replayed twice once it
    has finished and been charged, its key reused with another body, then the list walked and
    the usage read again (the model judges that the replays answer the original run and make
    no second run, and the script that they take no second charge)."""
    plan = ctx.run_plan()
    run_id = str(ctx.first_run().get("id"))
    target = ctx.target
    for path in (f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/status"):
        target.request("GET", path)
    walk(target, "/v1/runs")
    body = _keyed_body(ctx, plan)
    headers = {"Idempotency-Key": f"conformance-run-{uuid.uuid4()}"}
    first = target.request("POST", plan.path, json_body=body, headers=headers)
    if first.status in (402, 429, 503):
        raise Incomplete(f"the target refused a second run ({first.status})")
    created = expect_status(first, what=f"POST {plan.path} with an Idempotency-Key")
    took = _SETTLE_WITHIN
    if isinstance(created, dict) and isinstance(created.get("id"), str):
        started = ctx.now()
        ctx.finished_run(created["id"], _ASSET_WITHIN)
        took = min(ctx.now() - started + 2.0, _SETTLE_WITHIN)
    ctx.quiesce_runs(_ASSET_WITHIN)
    before = usage_now(ctx)
    for _ in range(2):
        ctx.proves(target.request("POST", plan.path, json_body=body, headers=headers))
    other = {**body, "metadata": ctx.metadata(note="another body")}
    ctx.proves(target.request("POST", plan.path, json_body=other, headers=headers))
    # A run a replay made in secret is charged when it finishes: give it as long as the first.
    ctx.wait(took, "a replay's charge, if any, to settle")
    ctx.quiesce_runs(_ASSET_WITHIN)
    walk(target, "/v1/runs")
    ctx.judge_no_charge(before, usage_now(ctx), "two replays of a run create")


#: Where a deployment commonly puts the run cancel the seed names without a path: tried, and
#: judged only once the target shows it is there (it answers the owner's request other than 404).
CANCEL_PATH = "/v1/runs/{run_id}/cancel"


@scenario_check("run_cancel_probe", needs=("runs_read",), order=LATE - 15)
def run_cancel_probe(ctx: Context) -> None:
    """Cancelling needs runs:write (the seed, whose method and path it does not show): where
    ``POST /v1/runs/{id}/cancel`` answers an unrestricted key on a finished run (not 404 or
    405), a runs:read key is refused 403 api_key.scope_required."""
    from harness.conformance.model.access_rules import SCOPES

    run_id = str(ctx.first_run().get("id"))
    path = CANCEL_PATH.format(run_id=run_id)
    ctx.finished_run(run_id, _ASSET_WITHIN)
    owner = ctx.target.request("POST", path)
    if owner.status in (404, 405):
        raise NotApplicable(f"the target has no POST {CANCEL_PATH} (the seed shows no cancel path)")
    refused = ctx.target.request("POST", path, role="runs_read")
    ctx.proves(refused)
    error = envelope_of(refused) if refused.status >= 400 else None
    if (
        refused.status == 403
        and error is not None
        and error.get("code") == "api_key.scope_required"
    ):
        ctx.record(Verdict.passed(SCOPES, refused))
    else:
        ctx.record(Verdict.failed(
            SCOPES, refused,
            f"a runs:read key cancelling a run answered {refused.status}; cancelling needs "
            "runs:write: 403 api_key.scope_required",
        ))  # fmt: skip


@scenario_check("run_events", order=LATE)
def run_events(ctx: Context) -> None:
    """A run's events read at limits 1 and 500 once it has several, and at 0 and 501 (the model
    judges every page)."""
    run_id = str(ctx.first_run().get("id"))
    path = f"/v1/runs/{run_id}/events"
    ctx.poll(
        lambda: ctx.target.request("GET", path, params={"limit": SEED.run_events_page_max}).json(),
        lambda b: isinstance(b, dict) and len(b.get("data") or []) >= 2,
        within=_EVENTS_WITHIN,
        step=1.0,
        why="the run to record a few events",
    )
    for limit in (SEED.page_min, SEED.run_events_page_max, 0, SEED.run_events_page_max + 1):
        ctx.proves(ctx.target.request("GET", path, params={"limit": limit}))
    # A walk of a page at a time through next_cursor, as the conventions name the offset
    # (judged once the target shows that starting_after moves its pages: asked to start after
    # the first page's last event, it answers other events).
    first = ctx.target.request("GET", path, params={"limit": SEED.page_min}).json()
    events = first.get("data") if isinstance(first, dict) else None
    last = events[-1].get("sequence") if isinstance(events, list) and events else None
    if isinstance(last, int):
        ctx.target.request("GET", path, params={"limit": SEED.page_min, "starting_after": last})
    params: dict[str, Any] = {"limit": SEED.page_min}
    for _ in range(3):
        body = ctx.target.request("GET", path, params=params).json()
        cursor = body.get("next_cursor") if isinstance(body, dict) else None
        if cursor is None or not body.get("has_more"):
            break
        params = {"limit": SEED.page_min, "starting_after": cursor}


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


@scenario_check("run_deletion", order=LATE + 10, budget=_DELETE_WITHIN + _ASSET_WITHIN)
def run_deletion(ctx: Context) -> None:
    """The usage read, the first run deleted (202), then read, listed and deleted again, and
    the usage read again (the model judges the tombstone, that the run stays listed, and that
    the usage does not fall)."""
    run_id = str(ctx.first_run().get("id"))
    ctx.quiesce_runs(_ASSET_WITHIN)
    usage_now(ctx)
    exchange = _delete(ctx, run_id)
    if exchange.status == 403:
        raise Incomplete(
            "the target refuses to delete runs for this key (enterprise accounts only)",
            "--api-key (of an enterprise organization)",
        )
    if exchange.status in (402, 429):
        raise Incomplete(f"the target cannot delete a run now ({exchange.status})")
    ctx.proves(exchange)
    ctx.target.request("GET", f"/v1/runs/{run_id}")
    walk(ctx.target, "/v1/runs")
    usage_now(ctx)
    ctx.target.request("DELETE", f"/v1/runs/{run_id}")


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
                "--model (a model whose outputs include media)",
            )
        )
    value = ctx.cache["asset"]
    if isinstance(value, Incomplete):
        raise value
    assert isinstance(value, dict)
    return value


@scenario_check("asset_probe", budget=_ASSET_WITHIN + 30)
def asset_probe(ctx: Context) -> None:
    """An asset of the organization (listed, or made by a run of a model with media outputs),
    and its content downloaded (the model judges the content)."""
    asset = an_asset(ctx)
    content = ctx.target.request(
        "GET", f"/v1/assets/{asset['id']}/content", operation="getAssetContent"
    )
    ctx.proves(content)
    link = _only_link(content.json()) if is_success(content) else None
    if link is not None and ctx.model is not None:
        # The content behind a link the answer gives (the content's shape is a gap): fetched
        # as a customer's browser would, without the key.
        with httpx.Client(timeout=20.0) as client:
            fetched = client.get(link)
        if fetched.status_code == 200:
            for verdict in ctx.model.assets.downloaded(
                str(asset["id"]), len(fetched.content), content
            ):
                ctx.record(verdict)


def _only_link(body: Any) -> str | None:
    """The one absolute http(s) URL a JSON answer holds, if it holds exactly one."""
    if not isinstance(body, dict):
        return None
    links = [
        v for v in body.values() if isinstance(v, str) and v.startswith(("http://", "https://"))
    ]
    return links[0] if len(links) == 1 else None
