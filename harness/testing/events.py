"""Why and when a session moved: its lifecycle events, from the best source the target has.

Why a helper: the session resource says where a session is, not how it got there. The reason a
session ended (``idle_timeout``, ``max_duration``) and the moment it did travel only in events.
In process they are in the simulator's event log; a served simulator with an admin token gives
the same log through ``/_sim``; a deployment sends them as webhooks, which a test can collect
with a ``WebhookReceiver``; and when none of those is at hand, ``GET /v1/sessions/{id}`` still
gives the timestamps it has (created, started, first frame) and the final status, without
reasons. ``SessionHistory.source`` says which one a history came from, so a test that needs the
reasons can say so (``require_reasons``) instead of failing for the wrong cause.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import httpx

from harness.testing.statuses import wanted_statuses
from harness.testing.target import target_of

if TYPE_CHECKING:
    from harness.testing.receiver import WebhookReceiver

__all__ = [
    "LifecycleEvent",
    "NoWebhooks",
    "SessionHistory",
    "Source",
    "from_resource",
    "session_events",
]

Source = Literal["event_log", "webhooks", "resource"]

#: The order of a session's events that share one instant (webhooks may arrive out of order).
_RANK = {
    name: rank
    for rank, name in enumerate(
        (
            "session.queued",
            "session.starting",
            "session.first_frame",
            "session.barge_in",
            "session.ending",
            "session.ended",
            "session.failed",
            "session.canceled",
            "session.usage",
        )
    )
}

#: Events that report a session without moving it.
_NO_MOVE = frozenset({"session.usage", "session.barge_in"})
#: The status each moving event announces (a source without the session's status says it).
_STATUS_OF = {
    "session.queued": "queued",
    "session.starting": "starting",
    "session.first_frame": "running",
    "session.ending": "ending",
    "session.ended": "ended",
    "session.failed": "failed",
    "session.canceled": "canceled",
}

#: The event each terminal status is announced by.
_TERMINAL_EVENTS = {
    "ended": "session.ended",
    "failed": "session.failed",
    "canceled": "session.canceled",
}


@dataclass(frozen=True, slots=True)
class LifecycleEvent:
    """One event of a session: its ``type`` (``session.ended``), when it happened (``at``,
    ISO-8601, ``None`` when the source does not know), the status it reports, and why:
    ``reason`` for ``session.ended``, ``code`` for ``session.failed``. ``data`` has the rest
    (``worker_id``, ``drain_seconds``, ...).

    Example::

        starting = session_events(session_id).first("session.starting")
        assert starting.data["worker_id"] and starting.at is not None
    """

    type: str
    at: str | None
    status: str | None
    reason: str | None = None
    code: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        why = self.reason or self.code
        return f"{self.at or '(time unknown)'} {self.type}" + (f" ({why})" if why else "")


@dataclass(frozen=True, slots=True)
class SessionHistory(Sequence[LifecycleEvent]):
    """A session's lifecycle events, oldest first, and where they came from (``source``:
    ``event_log``, ``webhooks`` or ``resource``, the last without reasons).

    Example::

        history = session_events(session_id).require_reasons()  # skips without reasons
        assert history.types.index("session.ending") < history.types.index("session.ended")
        assert history.reason == "client_request"
    """

    session_id: str
    source: Source
    events: tuple[LifecycleEvent, ...]

    @overload
    def __getitem__(self, index: int) -> LifecycleEvent: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[LifecycleEvent]: ...
    def __getitem__(self, index: int | slice) -> LifecycleEvent | Sequence[LifecycleEvent]:
        return self.events[index]

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self) -> Iterator[LifecycleEvent]:
        return iter(self.events)

    @property
    def types(self) -> list[str]:
        """The event types in order, e.g. ``["session.queued", ..., "session.ended"]``."""
        return [event.type for event in self.events]

    @property
    def has_reasons(self) -> bool:
        """Whether the source carries reasons and codes (every source but ``resource``)."""
        return self.source != "resource"

    @property
    def final(self) -> LifecycleEvent | None:
        """The event that ended the session (``session.ended``, ``failed`` or ``canceled``)."""
        for event in reversed(self.events):
            if event.type in _TERMINAL_EVENTS.values():
                return event
        return None

    @property
    def reason(self) -> str | None:
        """Why the session ended: the ``session.ended`` reason or the failure code."""
        final = self.final
        return None if final is None else final.reason or final.code

    def first(self, event_type: str) -> LifecycleEvent:
        """The first event of ``event_type`` (``LookupError`` naming what there is)."""
        for event in self.events:
            if event.type == event_type:
                return event
        raise LookupError(f"no {event_type} among {self.types} (from {self.source})")

    @property
    def path(self) -> list[str]:
        """The statuses the session went through, in order (``queued``, ``starting``,
        ``running``...): each event's status, repeats and events that change none left out."""
        path: list[str] = []
        for event in self.events:
            if event.type in _NO_MOVE:
                continue
            status = event.status or _STATUS_OF.get(event.type)
            if status is not None and (not path or path[-1] != status):
                path.append(status)
        return path

    def assert_path(self, statuses: Sequence[str]) -> SessionHistory:
        """Fail unless the session went through exactly ``statuses``, in order; returns the
        history. A status the sessions never have is refused as a misspelling.

        Example::

            session_events(session_id).assert_path(
                ["queued", "starting", "running", "ending", "ended"]
            )
        """
        __tracebackhide__ = True
        wanted_statuses("session", list(statuses))
        if self.path != list(statuses):
            raise AssertionError(
                f"{self.session_id} went {' -> '.join(self.path) or '(nowhere)'}, not "
                f"{' -> '.join(statuses)}\n{self}"
            )
        return self

    def require_reasons(self) -> SessionHistory:
        """Skip the calling test when this source has no reasons (a deployment reached without
        webhooks or an admin API); returns the history otherwise."""
        if not self.has_reasons:
            import pytest

            pytest.skip(
                "needs the session's events with reasons: run in process, give "
                "--avatar-sim-admin-token, or collect webhooks with a WebhookReceiver"
            )
        return self

    def __str__(self) -> str:
        lines = [f"{self.session_id} (events from {self.source}):"]
        lines += [f"  {event}" for event in self.events] or ["  (none)"]
        return "\n".join(lines)


