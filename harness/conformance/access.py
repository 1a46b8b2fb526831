"""Scripts that drive keys, scopes, organizations and idempotency keys to where the seed's rules
bite; the model judges every answer (``authentication``, ``scopes``, ``tenant_isolation``,
``idempotent_replay``, ``creates_answered_once``, ``session_create``).

A script that judges something itself does so only where no model rule states it: the public
endpoints answer JSON objects (EP-STATUS-1, EP-BILL-1) and the key's form (AUTH-1).
"""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import (
    LATE,
    BeyondTime,
    CheckFailed,
    NotChecked,
    scenario_check,
)
from harness.conformance.context import Context
from harness.conformance.listing import walk
from harness.conformance.model.keys import FABRICATED_KEY
from harness.conformance.seed import SEED

__all__: list[str] = []

#: Operations that need a key, one request each (the model holds them all to 401).
_PROTECTED = (
    ("GET", "/v1/models"),
    ("GET", "/v1/sessions"),
    ("GET", "/v1/avatars"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/assets"),
    ("GET", "/v1/usage"),
    ("GET", "/v1/billing/quota"),
    ("POST", "/v1/sessions"),
)


@scenario_check("public_endpoints", "EP-STATUS-1", "EP-BILL-1")
def public_endpoints(ctx: Context) -> None:
    """GET /v1/status and /v1/billing/plans answer a JSON object without a key; every other
    operation is asked without one (the model holds it to 401)."""
    for path in ("/v1/status", "/v1/billing/plans"):
        exchange = ctx.target.request("GET", path, role=None)
        body = expect_status(exchange, what=f"GET {path} without a key")
        if not isinstance(body, dict):
            raise CheckFailed(f"GET {path} answered no JSON object", exchange)
    for method, path in _PROTECTED:
        body = ctx.session_body("no-key") if method == "POST" else None
        ctx.target.request(method, path, role=None, json_body=body)


@scenario_check("bad_keys")
def bad_keys(ctx: Context) -> None:
    """Malformed headers, an unknown sk_live_ key and an emb_ embed id, on operations that
    need a key (the model holds each to 401, and the given key to 200 on GET /v1/models)."""
    target = ctx.target
    target.request("GET", "/v1/models")
    values = (
        "Bearer", "Bearer not-a-key", "Basic dXNlcjpwYXNz", "sk_live_nobearer",
        f"Bearer {FABRICATED_KEY}", "Bearer emb_01J0000000000000000000000",
    )  # fmt: skip
    for value in values:
        for path in ("/v1/models", "/v1/sessions", "/v1/runs", "/v1/status"):
            target.request("GET", path, role=None, headers={"Authorization": value})
    for role in ("runs_read", "runs_write", "other_org"):
        if role in ctx.roles():
            target.request("GET", "/v1/models", role=role)
    # Every non-2xx answer carries the envelope, a path the API does not have included.
    target.request("GET", "/v1/conformance-no-such-path")


@scenario_check("revoked_key", needs=("revoked",))
def revoked_key(ctx: Context) -> None:
    """The revoked key on reads and on a create (the model holds each to 401)."""
    for method, path in _PROTECTED:
        body = ctx.session_body("revoked") if method == "POST" else None
        ctx.target.request(method, path, role="revoked", json_body=body)


_KEY_SHAPE = re.compile(r"^sk_live_\S+$")


@scenario_check("api_key_format", "AUTH-1")
def api_key_format(ctx: Context) -> None:
    """The key works as Authorization: Bearer <key> and looks like sk_live_<...>; the same key
    without the Bearer scheme, under another prefix, or in another header answers 401."""
    target = ctx.target
    key = target.credentials.api
    accepted = target.request("GET", "/v1/models")
    expect_status(accepted, 200, what="GET /v1/models with Authorization: Bearer <key>")
    if not _KEY_SHAPE.match(key):
        shown = key[:8] + "…" if len(key) > 8 else key
        raise CheckFailed(
            f"the target accepts the key {shown!r}, which does not look like sk_live_<...>",
            accepted,
        )
    rest = key.removeprefix("sk_live_")
    for headers, what in (
        ({"Authorization": key}, "the key without the Bearer scheme"),
        ({"Authorization": f"Bearer sk_test_{rest}"}, "the key under the prefix sk_test_"),
        ({"Authorization": f"Bearer {rest}"}, "the key without its sk_live_ prefix"),
        ({"X-API-Key": key}, "the key in X-API-Key instead of Authorization"),
    ):
        exchange = target.request("GET", "/v1/models", role=None, headers=headers)
        if exchange.status != 401:
            raise CheckFailed(f"{what}: expected 401, got {exchange.status}", exchange)
        ctx.proves(exchange)


@scenario_check("scope_runs_read", needs=("runs_read",))
def scope_runs_read(ctx: Context) -> None:
    """A runs:read key lists, retrieves and polls runs and their events, and tries to create
    and to delete one (the model judges each)."""
    target = ctx.target
    plan = ctx.run_plan()
    run_id = str(ctx.first_run().get("id"))
    for path in ("/v1/runs", f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/status",
                 f"/v1/runs/{run_id}/events"):  # fmt: skip
        target.request("GET", path, role="runs_read")
    target.request("POST", plan.path, role="runs_read", json_body=dict(plan.body))
    target.request("DELETE", f"/v1/runs/{run_id}", role="runs_read")


@scenario_check("scope_runs_write", needs=("runs_write",))
def scope_runs_write(ctx: Context) -> None:
    """A runs:write key tries to list, retrieve and poll runs, creates a run of a text model and
    tries one of a media model (generating media needs both scopes; the model judges each)."""
    target = ctx.target
    run_id = str(ctx.first_run().get("id"))
    for path in ("/v1/runs", f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/status"):
        target.request("GET", path, role="runs_write")
    tried: set[str] = set()
    for plan in ctx.candidates():
        if plan.model not in tried:
            tried.add(plan.model)
            target.request("POST", plan.path, role="runs_write", json_body=dict(plan.body))


@scenario_check("foreign_keys", needs=("other_org",), creates=2, order=LATE)
def foreign_keys(ctx: Context) -> None:
    """Another organization's key on every resource and action of this organization: a
    session (read, end, list, its idempotency key replayed), an uploaded avatar (read, list,
    start a session with it), a run (read, poll, events, delete, list) and an asset (list,
    content). The model judges each answer, and the owner's reads after."""
    target = ctx.target
    key = f"conformance-foreign-{uuid.uuid4()}"
    body = ctx.session_body("foreign")
    created = ctx.create_session(body, {"Idempotency-Key": key})
    session = ctx.created(created)
    sid = str(session["id"])
    try:
        for method, path in (("GET", f"/v1/sessions/{sid}"), ("POST", f"/v1/sessions/{sid}/end")):
            ctx.proves(target.request(method, path, role="other_org"))
        walk(target, "/v1/sessions", role="other_org")
        replay = ctx.create_session(body, {"Idempotency-Key": key}, role="other_org")
        if is_success(replay):
            other = replay.json()
            if isinstance(other, dict) and other.get("id") not in (None, sid):
                target.request("POST", f"/v1/sessions/{other['id']}/end", role="other_org")
        ctx.get_session(sid)
    finally:
        ctx.end(sid)
    _foreign_avatar(ctx)
    _foreign_run(ctx)


def _foreign_avatar(ctx: Context) -> None:
    from harness.conformance.avatars import uploaded_avatar

    try:
        avatar_id = str(uploaded_avatar(ctx)["id"])
    except NotChecked:
        return
    target = ctx.target
    target.request("GET", f"/v1/avatars/{avatar_id}", role="other_org")
    theirs = walk(target, "/v1/avatars", role="other_org")
    ours = walk(target, "/v1/avatars")
    for stock in [a for a in ours if a in set(theirs)][:3]:
        target.request("GET", f"/v1/avatars/{stock}")  # a platform avatar, read by id
    exchange = ctx.create_session(
        ctx.session_body("foreign-avatar", avatar_id=avatar_id), role="other_org"
    )
    if is_success(exchange):
        target.request("POST", f"/v1/sessions/{exchange.json()['id']}/end", role="other_org")


def _foreign_run(ctx: Context) -> None:
    from harness.conformance.runs import an_asset

    target = ctx.target
    try:
        run_id = str(ctx.first_run().get("id"))
    except NotChecked:
        return
    for method, path in (
        ("GET", f"/v1/runs/{run_id}"), ("GET", f"/v1/runs/{run_id}/status"),
        ("GET", f"/v1/runs/{run_id}/events"), ("DELETE", f"/v1/runs/{run_id}"),
    ):  # fmt: skip
        target.request(method, path, role="other_org")
    walk(target, "/v1/runs", role="other_org")
    target.request("GET", f"/v1/runs/{run_id}")  # the owner's read: still its run
    try:
        asset = an_asset(ctx)
    except NotChecked:
        return
    walk(target, "/v1/assets", role="other_org")
    target.request("GET", f"/v1/assets/{asset['id']}/content", role="other_org")


#: The fields a reused key's body changes, one at a time (each must answer 409).
def _other_bodies(ctx: Context, body: dict[str, Any]) -> list[dict[str, Any]]:
    transport = dict(body["transport"], room_name=str(body["transport"]["room_name"]) + "-2")
    return [
        {**body, "quality": "lite"},
        {**body, "metadata": {**body["metadata"], "note": "another body"}},
        {**body, "max_duration_seconds": SEED.max_duration_default - 1},
        {**body, "transport": transport},
    ]


@scenario_check("idempotent_creates", creates=7, key="any")
def idempotent_creates(ctx: Context) -> None:
    """A keyed session create replayed twice, then its key reused with each field changed in
    turn; the session list walked after (the model judges every answer, and that the list shows
    no second session of the replayed body)."""
    key = f"conformance-{uuid.uuid4()}"
    body = ctx.session_body(key[-12:])
    headers = {"Idempotency-Key": key}
    session = ctx.created(ctx.create_session(body, headers))
    try:
        for _ in range(2):
            ctx.proves(ctx.create_session(body, headers, settle=False))
        for other in _other_bodies(ctx, body):
            exchange = ctx.create_session(other, headers, settle=False)
            if is_success(exchange):
                ctx.remember(exchange)
                made = exchange.json()
                if isinstance(made, dict) and made.get("id") != session["id"]:
                    ctx.end(str(made["id"]))
    finally:
        ctx.end(str(session["id"]))
    walk(ctx.target, "/v1/sessions", role=ctx.creator)


@scenario_check("idempotency_key_length", creates=4, key="any")
def idempotency_key_length(ctx: Context) -> None:
    """Idempotency-Keys of 1 and 255 characters, and of 0 and 256 (the model judges each
    create against the seed's 1..255)."""
    for length in (SEED.idempotency_key_min, SEED.idempotency_key_max,
                   SEED.idempotency_key_min - 1, SEED.idempotency_key_max + 1):  # fmt: skip
        key = uuid.uuid4().hex[:length].ljust(length, "k")
        exchange = ctx.create_session(ctx.session_body("idem"), {"Idempotency-Key": key})
        if is_success(exchange):
            ctx.end(str(exchange.json()["id"]))
        ctx.proves(exchange)


@scenario_check("idempotency_window", "LIM-5", order=LATE + 50, creates=2, key="any")
def idempotency_window(ctx: Context) -> None:
    """After the 24-hour window an Idempotency-Key is free again: the same key with another
    body creates a new session instead of answering 409 (only a run allowed to wait a day, or
    one moving the simulator's clock, reaches it)."""
    window = SEED.idempotency_window_seconds + 1
    if not ctx.admin and ctx.time.wall_seconds(window) > ctx.inputs.max_wait_seconds:
        raise BeyondTime(
            f"the {SEED.idempotency_window_seconds / 3600:g}-hour idempotency window is beyond "
            "this run's time",
            f"--max-wait {math.ceil(ctx.time.wall_seconds(window)) + 1}, or --sim-admin-token",
        )
    key = f"conformance-window-{uuid.uuid4()}"
    body = ctx.session_body("window")
    first = ctx.created(ctx.create_session(body, {"Idempotency-Key": key}))
    ctx.end(str(first["id"]))
    ctx.wait(window, "the 24-hour idempotency window", extends_budget=True)
    exchange = ctx.create_session(dict(body, quality="lite"), {"Idempotency-Key": key})
    if exchange.status == 409:
        raise CheckFailed("an Idempotency-Key 24 hours old still answered 409", exchange)
    second = ctx.created(exchange)
    ctx.end(str(second["id"]))
    if second.get("id") == first.get("id"):
        raise CheckFailed("a key reused after 24 hours replayed the old session", exchange)
    ctx.proves(exchange)
