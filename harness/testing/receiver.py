"""A real webhook receiver for tests: verifies, deduplicates and can refuse on purpose.

Why it exists: the simulator's webhooks are meant for real receivers, and the way to know a
receiver accepts them is to be one. This one listens on a loopback port, verifies every request
with the Standard Webhooks reference library (``standardwebhooks``) at its default tolerance,
deduplicates on ``webhook-id`` (delivery is at least once: the same event may come again after a
lost or late answer) and, when asked, fails attempts on purpose so retries happen. What it
received is there to read: every attempt (``attempts``) and every event once (``events``).

It works the same in process and by URL: in process the simulator delivers for real too
(``harness.testing.delivery``), from inside its clock steps. So waiting for webhooks is waiting
on the simulator's time: ``wait_until`` counts the target's seconds and lets time pass the
target's way (running the virtual clock in process), like ``wait_for``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

if TYPE_CHECKING:
    import httpx

    from harness.testing.admin import SimAdmin
    from harness.testing.target import Target

__all__ = ["ReceivedAttempt", "WebhookReceiver"]

#: Wall seconds a wait by URL gives the webhooks in flight before it lets time move on.
IN_FLIGHT_SECONDS = 0.02

#: Decides whether to refuse an attempt on purpose: ``(webhook_id, n)`` where ``n`` counts this
#: event's attempts from 1.
FailPolicy = Callable[[str, int], bool]


@dataclass(frozen=True, slots=True)
class ReceivedAttempt:
    """One request the receiver got and what it answered.

    ``verified`` says the signature and timestamp passed ``standardwebhooks`` (``error`` says
    why not); ``answered`` is the status sent back; ``payload`` is the parsed body once verified.

    Example::

        refused = [a for a in hooks.attempts if not a.verified]
        assert not refused, refused[0].error
    """

    webhook_id: str
    webhook_timestamp: str
    verified: bool
    error: str | None
    answered: int
    payload: dict[str, Any] | None
    received_at: float  # the receiver's time.monotonic() on arrival


class WebhookReceiver:
    """A Standard Webhooks endpoint on ``127.0.0.1`` for a test to register and read.

    Example::

        with WebhookReceiver(fail=lambda webhook_id, n: n == 1) as hooks:
            hooks.register(sim_admin, org_id)     # its endpoint, secret and clock
            ...  # make sessions happen
            hooks.wait_until(lambda h: len(h.events) >= 5, within=30)
            assert all(a.verified for a in hooks.attempts)

    A request is verified with ``Webhook(secret).verify`` (400 if it fails, 503 while no secret
    is set, so the sender retries); then ``fail`` may refuse it (500); otherwise a new event is
    kept and answered 204, and an event seen before is answered 200 and not kept again.
    ``acknowledged`` counts the 2xx answers per ``webhook-id``: more than one means the sender
    delivered an event again after it had been accepted.
    """

    def __init__(self, secret: str | None = None, *, fail: FailPolicy | None = None) -> None:
        self.secret = secret
        self._fail = fail
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._attempts: list[ReceivedAttempt] = []
        self._events: list[dict[str, Any]] = []
        self._seen: Counter[str] = Counter()  # attempts per webhook-id
        self._acknowledged: Counter[str] = Counter()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None
        self._target: Target | None = None
        #: The event types its endpoint asked for (``None``: all), once registered here.
        self.event_types: tuple[str, ...] | None = None

    # -- registering -------------------------------------------------------------------------

    def register(
        self, admin: SimAdmin, org_id: str, event_types: list[str] | None = None
    ) -> dict[str, Any]:
        """Register this receiver as a webhook endpoint of ``org_id`` through ``admin`` (a
        ``SimAdmin``), keep its secret and wait on the simulator's clock from now on; the
        endpoint (``restore`` unregisters it)."""
        endpoint = admin.register_webhook(org_id, self.url, event_types)
        self.secret = str(endpoint["secret"])
        self.event_types = None if event_types is None else tuple(event_types)
        self._target = admin.target
        return endpoint

    def wants(self, event_type: str) -> bool:
        """Whether the endpoint registered here asked for ``event_type``."""
        if self.event_types is None:
            return True
        return any(
            pattern in ("*", event_type)
            or (pattern.endswith(".*") and event_type.startswith(pattern[:-1]))
            for pattern in self.event_types
        )

    # -- what a test reads -------------------------------------------------------------------

    @property
    def url(self) -> str:
        """Where to register the endpoint."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/webhooks"

    @property
    def attempts(self) -> list[ReceivedAttempt]:
        """Every request received, in arrival order."""
        with self._lock:
            return list(self._attempts)

    @property
    def events(self) -> list[dict[str, Any]]:
        """Each verified event once (``{id, type, created_at, data}``), in arrival order."""
        with self._lock:
            return list(self._events)

    @property
    def acknowledged(self) -> Counter[str]:
        """2xx answers given per ``webhook-id``."""
        with self._lock:
            return Counter(self._acknowledged)

    def events_about(self, object_id: str) -> list[dict[str, Any]]:
        """The events whose ``data.object.id`` is ``object_id`` (a session, run or avatar)."""
        return [e for e in self.events if _object_id(e) == object_id]

    def wait_until(
        self,
        predicate: Callable[[WebhookReceiver], bool],
        *,
        within: float,
        client: httpx.Client | None = None,
    ) -> WebhookReceiver:
        """Wait until ``predicate(self)`` holds, at most ``within`` of the target's seconds
        (``AssertionError`` saying what arrived otherwise), letting its time pass as
        ``wait_for`` does. The target is the simulator this receiver was ``register``-ed with,
        or ``client``'s (``harness.testing.target_of``).

        Example::

            hooks.wait_until(lambda h: len(h.events_about(session_id)) == 5, within=30)
        """
        __tracebackhide__ = True
        from harness.testing.target import target_of

        if client is not None:
            target = target_of(client)
        elif self._target is not None:
            target = self._target
        else:
            raise TypeError(
                "wait_until needs the target's clock: register the receiver with "
                "receiver.register(sim_admin, org_id), or pass client=api_client"
            )
        deadline = target.now() + within
        while not predicate(self):
            if target.now() >= deadline:
                attempts, events = self.attempts, self.events
                raise AssertionError(
                    f"the receiver waited {within:g} s ({target.seconds}); it got "
                    f"{len(attempts)} attempts and {len(events)} distinct events"
                )
            if target.kind != "in_process":
                # Served deliveries are posted from the server's loop: give those in flight a
                # moment to land before time moves on (in process they land inside the step).
                with self._changed:
                    self._changed.wait(IN_FLIGHT_SECONDS)
                if predicate(self):
                    break
            target.wait(deadline)
        return self

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> WebhookReceiver:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> WebhookReceiver:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    # -- handling one request ----------------------------------------------------------------

    def _receive(self, headers: dict[str, str], body: bytes) -> int:
        webhook_id = headers.get("webhook-id", "")
        stamp = headers.get("webhook-timestamp", "")
        secret = self.secret
        payload: Any = None
        error: str | None = None
        if secret is None:
            error, status = "no secret set yet", 503
        else:
            try:
                payload = Webhook(secret).verify(body, headers)
                status = 0
            except (WebhookVerificationError, ValueError) as refused:
                error, status = str(refused) or type(refused).__name__, 400
        with self._changed:
            self._seen[webhook_id] += 1
            if status == 0:
                if self._fail is not None and self._fail(webhook_id, self._seen[webhook_id]):
                    status = 500
                elif self._acknowledged[webhook_id]:
                    status = 200  # processed before: acknowledge, do not process again
                else:
                    status = 204
                    self._events.append(payload)
                if status < 300:
                    self._acknowledged[webhook_id] += 1
            self._attempts.append(
                ReceivedAttempt(
                    webhook_id=webhook_id,
                    webhook_timestamp=stamp,
                    verified=error is None,
                    error=error,
                    answered=status,
                    payload=payload if isinstance(payload, dict) else None,
                    received_at=time.monotonic(),
                )
            )
            self._changed.notify_all()
        return status

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length)
                headers = {key.lower(): value for key, value in self.headers.items()}
                status = receiver._receive(headers, body)
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


def _object_id(event: dict[str, Any]) -> Any:
    data = event.get("data")
    obj = data.get("object") if isinstance(data, dict) else None
    return obj.get("id") if isinstance(obj, dict) else None
