"""Scenario checks: authentication, scopes, idempotency, tenant isolation and list pagination.

Each drives the target through a few requests and states one rule of the seed. The responses it
sees pass through the response checks as well (the runner observes every exchange).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from harness.conformance.checks import (
    CheckFailed,
    NotChecked,
    envelope_of,
    scenario_check,
)
from harness.conformance.context import Context, expect_status, refusal_type
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange, Target

__all__ = ["LISTS", "a_run_id", "expect_refused", "expect_scope_required", "list_page", "walk"]

#: Endpoints that need a key; a GET to each without one must answer 401 (AUTH-2).
_PROTECTED = ("/v1/models", "/v1/sessions", "/v1/avatars", "/v1/usage", "/v1/billing/quota")

#: What a request the seed calls invalid may get: 400 or 422 (the seed's table names 422 for a
#: validation failure and says the type maps only roughly to the status, so 400 is legal too).
REFUSED = (400, 422)


def _expect_401(exchange: Exchange, what: str) -> None:
    """A 401 with the envelope (its type maps only roughly to the status: not judged here)."""
    if exchange.status != 401:
        raise CheckFailed(f"{what}: expected 401, got {exchange.status}", exchange)
    if envelope_of(exchange) is None:
        raise CheckFailed(f"{what}: the 401 carries no error envelope", exchange)


def expect_refused(exchange: Exchange, what: str, *statuses: int) -> dict[str, Any]:
    """A refusal with one of ``statuses`` (400 or 422 by default) and the envelope."""
    allowed = statuses or REFUSED
    if exchange.status not in allowed:
        wanted = " or ".join(map(str, allowed))
        raise CheckFailed(f"{what}: expected {wanted}, got {exchange.status}", exchange)
    error = envelope_of(exchange)
    if error is None:
        raise CheckFailed(f"{what}: the {exchange.status} carries no error envelope", exchange)
    return error


def expect_scope_required(exchange: Exchange, what: str) -> None:
    if exchange.status != 403:
        raise CheckFailed(f"{what}: expected 403, got {exchange.status}", exchange)
    error = envelope_of(exchange)
    if error is None or error.get("code") != "api_key.scope_required":
        code = None if error is None else error.get("code")
        raise CheckFailed(f"{what}: 403 with code {code!r}, not api_key.scope_required", exchange)


@scenario_check("public_endpoints", "AUTH-2", "EP-STATUS-1", "EP-BILL-1")
def public_endpoints(ctx: Context) -> None:
    """GET /v1/status and /v1/billing/plans answer without a key; other endpoints do not."""
    for path in ("/v1/status", "/v1/billing/plans"):
        exchange = ctx.target.request("GET", path, role=None)
        body = expect_status(exchange, what=f"GET {path} without a key")
        if not isinstance(body, dict):
            raise CheckFailed(f"GET {path} answered no JSON object", exchange)
    for path in _PROTECTED:
        _expect_401(ctx.target.request("GET", path, role=None), f"GET {path} without a key")


@scenario_check("unauthenticated_rejected", "AUTH-3", "EP-MODEL-1")
def unauthenticated_rejected(ctx: Context) -> None:
    """A missing or malformed key answers 401 with the envelope; the given key answers 200."""
    target = ctx.target
    expect_status(target.request("GET", "/v1/models"), 200, what="GET /v1/models with the key")
    _expect_401(target.request("GET", "/v1/models", role=None), "no Authorization header")
    for value in ("Bearer", "Bearer not-a-key", "Basic dXNlcjpwYXNz", "sk_live_nobearer"):
        exchange = target.request("GET", "/v1/models", role=None, headers={"Authorization": value})
        _expect_401(exchange, f"Authorization {value!r}")
    unknown = "Bearer sk_live_" + "0" * 32
    exchange = target.request("GET", "/v1/models", role=None, headers={"Authorization": unknown})
    _expect_401(exchange, "an unknown sk_live_ key")


@scenario_check("revoked_key_rejected", "AUTH-3", needs=("revoked",))
def revoked_key_rejected(ctx: Context) -> None:
    """A revoked key answers 401 with the envelope."""
    _expect_401(ctx.target.request("GET", "/v1/models", role="revoked"), "the revoked key")
    exchange = ctx.target.request("GET", "/v1/sessions", role="revoked")
    _expect_401(exchange, "the revoked key listing sessions")


@scenario_check("embed_id_rejected", "AUTH-6")
def embed_id_rejected(ctx: Context) -> None:
    """An emb_ embed id carries no account access: as a bearer key it answers 401."""
    for path in ("/v1/models", "/v1/sessions"):
        headers = {"Authorization": "Bearer emb_01J0000000000000000000000"}
        exchange = ctx.target.request("GET", path, role=None, headers=headers)
        _expect_401(exchange, f"emb_ id on {path}")


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
        _expect_401(exchange, what)
        ctx.proves(exchange)


@scenario_check("scope_runs_read", "AUTH-4", "AUTH-5", needs=("runs_read",))
def scope_runs_read(ctx: Context) -> None:
    """A runs:read key lists, retrieves and polls runs, and creating a run with it (a body the
    target accepts from an unrestricted key) is 403 api_key.scope_required."""
    target = ctx.target
    plan = ctx.run_plan()
    run_id = str(ctx.first_run().get("id"))
    for path in ("/v1/runs", f"/v1/runs/{run_id}", f"/v1/runs/{run_id}/status"):
        exchange = target.request("GET", path, role="runs_read")
        expect_status(exchange, what=f"GET {path} with a runs:read key")
    created = target.request(
        "POST", plan.path, role="runs_read", json_body=dict(plan.body), operation="createRun"
    )
    expect_scope_required(created, "a runs:read key creating a run")


@scenario_check("scope_runs_write", "AUTH-4", "AUTH-5", needs=("runs_write",))
def scope_runs_write(ctx: Context) -> None:
    """A runs:write key may not list runs (that needs runs:read): 403 api_key.scope_required."""
    listed = ctx.target.request("GET", "/v1/runs", role="runs_write", params={"limit": 1})
    expect_scope_required(listed, "a runs:write key listing runs")


@scenario_check("idempotent_replay", "LIM-5", "CONV-7", creates=3)
def idempotent_replay(ctx: Context) -> None:
    """The same Idempotency-Key and body replay the session; another body is 409 conflict."""
    key = f"conformance-{uuid.uuid4()}"
    body = ctx.session_body(key[-12:])
    headers = {"Idempotency-Key": key}
    first = ctx.create_session(body, headers)
    session = ctx.created(first)
    try:
        # A replay answers the original response: neither the cap nor pacing may refuse it.
        again = ctx.create_session(body, headers, settle=False)
        replayed = expect_status(again, first.status, what="the replay of an idempotent create")
        if not isinstance(replayed, dict) or replayed.get("id") != session["id"]:
            got = replayed.get("id") if isinstance(replayed, dict) else replayed
            raise CheckFailed(
                f"the replay answered session {got!r}, not the original {session['id']!r}", again
            )
        other = dict(body, quality="lite")
        conflict = ctx.create_session(other, headers)
        if conflict.status != 409:
            raise CheckFailed(
                f"the same key with another body answered {conflict.status}, not 409", conflict
            )
        if refusal_type(conflict) != "conflict":
            raise CheckFailed("the 409 for a reused key is not error.type conflict", conflict)
        ctx.proves(conflict)
    finally:
        ctx.end(session["id"])


#: How a deployment may refuse another organization's resource: not found, or forbidden (the
#: seed leaves which), always with the envelope.
FOREIGN = (403, 404)


def expect_foreign(exchange: Exchange, what: str) -> None:
    """Another organization's resource is refused 403 or 404 with the envelope."""
    if exchange.status not in FOREIGN or envelope_of(exchange) is None:
        raise CheckFailed(f"{what} answered {exchange.status}, not 403 or 404", exchange)


