"""The simulator's controls are bounded and validated like ``/v1`` (SIM-8, SIM-9, GAP-SERVE-3).

Reported: ``POST /_sim/clock/advance {"seconds": 1e12}`` overflowed the clock, and after a second
call every route, public ones included, answered a plain-text 500 until restart; the README's
``curl -d … /_sim/clock/advance`` was refused because curl sends a form content type. Now every
control reads its body as JSON whatever the ``Content-Type``, checks its values like ``/v1`` and
keeps within ``SimConfig.admin``, the clock never passes the last writable instant, and no input
to any control leaves a public route unable to answer: hypothesis throws arbitrary controls at the
app and the public routes answer valid JSON after each one.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.conformance.target import SyncASGITransport
from sim.asgi import create_app
from sim.config import AdminConfig, SimConfig
from sim.platform import Platform
from tests.asgi.support import (
    ADMIN,
    ADMIN_TOKEN,
    PUBLIC_READS,
    Org,
    assert_envelope,
    make_org,
    session_body,
    strict_json,
)

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def assert_public_routes_answer(client: httpx.Client, org: Org) -> None:
    for path in PUBLIC_READS:
        response = client.get(path, headers=org.auth())
        assert response.status_code == 200, (path, response.text)
        strict_json(response.text)
        assert response.headers["x-request-id"].startswith("req_")


def _app(config: SimConfig | None = None) -> tuple[Platform, httpx.Client, Org]:
    platform = Platform.create(config)
    org = make_org(platform, "Public", "enterprise")
    app = create_app(platform, admin_token=ADMIN_TOKEN)
    client = httpx.Client(transport=SyncASGITransport(app), base_url="http://sim")
    return platform, client, org


@pytest.mark.req("SIM-8", "ERR-1")
def test_a_huge_advance_is_refused_and_every_route_keeps_answering() -> None:
    platform, client, org = _app()
    for _ in range(2):
        refused = client.post("/_sim/clock/advance", json={"seconds": 1e12}, headers=ADMIN)
        assert_envelope(refused, 422, "unprocessable", "validation.range", "seconds")
    assert platform.clock.now == 0
    assert_public_routes_answer(client, org)
    limit = platform.config.admin.clock_advance_max_seconds
    moved = client.post("/_sim/clock/advance", json={"seconds": limit}, headers=ADMIN)
    assert moved.status_code == 200 and moved.json()["seconds"] == limit
    assert_public_routes_answer(client, org)


@pytest.mark.req("SIM-8", "SIM-1", "CONV-2")
def test_the_clock_never_passes_the_last_writable_instant() -> None:
    config = SimConfig(
        epoch=datetime(9999, 10, 1, tzinfo=UTC), admin=AdminConfig(clock_advance_max_seconds=1e12)
    )
    platform, client, org = _app(config)
    client.post("/v1/sessions", json=session_body(), headers=org.auth())
    beyond = client.post("/_sim/clock/advance", json={"seconds": 62 * 86400}, headers=ADMIN)
    assert_envelope(beyond, 422, "unprocessable", "clock.horizon", "seconds")
    left = platform.clock.horizon - platform.clock.now
    to_the_end = client.post("/_sim/clock/advance", json={"seconds": left}, headers=ADMIN)
    assert to_the_end.json()["now"] == "9999-11-30T23:59:59.999Z"
    again = client.post("/_sim/clock/advance", json={"seconds": 0.5}, headers=ADMIN)
    assert_envelope(again, 422, "unprocessable", "clock.horizon", "seconds")
    assert_public_routes_answer(client, org)
    with pytest.raises(ValueError, match="cannot pass"):
        platform.clock.advance(1.0)  # the domain's own guard, for Python callers


@pytest.mark.req("SIM-8")
@pytest.mark.parametrize(
    "content_type",
    [None, "application/x-www-form-urlencoded", "text/plain", "application/json; charset=utf-8"],
)
def test_control_bodies_are_json_whatever_the_content_type(content_type: str | None) -> None:
    platform, client, _ = _app()
    headers = dict(ADMIN)
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = client.post("/_sim/clock/advance", content=b'{"seconds": 60}', headers=headers)
    assert response.status_code == 200, response.text
    assert platform.clock.now == 60


@pytest.mark.req("SIM-8")
def test_the_readme_curl_for_the_clock_works_as_written() -> None:
    curl = re.search(r"curl -s -H \"Authorization: Bearer \$ADMIN\"(.*?)\n", README)
    assert curl is not None, "the README shows how to move the served clock with curl"
    data = re.search(r"-d '([^']*)'", curl.group(1))
    url = re.search(r"(http://\S+)", curl.group(1))
    assert data is not None and url is not None
    headers = dict(re.findall(r"-H '([^:]+): ([^']*)'", curl.group(1)))
    headers.setdefault("Content-Type", "application/x-www-form-urlencoded")  # what -d sends
    platform, client, _ = _app()
    path = url.group(1).split("8080", 1)[1]
    response = client.post(path, content=data.group(1).encode(), headers={**ADMIN, **headers})
    assert response.status_code == 200, response.text
    assert platform.clock.now == json.loads(data.group(1))["seconds"]


@pytest.mark.req("SIM-8", "SIM-9", "ERR-1", "ERR-4")
@pytest.mark.parametrize(
    ("path", "body", "status", "code", "param"),
    [
        ("/clock/advance", b'{"seconds": 1e999}', 400, "value.invalid_number", "seconds"),
        ("/clock/advance", b'{"seconds": "60"}', 422, "validation.type", "seconds"),
        ("/clock/advance", b"seconds=60", 400, "body.malformed_json", None),
        ("/clock/advance", b"[60]", 400, "body.not_object", None),
        ("/faults/capacity", b'{"workers": 1000000000000}', 422, "validation.range", "workers"),
        ("/faults/slow_startup", b'{"extra_seconds": 1e300}', 422, "validation.range",
         "extra_seconds"),
        ("/faults/slow_startup", b'{"extra_seconds": 1, "duration": 1e300}', 422,
         "validation.range", "duration"),
        ("/organizations", b'{"name": "\\ud800"}', 400, "value.invalid_string", "name"),
        ("/organizations", b'{"name": "x", "concurrency_override": 99}', 422,
         "validation.range", "concurrency_override"),
        ("/keys", b'{"org_id": "org_nope"}', 404, "organization.not_found", None),
        ("/keys/revoke", b'{"key": "sk_live_nope"}', 404, "api_key.not_found", "key"),
        ("/webhooks", b'{"org_id": "org_nope", "url": "https://h.test"}', 404,
         "organization.not_found", None),
        ("/webhooks", b'{"org_id": "ORG", "url": "ftp://h.test"}', 422, "validation.format",
         "url"),
        ("/faults/heartbeat_loss", b'{"session_id": "SESSION", "duration": 1e300}', 422,
         "validation.range", "duration"),
        ("/sessions/SESSION/audio", b'{"kind": "speech", "duration": 1e300}', 422,
         "validation.range", "duration"),
        ("/sessions/SESSION/audio", b'{"kind": "speech", "duration": 1, "x": 1}', 422,
         "validation.unknown_field", "x"),
        ("/clock/step", b'{"within": -1}', 422, "validation.range", "within"),
        ("/clock/step", b'{"within": 1e300}', 422, "validation.range", "within"),
        ("/faults/queue", b'{"size": -1}', 422, "validation.range", "size"),
        ("/faults/queue", b'{"size": 1000000000000}', 422, "validation.range", "size"),
        ("/keys/describe", b'{"key": "sk_live_nope"}', 404, "api_key.not_found", "key"),
    ],
)  # fmt: skip
def test_bad_control_bodies_get_the_envelope_and_change_nothing_public(
    path: str, body: bytes, status: int, code: str, param: str | None
) -> None:
    platform, client, org = _app()
    session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    path = path.replace("SESSION", session["id"])
    body = body.replace(b"ORG", org.id.encode()).replace(b"SESSION", session["id"].encode())
    response = client.post(f"/_sim{path}", content=body, headers=ADMIN)
    assert_envelope(response, status, *_type_and(status, code), param)
    assert platform.sessions.pool_status().capacity == platform.config.scheduler.workers
    assert_public_routes_answer(client, org)


@pytest.mark.req("SIM-8", "EV-1", "HAR-7")
def test_a_sessions_events_say_why_and_when_it_moved() -> None:
    platform, client, org = _app()
    body = session_body(idle_timeout_seconds=4)
    session = client.post("/v1/sessions", json=body, headers=org.auth()).json()
    platform.clock.advance(60)
    listed = client.get(f"/_sim/sessions/{session['id']}/events", headers=ADMIN)
    assert listed.status_code == 200, listed.text
    events = listed.json()["data"]
    assert [e["type"] for e in events] == [
        "session.queued", "session.starting", "session.first_frame", "session.ended",
        "session.usage",
    ]  # fmt: skip
    ended = events[3]
    assert (ended["status"], ended["data"]) == ("ended", {"reason": "idle_timeout"})
    first_frame = client.get(f"/v1/sessions/{session['id']}", headers=org.auth()).json()
    assert events[2]["created_at"] == first_frame["first_frame_at"]
    assert listed.json() == platform.admin.session_events(session["id"])
    missing = client.get("/_sim/sessions/sess_nope/events", headers=ADMIN)
    assert_envelope(missing, 404, "not_found", "session.not_found", None)
    anonymous = client.get(f"/_sim/sessions/{session['id']}/events")
    assert anonymous.status_code == 401


def _type_and(status: int, code: str) -> tuple[str, str]:
    kinds = {400: "invalid_request", 404: "not_found", 422: "unprocessable"}
    return kinds[status], code


# -- no input to any control makes a public route fail ------------------------------------------

_CONTROLS = [
    ("POST", "/clock/advance"),
    ("GET", "/clock"),
    ("POST", "/organizations"),
    ("POST", "/organizations/ORG/concurrency"),
    ("POST", "/keys"),
    ("POST", "/keys/revoke"),
    ("POST", "/sessions/SESSION/audio"),
    ("POST", "/sessions/SESSION/clear_buffer"),
    ("GET", "/sessions/SESSION/events"),
    ("POST", "/faults/worker_crash"),
    ("POST", "/faults/capacity"),
    ("POST", "/faults/slow_startup"),
    ("POST", "/faults/heartbeat_loss"),
    ("POST", "/faults/purge_failure"),
    ("POST", "/webhooks"),
    ("GET", "/webhooks/deliveries?org_id=ORG"),
    ("POST", "/clock/step"),
    ("POST", "/keys/describe"),
    ("POST", "/faults/queue"),
    ("DELETE", "/webhooks/whe_nope"),
]
_FIELDS = [
    "seconds", "name", "plan", "environment", "concurrency_override", "org_id", "scopes", "key",
    "limit", "kind", "duration", "session_id", "workers", "extra_seconds", "enabled", "url",
    "event_types", "x", "within", "size",
]  # fmt: skip
_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2.5, 60, 3600, 1e9, 1e300, 10**30, "", "x", "ORG", "SESSION",
    "pro", "gold", "staging", "speech", "silence", "runs:read", "https://hooks.test/h", "\ud800",
    [], ["runs:read"], ["session.*"], {}, {"a": 1},
]  # fmt: skip


@st.composite
def _control(draw: st.DrawFn) -> tuple[str, str, bytes]:
    method, path = draw(st.sampled_from(_CONTROLS))
    fields = draw(st.dictionaries(st.sampled_from(_FIELDS), st.sampled_from(_VALUES), max_size=4))
    if draw(st.integers(0, 9)) == 0:
        return method, path, draw(st.binary(max_size=40))
    return method, path, json.dumps(fields).encode()


_STATE: dict[str, Any] = {}


def _world() -> tuple[Platform, httpx.Client, Org, str]:
    if not _STATE:
        platform, client, org = _app()
        session = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
        _STATE.update(platform=platform, client=client, org=org, session=session["id"])
    return _STATE["platform"], _STATE["client"], _STATE["org"], _STATE["session"]


@pytest.mark.req("SIM-8", "SIM-9", "ERR-1", "ERR-3")
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(control=_control(), content_type=st.sampled_from([None, "application/json", "text/plain"]))
def test_no_input_to_any_control_makes_a_public_route_fail(
    control: tuple[str, str, bytes], content_type: str | None
) -> None:
    _, client, org, session = _world()
    method, path, body = control
    path = path.replace("ORG", org.id).replace("SESSION", session)
    body = body.replace(b'"ORG"', json.dumps(org.id).encode())
    body = body.replace(b'"SESSION"', json.dumps(session).encode())
    headers = dict(ADMIN)
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = client.request(method, f"/_sim{path}", content=body, headers=headers)
    assert response.status_code < 500, response.text
    answer = strict_json(response.text)
    if response.status_code >= 400:
        assert set(answer) == {"error"}
    assert_public_routes_answer(client, org)


@pytest.mark.req("SIM-8", "SIM-9", "HAR-26")
def test_the_controls_a_test_toolkit_needs() -> None:
    platform, client, org = _app()
    # The clock runs to its next event, never past the bound it is given.
    created = client.post("/v1/sessions", json=session_body(), headers=org.auth()).json()
    due = platform.clock.next_event_at()
    assert due is not None
    stepped = client.post("/_sim/clock/step", json={"within": 3600}, headers=ADMIN).json()
    assert stepped["seconds"] == due
    idle = client.post("/_sim/clock/step", json={"within": 0.25}, headers=ADMIN).json()
    assert idle["seconds"] <= due + 0.25
    # A key tells its organization.
    described = client.post(
        "/_sim/keys/describe", json={"key": org.keys["unrestricted"]}, headers=ADMIN
    )
    assert described.json()["org_id"] == org.id and described.json()["revoked"] is False
    # The queue's size: no worker and no room refuses 503 at_capacity.
    client.post("/_sim/faults/capacity", json={"workers": 0}, headers=ADMIN)
    pool = client.post("/_sim/faults/queue", json={"size": 0}, headers=ADMIN).json()
    assert pool["queue_size"] == 0 and pool["capacity"] == 0
    active = client.get("/_sim/faults", headers=ADMIN).json()["data"]
    assert {"fault": "queue_size", "size": 0, "configured": 16} in active
    client.post(f"/v1/sessions/{created['id']}/end", headers=org.auth())
    refused = client.post("/v1/sessions", json=session_body(), headers=org.auth())
    assert_envelope(refused, 503, "service_unavailable", "at_capacity", None)
    assert int(refused.headers["retry-after"]) >= 1
    # A webhook endpoint can be removed; an unknown one is a 404 with the envelope.
    hook = client.post(
        "/_sim/webhooks", json={"org_id": org.id, "url": "https://h.test/x"}, headers=ADMIN
    ).json()
    removed = client.delete(f"/_sim/webhooks/{hook['id']}", headers=ADMIN)
    assert removed.status_code == 200 and removed.json()["deleted"] is True
    again = client.delete(f"/_sim/webhooks/{hook['id']}", headers=ADMIN)
    assert_envelope(again, 404, "not_found", "webhook_endpoint.not_found", None)
    assert platform.webhooks.endpoints() == []
