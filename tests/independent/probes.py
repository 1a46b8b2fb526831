"""One small probe per fault: what a client sees that tells the fault apart from the clean service.

A probe drives a fresh service (see :mod:`.client`) and returns an observation, a small,
deterministic value (status codes, booleans, counts; never ids or timestamps). The package's
tests run each probe against the clean service and against the service with only that fault on,
under both readings, and require the observations to differ.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .client import STOCK, Api, image_bytes, session_body

Probe = Callable[[Api], Awaitable[Any]]


@dataclass(frozen=True)
class ProbeSpec:
    fn: Probe
    workers: int = 8


PROBES: dict[str, ProbeSpec] = {}


def probe(name: str, *, workers: int = 8) -> Callable[[Probe], Probe]:
    def register(fn: Probe) -> Probe:
        if name in PROBES:
            raise ValueError(f"two probes for {name}")
        PROBES[name] = ProbeSpec(fn, workers)
        return fn

    return register


def failure_field(api: Api) -> str:
    return api.reading.avatar_optional_fields["failure_reason"]


async def eleven_creates(api: Api, key: str = "api_key") -> list[Any]:
    return [await api.create_session(key) for _ in range(11)]


async def second_session_refusal(api: Api) -> Any:
    await api.running_session()
    return await api.create_session()


async def unplaceable_session(api: Api) -> dict[str, Any]:
    """With one worker, a second organization's session queued behind a running one."""
    await api.create_session("api_key")
    second = await api.create_session("other_org_key")
    assert second.status_code in (200, 201), second.text
    api.wait(16)
    return await api.session(second.json()["id"], "other_org_key")


# -- 1. Conventions ------------------------------------------------------------------------------


@probe("pipecat_session_id_prefix")
async def _(api: Api) -> Any:
    return (await api.pipecat()).json()["session"]["id"].startswith("sess_")


@probe("started_at_naive_timestamp")
async def _(api: Api) -> Any:
    sid = await api.running_session()
    return (await api.session(sid))["started_at"].endswith("Z")


@probe("has_more_true_on_exact_page")
async def _(api: Api) -> Any:
    r = await api.get("/v1/avatars", params={**api.avatar_filter("platform"), "limit": 3})
    return r.json()["has_more"]


@probe("next_cursor_null_on_empty")
async def _(api: Api) -> Any:
    return "next_cursor" in (await api.get("/v1/sessions")).json()


@probe("run_events_cursor_string")
async def _(api: Api) -> Any:
    run = await api.run()
    r = await api.get(f"/v1/runs/{run['id']}/events", params=api.events_params(limit=2))
    return type(r.json()["next_cursor"]).__name__


@probe("session_pages_repeat_cursor_item")
async def _(api: Api) -> Any:
    first = (await api.create_session()).json()["id"]
    await api.end(first)
    await api.create_session()
    page1 = (await api.get("/v1/sessions", params={"limit": 1})).json()
    cursor = page1["next_cursor"]
    page2 = (await api.get("/v1/sessions", params={"limit": 1, "starting_after": cursor})).json()
    return page2["data"][0]["id"] == page1["data"][0]["id"]


@probe("run_idempotency_ignored")
async def _(api: Api) -> Any:
    headers = {"Idempotency-Key": "retry-1"}
    one = await api.run(finish=False, headers=headers)
    two = await api.run(finish=False, headers=headers)
    return one["id"] == two["id"]


@probe("unknown_route_plain_404")
async def _(api: Api) -> Any:
    r = await api.get("/v1/no-such-thing")
    return r.status_code, r.headers.get("content-type", "").startswith("application/json")


# -- 2. Resources --------------------------------------------------------------------------------


@probe("worker_token_echoed")
async def _(api: Api) -> Any:
    return "worker_token" in (await api.create_session()).json()["transport"]


@probe("transport_ws_url_accepted")
async def _(api: Api) -> Any:
    r = await api.create_session(
        transport={**session_body()["transport"], "url": "ws://rooms.example.com"}
    )
    return r.status_code


@probe("max_duration_not_clamped")
async def _(api: Api) -> Any:
    r = await api.create_session("other_org_key", max_duration_seconds=3000)
    return r.json()["max_duration_seconds"]


@probe("session_billable_seconds_float")
async def _(api: Api) -> Any:
    return type((await api.create_session()).json()["usage"]["billable_seconds"]).__name__


@probe("session_list_drops_metadata")
async def _(api: Api) -> Any:
    await api.create_session(metadata={"crm_id": "42"})
    return (await api.get("/v1/sessions")).json()["data"][0]["metadata"]