@scenario_check("tenant_isolation", "AUTH-7", "EP-SESS-8", needs=("other_org",), creates=1)
def tenant_isolation(ctx: Context) -> None:
    """Another organization's key cannot read, end or list this organization's session (403 or
    404)."""
    target = ctx.target
    _, session = ctx.new_session("isolation")
    sid = session["id"]
    try:
        for method, path in (("GET", f"/v1/sessions/{sid}"), ("POST", f"/v1/sessions/{sid}/end")):
            exchange = target.request(method, path, role="other_org")
            expect_foreign(exchange, f"{method} of another organization's session")
            ctx.proves(exchange)
        if sid in walk(target, "/v1/sessions", role="other_org"):
            raise CheckFailed(f"another organization's list shows {sid}")
        exchange, still = ctx.get_session(sid)
        if still.get("status") == "canceled":
            raise CheckFailed("another organization's end canceled the session", exchange)
    finally:
        ctx.end(sid)


# -- lists (CONV-4 .. CONV-6) ------------------------------------------------------------------

#: The list endpoints with a string cursor, the role that may list them, and the id prefix.
LISTS: tuple[tuple[str, str, str], ...] = (
    ("/v1/sessions", "api", "sess_"),
    ("/v1/avatars", "api", "av_"),
    ("/v1/runs", "api", "run_"),
    ("/v1/assets", "api", "asset_"),
)

