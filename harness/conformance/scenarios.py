"""Scenario checks: authentication, scopes, idempotency, tenant isolation and list pagination.

Each drives the target through a few requests and states one rule of the seed. The responses it
sees pass through the response checks as well (the runner observes every exchange).
"""

from __future__ import annotations

import uuid
from typing import Any

from harness.conformance.checks import CheckFailed, Skipped, envelope_of, scenario_check
from harness.conformance.probes import (
    create_session,
    end_quietly,
    expect_status,
    ready_avatar,
    session_body,
)
from harness.conformance.target import Exchange, Target

__all__ = ["LISTS", "walk"]

#: Endpoints that need a key; a GET to each without one must answer 401 (AUTH-2).
_PROTECTED = ("/v1/models", "/v1/sessions", "/v1/avatars", "/v1/usage", "/v1/billing/quota")


def _expect_401(exchange: Exchange, what: str) -> None:
    if exchange.status != 401:
        raise CheckFailed(f"{what}: expected 401, got {exchange.status}", exchange)
    error = envelope_of(exchange)
    if error is None:
        raise CheckFailed(f"{what}: the 401 carries no error envelope", exchange)
    if error.get("type") != "authentication":
        raise CheckFailed(f"{what}: 401 with error.type {error.get('type')!r}", exchange)


@scenario_check("public_endpoints", "AUTH-2", "EP-STATUS-1", "EP-BILL-1")
def public_endpoints(target: Target) -> None:
    """GET /v1/status and /v1/billing/plans answer without a key; other endpoints do not."""
    for path in ("/v1/status", "/v1/billing/plans"):
        exchange = target.request("GET", path, role=None)
        expect_status(exchange, what=f"GET {path} without a key")
    for path in _PROTECTED:
        _expect_401(target.request("GET", path, role=None), f"GET {path} without a key")


@scenario_check("unauthenticated_rejected", "AUTH-3", "EP-MODEL-1")
def unauthenticated_rejected(target: Target) -> None:
    """A missing or malformed key answers 401 with the envelope; the given key answers 200."""
    expect_status(target.request("GET", "/v1/models"), 200, what="GET /v1/models with the key")
    _expect_401(target.request("GET", "/v1/models", role=None), "no Authorization header")
    for value in ("Bearer", "Bearer not-a-key", "Basic dXNlcjpwYXNz", "sk_live_nobearer"):
        exchange = target.request("GET", "/v1/models", role=None, headers={"Authorization": value})
        _expect_401(exchange, f"Authorization {value!r}")
    unknown = "Bearer sk_live_" + "0" * 32
    exchange = target.request("GET", "/v1/models", role=None, headers={"Authorization": unknown})
    _expect_401(exchange, "an unknown sk_live_ key")


@scenario_check("revoked_key_rejected", "AUTH-3", needs=("revoked",))
def revoked_key_rejected(target: Target) -> None:
    """A revoked key answers 401 with the envelope."""
    exchange = target.request("GET", "/v1/models", role="revoked")
    _expect_401(exchange, "the revoked key")
    exchange = target.request("GET", "/v1/sessions", role="revoked")
    _expect_401(exchange, "the revoked key listing sessions")


@scenario_check("embed_id_rejected", "AUTH-6")
def embed_id_rejected(target: Target) -> None:
    """An emb_ embed id carries no account access: as a bearer key it answers 401."""
    for path in ("/v1/models", "/v1/sessions"):
        headers = {"Authorization": "Bearer emb_01J0000000000000000000000"}
        _expect_401(target.request("GET", path, role=None, headers=headers), f"emb_ id on {path}")


def _first_model(target: Target) -> str:
    body = expect_status(target.request("GET", "/v1/models"), 200, what="GET /v1/models")
    models = [m for m in body.get("data", []) if isinstance(m, dict) and m.get("id")]
    if not models:
        raise Skipped("the catalog lists no model to try a run create with")
    available = [m for m in models if m.get("available") is True] or models
    return str(available[0]["id"])


def _expect_scope_required(exchange: Exchange, what: str) -> None:
    if exchange.status != 403:
        raise CheckFailed(f"{what}: expected 403, got {exchange.status}", exchange)
    error = envelope_of(exchange)
    if error is None or error.get("code") != "api_key.scope_required":
        code = None if error is None else error.get("code")
        raise CheckFailed(f"{what}: 403 with code {code!r}, not api_key.scope_required", exchange)


