"""The clean service, in both readings: every endpoint's happy path, and the spec's statements.

These run in-process on a manual clock (see :mod:`tests.independent.client`), so timers are
exact and the whole file takes about a second.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.independent.client import STOCK, Api, image_bytes, session_body
from tests.independent.readings import READINGS

READING_NAMES = sorted(READINGS)


def run(reading: str, body: Callable[[Api], Awaitable[Any]], **kw: Any) -> Any:
    async def go() -> Any:
        async with Api(reading, **kw) as api:
            return await body(api)

    return asyncio.run(go())


def ok(status: int) -> bool:
    return 200 <= status < 300


def assert_envelope(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"type", "code", "message", "param", "request_id"}
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["request_id"].startswith("req_")
    return error


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_public_and_catalog_endpoints(reading: str) -> None:
    async def body(api: Api) -> None:
        for path in ("/v1/status", "/v1/billing/plans"):
            r = await api.get(path, None)
            assert r.status_code == 200 and r.headers["x-request-id"].startswith("req_")
        models = (await api.get("/v1/models")).json()
        assert models["object"] == "list"
        by_id = {m["id"]: m for m in models["data"]}
        assert set(by_id) == set(api.creds["models"])
        assert by_id[api.creds["media_model"]]["output_modalities"] != ["text"]
        assert any(m["output_modalities"] == ["text"] for m in models["data"])
        for model in models["data"]:
            assert model["available"] is True and model["request_schemas"]
            for key in ("execution_modes", "execution_targets", "input_modalities"):
                assert isinstance(model[key], list)
        for key in ("runs_read_key", "runs_write_key", "other_org_key"):
            assert (await api.get("/v1/models", key)).status_code == 200
        for key in ("revoked_key", None):
            r = await api.get("/v1/models", key)
            assert r.status_code == 401 and assert_envelope(r)["type"] == "authentication"
        quota = (await api.get("/v1/billing/quota")).json()
        assert quota["plan_key"] == "enterprise" and quota["balance_credits"] > 100_000

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_a_session_lives_through_its_states(reading: str) -> None:
    async def body(api: Api) -> None:
        r = await api.create_session(quality="lite", metadata={"_avatar.debug_record": True})
        assert r.status_code == api.reading.create_status["sessions"]
        created = r.json()
        assert created["status"] == "queued" and created["id"].startswith("sess_")
        assert "worker_token" not in created["transport"]
        assert created["idle_timeout_seconds"] == 30 and created["max_duration_seconds"] == 600
        sid = created["id"]
        seen = []
        for _ in range(8):
            api.wait(0.5)
            seen.append((await api.session(sid))["status"])
        assert seen.index("starting") < seen.index("running")
        running = await api.session(sid)
        assert running["started_at"] and running["first_frame_at"]
        api.wait(10)
        assert (await api.session(sid))["usage"]["billable_seconds"] >= 5
        r = await api.end(sid)
        assert r.status_code == api.reading.end_transition_status
        assert r.json()["status"] == "ending"
        api.wait(3)
        ended = await api.session(sid)
        assert ended["status"] == "ended"
        again = await api.end(sid)
        assert again.status_code == 200 and again.json()["status"] == "ended"
        listed = (await api.get("/v1/sessions")).json()
        assert [s["id"] for s in listed["data"]] == [sid]
        usage = (await api.get("/v1/usage")).json()
        seconds = ended["usage"]["billable_seconds"]
        assert usage["billable_seconds"] == seconds and usage["sessions"] == 1
        assert usage["by_quality"] == {"lite": seconds}
        assert usage["credits_charged"] == 2 * seconds == usage["by_billing_surface"]["api"]

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_timeouts_end_sessions(reading: str) -> None:
    async def body(api: Api) -> None:
        idle = await api.running_session(idle_timeout_seconds=4)
        api.wait(5)
        assert (await api.session(idle))["status"] == "ended"
        capped = await api.running_session(idle_timeout_seconds=600, max_duration_seconds=4)
        api.wait(2)
        assert (await api.session(capped))["status"] == "running"
        api.wait(4)
        assert (await api.session(capped))["status"] == "ended"
        queued = (await api.create_session()).json()["id"]
        assert (await api.end(queued)).json()["status"] == "canceled"

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_capacity_and_startup_timeout(reading: str) -> None:
    async def body(api: Api) -> None:
        await api.create_session()
        waiting = (await api.create_session("other_org_key")).json()["id"]
        api.wait(3)
        r = await api.create_session("other_org_key")
        assert r.status_code in (429, 503) and "retry-after" in r.headers
        if r.status_code == 503:
            assert assert_envelope(r)["code"] == "at_capacity"
        api.wait(13)
        failed = await api.session(waiting, "other_org_key")
        assert failed["status"] == "failed" and failed["error"]["code"] == "no_capacity"

    run(reading, body, workers=1)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_session_refusals(reading: str) -> None:
    async def body(api: Api) -> None:
        r = await api.create_session(transport={"type": "websocket"})
        error = assert_envelope(r)
        assert (r.status_code, error["code"], error["param"]) == (
            400,
            "transport.unsupported",
            "transport.type",
        )
        r = await api.create_session(metadata={"_avatar.other": 1})
        assert r.status_code == 400 and assert_envelope(r)["code"] == "metadata.reserved_key"
        for bad in ({"idle_timeout_seconds": 0}, {"max_duration_seconds": 3601}, {"quality": "x"}):
            r = await api.create_session(**bad)
            assert r.status_code == api.reading.validation_status, bad
        key = {"Idempotency-Key": "k1"}
        first = await api.create_session(headers=key)
        replay = await api.create_session(headers=key)
        assert replay.status_code == first.status_code and replay.json() == first.json()
        other = session_body(quality="pro")
        r = await api.post("/v1/sessions", json=other, headers=key)
        assert r.status_code == 409 and assert_envelope(r)["type"] == "conflict"
        api.wait(3.5)
        r = await api.create_session()
        error = assert_envelope(r)
        assert r.status_code == 429 and (error["type"], error["code"]) == (
            "quota_exceeded",
            "concurrent_sessions",
        )
        assert "retry-after" in r.headers
        for _ in range(10):
            r = await api.create_session()
        assert r.status_code == 429 and assert_envelope(r)["type"] == "rate_limit"
        assert {
            "retry-after",
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
        } <= set(r.headers)

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_pipecat_and_avatars(reading: str) -> None:
    async def body(api: Api) -> None:
        r = await api.pipecat()
        assert r.status_code == api.reading.create_status["pipecat"]
        answer = r.json()
        assert answer["object"] == "pipecat.session"
        assert answer["relay"]["type"] == "websocket"
        assert answer["relay"]["media_url"].startswith("wss://")
        assert answer["session"]["billing_surface"] == "pipecat"
        await api.end(answer["session"]["id"])  # frees the key's one session slot
        up = await api.upload(image_bytes(), name="Front Desk")
        assert up.status_code == api.reading.create_status["avatars"]
        avatar = up.json()
        assert avatar["status"] == "processing" and avatar["name"] == "Front Desk"
        api.wait(4)
        assert (await api.get(f"/v1/avatars/{avatar['id']}")).json()["status"] == "ready"
        jpeg = (await api.upload(image_bytes("JPEG"), "p.jpg")).json()
        api.wait(4)
        assert (await api.get(f"/v1/avatars/{jpeg['id']}")).json()["status"] == "ready"
        mine = (await api.get("/v1/avatars", params=api.avatar_filter("org"))).json()["data"]
        assert {a["id"] for a in mine} == {avatar["id"], jpeg["id"]}
        every = (await api.get("/v1/avatars")).json()["data"]
        assert {a["id"] for a in every} >= {STOCK, avatar["id"]}
        found = await api.get("/v1/avatars", params=api.avatar_filter(search="front"))
        assert [a["id"] for a in found.json()["data"]] == [avatar["id"]]
        page = (await api.get("/v1/avatars", params={"limit": 1})).json()
        assert page["has_more"] and page["next_cursor"].startswith("av_")
        theirs = await api.get(f"/v1/avatars/{avatar['id']}", "other_org_key")
        assert theirs.status_code == api.reading.cross_tenant_status
        sid = (await api.create_session(avatar_id=avatar["id"])).json()["id"]
        assert (await api.session(sid))["avatar_id"] == avatar["id"]

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_runs_assets_and_deletion(reading: str) -> None:
    async def body(api: Api) -> None:
        text = await api.run(key="runs_write_key", finish=False)
        assert text["credits"]["reserved"] > 0
        media = await api.media_run()
        for key in ("runs_read_key", "api_key"):
            r = await api.get(f"/v1/runs/{text['id']}", key)
            assert r.status_code == 200 and r.json()["outputs"][0]["type"] == "text"
        status = (await api.get(f"/v1/runs/{media['id']}/status")).json()
        assert set(status) >= {"id", "status", "progress", "error"} and status["progress"] == 1.0
        runs = (await api.get("/v1/runs")).json()["data"]
        assert {r["id"] for r in runs} == {text["id"], media["id"]}
        events = (await api.get(f"/v1/runs/{media['id']}/events")).json()
        seqs = [e["sequence"] for e in events["data"]]
        assert seqs == sorted(seqs) and isinstance(events["next_cursor"], int)
        done = (await api.get(f"/v1/runs/{media['id']}")).json()
        assert {"audio", "image", "video"} <= set(done) and done["credits"]["charged"] == 25
        assets = (await api.get("/v1/assets")).json()["data"]
        assert len(assets) == 3
        for asset in assets:
            assert len(await api.asset_bytes(asset["id"])) == asset["byte_size"]
        canceled = await api.run(finish=False)
        r = await api.post(api.cancel_path(canceled["id"]), "runs_write_key")
        assert (
            r.status_code == 200 and r.json()["status"] == api.reading.run_status_names["canceled"]
        )
        usage_before = (await api.get("/v1/usage")).json()
        deletion = await api.delete(f"/v1/runs/{media['id']}")
        assert deletion.status_code == 202 and deletion.json()["object"] == "run.deletion"
        tomb = (await api.get(f"/v1/runs/{media['id']}")).json()
        assert tomb["outputs"] == [] and tomb["deleted_at"]
        assert media["id"] in {r["id"] for r in (await api.get("/v1/runs")).json()["data"]}
        api.wait(4)
        gone = await api.get(f"/v1/assets/{assets[0]['id']}/content")
        assert gone.status_code == 404
        assert (await api.get("/v1/usage")).json()["credits_charged"] == usage_before[
            "credits_charged"
        ]
        their_run = await api.run(key="other_org_key")
        r = await api.delete(f"/v1/runs/{their_run['id']}", "other_org_key")
        assert r.status_code == 403

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_usage_windows_and_quota_agree(reading: str) -> None:
    async def body(api: Api) -> None:
        before = (await api.get("/v1/billing/quota")).json()
        await api.run()
        await api.media_run()
        await api.running_session(quality="pro", idle_timeout_seconds=6)
        api.wait(10)
        usage = (await api.get("/v1/usage", params={"period": "current_month"})).json()
        assert (
            usage["credits_charged"] == 2 + 25 + 6 * 5 == sum(usage["by_billing_surface"].values())
        )
        assert usage["by_model"] == {"indie/echo-text": 2, "indie/talking-head": 25}
        assert usage["by_quality"] == {"pro": 6} and usage["sessions"] == 1
        after = (await api.get("/v1/billing/quota")).json()
        assert before["balance_credits"] - after["balance_credits"] == usage["credits_charged"]
        assert after["included_credits_used"] == usage["credits_charged"]
        previous = (await api.get("/v1/usage", params={"period": "previous_month"})).json()
        assert previous["credits_charged"] == 0 and previous["period_end"] == usage["period_start"]
        window = {"period_start": "2026-03-17T11:00:00Z", "period_end": "2026-03-17T13:00:00Z"}
        explicit = (await api.get("/v1/usage", params=window)).json()
        assert explicit["credits_charged"] == usage["credits_charged"]
        tz = {api.reading.usage_tz_param: "Pacific/Kiritimati"}
        daily = (await api.get("/v1/usage", params=tz)).json()["daily_credits_by_billing_surface"]
        assert list(daily) == ["2026-03-18"]
        for bad in ({"period": "last_year"}, {"period_end": "2026-03-01T00:00:00Z"}):
            r = await api.get("/v1/usage", params=bad)
            assert r.status_code == api.reading.validation_status

    run(reading, body)


@pytest.mark.req("HAR-12")
@pytest.mark.parametrize("reading", READING_NAMES)
def test_errors_use_the_envelope_everywhere(reading: str) -> None:
    async def body(api: Api) -> None:
        for r in (
            await api.get("/v1/nowhere"),
            await api.get("/v1/sessions/"),
            await api.delete("/v1/sessions"),
            await api.get("/v1/sessions/sess_missing"),
            await api.get("/v1/sessions", None),
            await api.get("/v1/avatars", params={"limit": "many"}),
            await api.post("/v1/sessions", content=b"{not json"),
            await api.delete("/v1/runs/nonsense"),
        ):
            assert r.status_code >= 400
            assert_envelope(r)

    run(reading, body)


def observations(reading: str) -> dict[str, Any]:
    """What a client sees at each open point."""

    async def body(api: Api) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        first = await api.create_session()
        seen["create status"] = first.status_code
        seen["rate headers on success"] = "x-ratelimit-limit" in first.headers
        seen["second create while queued"] = (await api.create_session()).status_code
        seen["bad limit"] = (await api.get("/v1/avatars", params={"limit": 500})).status_code
        seen["validation status"] = (await api.create_session(quality="ultra")).status_code
        theirs = (await api.create_session("other_org_key")).json()["id"]
        seen["cross tenant"] = (await api.get(f"/v1/sessions/{theirs}")).status_code
        await api.end(theirs, "other_org_key")
        relay = (await api.pipecat("other_org_key")).json()["session"]
        seen["pipecat status"] = relay["status"]
        await api.end(relay["id"], "other_org_key")
        bad = await api.upload(b"GIF89a not really", "x.gif")
        seen["bad image at upload"] = bad.status_code
        booting = (await api.create_session("other_org_key")).json()["id"]
        api.wait(2.2)
        assert (await api.session(booting, "other_org_key"))["status"] == "starting"
        seen["end while starting"] = (await api.end(booting, "other_org_key")).json()["status"]
        text = await api.run()
        seen["run status"] = text["status"]
        events = (await api.get(f"/v1/runs/{text['id']}/events")).json()["data"]
        seen["event types"] = [e["type"] for e in events]
        seen["first sequence"] = events[0]["sequence"]
        seen["session list filter"] = api.reading.session_status_filter
        seen["avatar filters"] = api.reading.avatar_filter_params
        return seen

    return run(reading, body)


@pytest.mark.req("HAR-12")
def test_the_readings_differ_at_every_open_point() -> None:
    a, b = observations("a"), observations("b")
    same = sorted(k for k in a if a[k] == b[k])
    assert not same, f"the readings agree on {same}"
    # and each point differs from the choices another implementation made
    assert a["create status"] == 200 and a["cross tenant"] == 403 and a["validation status"] == 400
    assert a["rate headers on success"] is False
    assert b["second create while queued"] == 201  # queued sessions do not count toward caps
    assert b["bad image at upload"] == 202  # refused later, in fitting
    assert a["end while starting"] == "ending"
    assert b["pipecat status"] == "created"