_MAX_PAGES = 200


def list_page(target: Target, path: str, role: str, params: dict[str, Any]) -> dict[str, Any]:
    exchange = target.request("GET", path, role=role, params=params)
    body = expect_status(exchange, 200, what=f"GET {path}")
    _check_envelope(exchange, body)
    return body  # type: ignore[no-any-return]


def _check_envelope(exchange: Exchange, body: Any) -> None:
    if not isinstance(body, dict) or body.get("object") != "list":
        raise CheckFailed("a list answer is not {object: 'list', ...}", exchange)
    if not isinstance(body.get("data"), list):
        raise CheckFailed("a list answer's data is not an array", exchange)
    if not isinstance(body.get("has_more"), bool):
        raise CheckFailed("a list answer's has_more is not a boolean", exchange)
    if body["has_more"] and "next_cursor" not in body:
        raise CheckFailed("a list answer with has_more true has no next_cursor", exchange)


def walk(target: Target, path: str, role: str = "api", limit: int = SEED.page_max) -> list[str]:
    """The ids of every item of a string-cursor list, walked page by page."""
    ids: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    for _ in range(_MAX_PAGES):
        body = list_page(target, path, role, params)
        ids += [str(item.get("id")) for item in body["data"] if isinstance(item, dict)]
        if not body["has_more"]:
            return ids
        params = {"limit": limit, "starting_after": body["next_cursor"]}
    raise CheckFailed(f"walking {path} did not end within {_MAX_PAGES} pages")


@scenario_check("list_envelope", "CONV-4")
def list_envelope(ctx: Context) -> None:
    """Every list answers {object: "list", data, has_more, next_cursor} and honours limit."""
    for path, role, _ in LISTS:
        body = list_page(ctx.target, path, role, {"limit": 1})
        if len(body["data"]) > 1:
            raise CheckFailed(f"GET {path}?limit=1 returned {len(body['data'])} items")
    exchange = ctx.target.request("GET", "/v1/models")
    body = expect_status(exchange, 200, what="GET /v1/models")
    if not isinstance(body, dict) or body.get("object") != "list":
        raise CheckFailed("GET /v1/models is not {object: 'list', data}", exchange)
    if not isinstance(body.get("data"), list):
        raise CheckFailed("GET /v1/models data is not an array", exchange)


def _cursor_rule(exchange: Exchange, body: dict[str, Any], kind: type, prefix: str) -> None:
    present = "next_cursor" in body
    cursor = body.get("next_cursor")
    if not body["data"] and not body["has_more"]:
        if present:
            raise CheckFailed("an empty final list page still carries next_cursor", exchange)
        return
    if not present:
        if body["has_more"]:
            raise CheckFailed("has_more is true but next_cursor is missing", exchange)
        return
    if cursor is None and not body["has_more"]:
        return
    if kind is int and (not isinstance(cursor, int) or isinstance(cursor, bool)):
        raise CheckFailed(f"next_cursor of run events is not an integer: {cursor!r}", exchange)
    if kind is str and not isinstance(cursor, str):
        raise CheckFailed(f"next_cursor is not a string: {cursor!r}", exchange)
    if kind is str and prefix == "av_" and not str(cursor).startswith("av_"):
        raise CheckFailed(f"an avatar cursor is not an av_ id: {cursor!r}", exchange)


def a_run_id(ctx: Context) -> str | None:
    """A run of this organization: the run this harness created, else one the list shows."""
    try:
        return str(ctx.first_run().get("id"))
    except NotChecked:
        body = list_page(ctx.target, "/v1/runs", "api", {"limit": 1})
        return str(body["data"][0].get("id")) if body["data"] else None


@scenario_check("next_cursor_type", "CONV-5")
def next_cursor_type(ctx: Context) -> None:
    """next_cursor is a string (an av_ id for avatars), an integer for run events, and absent
    from an empty last page."""
    target = ctx.target
    for path, role, prefix in LISTS:
        for limit in (SEED.page_min, SEED.page_max):
            exchange = target.request("GET", path, role=role, params={"limit": limit})
            body = expect_status(exchange, 200, what=f"GET {path}")
            _check_envelope(exchange, body)
            _cursor_rule(exchange, body, str, prefix)
    run_id = a_run_id(ctx)
    for limit in (SEED.page_min, SEED.run_events_page_max) if run_id is not None else ():
        exchange = target.request("GET", f"/v1/runs/{run_id}/events", params={"limit": limit})
        body = expect_status(exchange, 200, what="GET run events")
        _check_envelope(exchange, body)
        _cursor_rule(exchange, body, int, "")


