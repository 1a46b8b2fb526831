"""The contract profile is the spec minus the gap choices: looser exactly there, identical where
the seed speaks (HAR-5), with the error envelope still closed (ERR-1)."""

from __future__ import annotations

from typing import Any

import pytest

from harness.contract import derive_profile, gap_ids
from harness.contract.profile import SEED_OPTIONAL as OPTIONAL_MARK
from tests.spec.samples import ASSET_BODY, TS

SESSION: dict[str, Any] = {
    "id": "sess_01KABCDEFGHJKMNPQRSTVWXYZ0",
    "object": "session",
    "avatar_id": "av_stock_anna",
    "status": "queued",
    "quality": "standard",
    "billing_surface": "api",
    "transport": {"type": "livekit", "url": "wss://x", "room_name": "r", "audio_source": "track"},
    "idle_timeout_seconds": 30,
    "max_duration_seconds": 600,
    "metadata": {},
    "created_at": TS,
    "started_at": None,
    "first_frame_at": None,
    "usage": {"billable_seconds": 0, "frames": 0},
    "error": None,
}
RUN: dict[str, Any] = {
    "id": "run_x",
    "model": "acme/tts",
    "model_revision": "7",
    "operation": "speak",
    "status": "running",
    "progress": 0.5,
    "created_at": TS,
    "started_at": TS,
    "completed_at": None,
    "external_id": None,
    "metadata": {},
    "credits": {"charged": 0, "reserved": 1, "pricing_version": "v"},
    "error": None,
    "outputs": [],
}

RUN_STATUS: dict[str, Any] = {"id": "run_x", "status": "running", "progress": 0.5, "error": None}
#: Fields whose presence the seed does not promise (GAP-NULL-1): the simulator writes null, a
#: deployment may leave them out while they have no value.
SEED_OPTIONAL: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "Session": (SESSION, ("started_at", "first_frame_at", "error")),
    "Asset": (ASSET_BODY, ("deleted_at", "duration_ms", "height", "width", "schema_uri")),
}
#: Fields the seed says are always present, and which must therefore be there even when null.
ALWAYS_PRESENT: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "Run": (RUN, ("started_at", "completed_at", "external_id", "error")),
    "RunStatus": (RUN_STATUS, ("error",)),
}

#: (component, change) pairs: each is a gap choice of the simulator that a deployment may make
#: differently. The sim spec refuses the changed instance; the profile accepts it.
GAP_VARIANTS: list[tuple[str, dict[str, Any], str]] = [
    ("Session", {"status": "paused"}, "unknown session status (GAP-VER-2)"),
    ("Session", {"billing_surface": "kiosk"}, "unknown billing surface (GAP-VER-2)"),
    ("Session", {"region": "eu"}, "extra response field"),
    ("Session", {"error": {"reason": "gone"}}, "other error shape (GAP-SES-2)"),
    (
        "Session",
        {
            "transport": {
                "type": "livekit",
                "url": "wss://x",
                "room_name": "r",
                "audio_source": "mic",
            }
        },
        "audio source (GAP-SES-5)",
    ),
    ("Run", {"status": "in_progress"}, "run status (GAP-RUN-1)"),
    ("Run", {"progress": 55}, "progress as a percentage (GAP-RUN-11)"),
    ("Run", {"outputs": [{"modality": "3d", "role": "main", "type": "mesh"}]}, "GAP-RUN-4"),
    (
        "Run",
        {"capacity_wait": {"deadline_at": TS, "message": "m", "status": "held"}},
        "capacity wait status (GAP-RUN-1)",
    ),
    (
        "Avatar",
        {
            "id": "av_x",
            "object": "avatar",
            "name": "n",
            "status": "archived",
            "is_demo": False,
            "runtime_type": "realtime",
            "created_at": TS,
            "failure_reason": 7,
        },
        "avatar gap fields (GAP-AV-1, GAP-VER-2)",
    ),
    (
        "RunEvent",
        {
            "id": "e1",
            "sequence": 0,
            "type": "run.custom",
            "part_id": "p",
            "data": {},
            "created_at": TS,
        },
        "event shape (GAP-RUN-5, GAP-EV-1)",
    ),
    ("Quota", {"status": "frozen"}, "quota status (GAP-BILL-3)"),
    (
        "SessionList",
        {"object": "list", "data": [SESSION], "has_more": True},
        "a page without next_cursor (GAP-SES-6)",
    ),
]


def _instance(name: str, change: dict[str, Any]) -> dict[str, Any]:
    base = {"Session": SESSION, "Run": RUN}.get(name)
    if base is None:
        base = {
            "Quota": {
                "balance_credits": 1,
                "included_balance_credits": 0,
                "included_credits_limit": 0,
                "included_credits_used": 0,
                "rollover_balance_credits": 0,
                "low_balance_threshold_credits": 0,
                "can_start_session": True,
                "current_period_start": TS,
                "current_period_end": TS,
                "plan_key": "p",
                "status": "active",
            },
        }.get(name, {})
    return {**base, **change}


