"""Every documented helper, run in process and by URL, observes the same thing (HAR-22, HAR-20,
HAR-21, HAR-25, HAR-26).

One journey drives each name of ``harness.testing`` and each ``SimAdmin`` method a suite uses,
and writes down what it saw without ids or wall times: statuses, paths, reasons, error types and
codes, delivery outcomes, the pool. It runs against a fresh in-process simulator and against
``avatar-sim serve --manual-clock`` through its admin API, and the two records must be equal.
A second test holds the journey to cover the documented helpers, so a new one is compared too.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

import harness.testing
from harness.testing import (
    AdminRefused,
    HttpAdmin,
    InProcessAdmin,
    NoWebhooks,
    SessionTracker,
    SimAdmin,
    WebhookReceiver,
    create_session,
    expect_error,
    pass_time,
    play_audio,
    retry_after,
    session_events,
    target_of,
    wait_for,
    wait_for_avatar,
    wait_for_delivery,
    wait_for_run,
)
from sim.platform import Platform
from tests.serve.support import Served, served
from tests.world import session_body

pytestmark = pytest.mark.req("HAR-22")

BODY: dict[str, Any] = session_body(idle_timeout_seconds=600)
NOBODY = "http://127.0.0.1:9/hooks"

#: The helpers and ``SimAdmin`` methods the journey calls (held to the documented ones below).
USED = {
    "create_session", "expect_error", "retry_after", "wait_for", "wait_for_run",
    "wait_for_avatar", "wait_for_delivery", "pass_time", "play_audio", "session_events",
    "target_of", "WebhookReceiver", "SessionTracker", "SessionHistory", "LifecycleEvent",
    "NoWebhooks", "StateNotReached", "UnknownStatus", "SimAdmin",
}  # fmt: skip
ADMIN_USED = {
    "now", "advance", "step", "seconds_at", "create_organization", "create_key", "describe_key",
    "client", "play_audio", "barge_in", "session_events", "crash_worker", "capacity",
    "set_capacity", "set_queue_size", "at_capacity", "slow_startup", "lose_heartbeats",
    "purge_failure", "register_webhook", "unregister_webhook", "webhook_deliveries", "restore",
    "target",
}  # fmt: skip


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (128, 128), (90, 140, 200)).save(buffer, format="PNG")
    return buffer.getvalue()


def _new(client: httpx.Client, **fields: Any) -> dict[str, Any]:
    response = create_session(client, {**BODY, **fields})
    assert response.status_code == 201, response.text
    return dict(response.json())


def journey(admin: SimAdmin) -> dict[str, Any]:
    """What every helper shows on ``admin``'s simulator."""
    seen: dict[str, Any] = {}
    org = admin.create_organization("journey", "enterprise")
    seen["described"] = sorted(admin.describe_key(org["keys"]["unrestricted"]).items() - {
        ("key", org["keys"]["unrestricted"]), ("org_id", org["id"])
    })  # fmt: skip
    second_key = admin.create_key(org["id"])["key"]
    try:
        admin.create_key(org["id"], ["runs:read", "sessions:write"])
        seen["bad_scope"] = "made a key"
    except AdminRefused as refused:
        seen["bad_scope"] = (refused.code, refused.status)
    tracker = SessionTracker()
    client = tracker.watch(admin.client(org["keys"]["unrestricted"]))
    other = tracker.watch(admin.client(second_key))
    seen["seconds"] = target_of(client).seconds
    start = admin.now()
    seen["advanced"] = admin.advance(5) - start
    seen["stepped_within"] = 0 <= admin.step(1) - admin.now() <= 1

    # An idle session, its path and reason, from the log and from webhooks.
    with WebhookReceiver(fail=lambda webhook_id, attempt: attempt == 1) as hooks:
        endpoint = hooks.register(admin, org["id"])
        session = _new(client, idle_timeout_seconds=4)
        running = wait_for(client, session["id"], "running", within=30)
        play_audio(client, session["id"], "speech", seconds=3)
        admin.barge_in(session["id"])
        admin.play_audio(session["id"], "silence", seconds=1)
        ended = wait_for(client, session["id"], "ended", within=60)
        logged = session_events(client, session["id"])
        heard = session_events(client, session["id"], webhooks=hooks)
        hooks.wait_until(lambda h: len(h.events_about(session["id"])) >= 6, within=60)
        seen["idle"] = {
            "path": logged.path,
            "heard_path": heard.path,
            "reason": (logged.reason, heard.reason),
            "types": logged.types,
            "heard_types": sorted(set(heard.types)),
            "barge_in_keys": sorted(logged.first("session.barge_in").data),
            "talked": round(
                admin.seconds_at(str(logged[-1].at)) - admin.seconds_at(running["first_frame_at"]),
                3,
            ),
            "ended": ended["status"],
            "answered": sorted({a.answered for a in hooks.attempts}),
            "verified": all(a.verified for a in hooks.attempts),
        }
        admin.unregister_webhook(str(endpoint["id"]))
    logged.assert_path(["queued", "starting", "running", "ended"])

    # Nothing received: the history from webhooks raises, naming what it expected.
    with WebhookReceiver() as silent:
        silent.secret = "whsec_" + "A" * 32
        try:
            session_events(client, session["id"], webhooks=silent, within=5)
            seen["silent"] = "returned"
        except NoWebhooks as error:
            seen["silent"] = "expected session.ended" in str(error)

    # Refusals: the per-key cap, a full queue, the create rate limit.
    held = _new(client)
    seen["cap"] = expect_error(create_session(client, BODY), "quota_exceeded")["code"]
    pool = admin.capacity()
    admin.at_capacity()
    full = create_session(other, BODY)
    seen["at_capacity"] = (expect_error(full, "service_unavailable")["code"], full.status_code)
    seen["at_capacity_wait"] = retry_after(full) >= 1
    admin.set_queue_size(3)
    seen["queue_size"] = admin.capacity()["queue_size"]
    admin.restore()
    seen["restored"] = {k: admin.capacity()[k] for k in ("capacity", "queue_size")} == {
        k: pool[k] for k in ("capacity", "queue_size")
    }
    client.post(f"/v1/sessions/{held['id']}/end")
    wait_for(client, held["id"], ("canceled", "ending", "ended"), within=30)
    refusals = []
    for _ in range(12):
        response = create_session(other, BODY, patience=0)
        refusals.append(response.status_code)
        if response.status_code == 201:
            other.post(f"/v1/sessions/{response.json()['id']}/end")
    seen["rate_limit"] = refusals.count(429)
    seen["waited_out"] = create_session(other, BODY).status_code
    tracker.end_all()

    # Faults on sessions: slow start-up then cancel while starting, a crash, heartbeat loss.
    admin.slow_startup(60)
    starting = _new(client)
    wait_for(client, starting["id"], "starting", within=30)
    seen["cancel_starting"] = client.post(f"/v1/sessions/{starting['id']}/end").json()["status"]
    admin.restore()
    crashed = _new(other)
    wait_for(other, crashed["id"], "running", within=30)
    seen["crash"] = sorted(admin.crash_worker(crashed["id"]))
    seen["crashed"] = wait_for(other, crashed["id"], "failed", within=5)["error"]["code"]
    lost = _new(client)
    wait_for(client, lost["id"], "running", within=30)
    seen["lost_at"] = admin.lose_heartbeats(lost["id"], 45)["lost_at"] is not None
    wait_for(client, lost["id"], "failed", within=60)
    seen["lost_path"] = [e["type"] for e in admin.session_events(lost["id"])]
    admin.set_capacity(0)
    queued = _new(client)
    seen["no_capacity"] = wait_for(client, queued["id"], "failed", within=30)["error"]["code"]
    admin.restore()

    # Webhooks: a dead URL fails after every retry; an endpoint removed cancels what is pending.
    dead = admin.register_webhook(org["id"], NOBODY, ["session.queued"])
    _new(other)
    failed = wait_for_delivery(admin, org["id"], "failed", endpoint_id=str(dead["id"]))
    seen["dead"] = [a["outcome"] for a in failed["attempts"]]
    tracker.end_all()
    admin.unregister_webhook(str(dead["id"]))
    gone = admin.register_webhook(org["id"], NOBODY, ["session.queued"])
    _new(other)
    wait_for_delivery(admin, org["id"], "scheduled", endpoint_id=str(gone["id"]), within=30)
    admin.unregister_webhook(str(gone["id"]))
    seen["removed"] = wait_for_delivery(
        admin, org["id"], "canceled", endpoint_id=str(gone["id"]), within=60
    )["status"]
    seen["deliveries"] = sorted({d["status"] for d in admin.webhook_deliveries(org["id"])})

    # Runs, a purge that fails, an avatar.
    run = client.post("/v1/run/sim/echo-text", json={"input": {"prompt": "hi"}}).json()
    seen["run"] = wait_for_run(client, run["id"], "succeeded", within=600)["status"]
    admin.purge_failure()
    deleted = client.delete(f"/v1/runs/{run['id']}")
    pass_time(client, 60)
    seen["purge"] = (deleted.status_code, client.get(f"/v1/runs/{run['id']}").status_code)
    admin.restore()
    avatar = client.post("/v1/avatars", files={"image": ("me.png", _png(), "image/png")}).json()
    seen["avatar"] = wait_for_avatar(client, avatar["id"], ("ready", "failed"), within=900)[
        "status"
    ] in ("ready", "failed")
    tracker.end_all()
    client.close()
    other.close()
    return seen


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(Path(tmp_path_factory.mktemp("both_ways")), "--manual-clock") as running:
        yield running