#: Items walked one a page (a deployment's lists may hold thousands).
_WALK_ONE_BY_ONE = 25


@scenario_check("list_walk", "CONV-6", "EP-SESS-7", creates=1)
def list_walk(ctx: Context) -> None:
    """Walking avatars and sessions one item a page visits each item once, none missed, in
    the order of one big page, also while a session is created during the walk (which may
    appear or not, by the list's order)."""
    target = ctx.target
    for path in ("/v1/avatars", "/v1/sessions"):
        before = walk(target, path)[:_WALK_ONE_BY_ONE]
        created: str | None = None
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 1}
        try:
            while len(seen) < _WALK_ONE_BY_ONE:
                body = list_page(target, path, "api", params)
                seen += [str(item.get("id")) for item in body["data"]]
                if not seen and body["has_more"]:
                    raise CheckFailed(f"GET {path}?limit=1 answered no item but has_more")
                if len(seen) == 1 and path == "/v1/sessions" and body["has_more"]:
                    created = _try_create(ctx)
                if not body["has_more"]:
                    break
                params = {"limit": 1, "starting_after": body["next_cursor"]}
        finally:
            if created is not None:
                ctx.end(created)
        duplicates = sorted({i for i in seen if seen.count(i) > 1})
        if duplicates:
            raise CheckFailed(f"walking {path} visited {duplicates[:5]} more than once")
        walked = [i for i in seen if i != created]
        missing = [i for i in before[: len(walked)] if i not in walked]
        if missing:
            raise CheckFailed(f"walking {path} one by one skipped {missing[:5]}")
        if walked != before[: len(walked)]:
            raise CheckFailed(f"walking {path} one by one gave another order than one page")


def _try_create(ctx: Context) -> str | None:
    try:
        _, session = ctx.new_session("walk")
    except NotChecked:
        return None
    return str(session["id"])


def judge_page_size(
    exchange: Exchange, path: str, limit: int, low: int, high: int, what: str
) -> None:
    """A page size outside ``low..high`` is refused (400/422 with the envelope) or clamped (a
    page of at most ``high`` items, the seed leaving which, LIM-7)."""
    if exchange.status == 200:
        body = exchange.json()
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            raise CheckFailed(f"{what}: a 200 without a data array", exchange)
        if len(data) > max(high, 0) or (limit < low and len(data) > low):
            raise CheckFailed(
                f"{what} answered {len(data)} items: neither refused nor clamped to {low}..{high}",
                exchange,
            )
        return
    expect_refused(exchange, what)


@scenario_check("page_size_bounds", "LIM-7")
def page_size_bounds(ctx: Context) -> None:
    """Page sizes 1 and 100 are accepted by every string-cursor list and a page never holds
    more than asked; 0 and 101 are refused or clamped (run events: ``run_events``)."""
    target = ctx.target
    for path, top in ((path, SEED.page_max) for path, _, _ in LISTS):
        for good in (SEED.page_min, top):
            exchange = target.request("GET", path, params={"limit": good})
            body = expect_status(exchange, 200, what=f"GET {path}?limit={good}")
            if isinstance(body, dict) and len(body.get("data") or []) > good:
                raise CheckFailed(f"GET {path}?limit={good} returned more items", exchange)
        for bad in (SEED.page_min - 1, top + 1, 10 * top):
            exchange = target.request("GET", path, params={"limit": bad})
            judge_page_size(exchange, path, bad, SEED.page_min, top, f"GET {path}?limit={bad}")
            ctx.proves(exchange)


@scenario_check("cursor_length_bound", "EP-RUN-1", "EP-ASSET-1")
def cursor_length_bound(ctx: Context) -> None:
    """The runs and assets cursors are at most 40 characters: a 41-character starting_after is
    refused with 400 or 422, and a real cursor taken from a page is accepted."""
    target = ctx.target
    for path, prefix in (("/v1/runs", "run_"), ("/v1/assets", "asset_")):
        too_long = prefix + "0" * (SEED.cursor_max_length + 1 - len(prefix))
        exchange = target.request("GET", path, params={"starting_after": too_long, "limit": 1})
        expect_refused(exchange, f"GET {path} with a {len(too_long)}-character cursor")
        body = list_page(target, path, "api", {"limit": 1})
        if body["data"] and isinstance(body.get("next_cursor"), str):
            cursor = body["next_cursor"]
            exchange = target.request("GET", path, params={"starting_after": cursor, "limit": 1})
            expect_status(exchange, 200, what=f"GET {path} with the cursor it gave")
