"""Webhook deliveries: signing, retries, at-least-once, filtering, the async seam (EV-3)."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from sim.config import SimConfig
from sim.errors import InternalError, NotFound, Unprocessable
from sim.webhooks import (
    DELIVERY_TRANSITIONS,
    FINAL_DELIVERY_STATUSES,
    PENDING,
    RecordingSender,
    WebhookDispatcher,
)
from sim.webhooks import dispatcher as dispatcher_module

if TYPE_CHECKING:  # the fixtures live in conftest; this import only names their type
    from conftest import Hooks

DELAYS = SimConfig().webhooks.retry_delays_seconds
#: When attempts 1..7 happen if every one fails, relative to the event.
ATTEMPT_TIMES = [0.0, *itertools.accumulate(DELAYS)]
URL = "https://hooks.example.com/avatar"


def _idle(hooks: Hooks) -> bool:
    """Nothing is scheduled in the future (SimPy may keep a spent no-op marker at ``now``)."""
    at = hooks.kernel.clock.next_event_at()
    return at is None or at <= hooks.kernel.clock.now


def _wall_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


@pytest.mark.req("EV-3", "SIM-8")
def test_an_injected_signing_clock_dates_the_signature_and_nothing_else(
    make_hooks: Callable[..., Hooks],
) -> None:
    # Served mode's case: the simulated clock runs days ahead of the receiver's real one.
    hooks = make_hooks(epoch=_wall_now() + timedelta(days=3))
    real = _wall_now()
    hooks.dispatcher.use_signing_clock(lambda: real)
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("session.first_frame", session_id="sess_1")
    hooks.advance(0)
    (request,) = hooks.sender.requests
    assert int(request.headers["webhook-timestamp"]) == int(real.timestamp())
    payload = Webhook(endpoint.secret).verify(request.body, dict(request.headers))
    assert payload["created_at"] == hooks.kernel.clock.timestamp()  # still simulated time
    (attempt,) = hooks.dispatcher.attempts()
    assert attempt.webhook_timestamp == int(real.timestamp())


@pytest.mark.req("EV-3")
def test_retry_schedule_is_the_documented_one() -> None:
    assert DELAYS == (5.0, 300.0, 1800.0, 7200.0, 18000.0, 36000.0)  # GAP-EV-2


@pytest.mark.req("EV-3")
def test_signature_verifies_with_the_standard_webhooks_library(
    make_hooks: Callable[..., Hooks],
) -> None:
    # The verifier checks the timestamp against the wall clock, so start the simulation now.
    hooks = make_hooks(epoch=_wall_now())
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.advance(3)
    event_id = hooks.emit("session.first_frame", session_id="sess_1")
    hooks.advance(0)
    (request,) = hooks.sender.requests
    event = next(iter(hooks.kernel.events))
    assert request.url == URL
    assert request.headers["webhook-id"] == event_id
    assert request.headers["content-type"] == "application/json"
    payload = Webhook(endpoint.secret).verify(request.body, dict(request.headers))
    assert payload == event.to_payload()
    assert request.body == json.dumps(event.to_payload(), separators=(",", ":"))
    assert int(request.headers["webhook-timestamp"]) == int(
        hooks.kernel.clock.unix_seconds(event.at)
    )
    with pytest.raises(WebhookVerificationError):
        Webhook(endpoint.secret).verify(
            request.body.replace("sess_1", "sess_2"), dict(request.headers)
        )
    other = hooks.dispatcher.register_endpoint("org_a", URL)
    with pytest.raises(WebhookVerificationError):
        Webhook(other.secret).verify(request.body, dict(request.headers))


@pytest.mark.req("EV-3")
@pytest.mark.parametrize("attempt", range(1, len(DELAYS) + 2))
def test_every_retry_is_signed_at_its_own_simulated_time(
    attempt: int, make_hooks: Callable[..., Hooks]
) -> None:
    # Put the wall clock's "now" at the simulated time of this attempt: only it verifies.
    sent_at = ATTEMPT_TIMES[attempt - 1]
    hooks = make_hooks(then=500, epoch=_wall_now() - timedelta(seconds=sent_at))
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("avatar.ready")
    hooks.advance(ATTEMPT_TIMES[-1] + 1)
    requests = hooks.sender.requests
    assert [r.attempt for r in requests] == list(range(1, len(DELAYS) + 2))
    assert len({r.headers["webhook-id"] for r in requests}) == 1  # same message id on retries
    verifier = Webhook(endpoint.secret)
    verifier.verify(requests[attempt - 1].body, dict(requests[attempt - 1].headers))
    for other in requests:
        if abs(ATTEMPT_TIMES[other.attempt - 1] - sent_at) > 300:
            with pytest.raises(WebhookVerificationError, match=r"too (old|new)"):
                verifier.verify(other.body, dict(other.headers))


@pytest.mark.req("EV-3")
def test_failures_are_retried_on_schedule_then_the_delivery_fails(
    make_hooks: Callable[..., Hooks],
) -> None:
    hooks = make_hooks(script=[500, None, 404, 302, 503, 429], then=500)
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.advance(100)
    hooks.emit("avatar.failed")
    hooks.advance(0)
    (delivery,) = hooks.dispatcher.deliveries()
    assert delivery.status == "scheduled"
    assert delivery.next_attempt_at == 105
    hooks.advance(ATTEMPT_TIMES[-1])
    attempts = hooks.dispatcher.attempts(delivery.id)
    assert [a.scheduled_at for a in attempts] == [100 + t for t in ATTEMPT_TIMES]
    assert [a.attempt for a in attempts] == list(range(1, 8))
    assert [a.status for a in attempts] == [500, None, 404, 302, 503, 429, 500]
    assert [a.outcome for a in attempts] == ["http_error", "no_response", *["http_error"] * 5]
    assert all(a.completed_at == a.scheduled_at for a in attempts)
    delivery = hooks.dispatcher.delivery(delivery.id)
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("failed", 7, 500)
    assert delivery.completed_at == 100 + ATTEMPT_TIMES[-1]
    assert delivery.next_attempt_at is None
    assert _idle(hooks)  # nothing left scheduled
    hooks.advance(10 * 86400)
    assert len(hooks.sender.requests) == 7


@pytest.mark.req("EV-3")
def test_a_2xx_answer_stops_the_retries(make_hooks: Callable[..., Hooks]) -> None:
    hooks = make_hooks(script=[500, None, 204])
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("avatar.ready")
    hooks.advance(86400)
    (delivery,) = hooks.dispatcher.deliveries()
    assert (delivery.status, delivery.attempts, delivery.last_status) == ("succeeded", 3, 204)
    assert delivery.completed_at == ATTEMPT_TIMES[2]
    outcomes = [a.outcome for a in hooks.dispatcher.attempts()]
    assert outcomes == ["http_error", "no_response", "succeeded"]
    assert len(hooks.sender.requests) == 3
    assert _idle(hooks)


@pytest.mark.req("EV-3")
def test_delivery_records_render_with_timestamps(hooks: Hooks) -> None:
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.sender.script[:] = [500]
    hooks.emit("avatar.ready")
    hooks.advance(10)
    (delivery,) = hooks.dispatcher.deliveries()
    clock = hooks.kernel.clock
    body = delivery.to_resource(clock)
    assert body["id"].startswith("whd_")
    assert body["status"] == "succeeded"
    assert body["attempts"] == 2
    assert body["completed_at"] == "2026-01-01T00:00:05.000Z"
    first, second = (a.to_resource(clock) for a in hooks.dispatcher.attempts())
    assert first["scheduled_at"] == "2026-01-01T00:00:00.000Z"
    assert (first["attempt"], first["status"], first["outcome"]) == (1, 500, "http_error")
    assert (second["attempt"], second["status"], second["outcome"]) == (2, 200, "succeeded")
    assert first["delivery_id"] == second["delivery_id"] == delivery.id


@pytest.mark.req("EV-3")
@settings(max_examples=40, deadline=None)
@given(
    answers=st.lists(
        st.one_of(st.none(), st.sampled_from([200, 201, 204, 299, 300, 400, 410, 500, 503])),
        min_size=1,
        max_size=10,
    ),
    events=st.integers(min_value=1, max_value=4),
)
def test_at_least_once(
    answers: list[int | None], events: int, make_hooks: Callable[..., Hooks]
) -> None:
    hooks = make_hooks(script=list(answers), then=500)
    hooks.dispatcher.register_endpoint("org_a", URL)
    emitted = [hooks.emit("session.ended", reason="max_duration") for _ in range(events)]
    hooks.advance(ATTEMPT_TIMES[-1] + 1)
    deliveries = hooks.dispatcher.deliveries()
    assert [d.event_id for d in deliveries] == emitted  # every event gets a delivery
    received: dict[str, int] = {}
    for request in hooks.sender.requests:
        event_id = request.headers["webhook-id"]
        received[event_id] = received.get(event_id, 0) + 1
    for delivery in deliveries:
        attempts = hooks.dispatcher.attempts(delivery.id)
        assert delivery.status in FINAL_DELIVERY_STATUSES
        assert [a.attempt for a in attempts] == list(range(1, len(attempts) + 1))
        assert [a.scheduled_at for a in attempts] == ATTEMPT_TIMES[: len(attempts)]
        successes = [a for a in attempts if a.outcome == "succeeded"]
        if delivery.status == "succeeded":
            assert successes == [attempts[-1]]  # retried until, and only until, a 2xx
        else:
            assert delivery.status == "failed"
            assert successes == []
            assert len(attempts) == len(DELAYS) + 1
        assert received[delivery.event_id] == len(attempts) >= 1
    assert _idle(hooks)


@pytest.mark.req("EV-3")
def test_a_receiver_that_processed_but_answered_late_sees_the_same_message_again(
    make_hooks: Callable[..., Hooks],
) -> None:
    hooks = make_hooks(script=[None])  # the first answer is lost (timeout), then 200
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("session.first_frame")
    hooks.advance(60)
    first, second = hooks.sender.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    assert first.headers["webhook-timestamp"] != second.headers["webhook-timestamp"]


@pytest.mark.req("EV-3", "AUTH-7")
def test_endpoints_receive_only_their_organizations_events_of_the_wanted_types(
    hooks: Hooks,
) -> None:
    register = hooks.dispatcher.register_endpoint
    ready_only = register("org_a", URL, ["avatar.ready"])
    sessions = register("org_a", URL, ["session.*"])
    everything = register("org_a", URL)
    bobs = register("org_b", URL)
    hooks.emit("avatar.ready")
    hooks.emit("avatar.failed")
    hooks.emit("session.first_frame")
    hooks.emit("sessionx.other")
    hooks.emit("avatar.ready", org_id="org_b")
    hooks.advance(0)
    got: dict[str, list[str]] = {}
    for delivery in hooks.dispatcher.deliveries():
        got.setdefault(delivery.endpoint_id, []).append(delivery.event_type)
    assert got == {
        ready_only.id: ["avatar.ready"],
        sessions.id: ["session.first_frame"],
        everything.id: ["avatar.ready", "avatar.failed", "session.first_frame", "sessionx.other"],
        bobs.id: ["avatar.ready"],
    }
    assert {d.org_id for d in hooks.dispatcher.deliveries(org_id="org_b")} == {"org_b"}
    assert len(hooks.sender.requests) == 7


@pytest.mark.req("EV-1", "EV-3")
def test_session_first_frame_is_available_as_a_webhook(hooks: Hooks) -> None:
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL, ["session.first_frame"])
    hooks.emit("session.starting", object={"id": "sess_1"})
    hooks.emit("session.first_frame", object={"id": "sess_1"})
    hooks.advance(0)
    (request,) = hooks.sender.requests
    payload = json.loads(request.body)
    assert payload["type"] == "session.first_frame"
    assert payload["data"] == {"object": {"id": "sess_1"}}
    assert set(payload) == {"id", "type", "created_at", "data"}
    assert hooks.dispatcher.deliveries()[0].endpoint_id == endpoint.id


@pytest.mark.req("EV-3")
def test_events_before_registration_are_not_delivered(hooks: Hooks) -> None:
    hooks.emit("avatar.ready")
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.advance(10)
    assert hooks.dispatcher.deliveries() == []


@pytest.mark.req("EV-3")
def test_pending_sender_outcomes_are_reported_later(make_hooks: Callable[..., Hooks]) -> None:
    hooks = make_hooks(then=PENDING)
    hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("avatar.ready")
    hooks.advance(0)
    (delivery,) = hooks.dispatcher.deliveries()
    assert hooks.dispatcher.delivery(delivery.id).status == "attempting"
    assert hooks.dispatcher.attempts()[0].outcome == "pending"
    hooks.advance(3)
    hooks.dispatcher.report_attempt(delivery.id, 1, 503)
    with pytest.raises(ValueError, match="not awaiting"):
        hooks.dispatcher.report_attempt(delivery.id, 1, 200)  # exactly once
    hooks.advance(0)
    first = hooks.dispatcher.attempts()[0]
    assert (first.outcome, first.status, first.completed_at) == ("http_error", 503, 3.0)
    assert hooks.dispatcher.delivery(delivery.id).next_attempt_at == 3 + DELAYS[0]
    hooks.advance(DELAYS[0])
    assert [r.attempt for r in hooks.sender.requests] == [1, 2]
    hooks.dispatcher.report_attempt(delivery.id, 2, 200)
    hooks.advance(0)
    assert hooks.dispatcher.delivery(delivery.id).status == "succeeded"
    assert _idle(hooks)


@pytest.mark.req("EV-3")
def test_removing_an_endpoint_cancels_its_pending_retries(make_hooks: Callable[..., Hooks]) -> None:
    hooks = make_hooks(then=500)
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("avatar.ready")
    hooks.advance(1)
    with pytest.raises(NotFound):
        hooks.dispatcher.remove_endpoint("org_b", endpoint.id)  # not theirs
    hooks.dispatcher.remove_endpoint("org_a", endpoint.id)
    hooks.advance(ATTEMPT_TIMES[-1])
    (delivery,) = hooks.dispatcher.deliveries()
    assert (delivery.status, delivery.attempts) == ("canceled", 1)
    assert len(hooks.sender.requests) == 1
    hooks.emit("avatar.ready")
    hooks.advance(1)
    assert len(hooks.dispatcher.deliveries()) == 1


@pytest.mark.req("EV-3")
def test_delivery_statuses_follow_the_declared_table(
    make_hooks: Callable[..., Hooks], monkeypatch: pytest.MonkeyPatch
) -> None:
    moves: list[tuple[Any, str, str]] = []
    real = dispatcher_module.next_delivery_status

    def spy(current: Any, trigger: Any) -> Any:
        result = real(current, trigger)
        moves.append((current, trigger, result))
        return result

    monkeypatch.setattr(dispatcher_module, "next_delivery_status", spy)
    hooks = make_hooks(script=[PENDING, 500, None], then=200)
    endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
    hooks.emit("avatar.ready")
    hooks.advance(1)
    (delivery,) = hooks.dispatcher.deliveries()
    hooks.dispatcher.report_attempt(delivery.id, 1, 500)
    hooks.advance(ATTEMPT_TIMES[3] + 1)
    hooks.sender.then = 500  # the next delivery fails once, then its endpoint goes away
    hooks.emit("avatar.ready")
    hooks.advance(0)
    hooks.dispatcher.remove_endpoint("org_a", endpoint.id)
    hooks.advance(ATTEMPT_TIMES[-1])
    statuses = [status for *_, status in moves]
    assert moves == [
        (current, trigger, DELIVERY_TRANSITIONS[(current, trigger)])
        for current, trigger, _ in moves
    ]
    assert statuses == [
        "scheduled",
        "attempting",
        "scheduled",
        "attempting",
        "scheduled",
        "attempting",
        "scheduled",
        "attempting",
        "succeeded",
        "scheduled",
        "attempting",
        "scheduled",
        "canceled",
    ]
    for status in FINAL_DELIVERY_STATUSES:
        for trigger in ("attempt_started", "retry", "succeeded", "matched"):
            with pytest.raises(InternalError):
                real(status, trigger)


@pytest.mark.req("EV-3")
def test_each_delivery_schedules_a_bounded_number_of_events(
    make_hooks: Callable[..., Hooks],
) -> None:
    counts = []
    for events in (1, 10):
        hooks = make_hooks(then=500)
        hooks.dispatcher.register_endpoint("org_a", URL)
        for _ in range(events):
            hooks.emit("avatar.ready")
        steps = 0
        while hooks.kernel.clock.next_event_at() is not None:
            hooks.kernel.clock.env.step()
            steps += 1
        counts.append(steps)
    assert counts[1] == 10 * counts[0]
    assert counts[0] <= 2 * (len(DELAYS) + 1) + 2


@pytest.mark.req("EV-3")
@pytest.mark.parametrize(
    ("url", "event_types", "code", "param"),
    [
        ("ftp://hooks.example.com/", None, "validation.format", "url"),
        ("/relative/path", None, "validation.format", "url"),
        ("https://", None, "validation.format", "url"),
        (URL, [], "validation.type", "event_types"),
        (URL, "avatar.ready", "validation.type", "event_types"),
        (URL, ["avatar.ready", "Avatar Ready"], "validation.format", "event_types.1"),
        (URL, ["avatar.*.x"], "validation.format", "event_types.0"),
    ],
)
def test_invalid_registrations_are_refused(
    hooks: Hooks, url: str, event_types: Any, code: str, param: str
) -> None:
    with pytest.raises(Unprocessable) as caught:
        hooks.dispatcher.register_endpoint("org_a", url, event_types)
    assert (caught.value.code, caught.value.param) == (code, param)
    assert hooks.dispatcher.endpoints() == []


@pytest.mark.req("EV-3")
def test_endpoints_have_distinct_whsec_secrets_and_render(hooks: Hooks) -> None:
    first = hooks.dispatcher.register_endpoint("org_a", URL, ["avatar.ready", "avatar.ready"])
    second = hooks.dispatcher.register_endpoint("org_a", URL)
    for endpoint in (first, second):
        assert endpoint.secret.startswith("whsec_")
        assert len(base64.b64decode(endpoint.secret.removeprefix("whsec_"))) == 24
        assert endpoint.id.startswith("we_")
    assert first.secret != second.secret
    assert first.event_types == ("avatar.ready",)
    body = first.to_resource(hooks.kernel.clock)
    assert body == {
        "id": first.id,
        "object": "webhook_endpoint",
        "url": URL,
        "event_types": ["avatar.ready"],
        "secret": first.secret,
        "created_at": "2026-01-01T00:00:00.000Z",
    }
    assert hooks.dispatcher.endpoint("org_a", first.id) == first
    with pytest.raises(NotFound):
        hooks.dispatcher.endpoint("org_b", first.id)
    assert hooks.dispatcher.endpoints("org_b") == []


@pytest.mark.req("EV-3")
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(min_value=0, max_value=2**31))
def test_same_seed_same_requests_and_records(seed: int, make_hooks: Callable[..., Hooks]) -> None:
    def run() -> tuple[Any, ...]:
        hooks = make_hooks(script=[500, None], seed=seed)
        endpoint = hooks.dispatcher.register_endpoint("org_a", URL)
        for minute in range(3):
            hooks.emit("avatar.ready", minute=minute)
            hooks.advance(60)
        hooks.advance(3600)
        requests = [(r.url, dict(r.headers), r.body) for r in hooks.sender.requests]
        return (
            endpoint.secret,
            requests,
            hooks.dispatcher.deliveries(),
            hooks.dispatcher.attempts(),
        )

    assert run() == run()


@pytest.mark.req("EV-3")
def test_default_sender_records_and_accepts_everything() -> None:
    from sim.kernel import Kernel

    kernel = Kernel.create(SimConfig())
    dispatcher = WebhookDispatcher(kernel)
    assert isinstance(dispatcher.sender, RecordingSender)
    dispatcher.register_endpoint("org_a", URL)
    kernel.events.emit("avatar.ready", "org_a", {})
    kernel.clock.advance(0)
    assert len(dispatcher.sender.requests) == 1
    assert dispatcher.deliveries()[0].status == "succeeded"


@pytest.mark.req("AV-ST-1", "EV-3")
def test_avatar_fitting_outcome_reaches_the_organizations_endpoint(
    make_hooks: Callable[..., Hooks],
) -> None:
    import io

    from PIL import Image

    from sim.accounts import AccountRegistry
    from sim.avatars import AvatarService

    hooks = make_hooks()
    accounts = AccountRegistry(hooks.kernel.config, hooks.kernel.clock, hooks.kernel.ids)
    org = accounts.create_organization("A")
    caller = accounts.authenticate(f"Bearer {accounts.create_key(org.id).secret}")
    hooks.dispatcher.register_endpoint(org.id, URL, ["avatar.*"])
    avatars = AvatarService(hooks.kernel)
    buffer = io.BytesIO()
    Image.new("RGB", (128, 128), (10, 20, 30)).save(buffer, format="PNG")
    created = avatars.create(
        caller, image=buffer.getvalue(), filename=None, content_type=None, name="Desk"
    )
    hooks.advance(SimConfig().avatars.fitting_time.cap or 600)
    (request,) = hooks.sender.requests
    payload = json.loads(request.body)
    final = avatars.retrieve(caller, created["id"])
    assert payload["type"] == f"avatar.{final['status']}"
    assert payload["data"]["object"] == final