@probe("stock_avatar_not_demo_on_get")
async def _(api: Api) -> Any:
    return (await api.get(f"/v1/avatars/{STOCK}")).json()["is_demo"]


@probe("failure_reason_on_ready_avatar")
async def _(api: Api) -> Any:
    avatar = (await api.upload(image_bytes())).json()
    api.wait(4)
    body = (await api.get(f"/v1/avatars/{avatar['id']}")).json()
    return body["status"], failure_field(api) in body


@probe("run_external_id_omitted")
async def _(api: Api) -> Any:
    return "external_id" in await api.run(finish=False)


@probe("run_media_output_missing_type")
async def _(api: Api) -> Any:
    run = await api.media_run()
    body = (await api.get(f"/v1/runs/{run['id']}")).json()
    return [("type" in out) for out in body["outputs"]]


@probe("run_event_missing_part_id")
async def _(api: Api) -> Any:
    run = await api.run()
    events = (await api.get(f"/v1/runs/{run['id']}/events")).json()["data"]
    return all(isinstance(e["part_id"], str) for e in events)


@probe("run_status_error_omitted")
async def _(api: Api) -> Any:
    run = await api.run()
    return "error" in (await api.get(f"/v1/runs/{run['id']}/status")).json()


@probe("deletion_requested_at_missing")
async def _(api: Api) -> Any:
    run = await api.run()
    return "requested_at" in (await api.delete(f"/v1/runs/{run['id']}")).json()


@probe("asset_byte_size_off")
async def _(api: Api) -> Any:
    await api.media_run()
    sizes = []
    for asset in (await api.get("/v1/assets")).json()["data"]:
        sizes.append(asset["byte_size"] == len(await api.asset_bytes(asset["id"])))
    return sizes


@probe("model_execution_modes_string")
async def _(api: Api) -> Any:
    models = (await api.get("/v1/models")).json()["data"]
    return [type(m["execution_modes"]).__name__ for m in models]


@probe("usage_by_model_keyed_by_run")
async def _(api: Api) -> Any:
    await api.run()
    return [key in api.creds["models"] for key in (await api.get("/v1/usage")).json()["by_model"]]


@probe("usage_sessions_counts_unbilled")
async def _(api: Api) -> Any:
    sid = (await api.create_session()).json()["id"]
    await api.end(sid)
    return (await api.get("/v1/usage")).json()["sessions"]


@probe("usage_by_quality_in_credits")
async def _(api: Api) -> Any:
    await api.running_session(quality="pro", idle_timeout_seconds=5)
    api.wait(10)
    return (await api.get("/v1/usage")).json()["by_quality"]


@probe("usage_daily_ignores_timezone")
async def _(api: Api) -> Any:
    await api.run()  # settles at 12:00:03 UTC, already the next day in Kiritimati (UTC+14)
    params = {api.reading.usage_tz_param: "Pacific/Kiritimati"}
    return sorted(
        (await api.get("/v1/usage", params=params)).json()["daily_credits_by_billing_surface"]
    )


@probe("quota_balance_float")
async def _(api: Api) -> Any:
    return type((await api.get("/v1/billing/quota")).json()["balance_credits"]).__name__


@probe("pipecat_relay_type_wrong")
async def _(api: Api) -> Any:
    return (await api.pipecat()).json()["relay"]["type"]


# -- 3. States -----------------------------------------------------------------------------------


@probe("end_queued_session_ends")
async def _(api: Api) -> Any:
    sid = (await api.create_session()).json()["id"]
    return (await api.end(sid)).json()["status"]


@probe("end_running_skips_ending")
async def _(api: Api) -> Any:
    sid = await api.running_session()
    return (await api.end(sid)).json()["status"]


@probe("end_terminal_conflict")
async def _(api: Api) -> Any:
    sid = (await api.create_session()).json()["id"]
    await api.end(sid)
    return (await api.end(sid)).status_code


@probe("idle_timeout_not_enforced")
async def _(api: Api) -> Any:
    sid = await api.running_session(idle_timeout_seconds=5)
    api.wait(6)
    return (await api.session(sid))["status"]


@probe("max_duration_ends_failed")
async def _(api: Api) -> Any:
    sid = await api.running_session(idle_timeout_seconds=600, max_duration_seconds=5)
    api.wait(6)
    return (await api.session(sid))["status"]


@probe("startup_timeout_ignored", workers=1)
async def _(api: Api) -> Any:
    return (await unplaceable_session(api))["status"]