@pytest.mark.req("HAR-20", "HAR-21", "HAR-25", "HAR-26")
def test_every_helper_observes_the_same_in_process_and_by_url(server: Served) -> None:
    local = journey(InProcessAdmin(Platform.create()))
    with HttpAdmin(server.base_url, server.keys["admin_token"]) as admin:
        remote = journey(admin)
    assert local == remote
    # And what they observe is what the contract and the faults say.
    assert local["idle"]["reason"] == ("idle_timeout", "idle_timeout")
    assert local["idle"]["answered"] == [204, 500] and local["idle"]["verified"]
    assert local["silent"] is True
    assert local["bad_scope"] == ("validation.enum", 422)
    assert local["at_capacity"] == ("at_capacity", 503) and local["restored"]
    assert local["rate_limit"] >= 1 and local["waited_out"] == 201
    assert local["cancel_starting"] == "canceled" and local["crashed"] == "worker_lost"
    assert local["dead"] == ["no_response"] * 7 and local["removed"] == "canceled"


def test_the_journey_covers_every_documented_helper() -> None:
    public = set(harness.testing.__all__)
    documented_helpers = {n for n in public if n[0].islower()} | {
        "WebhookReceiver", "SessionTracker", "NoWebhooks", "UnknownStatus"
    }  # fmt: skip
    binding = {"bind"}  # how a hand-made client is bound: shown in test_testing_toolkit
    assert documented_helpers - binding <= USED
    admin_methods = {
        name
        for name, member in vars(SimAdmin).items()
        if not name.startswith("_") and (callable(member) or isinstance(member, property))
    } - {"close"}
    assert admin_methods <= ADMIN_USED
    assert public >= USED and admin_methods >= ADMIN_USED
