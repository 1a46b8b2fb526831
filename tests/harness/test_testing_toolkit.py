"""``harness.testing`` in process: waiting, events, audio, time and the simulator's controls
(HAR-7). The same helpers against a served simulator are in ``test_testing_by_url.py``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import httpx
import pytest
from PIL import Image

from harness.testing import (
    InProcessAdmin,
    StateNotReached,
    UnknownTarget,
    pass_time,
    play_audio,
    session_events,
    wait_for,
    wait_for_avatar,
    wait_for_run,
)
from harness.testing.audio import NoAdminApi
from harness.testing.events import from_resource
from sim.platform import Platform
from tests.world import session_body

pytestmark = pytest.mark.req("HAR-7")

BODY: dict[str, Any] = session_body()


def _seconds(platform: Platform, stamp: str) -> float:
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return platform.clock.seconds_at(moment)


@pytest.fixture
def platform() -> Platform:
    return Platform.create()


@pytest.fixture
def admin(platform: Platform) -> InProcessAdmin:
    return InProcessAdmin(platform)


@pytest.fixture
def client(admin: InProcessAdmin) -> Iterator[httpx.Client]:
    org = admin.create_organization("toolkit", "enterprise")
    with admin.client(org["keys"]["unrestricted"]) as client:
        yield client


def _create(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/sessions", json={**BODY, **fields})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_wait_for_stops_the_clock_at_the_exact_moment_of_the_transition(
    platform: Platform, client: httpx.Client
) -> None:
    created = _create(client, idle_timeout_seconds=4)
    running = wait_for(client, created["id"], "running", within=30)
    assert platform.clock.timestamp() == running["first_frame_at"]  # not a second later
    ended = wait_for(client, created["id"], "ended", within=30)
    assert ended["status"] == "ended"
    idle = platform.clock.now - _seconds(platform, running["first_frame_at"])
    assert idle == pytest.approx(4, abs=1e-3)


def test_wait_for_fails_with_the_history_when_the_status_never_comes(
    platform: Platform, admin: InProcessAdmin, client: httpx.Client
) -> None:
    admin.set_capacity(0)
    created = _create(client)
    with pytest.raises(StateNotReached) as timed_out:
        wait_for(client, created["id"], "running", within=10)
    assert platform.clock.now == 10
    message = str(timed_out.value)
    assert "never became running: it is still queued after 10 s (simulated seconds)" in message
    assert "session.queued" in message and "(events from event_log)" in message
    # A terminal status that is not the awaited one fails at once, saying why it ended.
    with pytest.raises(StateNotReached) as failed:
        wait_for(client, created["id"], "running", within=600)
    assert platform.clock.now == platform.config.limits.startup_timeout_seconds
    assert "it is failed, which it never leaves" in str(failed.value)
    assert "session.failed (no_capacity)" in str(failed.value)


def test_wait_for_accepts_any_of_several_statuses(client: httpx.Client) -> None:
    created = _create(client, idle_timeout_seconds=2)
    done = wait_for(client, created["id"], {"ended", "failed", "canceled"}, within=60)
    assert done["status"] == "ended"


def test_session_events_come_from_the_event_log_with_reasons(
    platform: Platform, client: httpx.Client
) -> None:
    created = _create(client, max_duration_seconds=5, idle_timeout_seconds=600)
    wait_for(client, created["id"], "ended", within=60)
    history = session_events(client, created["id"])
    assert history.source == "event_log" and history.has_reasons
    assert history.types == [
        "session.queued",
        "session.starting",
        "session.first_frame",
        "session.ended",
        "session.usage",
    ]
    assert history.final is not None and history.final.reason == "max_duration"
    assert history.reason == "max_duration"
    assert history.first("session.starting").data["worker_id"].startswith("worker-")
    assert history.final.at == platform.clock.timestamp()
    with pytest.raises(LookupError, match=r"no session\.ending"):
        history.first("session.ending")


def test_a_resource_gives_its_times_and_status_without_reasons() -> None:
    resource = {
        "status": "failed",
        "created_at": "2026-01-01T00:00:00.000Z",
        "started_at": None,
        "first_frame_at": None,
        "error": {"code": "no_capacity", "message": "..."},
    }
    events = from_resource(resource)
    assert [(e.type, e.at, e.code) for e in events] == [
        ("session.queued", "2026-01-01T00:00:00.000Z", None),
        ("session.failed", None, "no_capacity"),
    ]


def test_play_audio_postpones_the_idle_timeout(platform: Platform, client: httpx.Client) -> None:
    created = _create(client, idle_timeout_seconds=3)
    running = wait_for(client, created["id"], "running", within=30)
    answered = play_audio(client, created["id"], "speech", seconds=10)
    assert answered["id"] == created["id"]
    wait_for(client, created["id"], "ended", within=60)
    talked_and_idled = platform.clock.now - _seconds(platform, running["first_frame_at"])
    assert talked_and_idled == pytest.approx(10 + 3, abs=1e-3)


def test_pass_time_runs_the_clock_in_process(platform: Platform, client: httpx.Client) -> None:
    created = _create(client, idle_timeout_seconds=600, max_duration_seconds=30)
    assert pass_time(client, 120) == platform.clock.now == 120
    assert client.get(f"/v1/sessions/{created['id']}").json()["status"] == "ended"


def test_runs_and_avatars_can_be_waited_for(client: httpx.Client) -> None:
    run = client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}})
    assert run.status_code // 100 == 2, run.text
    done = wait_for_run(client, run.json()["id"], "succeeded", within=600)
    assert done["status"] == "succeeded"
    buffer = io.BytesIO()
    Image.new("RGB", (128, 128), (90, 140, 200)).save(buffer, format="PNG")
    avatar = client.post("/v1/avatars", files={"image": ("me.png", buffer.getvalue(), "image/png")})
    assert avatar.status_code // 100 == 2, avatar.text
    settled = wait_for_avatar(client, avatar.json()["id"], {"ready", "failed"}, within=900)
    assert settled["status"] in {"ready", "failed"}


def test_the_admin_restores_what_affects_later_tests(admin: InProcessAdmin) -> None:
    before = admin.capacity()["capacity"]
    admin.set_capacity(0)
    admin.set_capacity(3)
    admin.slow_startup(20)
    admin.restore()
    assert admin.capacity()["capacity"] == before
    assert not admin.platform.sessions.faults.state.slow_active(admin.now())


def test_a_client_the_helpers_do_not_know_is_refused_with_advice(platform: Platform) -> None:
    from harness.target import SyncASGITransport
    from sim.asgi import create_app

    stray = httpx.Client(
        transport=SyncASGITransport(create_app(platform)), base_url="http://testserver"
    )
    with pytest.raises(UnknownTarget, match=r"api_client fixture or sim_admin\.client"):
        wait_for(stray, "sess_x", "running", within=1)
    deployment = httpx.Client(base_url="https://deployment.example")
    with pytest.raises(NoAdminApi, match="--avatar-sim-admin-token"):
        play_audio(deployment, "sess_x")