@probe("avatar_created_ready")
async def _(api: Api) -> Any:
    return (await api.upload(image_bytes())).json()["status"]


@probe("avatar_jpeg_stuck_processing")
async def _(api: Api) -> Any:
    avatar = (await api.upload(image_bytes("JPEG"), "portrait.jpg")).json()
    api.wait(4)
    return (await api.get(f"/v1/avatars/{avatar['id']}")).json()["status"]


@probe("avatar_failed_without_reason")
async def _(api: Api) -> Any:
    avatar = (await api.upload(image_bytes(size=16))).json()  # decodes, too small to fit
    api.wait(4)
    body = (await api.get(f"/v1/avatars/{avatar['id']}")).json()
    return body["status"], failure_field(api) in body


@probe("deleted_run_not_listed")
async def _(api: Api) -> Any:
    run = await api.run()
    await api.delete(f"/v1/runs/{run['id']}")
    return [r["id"] == run["id"] for r in (await api.get("/v1/runs")).json()["data"]]


@probe("deleted_run_keeps_outputs")
async def _(api: Api) -> Any:
    run = await api.run()
    await api.delete(f"/v1/runs/{run['id']}")
    return len((await api.get(f"/v1/runs/{run['id']}")).json()["outputs"])


@probe("run_delete_refunds_billing")
async def _(api: Api) -> Any:
    run = await api.run()
    await api.delete(f"/v1/runs/{run['id']}")
    return (await api.get("/v1/usage")).json()["credits_charged"]


# -- 4. Endpoints --------------------------------------------------------------------------------


@probe("transport_unsupported_param_missing")
async def _(api: Api) -> Any:
    r = await api.create_session(transport={"type": "pipecat"})
    return r.status_code, r.json()["error"]["param"]


@probe("idle_timeout_600_refused")
async def _(api: Api) -> Any:
    return (await api.create_session(idle_timeout_seconds=600)).status_code


@probe("idempotency_key_255_refused")
async def _(api: Api) -> Any:
    return (await api.create_session(headers={"Idempotency-Key": "k" * 255})).status_code


@probe("session_accepts_foreign_avatar")
async def _(api: Api) -> Any:
    theirs = (await api.upload(image_bytes(), key="other_org_key")).json()
    api.wait(4)
    return (await api.create_session(avatar_id=theirs["id"])).status_code


@probe("session_status_filter_ignored")
async def _(api: Api) -> Any:
    sid = (await api.create_session()).json()["id"]
    await api.end(sid)
    params = {api.reading.session_status_filter: "running"}
    return len((await api.get("/v1/sessions", params=params)).json()["data"])


@probe("at_capacity_without_retry_after", workers=1)
async def _(api: Api) -> Any:
    await api.running_session()
    r = await api.create_session("other_org_key")
    return r.status_code, "retry-after" in r.headers


@probe("pipecat_relay_type_unchecked")
async def _(api: Api) -> Any:
    return (await api.pipecat(**{api.reading.pipecat_fields["relay"]: "webrtc"})).status_code


@probe("avatar_gif_becomes_ready")
async def _(api: Api) -> Any:
    r = await api.upload(image_bytes("GIF"), "portrait.gif")
    if r.status_code >= 300:
        return r.status_code
    api.wait(4)
    return (await api.get(f"/v1/avatars/{r.json()['id']}")).json()["status"]


@probe("avatar_name_ignored")
async def _(api: Api) -> Any:
    return (await api.upload(image_bytes(), name="Front Desk")).json()["name"]


@probe("avatar_search_case_sensitive")
async def _(api: Api) -> Any:
    r = await api.get("/v1/avatars", params=api.avatar_filter(search="MAYA"))
    return [a["id"] for a in r.json()["data"]]


@probe("avatar_org_filter_includes_stock")
async def _(api: Api) -> Any:
    r = await api.get("/v1/avatars", params=api.avatar_filter("org"))
    return [a["is_demo"] for a in r.json()["data"]]


@probe("runs_cursor_limit_too_short")
async def _(api: Api) -> Any:
    await api.run(finish=False)
    await api.run(finish=False)
    first = (await api.get("/v1/runs", params={"limit": 1})).json()
    second = await api.get("/v1/runs", params={"limit": 1, "starting_after": first["next_cursor"]})
    return second.status_code


@probe("run_events_limit_500_refused")
async def _(api: Api) -> Any:
    run = await api.run()
    r = await api.get(f"/v1/runs/{run['id']}/events", params=api.events_params(limit=500))
    return r.status_code


