"""Fuzzing the facade at the byte level (ERR-1 … ERR-4, HAR-1).

Schemathesis (``test_fuzz.py``) speaks the spec's language; this speaks bytes. Hypothesis builds
raw ASGI requests, as uvicorn hands them over after parsing HTTP: any method, path segments made of
arbitrary (percent-encoded) bytes, arbitrary query strings, headers with real and invented names
and arbitrary latin-1 values (lying ``Content-Length`` and ``Content-Type`` included), and bodies
that are random bytes or valid bodies with JSON's dark corners put in (escaped lone surrogates,
``1e999``, ``NaN``, 400-digit integers, deep nesting, duplicate keys, truncation), sent in several
chunks. For every request:

* no 5xx, and the facade saw no unexpected exception;
* every answer carries ``X-Request-Id``; every non-2xx answer is exactly the envelope, valid JSON
  by a strict parser (no ``NaN`` or ``Infinity``), echoing the request id, with a code the
  operation lists in ``x-error-codes`` (or the spec's global codes);
* a refused request leaves the platform exactly as it was (``state_digest``).

``make test`` runs 1,000 examples (a few seconds); ``make test-slow`` runs 10,000.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, unquote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim.asgi import create_app
from sim.asgi.openapi import load_openapi
from sim.platform import Platform
from tests.asgi.support import (
    ADMIN_TOKEN,
    ENVELOPE_KEYS,
    PUBLIC_READS,
    make_org,
    state_digest,
    strict_json,
)
from tests.world import session_body

SPEC = load_openapi()
GLOBAL_CODES = {
    *SPEC["x-global-error-codes"],
    "headers.too_large",
    "api_key.missing",
    "api_key.malformed",
    "api_key.invalid",
    "api_key.revoked",
}


class Fuzzed:
    """One platform and app shared by the examples of a test (state carries over, as in life)."""

    def __init__(self) -> None:
        self.platform = Platform.create()
        self.org = make_org(self.platform, "Fuzz", "enterprise")
        self.app = create_app(self.platform, admin_token=ADMIN_TOKEN)
        self.table = self.app.state.route_table
        self.context = self._context()

    def _context(self) -> Any:
        stack: Any = self.app.middleware_stack or self.app.build_middleware_stack()
        self.app.middleware_stack = stack
        while stack is not None and type(stack).__name__ != "RequestContext":
            stack = getattr(stack, "app", None)
        return stack

    def codes_for(self, method: str, path: str) -> set[str]:
        found = self.table.match(path)
        if found is None:
            return set()
        route = found[0].routes.get(method)
        if route is None:
            return set()
        operation = SPEC["paths"][route.path][route.method.lower()]
        return set(operation["x-error-codes"])

    def send(
        self, method: str, raw_path: bytes, query: bytes, headers: list[tuple[bytes, bytes]],
        chunks: list[bytes],
    ) -> tuple[int, dict[bytes, bytes], bytes]:  # fmt: skip
        path = unquote(raw_path.decode("ascii"), errors="replace")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": raw_path,
            "query_string": query,
            "root_path": "",
            "headers": headers,
            "client": ("127.0.0.1", 50000),
            "server": ("sim.test", 80),
        }
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1}
            for index, chunk in enumerate(chunks or [b""])
        ]
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        asyncio.run(self.app(scope, receive, send))
        start = next(m for m in sent if m["type"] == "http.response.start")
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return int(start["status"]), {k.lower(): v for k, v in start["headers"]}, body


# -- strategies ----------------------------------------------------------------------------------

_TEMPLATES = [
    "/v1/sessions", "/v1/sessions/{}", "/v1/sessions/{}/end", "/v1/pipecat/sessions",
    "/v1/avatars", "/v1/avatars/{}", "/v1/run/{}", "/v1/run/sim/{}", "/v1/runs", "/v1/runs/{}",
    "/v1/runs/{}/status", "/v1/runs/{}/events", "/v1/runs/{}/cancel", "/v1/assets",
    "/v1/assets/{}/content", "/v1/models", "/v1/usage", "/v1/billing/quota",
    "/v1/billing/plans", "/v1/status", "/_sim/clock", "/_sim/clock/advance", "/{}", "/v1/{}",
]  # fmt: skip
_SEGMENTS = st.one_of(
    st.sampled_from(
        ["sess_01JAAAAAAAAAAAAAAAAAAAAAAA", "run_01JAAAAAAAAAAAAAAAAAAAAAAA", "av_stock_mock",
         "asset_01JAAAAAAAAAAAAAAAAAAAAAAA", "echo-text", "..", "", "%00", "%ff%fe"]
    ),
    st.binary(max_size=12).map(lambda b: quote(b, safe="")),
    st.text(max_size=8).map(lambda t: quote(t, safe="/")),
)  # fmt: skip


@st.composite
def _path(draw: st.DrawFn) -> bytes:
    template = draw(st.sampled_from(_TEMPLATES))
    path = template.format(draw(_SEGMENTS)) if "{}" in template else template
    if draw(st.integers(0, 15)) == 0:
        path += "/"
    return path.encode("ascii")


_QUERY_NAMES = ["limit", "starting_after", "status", "scope", "q", "period", "period_start",
                "period_end", "timezone", "org_id", "x", ""]  # fmt: skip
_QUERY_VALUES = st.one_of(
    st.sampled_from(["1", "0", "101", "-1", "1e999", "9" * 400, "ten", "current_month",
                     "2026-01-01T00:00:00Z", "Europe/Paris", "%ED%A0%80", "%FF", ""]),
    st.text(max_size=10).map(lambda t: quote(t)),
)  # fmt: skip


@st.composite
def _query(draw: st.DrawFn, names: tuple[str, ...] = ()) -> bytes:
    if draw(st.integers(0, 12)) == 6:
        return draw(st.binary(max_size=30)).replace(b" ", b"+")
    pool = list(names) * 4 + _QUERY_NAMES if names else _QUERY_NAMES
    pairs = draw(st.lists(st.tuples(st.sampled_from(pool), _QUERY_VALUES), max_size=3))
    return "&".join(f"{name}={value}" for name, value in pairs).encode("latin-1", "replace")


_HEADER_VALUE = st.one_of(
    st.sampled_from(
        [b"application/json", b"application/json; charset=utf-16", b"text/plain",
         b"multipart/form-data; boundary=x", b"application/x-www-form-urlencoded", b"0", b"-1",
         b"99999999999999999999", b"", b"Bearer ", b"\xff\xfe"]
    ),
    st.binary(max_size=40).map(lambda b: bytes(c for c in b if c not in (0, 10, 13))),
)  # fmt: skip


@st.composite
def _headers(draw: st.DrawFn, fuzz: Fuzzed) -> list[tuple[bytes, bytes]]:
    keys = fuzz.org.keys
    auth = draw(
        st.sampled_from(
            [f"Bearer {keys['unrestricted']}", f"Bearer {keys['unrestricted']}",
             f"Bearer {keys['runs_read']}", f"Bearer {keys['revoked']}", f"Bearer {ADMIN_TOKEN}",
             "Bearer sk_live_nope", "Basic abc", None]
        )
    )  # fmt: skip
    headers: list[tuple[bytes, bytes]] = []
    if auth is not None:
        headers.append((b"authorization", auth.encode()))
    for _ in range(draw(st.integers(0, 3))):
        name = draw(
            st.sampled_from(
                [b"content-type", b"content-length", b"idempotency-key", b"x-request-id",
                 b"authorization", b"x-anything", b"transfer-encoding"]
            )
        )  # fmt: skip
        headers.append((name, draw(_HEADER_VALUE)))
    if draw(st.integers(0, 100)) == 50:  # (hypothesis favours the ends of a range)
        headers.append((b"x-padding", b"p" * 9000))
    return headers


_DARK = [
    '"\\ud800"', '"\\udfff\\ud800"', "1e999", "-1e999", "NaN", "Infinity", "9" * 400,
    '"' + "x" * 2000 + '"', "[" * 80 + "]" * 80, "{}", "[]", "null", "true", "0.5", '"wss://x"',
]  # fmt: skip
_VALID_BODIES = [
    session_body(metadata={"k": "v"}),
    {"avatar_id": "av_stock_mock", "quality": "mock"},
    {"input": {"prompt": "hello"}, "external_id": "e-1", "metadata": {"a": [1, 2]}},
    {"seconds": 1},
]


_MULTIPART = (
    b'--x\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n'
    b"Content-Type: image/png\r\n\r\n\x89PNG\r\n\x1a\nnot really\r\n--x\r\n"
    b'Content-Disposition: form-data; name="name"\r\n\r\nMe\r\n--x--\r\n'
)


@st.composite
def _body(draw: st.DrawFn, template: str) -> bytes:
    valid = next((b for _, t, _, b in _MEANINGFUL if t == template and b is not None), None)
    kind = draw(st.integers(0, 4))
    if template == "/v1/avatars" and kind:
        return _MULTIPART[: draw(st.integers(0, len(_MULTIPART)))] if kind == 1 else _MULTIPART
    if kind == 0 or (valid is None and kind == 1):
        return draw(st.binary(max_size=200))
    text = json.dumps(valid if valid is not None else draw(st.sampled_from(_VALID_BODIES)))
    if kind >= 2:  # put a dark value where a value was
        places = [i for i, ch in enumerate(text) if ch in ":[,"]
        at = draw(st.sampled_from(places))
        end = at + 1
        while end < len(text) and text[end] not in ",}]":
            end += 1
        text = text[: at + 1] + " " + draw(st.sampled_from(_DARK)) + text[end:]
    if kind == 4 and draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]  # truncated
    return text.encode("utf-8", "surrogatepass")


@st.composite
def _chunks(draw: st.DrawFn, template: str) -> list[bytes]:
    body = draw(_body(template))
    cuts = sorted(draw(st.lists(st.integers(0, len(body)), max_size=3)))
    bounds = [0, *cuts, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


#: (method, path template, content type, a valid body) of requests that mean something.
_MEANINGFUL: list[tuple[str, str, bytes | None, dict[str, Any] | None]] = [
    ("POST", "/v1/sessions", b"application/json", _VALID_BODIES[0]),
    ("POST", "/v1/pipecat/sessions", b"application/json", _VALID_BODIES[1]),
    ("POST", "/v1/run/sim/echo-text", b"application/json", _VALID_BODIES[2]),
    ("POST", "/v1/run/{}", b"application/json", _VALID_BODIES[2]),
    ("POST", "/_sim/clock/advance", b"application/json", _VALID_BODIES[3]),
    ("POST", "/v1/avatars", b"multipart/form-data; boundary=x", None),
    ("POST", "/v1/sessions/{}/end", None, None),
    ("POST", "/v1/runs/{}/cancel", None, None),
    ("DELETE", "/v1/runs/{}", None, None),
    ("GET", "/v1/sessions", None, None),
    ("GET", "/v1/sessions/{}", None, None),
    ("GET", "/v1/avatars", None, None),
    ("GET", "/v1/avatars/{}", None, None),
    ("GET", "/v1/runs", None, None),
    ("GET", "/v1/runs/{}", None, None),
    ("GET", "/v1/runs/{}/status", None, None),
    ("GET", "/v1/runs/{}/events", None, None),
    ("GET", "/v1/assets", None, None),
    ("GET", "/v1/assets/{}/content", None, None),
    ("GET", "/v1/usage", None, None),
    ("GET", "/v1/billing/quota", None, None),
    ("GET", "/v1/models", None, None),
    ("GET", "/v1/status", None, None),
]


@st.composite
def _meaningful(draw: st.DrawFn, fuzz: Fuzzed) -> dict[str, Any]:
    method, template, content_type, _ = draw(st.sampled_from(_MEANINGFUL))
    path = template.format(draw(_SEGMENTS)) if "{}" in template else template
    found = fuzz.table.match(template.replace("{}", "x"))
    route = found[0].routes.get(method) if found else None
    names = tuple(p.name for p in route.parameters_in("query")) if route else ()
    headers = [(b"authorization", f"Bearer {fuzz.org.keys['unrestricted']}".encode())]
    if draw(st.integers(0, 4)) == 0:
        headers = draw(_headers(fuzz))
    elif content_type is not None:
        headers.append((b"content-type", content_type))
    if template.startswith("/_sim"):
        headers = [(b"authorization", f"Bearer {ADMIN_TOKEN}".encode())]
    if template == "/v1/sessions" and draw(st.booleans()):
        headers.append((b"idempotency-key", draw(st.sampled_from([b"k", b"", b"k" * 300]))))
    return {
        "method": method,
        "raw_path": path.encode("ascii"),
        "query": draw(_query(names)) if method == "GET" else b"",
        "headers": headers,
        "chunks": draw(_chunks(template)) if method == "POST" else [],
    }


@st.composite
def _anything(draw: st.DrawFn, fuzz: Fuzzed) -> dict[str, Any]:
    method = draw(st.sampled_from(["GET", "POST", "DELETE", "PUT", "HEAD", "OPTIONS", "PATCH"]))
    return {
        "method": method,
        "raw_path": draw(_path()),
        "query": draw(_query()),
        "headers": draw(_headers(fuzz)),
        "chunks": draw(_chunks("")) if method in ("POST", "PUT", "DELETE") else [],
    }


@st.composite
def _request(draw: st.DrawFn, fuzz: Fuzzed) -> dict[str, Any]:
    if draw(st.integers(0, 8)) in (3, 4):
        return draw(_anything(fuzz))
    return draw(_meaningful(fuzz))


# -- the property --------------------------------------------------------------------------------


def check(fuzz: Fuzzed, request: dict[str, Any]) -> None:
    fuzz.platform.clock.advance(7.0)  # time passes between requests: timers fire, windows slide
    before = state_digest(fuzz.platform)
    fuzz.context.last_exception = None
    status, headers, body = fuzz.send(**request)
    assert status < 500, (request, body)
    assert fuzz.context.last_exception is None, fuzz.context.last_exception
    request_id = headers[b"x-request-id"].decode()
    assert request_id.startswith("req_")
    if 200 <= status < 300:
        if headers.get(b"content-type", b"").startswith(b"application/json"):
            strict_json(body)
        _assert_reads_still_answer(fuzz, request)
        return
    answer = strict_json(body)
    assert set(answer) == {"error"} and set(answer["error"]) == ENVELOPE_KEYS, answer
    error = answer["error"]
    assert error["request_id"] == request_id
    path = unquote(request["raw_path"].decode("ascii"), errors="replace")
    if path.startswith("/v1/"):
        allowed = fuzz.codes_for(request["method"], path) | GLOBAL_CODES
        assert error["code"] in allowed, (error, request)
    assert state_digest(fuzz.platform) == before, (request, error)


def _assert_reads_still_answer(fuzz: Fuzzed, after: dict[str, Any]) -> None:
    """What an accepted request stored must not break a later answer (a lone surrogate once
    made the organization's list answer 500 from then on)."""
    auth = [(b"authorization", f"Bearer {fuzz.org.keys['unrestricted']}".encode())]
    for read in PUBLIC_READS:
        path, _, query = read.partition("?")
        status, _, body = fuzz.send("GET", path.encode(), query.encode(), auth, [])
        assert status == 200, (read, after, body)
        strict_json(body)


def _examples(count: int) -> Iterator[Any]:
    fuzz = Fuzzed()

    @settings(
        max_examples=count,
        deadline=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(data=st.data())
    def run(data: st.DataObject) -> None:
        check(fuzz, data.draw(_request(fuzz)))

    yield run


@pytest.mark.req("ERR-1", "ERR-2", "ERR-3", "ERR-4", "HAR-1", "CONV-3")
def test_raw_requests_get_the_envelope_and_refusals_change_nothing() -> None:
    for run in _examples(1000):
        run()


@pytest.mark.slow
@pytest.mark.req("ERR-1", "ERR-2", "ERR-3", "ERR-4", "HAR-1", "CONV-3")
def test_raw_requests_at_length() -> None:
    for run in _examples(10_000):
        run()
