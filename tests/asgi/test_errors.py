"""Bad input never crashes the facade or changes state: every refusal is the bare envelope."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from httpx import Client

from sim.asgi.context import FACADE_LOGGER
from sim.errors import Unprocessable
from sim.platform import Platform
from tests.asgi.support import Org, assert_envelope, session_body


def _sessions(platform: Platform) -> int:
    return len(platform.sessions.sessions())


@pytest.mark.req("ERR-1", "ERR-2", "ERR-4", "CONV-3")
@pytest.mark.parametrize(
    ("content", "content_type", "code"),
    [
        (b'{"avatar_id": ', "application/json", "body.malformed_json"),
        (b"NaN", "application/json", "body.malformed_json"),
        (b"[1, 2]", "application/json", "body.not_object"),
        (b'"text"', "application/json", "body.not_object"),
        (b'{"avatar_id": "\xff\xfe"}', "application/json", "body.invalid_utf8"),
        (
            b"avatar_id=av_stock_mock",
            "application/x-www-form-urlencoded",
            "content_type.unsupported",
        ),
        (b"{}", "text/plain", "content_type.unsupported"),
        (b"{}", "application/json; charset=latin-1", "content_type.unsupported"),
        (b"{}", None, "content_type.unsupported"),
    ],
)
def test_unreadable_bodies_answer_400(
    client: Client,
    platform: Platform,
    org: Org,
    content: bytes,
    content_type: str | None,
    code: str,
) -> None:
    headers = org.auth()
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = client.post("/v1/sessions", content=content, headers=headers)
    assert_envelope(response, 400, "invalid_request", code)
    assert _sessions(platform) == 0


@pytest.mark.req("ERR-1", "ERR-2")
def test_a_body_over_the_limit_answers_400_too_large(
    client: Client, platform: Platform, org: Org
) -> None:
    limit = platform.config.limits.request_body_max_bytes
    body = json.dumps(session_body(metadata={"pad": "x" * limit})).encode()
    response = client.post(
        "/v1/sessions", content=body, headers={**org.auth(), "Content-Type": "application/json"}
    )
    assert_envelope(response, 400, "invalid_request", "body.too_large")
    assert _sessions(platform) == 0


@pytest.mark.req("ERR-1", "ERR-2")
def test_a_streamed_body_over_the_limit_is_cut_off(
    client: Client, platform: Platform, org: Org
) -> None:
    limit = platform.config.limits.request_body_max_bytes
    chunks = (b"x" * 65536 for _ in range(limit // 65536 + 2))
    response = client.post(
        "/v1/sessions", content=chunks, headers={**org.auth(), "Content-Type": "application/json"}
    )
    assert_envelope(response, 400, "invalid_request", "body.too_large")


@pytest.mark.req("ERR-1", "EP-SESS-1")
def test_a_missing_body_answers_422_required(client: Client, org: Org) -> None:
    response = client.post("/v1/sessions", headers=org.auth())
    assert_envelope(response, 422, "unprocessable", "validation.required")


@pytest.mark.req("ERR-1", "EP-SESS-1", "EP-RUN-1", "SIM-7")
@pytest.mark.parametrize("content", [b"", b"  \r\n"])
@pytest.mark.parametrize("content_type", ["application/json", None, "text/plain"])
@pytest.mark.parametrize("path", ["/v1/sessions", "/v1/pipecat/sessions", "/v1/run/sim/speech"])
def test_an_empty_body_is_a_missing_body_whatever_its_content_type(
    client: Client,
    platform: Platform,
    org: Org,
    content: bytes,
    content_type: str | None,
    path: str,
) -> None:
    """GAP-ERR-5: no body → 422 ``validation.required`` (param null); an empty JSON body is no
    body, not malformed JSON, and gets exactly what a Python caller without a body gets."""
    headers = org.auth() if content_type is None else {**org.auth(), "Content-Type": content_type}
    response = client.post(path, content=content, headers=headers)
    assert_envelope(response, 422, "unprocessable", "validation.required", None)
    assert response.json()["error"]["message"] == "A request body is required."
    caller = platform.authenticate(org.auth()["Authorization"])
    operation = {"/v1/sessions": "createSession", "/v1/pipecat/sessions": "createPipecatSession"}
    params = {} if path in operation else {"model_id": "sim/speech"}
    with pytest.raises(Unprocessable) as refused:
        platform.call(operation.get(path, "createRun"), caller, params)
    assert (refused.value.code, refused.value.param, refused.value.message) == (
        "validation.required",
        None,
        "A request body is required.",
    )


@pytest.mark.req("ERR-1", "ERR-4", "EP-SESS-1")
@pytest.mark.parametrize(
    ("body", "code", "param"),
    [
        ({"transport": {}}, "validation.required", "avatar_id"),
        (session_body(idle_timeout_seconds=0), "validation.range", "idle_timeout_seconds"),
        (session_body(idle_timeout_seconds=601), "validation.range", "idle_timeout_seconds"),
        (session_body(max_duration_seconds=3601), "validation.range", "max_duration_seconds"),
        (session_body(max_duration_seconds="60"), "validation.type", "max_duration_seconds"),
        (session_body(quality="ultra"), "validation.enum", "quality"),
        (session_body(colour="red"), "validation.unknown_field", "colour"),
        (session_body(metadata=[1]), "validation.type", "metadata"),
        (session_body(metadata={"big": "x" * 9000}), "metadata.too_large", "metadata"),
        (
            session_body(metadata={"_avatar.debug_record": "yes"}),
            "validation.type",
            "metadata._avatar.debug_record",
        ),
        (
            session_body(
                transport={
                    "type": "livekit",
                    "url": "https://x",
                    "room_name": "r",
                    "worker_token": "t",
                }
            ),
            "validation.format",
            "transport.url",
        ),
        (
            session_body(transport={"type": "livekit", "url": "wss://x"}),
            "validation.required",
            "transport.room_name",
        ),
    ],
)
def test_schema_failures_answer_422_with_the_dot_path(
    client: Client, platform: Platform, org: Org, body: dict[str, Any], code: str, param: str
) -> None:
    response = client.post("/v1/sessions", json=body, headers=org.auth())
    assert_envelope(response, 422, "unprocessable", code, param)
    assert _sessions(platform) == 0


@pytest.mark.req("EP-SESS-2", "ERR-2")
@pytest.mark.parametrize("kind", ["websocket", "pipecat", "carrier-pigeon"])
def test_unsupported_transports_answer_400_even_with_other_faults(
    client: Client, org: Org, kind: str
) -> None:
    for body in (
        session_body(transport={"type": kind}),
        {"transport": {"type": kind, "extra": 1}, "quality": "nope"},
    ):
        response = client.post("/v1/sessions", json=body, headers=org.auth())
        assert_envelope(response, 400, "invalid_request", "transport.unsupported", "transport.type")


@pytest.mark.req("EP-SESS-3", "ERR-2")
def test_unknown_reserved_metadata_keys_answer_400(client: Client, org: Org) -> None:
    body = session_body(metadata={"_avatar.secret": True, "ok": 1})
    response = client.post("/v1/sessions", json=body, headers=org.auth())
    assert_envelope(
        response, 400, "invalid_request", "metadata.reserved_key", "metadata._avatar.secret"
    )
    ok = session_body(metadata={"_avatar.debug_record": True})
    assert client.post("/v1/sessions", json=ok, headers=org.auth()).status_code == 201


@pytest.mark.req("LIM-7", "ERR-4")
@pytest.mark.parametrize(
    ("query", "code", "param"),
    [
        ("limit=0", "validation.range", "limit"),
        ("limit=101", "validation.range", "limit"),
        ("limit=ten", "validation.type", "limit"),
        ("limit=1&limit=2", "validation.type", "limit"),
        ("status=sleeping", "validation.enum", "status"),
        # A cursor of the wrong shape names no item, like an unknown one (GAP-ERR-5).
        ("starting_after=run_01", "validation.cursor", "starting_after"),
        ("colour=red", "validation.unknown_parameter", "colour"),
    ],
)
def test_query_parameters_are_checked_against_the_spec(
    client: Client, org: Org, query: str, code: str, param: str
) -> None:
    response = client.get(f"/v1/sessions?{query}", headers=org.auth())
    assert_envelope(response, 422, "unprocessable", code, param)


@pytest.mark.req("LIM-7")
def test_run_event_limits_come_from_their_own_parameter(client: Client, org: Org) -> None:
    run = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}, headers=org.auth()
    ).json()
    ok = client.get(f"/v1/runs/{run['id']}/events?limit=500", headers=org.auth())
    assert ok.status_code == 200
    over = client.get(f"/v1/runs/{run['id']}/events?limit=501", headers=org.auth())
    assert_envelope(over, 422, "unprocessable", "validation.range", "limit")
    negative = client.get(f"/v1/runs/{run['id']}/events?starting_after=-1", headers=org.auth())
    assert_envelope(negative, 422, "unprocessable", "validation.range", "starting_after")


@pytest.mark.req("ERR-1", "ERR-2", "AUTH-7")
@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("/v1/sessions/run_01JAAAAAAAAAAAAAAAAAAAAAAA", "session.not_found"),
        ("/v1/sessions/sess_123", "session.not_found"),
        ("/v1/sessions/sess_01JAAAAAAAAAAAAAAAAAAAAAAA", "session.not_found"),
        ("/v1/runs/sess_01JAAAAAAAAAAAAAAAAAAAAAAA", "run.not_found"),
        ("/v1/runs/run_01JAAAAAAAAAAAAAAAAAAAAAAAA/status", "run.not_found"),
        ("/v1/avatars/sess_x", "avatar.not_found"),
        ("/v1/assets/asset_short/content", "asset.not_found"),
    ],
)
def test_ids_of_the_wrong_prefix_or_length_answer_404(
    client: Client, org: Org, path: str, code: str
) -> None:
    response = client.get(path, headers=org.auth())
    assert response.status_code == 404
    assert response.json()["error"]["code"] == code


@pytest.mark.req("ERR-1", "ERR-2")
def test_oversized_headers_answer_400(client: Client, platform: Platform, org: Org) -> None:
    limit = platform.config.limits.request_headers_max_bytes
    headers = {**org.auth(), "X-Padding": "p" * limit}
    response = client.post("/v1/sessions", json=session_body(), headers=headers)
    assert_envelope(response, 400, "invalid_request", "headers.too_large")
    assert _sessions(platform) == 0


@pytest.mark.req("ERR-1", "ERR-2", "ERR-3")
def test_an_unexpected_exception_is_a_500_envelope_without_traceback(
    client: Client,
    platform: Platform,
    org: Org,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom: secret internals")

    monkeypatch.setattr(platform.sessions, "list", explode)
    with caplog.at_level(logging.ERROR, logger=FACADE_LOGGER):
        response = client.get("/v1/sessions", headers=org.auth())
    assert_envelope(response, 500, "internal", "internal_error")
    assert "boom" not in response.text and "Traceback" not in response.text
    # The server's log has what the client must not see: the traceback, under the request id.
    (record,) = [r for r in caplog.records if r.name == FACADE_LOGGER]
    assert response.headers["x-request-id"] in record.getMessage()
    assert "GET /v1/sessions" in record.getMessage()
    assert record.exc_info is not None and "boom: secret internals" in str(record.exc_info[1])


@pytest.mark.req("ERR-3", "CONV-1")
def test_every_response_carries_a_fresh_request_id(client: Client, org: Org) -> None:
    responses = [
        client.get("/v1/status"),
        client.get("/v1/billing/plans"),
        client.get("/v1/models", headers=org.auth()),
        client.get("/v1/models"),
        client.post("/v1/sessions", json=session_body(), headers=org.auth()),
        client.get("/nowhere"),
        client.put("/v1/status"),
        client.get("/_sim/clock"),
    ]
    ids = [r.headers["x-request-id"] for r in responses]
    assert all(i.startswith("req_") and len(i) == 30 for i in ids)
    assert len(set(ids)) == len(ids)