@probe("run_events_next_page_repeats")
async def _(api: Api) -> Any:
    run = await api.run()
    path = f"/v1/runs/{run['id']}/events"
    one = (await api.get(path, params=api.events_params(limit=2))).json()
    two = (await api.get(path, params=api.events_params(int(one["next_cursor"]), 2))).json()
    return [e["sequence"] for e in one["data"] + two["data"]]


@probe("run_delete_not_enterprise_only")
async def _(api: Api) -> Any:
    run = await api.run(key="other_org_key")
    return (await api.delete(f"/v1/runs/{run['id']}", "other_org_key")).status_code


@probe("run_delete_returns_200")
async def _(api: Api) -> Any:
    run = await api.run()
    return (await api.delete(f"/v1/runs/{run['id']}")).status_code


@probe("asset_content_cross_tenant")
async def _(api: Api) -> Any:
    await api.media_run()
    asset = (await api.get("/v1/assets")).json()["data"][0]
    return (await api.get(f"/v1/assets/{asset['id']}/content", "other_org_key")).status_code


@probe("models_refuse_scoped_keys")
async def _(api: Api) -> Any:
    return (await api.get("/v1/models", "runs_read_key")).status_code


@probe("usage_period_and_window_accepted")
async def _(api: Api) -> Any:
    params = {
        "period": "current_month",
        "period_start": "2026-03-01T00:00:00Z",
        "period_end": "2026-03-10T00:00:00Z",
    }
    return (await api.get("/v1/usage", params=params)).status_code


@probe("usage_window_half_accepted")
async def _(api: Api) -> Any:
    params = {"period_start": "2026-03-01T00:00:00Z"}
    return (await api.get("/v1/usage", params=params)).status_code


@probe("usage_previous_month_is_current")
async def _(api: Api) -> Any:
    await api.run()
    params = {"period": "previous_month"}
    return (await api.get("/v1/usage", params=params)).json()["credits_charged"]


@probe("status_rejects_bad_key")
async def _(api: Api) -> Any:
    return (await api.get("/v1/status", "revoked_key")).status_code


# -- 5. Authentication ---------------------------------------------------------------------------


@probe("bearer_prefix_optional")
async def _(api: Api) -> Any:
    r = await api.get("/v1/models", None, headers={"Authorization": api.creds["api_key"]})
    return r.status_code


@probe("revoked_key_passes_models")
async def _(api: Api) -> Any:
    return (await api.get("/v1/models", "revoked_key")).status_code


@probe("scope_error_code_generic")
async def _(api: Api) -> Any:
    r = await api.post(
        f"/v1/run/{api.creds['models'][0]}", "runs_read_key", json=api.creds["run_json"]
    )
    return r.status_code, r.json()["error"]["code"]


@probe("cancel_allowed_with_read_scope")
async def _(api: Api) -> Any:
    run = await api.run(finish=False)
    return (await api.post(api.cancel_path(run["id"]), "runs_read_key")).status_code


@probe("media_run_with_write_scope_only")
async def _(api: Api) -> Any:
    path = f"/v1/run/{api.creds['media_model']}"
    return (await api.post(path, "runs_write_key", json=api.creds["run_json"])).status_code


@probe("plans_require_auth")
async def _(api: Api) -> Any:
    return (await api.get("/v1/billing/plans", None)).status_code


@probe("runs_list_with_write_scope")
async def _(api: Api) -> Any:
    return (await api.get("/v1/runs", "runs_write_key")).status_code


# -- 6. Events -----------------------------------------------------------------------------------


@probe("started_at_set_at_create")
async def _(api: Api) -> Any:
    return (await api.create_session()).json().get("started_at") is not None


@probe("first_frame_at_never_set")
async def _(api: Api) -> Any:
    sid = await api.running_session()
    body = await api.session(sid)
    return body["status"], body.get("first_frame_at") is not None


@probe("run_events_newest_first")
async def _(api: Api) -> Any:
    run = await api.run()
    seqs = [e["sequence"] for e in (await api.get(f"/v1/runs/{run['id']}/events")).json()["data"]]
    return seqs == sorted(seqs)


# -- 7. Errors -----------------------------------------------------------------------------------


@probe("request_id_mismatch_on_not_found")
async def _(api: Api) -> Any:
    r = await api.get("/v1/sessions/sess_01HZZZZZZZZZZZZZZZZZZZZZZZ")
    return r.status_code, r.headers["x-request-id"] == r.json()["error"]["request_id"]


