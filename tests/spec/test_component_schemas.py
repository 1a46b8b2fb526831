"""Each derived component schema accepts an instance built from the seed's field tables and
refuses one that lacks a required field; plus the resource-specific rules of the RES-* ids."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from harness.contract import load_spec
from sim.config import LimitsConfig
from tests.spec.samples import ASSET, ASSET_BODY, TS

SESS = "sess_01KABCDEFGHJKMNPQRSTVWXYZ0"
RUN = "run_01KABCDEFGHJKMNPQRSTVWXYZ0"

LIVEKIT = {
    "type": "livekit",
    "url": "wss://rooms.example.com",
    "room_name": "r1",
    "audio_source": "data_stream",
}
SESSION: dict[str, Any] = {
    "id": SESS,
    "object": "session",
    "avatar_id": "av_stock_anna",
    "status": "running",
    "quality": "standard",
    "billing_surface": "api",
    "transport": LIVEKIT,
    "idle_timeout_seconds": 30,
    "max_duration_seconds": 600,
    "metadata": {"customer": "x", "_avatar.debug_record": True},
    "created_at": TS,
    "started_at": TS,
    "first_frame_at": TS,
    "usage": {"billable_seconds": 12, "frames": 300},
    "error": None,
}
AVATAR: dict[str, Any] = {
    "id": "av_stock_anna",
    "object": "avatar",
    "name": "Anna",
    "status": "ready",
    "is_demo": True,
    "runtime_type": "realtime",
    "created_at": TS,
    "voice": "alloy",
}
FILE = {
    "content_type": "audio/wav",
    "file_name": "out.wav",
    "file_size": 1024,
    "url": "http://127.0.0.1:8080/v1/assets/x/content",
}
OUTPUT = {"modality": "text", "role": "primary", "type": "text", "text": "hello"}
CAPACITY_WAIT = {"deadline_at": TS, "message": "waiting for capacity", "status": "waiting"}
ETA = {"p50_seconds": 2.0, "p95_seconds": 5.5, "source": "model_distribution"}
RUN_ERROR = {"code": "model_error", "message": "failed"}
RUN_BODY: dict[str, Any] = {
    "id": RUN,
    "object": "run",
    "model": "sim/speech",
    "model_revision": "1",
    "operation": "synthesize",
    "status": "succeeded",
    "progress": 1.0,
    "created_at": TS,
    "started_at": TS,
    "completed_at": TS,
    "external_id": None,
    "metadata": {},
    "credits": {"charged": 40, "reserved": 40, "pricing_version": "2026-01"},
    "error": None,
    "outputs": [OUTPUT],
    "audio": FILE,
    "eta": ETA,
}
RUN_EVENT = {
    "id": "evt_01KABCDEFGHJKMNPQRSTVWXYZ0",
    "sequence": 1,
    "type": "run.queued",
    "part_id": "run",
    "data": {},
    "created_at": TS,
}
MODEL: dict[str, Any] = {
    "id": "sim/echo-text",
    "object": "model",
    "available": True,
    "contract_revision": "1",
    "revision": "1",
    "description": "Echo",
    "display_name": "Echo",
    "family": "echo",
    "owner": "sim",
    "execution_modes": ["async"],
    "execution_targets": ["cpu"],
    "input_modalities": ["text"],
    "output_modalities": ["text"],
    "operations": {
        "generate": {
            "description": "d",
            "input_modalities": ["text"],
            "output_modalities": ["text"],
        }
    },
    "pricing": {"pricing_version": "2026-01", "unit": "run", "credits_per_unit": 1},
    "aliases": ["echo"],
    "tags": [],
    "request_schemas": {"generate": {"type": "object"}},
    "output_quality_descriptions": {"standard": "fine"},
}
SURFACES = {"api": 10, "embed": 2}
USAGE: dict[str, Any] = {
    "billable_seconds": 60,
    "sessions": 1,
    "credits_charged": 120,
    "period_start": TS,
    "period_end": "2026-02-01T00:00:00.000Z",
    "by_billing_surface": SURFACES,
    "by_model": {"sim/speech": 40},
    "by_quality": {"standard": 60},
    "by_speech_billing_mode": {"customer_managed": 120},
    "daily_credits_by_billing_surface": {"2026-01-05": SURFACES},
    "embed_usage": [],
    "credits_by_operation": {"session.realtime": 120},
    "recent_settled_charges": {"model": [], "studio": []},
}
QUOTA: dict[str, Any] = {
    "balance_credits": 100,
    "included_balance_credits": 0,
    "included_credits_limit": 0,
    "included_credits_used": 0,
    "rollover_balance_credits": 0,
    "low_balance_threshold_credits": 2000,
    "can_start_session": True,
    "current_period_start": TS,
    "current_period_end": "2026-02-01T00:00:00.000Z",
    "plan_key": "free",
    "status": "low_balance",
}
RELAY: dict[str, Any] = {
    "type": "websocket",
    "media_url": "wss://relay.avatar-sim.invalid/v1/media/x?token=y",
    "protocol": "pipecat-avatar.v1",
    "audio_sample_rate": 16000,
    "decoded_video_format": "rgb24",
    "video_encoding": "h264",
    "supports_audio_output": True,
    "expires_at": TS,
}
PLAN: dict[str, Any] = {
    "key": "free",
    "name": "Free",
    "price_usd_month": 0,
    "included_credits": 0,
    "rollover_cap_credits": 0,
    "max_session_duration_seconds": 600,
    "concurrent_sessions": 5,
    "low_balance_threshold_credits": 2000,
    "run_deletion": False,
}
ERROR_BODY = {
    "type": "invalid_request",
    "code": "transport.unsupported",
    "message": "no",
    "param": "transport.type",
    "request_id": "req_1",
}


def _list(item: Any, cursor: Any) -> dict[str, Any]:
    return {"object": "list", "data": [item], "has_more": True, "next_cursor": cursor}


#: One valid instance per component schema, from the seed's tables (plus our gap fields).
SAMPLES: dict[str, Any] = {
    "Timestamp": TS,
    "Metadata": {"k": [1, 2], "_avatar.debug_record": False},
    "Error": {"error": ERROR_BODY},
    "ErrorBody": ERROR_BODY,
    "LivekitTransport": LIVEKIT,
    "WebsocketTransport": {"type": "websocket"},
    "PipecatTransport": {"type": "pipecat"},
    "TransportConfig": LIVEKIT,
    "SessionUsage": {"billable_seconds": 0, "frames": 0},
    "SessionError": {"code": "no_capacity", "message": "not placed in time"},
    "Session": SESSION,
    "CreateSessionRequest": {
        "avatar_id": "av_stock_anna",
        "idle_timeout_seconds": 30,
        "max_duration_seconds": 600,
        "transport": {**LIVEKIT, "worker_token": "token"},
        "quality": "pro",
        "metadata": {},
    },
    "SessionList": _list(SESSION, SESS),
    "CreatePipecatSessionRequest": {"avatar_id": "av_stock_anna", "relay_type": "websocket"},
    "PipecatRelay": RELAY,
    "PipecatSession": {
        "object": "pipecat.session",
        "relay": RELAY,
        "session": {**SESSION, "transport": {"type": "pipecat"}, "billing_surface": "pipecat"},
    },
    "Avatar": AVATAR,
    "CreateAvatarRequest": {"image": "portrait.png", "name": "Me"},
    "AvatarList": _list(AVATAR, "av_stock_anna"),
    "FileObject": FILE,
    "OutputItem": OUTPUT,
    "RunCredits": {"charged": 0, "reserved": 12.5, "pricing_version": "2026-01"},
    "RunError": RUN_ERROR,
    "CapacityWait": CAPACITY_WAIT,
    "Eta": ETA,
    "RunState": "running",
    "Run": RUN_BODY,
    "CreateRunRequest": {"input": {"text": "hi"}, "operation": "generate", "external_id": "e1"},
    "RunStatus": {
        "id": RUN,
        "object": "run.status",
        "status": "queued",
        "progress": 0,
        "error": None,
        "capacity_wait": CAPACITY_WAIT,
    },
    "RunEvent": RUN_EVENT,
    "RunDeletion": {
        "id": "rdel_01KABCDEFGHJKMNPQRSTVWXYZ0",
        "object": "run.deletion",
        "run_id": RUN,
        "status": "pending",
        "requested_at": TS,
        "started_at": None,
        "completed_at": None,
        "error": None,
    },
    "RunList": _list(RUN_BODY, RUN),
    "RunEventList": _list(RUN_EVENT, 1),
    "Asset": ASSET_BODY,
    "AssetList": _list(ASSET_BODY, ASSET),
    "Model": MODEL,
    "ModelList": {"object": "list", "data": [MODEL]},
    "CreditsBySurface": SURFACES,
    "UsageSummary": USAGE,
    "SettledCharge": {"credits": 4, "settled_at": TS, "run_id": RUN, "model": "sim/speech"},
    "Quota": QUOTA,
    "Plan": PLAN,
    "PlanList": {"object": "list", "data": [PLAN]},
    "Status": {
        "object": "status",
        "status": "operational",
        "updated_at": TS,
        "components": [{"name": "workers", "status": "operational"}],
    },
}

#: For schemas without required fields: values they must refuse.
WRONG_SHAPES: dict[str, list[Any]] = {
    "Timestamp": [42, None],
    "Metadata": [[], "text"],
    "TransportConfig": [{}, {"type": "livekit"}, {"url": "wss://x", "room_name": "r"}],
    "CreditsBySurface": [{"api": -1}, {"api": "1"}],
    "RunState": ["paused", 1],
}

#: The requirement each component's schema side proves.
REQUIREMENTS: dict[str, tuple[str, ...]] = {
    "Session": ("RES-SESS-1",),
    "SessionUsage": ("RES-SESS-5",),
    "SessionError": ("RES-SESS-6",),
    "CreateSessionRequest": ("RES-SESS-3", "CONV-3"),
    "SessionList": ("CONV-4", "CONV-5"),
    "LivekitTransport": ("RES-TRN-1",),
    "TransportConfig": ("RES-TRN-1",),
    "WebsocketTransport": ("RES-TRN-1",),
    "PipecatTransport": ("RES-TRN-1",),
    "Avatar": ("RES-AV-1",),
    "AvatarList": ("CONV-4", "CONV-5"),
    "CreateAvatarRequest": ("CONV-3",),
    "Run": ("RES-RUN-1",),
    "Eta": ("RES-RUN-2",),
    "OutputItem": ("RES-RUN-3",),
    "FileObject": ("RES-RUN-3",),
    "RunEvent": ("RES-RUN-4",),
    "RunStatus": ("RES-RUN-5",),
    "RunState": ("RES-RUN-7",),
    "RunDeletion": ("RES-RUN-6",),
    "CapacityWait": ("RES-RUN-1",),
    "RunCredits": ("RES-RUN-1",),
    "RunError": ("RES-RUN-1",),
    "RunList": ("CONV-4", "CONV-5"),
    "RunEventList": ("CONV-4", "CONV-5", "RES-RUN-4"),
    "Asset": ("RES-ASSET-1",),
    "AssetList": ("CONV-4", "CONV-5"),
    "Model": ("RES-MODEL-1",),
    "ModelList": ("RES-MODEL-1",),
    "UsageSummary": ("RES-USAGE-1", "RES-USAGE-2"),
    "CreditsBySurface": ("RES-USAGE-1",),
    "SettledCharge": ("RES-USAGE-3",),
    "Quota": ("RES-QUOTA-1",),
    "PipecatRelay": ("RES-PIPE-1",),
    "PipecatSession": ("RES-PIPE-1",),
    "Error": ("ERR-1",),
    "ErrorBody": ("ERR-1",),
}

COMPONENTS = sorted(load_spec()["components"]["schemas"])


def _params() -> list[Any]:
    return [
        pytest.param(name, marks=pytest.mark.req(*REQUIREMENTS.get(name, ("HAR-5",))), id=name)
        for name in COMPONENTS
    ]


@pytest.mark.req("HAR-5")
def test_every_component_has_a_sample() -> None:
    assert sorted(SAMPLES) == COMPONENTS


@pytest.mark.parametrize("name", _params())
def test_component_accepts_a_seed_instance(name: str, sim_schema: Any) -> None:
    errors = [e.message for e in sim_schema(name).iter_errors(SAMPLES[name])]
    assert errors == []


@pytest.mark.parametrize("name", _params())
def test_component_refuses_a_missing_required_field(name: str, sim_schema: Any) -> None:
    schema = load_spec()["components"]["schemas"][name]
    required = schema.get("required") or []
    if not required:
        # Not an object with required fields: refuse a value of the wrong shape instead.
        for wrong in WRONG_SHAPES[name]:
            assert not sim_schema(name).is_valid(wrong), f"{name} accepted {wrong!r}"
        return
    for field in required:
        instance = copy.deepcopy(SAMPLES[name])
        del instance[field]
        assert not sim_schema(name).is_valid(instance), f"{name} accepted a missing {field!r}"


@pytest.mark.req("ERR-1")
def test_error_envelope_refuses_extra_properties_at_both_levels(
    sim_schema: Any, profile_schema: Any
) -> None:
    outer = {"error": ERROR_BODY, "detail": "x"}
    inner = {"error": {**ERROR_BODY, "detail": "x"}}
    for validator in (sim_schema("Error"), profile_schema("Error")):
        assert validator.is_valid({"error": ERROR_BODY})
        assert not validator.is_valid(outer)
        assert not validator.is_valid(inner)


@pytest.mark.req("ERR-1")
def test_error_envelope_field_rules(sim_schema: Any) -> None:
    envelope = sim_schema("Error")
    assert envelope.is_valid({"error": {**ERROR_BODY, "param": None}})
    for change in ({"request_id": "1234"}, {"code": "Not-Snake"}, {"type": "teapot"}, {"param": 3}):
        assert not envelope.is_valid({"error": {**ERROR_BODY, **change}}), change


@pytest.mark.req("RES-SESS-2", "RES-TRN-1")
def test_worker_token_is_request_only(sim_schema: Any) -> None:
    with_token = {**LIVEKIT, "worker_token": "secret"}
    assert not sim_schema("Session").is_valid({**SESSION, "transport": with_token})
    assert not sim_schema("LivekitTransport").is_valid(with_token)
    request = {"avatar_id": "av_stock_anna", "transport": with_token}
    assert sim_schema("CreateSessionRequest").is_valid(request)
    node = load_spec()["components"]["schemas"]["LivekitTransport"]["properties"]["worker_token"]
    assert node["writeOnly"] is True


@pytest.mark.req("RES-TRN-1")
def test_transport_union(spec_document: dict[str, Any], sim_schema: Any) -> None:
    union = spec_document["components"]["schemas"]["TransportConfig"]
    assert union["discriminator"]["propertyName"] == "type"
    assert sorted(union["discriminator"]["mapping"]) == ["livekit", "pipecat", "websocket"]
    assert not sim_schema("LivekitTransport").is_valid({**LIVEKIT, "url": "https://x"})
    assert not sim_schema("TransportConfig").is_valid({"type": "webrtc"})


@pytest.mark.req("RES-SESS-3", "RES-SESS-4", "RES-SESS-6", "RES-SESS-7")
def test_session_field_rules(spec_document: dict[str, Any], sim_schema: Any) -> None:
    schemas = spec_document["components"]["schemas"]
    limits = LimitsConfig()
    request = schemas["CreateSessionRequest"]["properties"]
    assert request["idle_timeout_seconds"]["default"] == limits.idle_timeout_default_seconds
    assert request["max_duration_seconds"]["default"] == limits.max_duration_default_seconds
    assert request["max_duration_seconds"]["maximum"] == limits.max_duration_ceiling_seconds
    assert request["idle_timeout_seconds"]["maximum"] == limits.idle_timeout_max_seconds
    assert schemas["Metadata"]["x-max-bytes"] == limits.metadata_max_bytes
    session = sim_schema("Session")
    assert session.is_valid({**SESSION, "started_at": None, "first_frame_at": None})
    failed = {**SESSION, "status": "failed", "error": {"code": "no_capacity", "message": "m"}}
    assert session.is_valid(failed)
    assert not session.is_valid({**SESSION, "error": {"code": "x"}})
    assert not session.is_valid({**SESSION, "max_duration_seconds": 3601})
    props = schemas["Session"]["properties"]
    assert props["quality"]["enum"] == ["mock", "lite", "standard", "pro"]
    assert props["billing_surface"]["enum"] == [
        "api",
        "playground",
        "embed",
        "share",
        "public_demo",
        "pipecat",
        "agora",
        "video_generation",
    ]
    assert not session.is_valid({**SESSION, "quality": "ultra"})


@pytest.mark.req("RES-SESS-1")
def test_metadata_reserved_keys(sim_schema: Any) -> None:
    metadata = sim_schema("Metadata")
    assert metadata.is_valid({"_avatar.debug_record": True, "plain": 1})
    assert not metadata.is_valid({"_avatar.other": True})
    assert not metadata.is_valid({"_avatar.debug_record": "yes"})


@pytest.mark.req("RES-AV-1", "RES-AV-2")
def test_avatar_fields(spec_document: dict[str, Any], sim_schema: Any) -> None:
    props = spec_document["components"]["schemas"]["Avatar"]["properties"]
    assert props["status"]["enum"] == ["ready", "processing", "failed"]
    assert props["runtime_type"]["enum"] == ["realtime", "mock"]
    optional = ["instructions", "voice_instructions", "failure_reason", "from_photo_upload"]
    for name in optional:
        assert props[name]["x-gap"] == "GAP-AV-1"
    failed = {
        **AVATAR,
        "status": "failed",
        "failure_reason": "no face found",
        "from_photo_upload": True,
    }
    assert sim_schema("Avatar").is_valid(failed)


@pytest.mark.req("RES-RUN-1", "RES-RUN-2", "RES-RUN-3", "RES-RUN-5", "RES-RUN-7")
def test_run_field_rules(sim_schema: Any) -> None:
    run = sim_schema("Run")
    queued = {
        **RUN_BODY,
        "status": "queued",
        "started_at": None,
        "completed_at": None,
        "outputs": [],
        "capacity_wait": CAPACITY_WAIT,
    }
    del queued["eta"], queued["audio"]
    assert run.is_valid(queued)
    assert run.is_valid({**RUN_BODY, "error": RUN_ERROR, "status": "failed"})
    assert not run.is_valid({**RUN_BODY, "eta": {"p50_seconds": 1}})
    assert not run.is_valid({**RUN_BODY, "outputs": [{"modality": "text", "role": "primary"}]})
    assert not run.is_valid({**RUN_BODY, "model": "no-slash"})
    assert not sim_schema("RunStatus").is_valid({"id": RUN, "status": "queued", "progress": 0})


@pytest.mark.req("RES-RUN-6")
def test_run_deletion_nullable_fields(sim_schema: Any) -> None:
    deletion = sim_schema("RunDeletion")
    done = {
        **SAMPLES["RunDeletion"],
        "status": "completed",
        "started_at": TS,
        "completed_at": TS,
        "error": "2 input assets retained",
    }
    assert deletion.is_valid(done)
    assert not deletion.is_valid({**done, "error": {"code": "x"}})


@pytest.mark.req("CONV-5")
def test_list_cursor_rules(sim_schema: Any, profile_schema: Any) -> None:
    empty = {"object": "list", "data": [], "has_more": False}
    for name in ("SessionList", "RunList", "AssetList", "AvatarList", "RunEventList"):
        for validator in (sim_schema(name), profile_schema(name)):
            assert validator.is_valid(empty)
            assert not validator.is_valid(
                {**empty, "next_cursor": "x" if name != "RunEventList" else 3}
            )
    assert not sim_schema("RunEventList").is_valid(_list(RUN_EVENT, "1"))
    assert not sim_schema("SessionList").is_valid(_list(SESSION, 1))
    assert not sim_schema("AvatarList").is_valid(_list(AVATAR, "stock_anna"))


@pytest.mark.req("RES-USAGE-1", "RES-USAGE-2", "RES-USAGE-3")
def test_usage_summary(sim_schema: Any, spec_document: dict[str, Any]) -> None:
    usage = sim_schema("UsageSummary")
    assert usage.is_valid({**USAGE, "by_region": {"eu": 3}})  # more by_* slices may appear
    assert not usage.is_valid({**USAGE, "something_else": 1})
    assert not usage.is_valid({**USAGE, "credits_charged": -1})
    assert not usage.is_valid({**USAGE, "by_speech_billing_mode": {"other": 1}})
    assert not usage.is_valid({**USAGE, "daily_credits_by_billing_surface": {"Jan 5": SURFACES}})
    props = spec_document["components"]["schemas"]["UsageSummary"]["properties"]
    for name in ("embed_usage", "credits_by_operation", "recent_settled_charges"):
        assert props[name]["x-gap"] == "GAP-USAGE-1"


@pytest.mark.req("RES-QUOTA-1", "RES-PIPE-1", "RES-ASSET-1", "RES-MODEL-1")
def test_integer_and_constant_rules(sim_schema: Any) -> None:
    assert not sim_schema("Quota").is_valid({**QUOTA, "balance_credits": -5})
    assert not sim_schema("PipecatRelay").is_valid({**RELAY, "type": "livekit"})
    assert not sim_schema("Asset").is_valid({**ASSET_BODY, "byte_size": "10"})
    assert not sim_schema("Model").is_valid({**MODEL, "execution_modes": "async"})
    assert sim_schema("Asset").is_valid(
        {
            **ASSET_BODY,
            "status": "deleted",
            "deleted_at": TS,
            "modality": "json",
            "schema_uri": "urn:x",
        }
    )


@pytest.mark.req("HAR-5")
def test_derived_schemas_are_self_contained(spec_dir: Any) -> None:
    for path in sorted((spec_dir / "schemas").glob("*.json")):
        text = path.read_text(encoding="utf-8")
        assert "#/components/" not in text, path.name
        document = json.loads(text)
        assert document["$id"].endswith(f"/{path.name}")
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