@pytest.mark.req("HAR-5", "EV-2")
@pytest.mark.parametrize(("name", "change", "why"), GAP_VARIANTS, ids=[v[2] for v in GAP_VARIANTS])
def test_profile_accepts_what_only_the_simulator_refuses(
    name: str, change: dict[str, Any], why: str, sim_schema: Any, profile_schema: Any
) -> None:
    instance = _instance(name, change)
    assert not sim_schema(name).is_valid(instance), why
    errors = [e.message for e in profile_schema(name).iter_errors(instance)]
    assert errors == [], why


@pytest.mark.req("HAR-5", "RES-SESS-1", "RES-RUN-1")
def test_profile_still_refuses_seed_violations(profile_schema: Any) -> None:
    missing = dict(SESSION)
    del missing["usage"]
    assert not profile_schema("Session").is_valid(missing)
    assert not profile_schema("Session").is_valid({**SESSION, "object": "sess"})
    assert not profile_schema("Session").is_valid({**SESSION, "id": "session_1"})
    assert not profile_schema("Session").is_valid({**SESSION, "started_at": 5})
    assert not profile_schema("Run").is_valid({**RUN, "credits": {"charged": 1}})
    assert not profile_schema("Run").is_valid({**RUN, "progress": "half"})


@pytest.mark.req("HAR-5", "ERR-1")
def test_envelope_and_seed_elements_are_identical(
    spec_document: dict[str, Any], profile_document: dict[str, Any]
) -> None:
    spec_schemas = spec_document["components"]["schemas"]
    profile_schemas = profile_document["components"]["schemas"]
    assert profile_schemas["Error"] == spec_schemas["Error"]
    assert profile_schemas["ErrorBody"] == spec_schemas["ErrorBody"]
    for name in ("IdempotencyKey", "SessionId"):
        assert (
            profile_document["components"]["parameters"][name]
            == spec_document["components"]["parameters"][name]
        )
    # A page size outside its range may be refused or clamped (LIM-7): only its type stays.
    limit = dict(spec_document["components"]["parameters"]["Limit"])
    assert profile_document["components"]["parameters"]["Limit"] == {
        **limit,
        "schema": {"type": "integer"},
    }
    spec_request = spec_schemas["CreateSessionRequest"]["properties"]
    profile_request = profile_schemas["CreateSessionRequest"]["properties"]
    for field in ("idle_timeout_seconds", "max_duration_seconds", "quality", "metadata"):
        assert profile_request[field] == spec_request[field], field
    spec_paths, profile_paths = spec_document["paths"], profile_document["paths"]
    assert (
        profile_paths["/v1/runs/{run_id}"]["delete"]["responses"]["202"]
        == spec_paths["/v1/runs/{run_id}"]["delete"]["responses"]["202"]
    )
    assert "200" in profile_paths["/v1/sessions/{session_id}/end"]["post"]["responses"]
    assert "200" in profile_paths["/v1/models"]["get"]["responses"]


@pytest.mark.req("HAR-5")
def test_gap_operations_parameters_and_fields_are_dropped(
    profile_document: dict[str, Any],
) -> None:
    paths = profile_document["paths"]
    assert "/v1/runs/{run_id}/cancel" not in paths
    links = paths["/v1/run/{model_id}"]["post"]["responses"]["2XX"]["links"]
    assert "cancelRun" not in {link["operationId"] for link in links.values()}

    def names(template: str) -> set[str]:
        params = paths[template]["get"].get("parameters", [])
        return {p.get("name") or p["$ref"].rsplit("/", 1)[-1] for p in params}

    assert names("/v1/avatars") == {"limit", "starting_after"}
    assert names("/v1/sessions") == {"Limit", "starting_after"}
    assert names("/v1/usage") == {"period", "period_start", "period_end"}
    assert names("/v1/runs/{run_id}/events") == {"limit"}
    schemas = profile_document["components"]["schemas"]
    assert "embed_usage" not in schemas["UsageSummary"]["properties"]
    assert "failure_reason" not in schemas["Avatar"]["properties"]
    assert set(schemas["CreatePipecatSessionRequest"]["properties"]) == {"avatar_id"}
    assert "expires_at" not in schemas["PipecatRelay"]["properties"]
    assert profile_document["x-event-types"] == profile_document["x-seed-event-types"]
    assert gap_ids(profile_document) == set()


@pytest.mark.req("HAR-5")
def test_success_codes_not_stated_by_the_seed_become_any_2xx(
    spec_document: dict[str, Any], profile_document: dict[str, Any]
) -> None:
    for template, item in profile_document["paths"].items():
        for method, operation in item.items():
            if method == "parameters":
                continue
            success = [s for s in operation["responses"] if s.startswith("2")]
            sim = spec_document["paths"][template][method]
            expected = [s for s in sim["responses"] if s.startswith("2")]
            if not sim.get("x-seed-success"):
                expected = ["2XX"]
            assert success == expected, (method, template)
            assert "4XX" in operation["responses"]