@probe("request_id_header_missing_on_401")
async def _(api: Api) -> Any:
    r = await api.get("/v1/models", None)
    return r.status_code, "x-request-id" in r.headers


@probe("error_envelope_extra_field_on_429")
async def _(api: Api) -> Any:
    r = await second_session_refusal(api)
    return r.status_code, sorted(r.json()["error"])


@probe("concurrency_refusal_typed_rate_limit")
async def _(api: Api) -> Any:
    r = await second_session_refusal(api)
    return r.status_code, r.json()["error"]["type"]


@probe("no_capacity_code_wrong", workers=1)
async def _(api: Api) -> Any:
    return (await unplaceable_session(api))["error"]["code"]


@probe("validation_param_not_dotpath")
async def _(api: Api) -> Any:
    r = await api.create_session(
        transport={**session_body()["transport"], "url": "https://x.example"}
    )
    return r.json()["error"]["param"]


# -- 8. Limits -----------------------------------------------------------------------------------


@probe("rate_limit_off_by_one")
async def _(api: Api) -> Any:
    last = (await eleven_creates(api))[-1]
    return last.status_code, last.json().get("error", {}).get("type")


@probe("rate_limit_shared_across_keys")
async def _(api: Api) -> Any:
    for _ in range(10):
        await api.create_session()
    r = await api.create_session("other_org_key")
    return r.status_code


@probe("rate_limit_429_missing_retry_after")
async def _(api: Api) -> Any:
    last = (await eleven_creates(api))[-1]
    return last.status_code, "retry-after" in last.headers


@probe("rate_limit_429_missing_headers")
async def _(api: Api) -> Any:
    last = (await eleven_creates(api))[-1]
    return last.status_code, sorted(h for h in last.headers if h.startswith("x-ratelimit-"))


@probe("concurrency_429_missing_retry_after")
async def _(api: Api) -> Any:
    r = await second_session_refusal(api)
    return r.status_code, "retry-after" in r.headers


@probe("per_key_cap_two")
async def _(api: Api) -> Any:
    return (await second_session_refusal(api)).status_code


@probe("cap_counts_terminal_sessions")
async def _(api: Api) -> Any:
    sid = (await api.create_session()).json()["id"]
    await api.end(sid)
    return (await api.create_session()).status_code


@probe("idempotency_conflict_not_detected")
async def _(api: Api) -> Any:
    headers = {"Idempotency-Key": "same-key"}
    await api.create_session(headers=headers)
    other = {**session_body()["transport"], "room_name": "another-room"}
    return (await api.create_session(headers=headers, transport=other)).status_code


@probe("idempotency_replay_creates_session")
async def _(api: Api) -> Any:
    headers = {"Idempotency-Key": "same-key"}
    one = await api.create_session(headers=headers)
    two = await api.create_session(headers=headers)
    return two.status_code, two.json().get("id") == one.json()["id"]


@probe("metadata_limit_off_by_one")
async def _(api: Api) -> Any:
    # compact JSON {"k":"xxx..."} is 8 bytes plus the string: one byte over the limit
    over = api.reading.metadata_limit_bytes + 1 - 8
    return (await api.create_session(metadata={"k": "x" * over})).status_code


@probe("max_duration_ceiling_off_by_one")
async def _(api: Api) -> Any:
    return (await api.create_session(max_duration_seconds=3601)).status_code


@probe("idle_timeout_default_60")
async def _(api: Api) -> Any:
    return (await api.create_session()).json()["idle_timeout_seconds"]


@probe("avatar_page_size_100_refused")
async def _(api: Api) -> Any:
    return (await api.get("/v1/avatars", params={"limit": 100})).status_code


@probe("reserved_key_prefix_match")
async def _(api: Api) -> Any:
    r = await api.create_session(metadata={"_avatar.debug_recording": True})
    return r.status_code


@probe("debug_record_non_boolean_accepted")
async def _(api: Api) -> Any:
    r = await api.create_session(metadata={"_avatar.debug_record": "yes"})
    return r.status_code


@probe("assets_limit_zero_accepted")
async def _(api: Api) -> Any:
    await api.media_run()
    r = await api.get("/v1/assets", params={"limit": 0})
    return r.status_code, len(r.json().get("data", []))


# -- 9. Versioning -------------------------------------------------------------------------------


@probe("websocket_transport_accepted")
async def _(api: Api) -> Any:
    return (await api.create_session(transport={"type": "websocket"})).status_code