@scenario_check("scope_runs_read", "AUTH-4", "AUTH-5", needs=("runs_read",))
def scope_runs_read(target: Target) -> None:
    """A runs:read key lists runs, and creating a run with it is 403 api_key.scope_required."""
    listed = target.request("GET", "/v1/runs", role="runs_read", params={"limit": 1})
    expect_status(listed, what="GET /v1/runs with a runs:read key")
    model = _first_model(target)
    created = target.request(
        "POST", f"/v1/run/{model}", role="runs_read", json_body={"input": {}}, operation="createRun"
    )
    _expect_scope_required(created, "a runs:read key creating a run")


@scenario_check("scope_runs_write", "AUTH-4", "AUTH-5", needs=("runs_write",))
def scope_runs_write(target: Target) -> None:
    """A runs:write key may not list runs (that needs runs:read): 403 api_key.scope_required."""
    listed = target.request("GET", "/v1/runs", role="runs_write", params={"limit": 1})
    _expect_scope_required(listed, "a runs:write key listing runs")


@scenario_check("idempotent_replay", "LIM-5", "CONV-7")
def idempotent_replay(target: Target) -> None:
    """The same Idempotency-Key and body replay the session; another body is 409 conflict."""
    avatar = ready_avatar(target)
    key = f"conformance-{uuid.uuid4()}"
    body = session_body(avatar, f"idem-{key[-12:]}")
    headers = {"Idempotency-Key": key}
    first, session = create_session(target, body, headers)
    try:
        again = target.request(
            "POST", "/v1/sessions", json_body=body, headers=headers, operation="createSession"
        )
        replayed = expect_status(again, first.status, what="the replay of an idempotent create")
        if not isinstance(replayed, dict) or replayed.get("id") != session["id"]:
            got = replayed.get("id") if isinstance(replayed, dict) else replayed
            raise CheckFailed(
                f"the replay answered session {got!r}, not the original {session['id']!r}", again
            )
        other = dict(body, quality="lite")
        conflict = target.request(
            "POST", "/v1/sessions", json_body=other, headers=headers, operation="createSession"
        )
        if conflict.status != 409:
            raise CheckFailed(
                f"the same key with another body answered {conflict.status}, not 409", conflict
            )
        error = envelope_of(conflict)
        if error is None or error.get("type") != "conflict":
            raise CheckFailed("the 409 for a reused key is not error.type conflict", conflict)
    finally:
        end_quietly(target, session["id"])


@scenario_check("tenant_isolation", "AUTH-7", "EP-SESS-8", needs=("other_org",))
def tenant_isolation(target: Target) -> None:
    """Another organization's key cannot read, end or list this organization's session."""
    avatar = ready_avatar(target)
    _, session = create_session(target, session_body(avatar, "isolation"))
    try:
        sid = session["id"]
        for method, path in (("GET", f"/v1/sessions/{sid}"), ("POST", f"/v1/sessions/{sid}/end")):
            exchange = target.request(method, path, role="other_org")
            if exchange.status != 404:
                raise CheckFailed(
                    f"{method} of another organization's session answered {exchange.status}",
                    exchange,
                )
        seen = walk(target, "/v1/sessions", role="other_org")
        if sid in seen:
            raise CheckFailed(f"another organization's list shows {sid}")
        still = target.request("GET", f"/v1/sessions/{sid}")
        if expect_status(still, 200, what="GET own session").get("status") == "canceled":
            raise CheckFailed("another organization's end canceled the session", still)
    finally:
        end_quietly(target, session["id"])


# -- lists (CONV-4 .. CONV-6) ------------------------------------------------------------------

#: The list endpoints with a string cursor, the role that may list them, and the id prefix.
LISTS: tuple[tuple[str, str, str], ...] = (
    ("/v1/sessions", "api", "sess_"),
    ("/v1/avatars", "api", "av_"),
    ("/v1/runs", "api", "run_"),
    ("/v1/assets", "api", "asset_"),
)

_MAX_PAGES = 200


def _list_page(target: Target, path: str, role: str, params: dict[str, Any]) -> dict[str, Any]:
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


def walk(target: Target, path: str, role: str = "api", limit: int = 100) -> list[str]:
    """The ids of every item of a string-cursor list, walked page by page."""
    ids: list[str] = []
    params: dict[str, Any] = {"limit": limit}
    for _ in range(_MAX_PAGES):
        body = _list_page(target, path, role, params)
        ids += [str(item.get("id")) for item in body["data"] if isinstance(item, dict)]
        if not body["has_more"]:
            return ids
        params = {"limit": limit, "starting_after": body["next_cursor"]}
    raise CheckFailed(f"walking {path} did not end within {_MAX_PAGES} pages")


