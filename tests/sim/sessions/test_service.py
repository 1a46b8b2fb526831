"""SessionService: the contract operations and the session lifecycle they drive."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from sim.config import SchedulerConfig, SimConfig
from sim.distributions import Constant
from sim.errors import NotFound, PermissionDenied, QuotaExceeded, Unprocessable

if TYPE_CHECKING:
    from conftest import Kit, World

#: Fixed latencies: placement at the create instant, first frame 2.5 s later.
FIXED = SimConfig(
    scheduler=SchedulerConfig(
        worker_boot=Constant(value=2.0), first_frame_latency=Constant(value=0.5)
    )
)
FIRST_FRAME = 2.5


def running(world: World, kit: Kit, **overrides: Any) -> tuple[Any, str]:
    caller = world.caller()
    made = world.service.create(caller, kit.body(**overrides))
    world.advance(FIRST_FRAME)
    assert world.service.retrieve(caller, made["id"])["status"] == "running"
    return caller, made["id"]


def event_types(world: World, session_id: str) -> list[str]:
    return [e.type for e in world.kernel.events if e.data["object"]["id"] == session_id]


@pytest.mark.req("SES-ST-1", "RES-SESS-1", "RES-SESS-2", "RES-SESS-7", "RES-TRN-1")
def test_create_answers_queued_with_every_field(world: World, kit: Kit) -> None:
    caller = world.caller()
    made = world.service.create(caller, kit.body(quality="pro", metadata={"a": [1, 2]}))
    assert made["status"] == "queued"
    assert made["id"].startswith("sess_") and len(made["id"]) == len("sess_") + 26
    assert made["object"] == "session"
    assert set(made) == {
        "id",
        "object",
        "avatar_id",
        "status",
        "quality",
        "billing_surface",
        "transport",
        "idle_timeout_seconds",
        "max_duration_seconds",
        "metadata",
        "created_at",
        "started_at",
        "first_frame_at",
        "usage",
        "error",
    }
    assert made["quality"] == "pro" and made["billing_surface"] == "api"
    assert made["transport"] == {
        "type": "livekit",
        "url": "wss://rtc.example.test",
        "room_name": "r1",
        "audio_source": "track",
    }
    assert made["created_at"] == "2026-01-01T00:00:00.000Z"
    assert made["started_at"] is None and made["first_frame_at"] is None
    assert made["usage"] == {"billable_seconds": 0, "frames": 0}
    assert made["error"] is None
    assert made["metadata"] == {"a": [1, 2]}
    json.dumps(made)  # JSON-ready


@pytest.mark.req("RES-SESS-2")
def test_worker_token_is_never_exposed(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit)
    world.service.end(caller, session_id)
    world.advance(10)
    token = kit.body()["transport"]["worker_token"]
    assert world.service.render(session_id) == world.service.retrieve(caller, session_id)
    seen = [
        world.service.render(session_id),
        world.service.list(caller, limit=10, starting_after=None, status=None),
        [e.to_payload() for e in world.kernel.events],
        repr(world.service.sessions()),
    ]
    assert token not in json.dumps(seen, default=str)


@pytest.mark.req("RES-SESS-3", "EP-SESS-1")
@pytest.mark.parametrize(("plan", "effective"), [("free", 600), ("starter", 1800), ("pro", 3600)])
def test_max_duration_is_clamped_to_the_plan(
    world: World, kit: Kit, plan: str, effective: int
) -> None:
    caller = world.caller(plan=plan)
    made = world.service.create(
        caller, kit.body(max_duration_seconds=3600, idle_timeout_seconds=45)
    )
    assert made["max_duration_seconds"] == effective
    assert made["idle_timeout_seconds"] == 45
    second = world.caller(plan=plan)
    assert (
        world.service.create(second, kit.body(max_duration_seconds=120))["max_duration_seconds"]
        == 120
    )


@pytest.mark.req("RES-SESS-3", "EP-SESS-1")
def test_the_unclamped_shortcut_agrees_with_every_plan(kit: Kit) -> None:
    """The create skips the plan lookup when the asked duration is within the shortest plan's
    longest session. With plans of 90, 600 and 3600 s (the cheapest one added), every asked
    duration around each bound gives ``min(asked, plan's longest)`` on every plan, the plan read
    as it is now (a plan change takes effect on the next create)."""
    defaults = SimConfig().billing.plans
    tiny = defaults[0].model_copy(update={"key": "tiny", "max_session_duration_seconds": 90})
    world = kit.world(SimConfig(billing={"plans": (tiny, *defaults)}))
    longest = {plan.key: plan.max_session_duration_seconds for plan in (tiny, *defaults)}
    asked_values = sorted({1, 89, 90, 91, 599, 600, 601, 1799, 1800, 1801, 3599, 3600})
    for plan_key, plan_longest in longest.items():
        caller = world.caller(plan=plan_key)
        for asked in asked_values:
            made = world.service.create(caller, kit.body(max_duration_seconds=asked))
            assert made["max_duration_seconds"] == min(asked, plan_longest), (plan_key, asked)
            world.service.end(caller, made["id"])
    caller = world.caller(plan="pro")
    world.accounts.set_plan(caller.org_id, "tiny")
    made = world.service.create(caller, kit.body(max_duration_seconds=91))
    assert made["max_duration_seconds"] == 90


@pytest.mark.req("RES-SESS-4", "EV-1", "SIM-3")
def test_starting_then_first_frame(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller = world.caller()
    made = world.service.create(caller, kit.body())
    world.advance(0)  # placement happens at the create instant, after the answer
    now = world.service.retrieve(caller, made["id"])
    assert now["status"] == "starting" and now["started_at"] == made["created_at"]
    world.advance(FIRST_FRAME - 0.001)
    assert world.service.retrieve(caller, made["id"])["status"] == "starting"
    world.advance(0.001)
    now = world.service.retrieve(caller, made["id"])
    assert now["status"] == "running"
    assert now["first_frame_at"] == "2026-01-01T00:00:02.500Z"
    assert event_types(world, made["id"]) == [
        "session.queued",
        "session.starting",
        "session.first_frame",
    ]
    first = world.kernel.events.of_type("session.first_frame")[0]
    assert first.data["object"]["first_frame_at"] == now["first_frame_at"]


@pytest.mark.req("SES-ST-3", "EP-SESS-9")
def test_end_running_drains_then_ends(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit)
    world.service.inject_audio(session_id, kind="speech", duration=2.0)
    world.advance(0.5)  # 1.5 s of output still buffered
    ending = world.service.end(caller, session_id)
    assert ending["status"] == "ending"
    drain = world.kernel.events.of_type("session.ending")[0].data["drain_seconds"]
    assert drain == pytest.approx(1.0 + 1.5)  # drain_base_seconds + buffered output
    world.advance(drain - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "ending"
    world.advance(0.01)
    ended = world.service.retrieve(caller, session_id)
    assert ended["status"] == "ended"
    assert world.kernel.events.of_type("session.ended")[0].data["reason"] == "client_request"
    # The drain is capped.
    caller2, second = running(world, kit)
    world.service.inject_audio(second, kind="speech", duration=100.0)
    world.service.end(caller2, second)
    assert world.kernel.events.of_type("session.ending")[1].data["drain_seconds"] == 5.0


@pytest.mark.req("SES-ST-4")
def test_end_before_start_cancels(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller = world.caller()
    queued = world.service.create(caller, kit.body())
    assert world.service.end(caller, queued["id"])["status"] == "canceled"
    other = world.caller()
    starting = world.service.create(other, kit.body())
    world.advance(1.0)
    assert world.service.retrieve(other, starting["id"])["status"] == "starting"
    assert world.service.end(other, starting["id"])["status"] == "canceled"
    world.advance(60)  # the boot timer of the canceled session changes nothing
    assert world.service.retrieve(other, starting["id"])["status"] == "canceled"
    assert world.billing.charges == []
    assert world.service.pool_status().busy == 0


@pytest.mark.req("SES-ST-5", "SES-ST-8", "EP-SESS-9")
def test_end_on_a_terminal_session_changes_nothing(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit)
    world.service.end(caller, session_id)
    world.advance(10)
    before = world.service.retrieve(caller, session_id)
    events = len(world.kernel.events)
    world.advance(100)
    again = world.service.end(caller, session_id)
    assert again == before and again["status"] == "ended"
    assert len(world.kernel.events) == events
    assert len(world.billing.charges) == 1


@pytest.mark.req("SES-ST-6", "EV-1")
def test_max_duration_ends_the_session(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit, max_duration_seconds=120)
    world.service.inject_audio(session_id, kind="silence", duration=1000)  # never idle
    world.at(FIRST_FRAME + 120 - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 120)
    done = world.service.retrieve(caller, session_id)
    assert done["status"] == "ended"
    ended = world.kernel.events.of_type("session.ended")[0]
    assert ended.data["reason"] == "max_duration"
    assert ended.at == pytest.approx(FIRST_FRAME + 120)
    assert done["usage"]["billable_seconds"] == 120
    assert world.billing.charges[0].billable_seconds == 120


@pytest.mark.req("SES-ST-7", "RES-TRN-2", "EV-1")
def test_idle_timeout_in_track_mode_counts_silence(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit, idle_timeout_seconds=10)
    world.advance(5)
    world.service.inject_audio(session_id, kind="silence", duration=20)  # resets at its end
    world.at(FIRST_FRAME + 5 + 20 + 10 - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 5 + 20 + 10)
    assert world.service.retrieve(caller, session_id)["status"] == "ended"
    ended = world.kernel.events.of_type("session.ended")[0]
    assert ended.data["reason"] == "idle_timeout"
    assert ended.at == pytest.approx(FIRST_FRAME + 5 + 20 + 10)


@pytest.mark.req("SES-ST-7", "RES-TRN-1")
def test_idle_timeout_in_data_stream_mode_ignores_silence(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    transport = dict(kit.body()["transport"], audio_source="data_stream")
    caller, session_id = running(world, kit, transport=transport, idle_timeout_seconds=10)
    assert world.service.retrieve(caller, session_id)["transport"]["audio_source"] == (
        "data_stream"
    )
    world.service.inject_audio(session_id, kind="speech", duration=4)
    world.service.inject_audio(session_id, kind="silence", duration=30)  # not sent: no reset
    world.at(FIRST_FRAME + 4 + 10 - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 4 + 10)
    assert world.service.retrieve(caller, session_id)["status"] == "ended"
    assert world.kernel.events.of_type("session.ended")[0].data["reason"] == "idle_timeout"


@pytest.mark.req("RES-TRN-2")
def test_barge_in_drops_the_buffer(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit, idle_timeout_seconds=20)
    assert world.service.session(session_id).published_tracks == (
        "service-avatar",
        "service-avatar-audio",
    )
    world.service.inject_audio(session_id, kind="speech", duration=60)
    world.advance(10)
    world.service.rpc(session_id, "lk.clear_buffer")
    barge = world.kernel.events.of_type("session.barge_in")[0]
    assert barge.data["dropped_seconds"] == pytest.approx(50)
    assert barge.data["rpc"] == "lk.clear_buffer"
    # The publisher stopped: the idle timer now runs from the barge-in, not from t+60.
    world.advance(20)
    assert world.service.retrieve(caller, session_id)["status"] == "ended"
    assert world.kernel.events.of_type("session.ended")[0].data["reason"] == "idle_timeout"
    with pytest.raises(Unprocessable):
        world.service.rpc(session_id, "lk.explode")


@pytest.mark.req("RES-TRN-2")
def test_barge_in_shortens_the_drain(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit)
    world.service.inject_audio(session_id, kind="speech", duration=3)
    world.service.clear_buffer(session_id)
    world.service.end(caller, session_id)
    assert world.kernel.events.of_type("session.ending")[0].data["drain_seconds"] == 1.0


@pytest.mark.req("LIM-1", "EP-SESS-4")
def test_one_session_per_key(world: World, kit: Kit) -> None:
    caller = world.caller()
    first = world.service.create(caller, kit.body())
    with pytest.raises(QuotaExceeded) as info:
        world.service.create(caller, kit.body())
    assert info.value.code == "concurrent_sessions"
    world.service.end(caller, first["id"])  # canceled: terminal frees the slot
    world.service.create(caller, kit.body())
    assert len(world.service.sessions()) == 2


@pytest.mark.req("LIM-2", "EP-SESS-4")
def test_organization_cap_and_override(world: World, kit: Kit) -> None:
    org = world.accounts.create_organization("Big", "free").id
    callers = [world.caller(org) for _ in range(7)]
    for caller in callers[:5]:
        world.service.create(caller, kit.body())
    with pytest.raises(QuotaExceeded) as info:
        world.service.create(callers[5], kit.body())
    assert info.value.code == "concurrent_sessions"
    world.accounts.set_concurrency_override(org, 6)
    world.service.create(callers[5], kit.body())
    with pytest.raises(QuotaExceeded):
        world.service.create(callers[6], kit.body())
    enterprise = world.accounts.create_organization("Ent", "enterprise").id
    for _ in range(10):
        world.service.create(world.caller(enterprise), kit.body())
    with pytest.raises(QuotaExceeded):
        world.service.create(world.caller(enterprise), kit.body())


@pytest.mark.req("AUTH-7", "EP-SESS-8")
def test_another_organizations_session_does_not_exist(world: World, kit: Kit) -> None:
    mine = world.caller()
    theirs = world.caller()
    made = world.service.create(mine, kit.body())
    for action in (
        lambda: world.service.retrieve(theirs, made["id"]),
        lambda: world.service.end(theirs, made["id"]),
    ):
        with pytest.raises(NotFound) as info:
            action()
        assert info.value.code == "session.not_found"
    with pytest.raises(NotFound):
        world.service.retrieve(mine, "sess_00000000000000000000000000")
    assert world.service.list(theirs, limit=10, starting_after=None, status=None)["data"] == []
    with pytest.raises(Unprocessable):
        world.service.list(theirs, limit=10, starting_after=made["id"], status=None)
    assert world.service.retrieve(mine, made["id"])["status"] == "queued"


@pytest.mark.req("EP-SESS-7")
def test_list_newest_first_with_cursor_and_status(world: World, kit: Kit) -> None:
    org = world.accounts.create_organization("Lister", "enterprise").id
    made = []
    for _ in range(5):
        made.append(world.service.create(world.caller(org), kit.body())["id"])
        world.advance(1)
    owner = world.caller(org)
    first = world.service.list(owner, limit=2, starting_after=None, status=None)
    assert [s["id"] for s in first["data"]] == made[::-1][:2]
    assert first["has_more"] is True and first["next_cursor"] == made[3]
    rest = world.service.list(owner, limit=10, starting_after=first["next_cursor"], status=None)
    assert [s["id"] for s in rest["data"]] == made[::-1][2:] and rest["has_more"] is False
    running_now = world.service.list(owner, limit=10, starting_after=None, status="running")
    assert {s["status"] for s in running_now["data"]} == {"running"}
    assert world.service.list(owner, limit=10, starting_after=None, status="failed") == {
        "object": "list",
        "data": [],
        "has_more": False,
    }
    with pytest.raises(Unprocessable) as info:
        world.service.list(owner, limit=10, starting_after=None, status="asleep")
    assert info.value.param == "status"
    with pytest.raises(Unprocessable) as info:
        world.service.list(owner, limit=0, starting_after=None, status=None)
    assert info.value.code == "validation.range"


@pytest.mark.req("RES-SESS-5", "SIM-4")
def test_usage_lags_by_at_most_one_heartbeat(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit)
    world.service.inject_audio(session_id, kind="silence", duration=500)
    seen = []
    for _ in range(40):
        world.advance(1.7)
        usage = world.service.retrieve(caller, session_id)["usage"]
        elapsed = world.now - FIRST_FRAME
        assert elapsed - 10 < usage["billable_seconds"] <= elapsed
        assert usage["billable_seconds"] % 10 == 0  # a heartbeat boundary
        assert usage["frames"] == usage["billable_seconds"] * 25
        seen.append(usage["billable_seconds"])
    assert seen == sorted(seen) and seen[-1] > 0


@pytest.mark.req("RES-SESS-7")
def test_billing_surfaces(world: World, kit: Kit) -> None:
    made = world.service.create(
        world.caller(), kit.body(), billing_surface="embed", embed_id="emb_1"
    )
    assert made["billing_surface"] == "embed"
    assert world.service.session(made["id"]).embed_id == "emb_1"
    with pytest.raises(Unprocessable):
        world.service.create(world.caller(), kit.body(), billing_surface="fax")


@pytest.mark.req("EP-PIPE-1", "RES-PIPE-1")
def test_pipecat_session(world: World, kit: Kit) -> None:
    caller = world.caller()
    world.advance(7)
    made = world.service.create_pipecat(
        caller, {"avatar_id": kit.stock, "quality": "lite", "idle_timeout_seconds": 20}
    )
    assert made["object"] == "pipecat.session"
    session = made["session"]
    assert session["status"] == "queued" and session["billing_surface"] == "pipecat"
    assert session["transport"] == {"type": "pipecat"} and session["quality"] == "lite"
    relay = made["relay"]
    assert relay["type"] == "websocket"
    assert relay["media_url"].startswith(f"wss://relay.avatar-sim.invalid/v1/media/{session['id']}")
    assert relay["audio_sample_rate"] == 16000
    assert isinstance(relay["protocol"], str) and isinstance(relay["video_encoding"], str)
    assert isinstance(relay["decoded_video_format"], str)
    assert relay["supports_audio_output"] is True
    assert relay["expires_at"] == "2026-01-01T00:05:07.000Z"  # short-lived: 300 s
    credentials = world.service.relay(session["id"])
    assert credentials.valid_at(world.now) and not credentials.valid_at(world.now + 300)
    # It counts against the same per-key cap.
    with pytest.raises(QuotaExceeded):
        world.service.create(caller, kit.body())


def test_refusals_create_nothing(world: World, kit: Kit) -> None:
    caller = world.caller()
    world.billing.broke.add(caller.org_id)
    with pytest.raises(QuotaExceeded) as info:
        world.service.create(caller, kit.body())
    assert info.value.code == "insufficient_credits"
    scoped = world.accounts.create_key(caller.org_id, scopes=frozenset({"runs:read"}))
    from sim.accounts import Caller

    with pytest.raises(PermissionDenied):
        world.service.create(Caller(caller.org_id, scoped), kit.body())
    assert world.service.sessions() == []
    assert len(world.kernel.events) == 0