class NoWebhooks(AssertionError):
    """A receiver did not get the webhooks a session's status says were sent."""


def session_events(
    client: httpx.Client,
    session_id: str,
    *,
    webhooks: WebhookReceiver | None = None,
    within: float = 30.0,
) -> SessionHistory:
    """The lifecycle events of ``session_id``, from the best source the client's target has:
    ``webhooks`` when a receiver is given, else the simulator's event log (in process, or a
    served simulator with its admin token), else ``GET /v1/sessions/{id}``.

    From ``webhooks`` it first waits (``within`` the target's seconds) for the receiver to hold
    at least one event of the session and, once the session is over, the event that ended it;
    short of that it raises ``NoWebhooks`` naming what was expected, so a negative assertion
    (``"session.failed" not in history.types``) never passes on an empty history.

    Example::

        history = session_events(api_client, session["id"])
        assert history.types[-2:] == ["session.ended", "session.usage"]
        assert history.final.reason == "idle_timeout"   # history.source says where from
    """
    __tracebackhide__ = True
    if webhooks is not None:
        payloads = sorted(
            _received(client, session_id, webhooks, within),
            key=lambda e: (str(e["created_at"]), _RANK.get(str(e["type"]), len(_RANK))),
        )
        return SessionHistory(
            session_id, "webhooks", tuple(_from_payload(payload) for payload in payloads)
        )
    admin = target_of(client).admin
    if admin is not None:
        return SessionHistory(
            session_id,
            "event_log",
            tuple(_from_log(entry) for entry in admin.session_events(session_id)),
        )
    response = client.get(f"/v1/sessions/{session_id}")
    response.raise_for_status()
    return SessionHistory(session_id, "resource", from_resource(response.json()))


def _received(
    client: httpx.Client, session_id: str, webhooks: WebhookReceiver, within: float
) -> list[dict[str, Any]]:
    """The receiver's events about the session, once it holds what the session's status says
    was sent: the event that ended it, and ``session.usage`` after a session that ran
    (``NoWebhooks`` naming what is missing otherwise)."""
    __tracebackhide__ = True
    response = client.get(f"/v1/sessions/{session_id}")
    response.raise_for_status()
    session = response.json()
    status = str(session["status"])
    ended = _TERMINAL_EVENTS.get(status)
    expected = [ended] if ended else []
    if ended and session.get("first_frame_at"):
        expected.append("session.usage")  # a session that ran is charged as it ends
    expected = [event_type for event_type in expected if webhooks.wants(event_type)]

    def complete(receiver: WebhookReceiver) -> bool:
        types = {str(e["type"]) for e in receiver.events_about(session_id)}
        return bool(types) and all(event_type in types for event_type in expected)

    try:
        webhooks.wait_until(complete, within=within, client=client)
    except AssertionError:
        held = [str(e["type"]) for e in webhooks.events_about(session_id)]
        wanted = " and ".join(expected) or "any event"
        raise NoWebhooks(
            f"the receiver at {webhooks.url} holds {held or 'no event'} about {session_id} "
            f"after {within:g} s ({target_of(client).seconds}); the session is {status}, so it "
            f"expected {wanted}. It got {len(webhooks.attempts)} requests in all: is its "
            "endpoint registered for this session's organization (receiver.register(sim_admin, "
            "org_id)) and its secret set?"
        ) from None
    return webhooks.events_about(session_id)


def _event(type_: str, at: Any, status: Any, own: Mapping[str, Any]) -> LifecycleEvent:
    reason, code = own.get("reason"), own.get("code")
    return LifecycleEvent(
        type=type_,
        at=None if at is None else str(at),
        status=None if status is None else str(status),
        reason=None if reason is None else str(reason),
        code=None if code is None else str(code),
        data=dict(own),
    )


def _from_log(entry: Mapping[str, Any]) -> LifecycleEvent:
    return _event(entry["type"], entry.get("created_at"), entry.get("status"), entry["data"])


def _from_payload(payload: Mapping[str, Any]) -> LifecycleEvent:
    data = dict(payload.get("data") or {})
    session = data.pop("object", None)
    status = session.get("status") if isinstance(session, dict) else None
    return _event(str(payload["type"]), payload.get("created_at"), status, data)


def from_resource(session: Mapping[str, Any]) -> tuple[LifecycleEvent, ...]:
    """The events a session resource implies: queued at ``created_at``, starting at
    ``started_at``, first frame at ``first_frame_at``, then its current status (terminal ones
    without a time; a failure with its ``error.code``)."""
    events = [_event("session.queued", session.get("created_at"), "queued", {})]
    if session.get("started_at"):
        events.append(_event("session.starting", session["started_at"], "starting", {}))
    if session.get("first_frame_at"):
        events.append(_event("session.first_frame", session["first_frame_at"], "running", {}))
    status = session.get("status")
    if status == "ending":
        events.append(_event("session.ending", None, "ending", {}))
    elif status in _TERMINAL_EVENTS:
        error = session.get("error")
        own = {"code": error.get("code")} if isinstance(error, dict) else {}
        events.append(_event(_TERMINAL_EVENTS[str(status)], None, status, own))
    return tuple(events)
