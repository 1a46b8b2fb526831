"""What every session suite reaches for: a polite create, refusals read by name, and clean-up.

Why in the toolkit: each suite used to copy the same three helpers from the examples. A create
that meets the per-key rate limit (``429 rate_limit``) should wait out ``Retry-After`` and try
again, in the target's time, as a polite client does (``create_session``); a refusal is judged by
its envelope's ``type`` and ``code``, never by its wording (``expect_error``); and what a test
leaves running counts against the caps of the next one on a shared server, so the sessions a test
created are ended after it (``SessionTracker``, which the plugin's ``api_client`` uses).
"""

from __future__ import annotations

import contextlib
import email.utils
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

__all__ = ["SessionTracker", "create_session", "expect_error", "retry_after"]

#: The longest ``create_session`` keeps waiting out rate limits, in the target's seconds.
RATE_LIMIT_PATIENCE = 300.0
#: How long ending a session may take (the drain) before the tracker gives up on it.
END_WITHIN = 60.0


def create_session(
    client: httpx.Client,
    body: Mapping[str, Any],
    *,
    idempotency_key: str | None = None,
    headers: Mapping[str, str] | None = None,
    patience: float = RATE_LIMIT_PATIENCE,
) -> httpx.Response:
    """``POST /v1/sessions``, waiting out ``429 rate_limit`` by its ``Retry-After`` (in the
    target's seconds, ``patience`` at most); the last response, whatever it is, so a refusal
    can be judged with ``expect_error``. Other refusals (a cap, ``503 at_capacity``) are
    answered at once.

    Example::

        created = create_session(api_client, BODY)
        assert created.status_code == 201, created.text
        session = created.json()
    """
    __tracebackhide__ = True
    from harness.testing.waiting import pass_time

    sent = dict(headers or {})
    if idempotency_key is not None:
        sent["Idempotency-Key"] = idempotency_key
    waited = 0.0
    while True:
        response = client.post("/v1/sessions", json=dict(body), headers=sent)
        if response.status_code != 429 or _error(response).get("type") != "rate_limit":
            return response
        pause = retry_after(response)
        if waited + pause > patience:
            return response
        pass_time(client, pause)
        waited += pause


def expect_error(
    response: httpx.Response, type: str, code: str | None = None, *, status: int | None = None
) -> dict[str, Any]:
    """Fail unless ``response`` is an error whose envelope says ``type`` (and ``code``, and
    the HTTP ``status``, when given); the envelope's ``error`` object.

    Example::

        second = create_session(api_client, BODY)
        expect_error(second, "quota_exceeded", "concurrent_sessions", status=429)
    """
    __tracebackhide__ = True
    said = f"{response.request.method} {response.request.url.path} answered"
    if response.is_success:
        raise AssertionError(
            f"{said} {response.status_code}, not the {type}/{code} error: {response.text[:300]}"
        )
    error = _error(response)
    if not error:
        raise AssertionError(
            f"{said} {response.status_code} without an error envelope: {response.text[:300]}"
        )
    got = (error.get("type"), error.get("code"), response.status_code)
    want = (type, code if code is not None else got[1], status if status is not None else got[2])
    if got != want:
        raise AssertionError(
            f"{said} {response.status_code} {got[0]}/{got[1]}, not "
            f"{want[2]} {type}/{code if code is not None else '*'}: {error.get('message')}"
        )
    return error


def retry_after(response: httpx.Response) -> float:
    """The seconds ``Retry-After`` asks to wait (a number, or an HTTP date counted from the
    response's ``Date`` or now); ``AssertionError`` when the header is missing or unreadable.

    Example::

        refused = create_session(api_client, BODY, patience=0)
        pass_time(api_client, retry_after(refused))
    """
    __tracebackhide__ = True
    value = response.headers.get("retry-after")
    if value is None:
        raise AssertionError(
            f"{response.status_code} without Retry-After (headers: {dict(response.headers)})"
        )
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        raise AssertionError(f"Retry-After {value!r} is neither seconds nor a date") from None
    date = response.headers.get("date")
    base = email.utils.parsedate_to_datetime(date) if date else datetime.now(UTC)
    return max(0.0, (moment - base).total_seconds())


class SessionTracker:
    """The sessions created through the clients it watches, ended after the test: the plugin's
    ``api_client`` and ``fresh_org`` clients are watched (the ``created_sessions`` fixture).
    Set ``enabled = False`` to leave them as they are.

    Example::

        def test_leaves_nothing_behind(api_client, created_sessions):
            session = create_session(api_client, BODY).json()
            assert created_sessions.ids == [session["id"]]   # ended after the test
    """

    def __init__(self) -> None:
        self.enabled = True
        self._made: list[tuple[httpx.Client, str]] = []

    @property
    def ids(self) -> list[str]:
        """The ids of the sessions seen created, oldest first."""
        return [session_id for _, session_id in self._made]

    def watch(self, client: httpx.Client) -> httpx.Client:
        """Note every session ``client`` creates from now on; returns the client."""

        def seen(response: httpx.Response) -> None:
            request = response.request
            if request.method != "POST" or request.url.path.rstrip("/") != "/v1/sessions":
                return
            if not response.is_success:
                return
            response.read()
            with contextlib.suppress(ValueError, KeyError, TypeError):
                session_id = str(response.json()["id"])
                if session_id not in self.ids:
                    self._made.append((client, session_id))

        client.event_hooks["response"] = [*client.event_hooks["response"], seen]
        return client

    def end_all(self, client: httpx.Client | None = None) -> None:
        """End every session seen created (through ``client``, or any) that is not over, and
        wait until it is (the target's seconds); an error names those that would not end."""
        from harness.testing.waiting import StateNotReached, wait_for

        made = [(c, i) for c, i in self._made if client is None or c is client]
        self._made = [(c, i) for c, i in self._made if (c, i) not in made]
        if not self.enabled:
            return
        problems: list[str] = []
        for client, session_id in made:
            if client.is_closed:
                continue
            try:
                ended = client.post(f"/v1/sessions/{session_id}/end")
                if ended.status_code == 404:
                    continue
                wait_for(client, session_id, ("ended", "failed", "canceled"), within=END_WITHIN)
            except (StateNotReached, httpx.HTTPError) as error:
                problems.append(f"{session_id}: {error}")
        if problems:
            raise AssertionError("sessions the test created would not end:\n" + "\n".join(problems))


def _error(response: httpx.Response) -> dict[str, Any]:
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return {}
    return error if isinstance(error, dict) else {}