@pytest.mark.req("HAR-5")
def test_profile_derivation_is_deterministic(spec_document: dict[str, Any]) -> None:
    assert derive_profile(spec_document) == derive_profile(spec_document)
    # Deriving the profile of the profile changes nothing more: it has no marks left.
    once = derive_profile(spec_document)
    twice = derive_profile(once)
    twice["info"] = once["info"] = {}
    assert twice == once


@pytest.mark.req("HAR-5", "RES-SESS-1", "RES-SESS-4", "RES-ASSET-1")
@pytest.mark.parametrize("name", sorted(SEED_OPTIONAL))
def test_profile_lets_unset_fields_be_left_out(
    name: str, sim_schema: Any, profile_schema: Any
) -> None:
    base, fields = SEED_OPTIONAL[name]
    assert sim_schema(name).is_valid(base) and profile_schema(name).is_valid(base)
    for field in fields:
        without = {k: v for k, v in base.items() if k != field}
        assert not sim_schema(name).is_valid(without), field  # the simulator writes null
        assert profile_schema(name).is_valid(without), field
    bare = {k: v for k, v in base.items() if k not in fields}
    assert profile_schema(name).is_valid(bare)


@pytest.mark.req("HAR-5", "RES-SESS-1", "RES-SESS-4", "RES-ASSET-1", "CONV-2")
def test_profile_still_types_the_fields_it_no_longer_requires(profile_schema: Any) -> None:
    session, asset = profile_schema("Session"), profile_schema("Asset")
    assert session.is_valid({**SESSION, "started_at": TS, "first_frame_at": TS})
    assert session.is_valid({**SESSION, "error": {"code": "no_capacity"}})
    assert not session.is_valid({**SESSION, "started_at": 1767225600})  # an integer epoch
    assert not session.is_valid({**SESSION, "first_frame_at": "yesterday"})
    assert not session.is_valid({**SESSION, "error": "none"})
    assert asset.is_valid({**ASSET_BODY, "height": 720, "width": 1280, "deleted_at": TS})
    assert not asset.is_valid({**ASSET_BODY, "height": "720"})
    assert not asset.is_valid({**ASSET_BODY, "duration_ms": -1})
    assert not asset.is_valid({**ASSET_BODY, "deleted_at": 0})
    assert not asset.is_valid({**ASSET_BODY, "schema_uri": 5})


@pytest.mark.req("HAR-5", "RES-RUN-1", "RES-RUN-5", "ERR-1")
def test_profile_requires_what_the_seed_says_is_always_present(
    profile_schema: Any, profile_document: dict[str, Any]
) -> None:
    for name, (base, fields) in ALWAYS_PRESENT.items():
        assert profile_schema(name).is_valid(base), name
        for field in fields:
            without = {k: v for k, v in base.items() if k != field}
            assert not profile_schema(name).is_valid(without), (name, field)
    envelope = {
        "type": "not_found",
        "code": "x",
        "message": "m",
        "param": None,
        "request_id": "req_1",
    }
    assert profile_schema("ErrorBody").is_valid(envelope)
    assert not profile_schema("ErrorBody").is_valid(
        {k: v for k, v in envelope.items() if k != "param"}
    )
    deletion = {"id": "rdel_1", "run_id": "run_1", "status": "pending", "requested_at": TS}
    assert profile_schema("RunDeletion").is_valid(deletion)  # "timestamp or null", not required
    assert OPTIONAL_MARK not in str(profile_document)


@pytest.mark.req("HAR-5")
def test_seed_optional_mark_leaves_required_but_keeps_the_schema() -> None:
    answer = {
        "type": "array",
        "prefixItems": [
            {"$ref": "#/components/schemas/Thing"},
            {"$ref": "#/components/schemas/Other"},
        ],
    }
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": answer}}}}
    spec = {
        "openapi": "3.1.0",
        "paths": {"/things": {"get": {"operationId": "listThings", "responses": ok}}},
        "components": {
            "schemas": {
                "Thing": {
                    "type": "object",
                    "required": ["id", "set_at"],
                    "properties": {
                        "id": {"type": "string"},
                        "set_at": {"type": ["string", "null"], "format": "date-time",
                                   OPTIONAL_MARK: True},
                    },
                },
                "Other": {
                    "type": "object",
                    "required": ["set_at"],
                    "properties": {"set_at": {"type": "string"}},
                },
            }
        },
    }  # fmt: skip
    schemas = derive_profile(spec)["components"]["schemas"]
    assert schemas["Thing"]["required"] == ["id"]
    assert schemas["Thing"]["properties"]["set_at"] == {
        "type": ["string", "null"], "format": "date-time"
    }  # fmt: skip
    assert schemas["Other"]["required"] == ["set_at"]  # the mark is per property