@scenario_check("list_envelope", "CONV-4")
def list_envelope(target: Target) -> None:
    """Every list answers {object: "list", data, has_more, next_cursor} and honours limit."""
    for path, role, _ in LISTS:
        body = _list_page(target, path, role, {"limit": 1})
        if len(body["data"]) > 1:
            raise CheckFailed(f"GET {path}?limit=1 returned {len(body['data'])} items")
    exchange = target.request("GET", "/v1/models")
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


@scenario_check("next_cursor_type", "CONV-5", "EP-RUN-2")
def next_cursor_type(target: Target) -> None:
    """next_cursor is a string (an av_ id for avatars), an integer for run events, and absent
    from an empty last page."""
    for path, role, prefix in LISTS:
        for limit in (1, 100):
            exchange = target.request("GET", path, role=role, params={"limit": limit})
            body = expect_status(exchange, 200, what=f"GET {path}")
            _check_envelope(exchange, body)
            _cursor_rule(exchange, body, str, prefix)
    runs = _list_page(target, "/v1/runs", "api", {"limit": 1})["data"]
    if runs:
        run_id = runs[0]["id"]
        exchange = target.request("GET", f"/v1/runs/{run_id}/events", params={"limit": 1})
        body = expect_status(exchange, 200, what="GET run events")
        _check_envelope(exchange, body)
        _cursor_rule(exchange, body, int, "")


@scenario_check("list_walk", "CONV-6")
def list_walk(target: Target) -> None:
    """Walking avatars and sessions one item a page visits each item once, none missed, also
    while a session is created during the walk."""
    for path in ("/v1/avatars", "/v1/sessions"):
        before = walk(target, path)
        created: str | None = None
        seen: list[str] = []
        params: dict[str, Any] = {"limit": 1}
        try:
            for page in range(_MAX_PAGES):
                body = _list_page(target, path, "api", params)
                seen += [str(item.get("id")) for item in body["data"]]
                if page == 0 and path == "/v1/sessions" and body["has_more"]:
                    created = _try_create(target)
                if not body["has_more"]:
                    break
                params = {"limit": 1, "starting_after": body["next_cursor"]}
            else:
                raise CheckFailed(f"walking {path} did not end within {_MAX_PAGES} pages")
        finally:
            if created is not None:
                end_quietly(target, created)
        duplicates = sorted({i for i in seen if seen.count(i) > 1})
        if duplicates:
            raise CheckFailed(f"walking {path} visited {duplicates[:5]} more than once")
        missing = [i for i in before if i not in seen]
        if missing:
            raise CheckFailed(f"walking {path} one by one skipped {missing[:5]}")
        if created is None and seen != before:
            raise CheckFailed(f"walking {path} one by one gave another order than one page")


def _try_create(target: Target) -> str | None:
    try:
        _, session = create_session(target, session_body(ready_avatar(target), "walk"))
    except Skipped:
        return None
    return str(session["id"])


@scenario_check("concurrent_sessions_refused", "LIM-1", "EP-SESS-4")
def concurrent_sessions_refused(target: Target) -> None:
    """A second live session on the same key is 429 quota_exceeded concurrent_sessions."""
    avatar = ready_avatar(target)
    _, first = create_session(target, session_body(avatar, "concurrency-1"))
    second: dict[str, Any] | None = None
    try:
        exchange = target.request(
            "POST",
            "/v1/sessions",
            json_body=session_body(avatar, "concurrency-2"),
            operation="createSession",
        )
        if 200 <= exchange.status < 300:
            body = exchange.json()
            second = body if isinstance(body, dict) else None
            raise CheckFailed("a second concurrent session on one key was accepted", exchange)
        error = envelope_of(exchange)
        if exchange.status == 429 and error is not None and error.get("type") == "rate_limit":
            raise Skipped("the create rate limit answered first")
        if exchange.status != 429 or error is None or error.get("code") != "concurrent_sessions":
            code = None if error is None else error.get("code")
            raise CheckFailed(
                f"a second concurrent session answered {exchange.status} {code!r}, not 429 "
                "concurrent_sessions",
                exchange,
            )
        if error.get("type") != "quota_exceeded":
            raise CheckFailed(f"concurrent_sessions with type {error.get('type')!r}", exchange)
    finally:
        end_quietly(target, first["id"])
        if second is not None and isinstance(second.get("id"), str):
            end_quietly(target, second["id"])
