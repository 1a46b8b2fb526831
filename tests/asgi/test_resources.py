"""Multipart avatar uploads, asset content, runs and their deletion over HTTP."""

from __future__ import annotations

import io

import pytest
from httpx import Client
from PIL import Image

from sim.platform import Platform
from tests.asgi.support import ADMIN, Org, assert_envelope, upper_bound


def _png(side: int = 128) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (side, side), (200, 120, 80)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.req("EP-AV-1", "EP-AV-3", "CONV-3")
def test_a_multipart_upload_creates_a_processing_avatar_that_settles(
    client: Client, platform: Platform, org: Org
) -> None:
    response = client.post(
        "/v1/avatars",
        files={"image": ("me.png", _png(), "image/png")},
        data={"name": "Portrait"},
        headers=org.auth(),
    )
    assert response.status_code == 201, response.text
    avatar = response.json()
    assert (avatar["object"], avatar["status"], avatar["name"]) == (
        "avatar",
        "processing",
        "Portrait",
    )
    assert avatar["id"].startswith("av_")
    assert response.headers["x-ratelimit-limit"] == "10"
    platform.clock.advance(upper_bound(platform.config.avatars.fitting_time))
    settled = client.get(f"/v1/avatars/{avatar['id']}", headers=org.auth()).json()
    assert settled["status"] in ("ready", "failed")
    listed = client.get("/v1/avatars?scope=org", headers=org.auth()).json()
    assert [a["id"] for a in listed["data"]] == [avatar["id"]]


@pytest.mark.req("EP-AV-1", "ERR-1")
def test_uploads_without_a_valid_image_are_refused(client: Client, org: Org) -> None:
    missing = client.post("/v1/avatars", files={"name": (None, "x")}, headers=org.auth())
    assert_envelope(missing, 422, "unprocessable", "validation.required", "image")
    not_image = client.post(
        "/v1/avatars", files={"image": ("a.png", b"not an image", "image/png")}, headers=org.auth()
    )
    assert_envelope(not_image, 422, "unprocessable", "avatar.image_invalid", "image")
    gif = io.BytesIO()
    Image.new("RGB", (128, 128)).save(gif, format="GIF")
    wrong_format = client.post(
        "/v1/avatars", files={"image": ("a.gif", gif.getvalue(), "image/gif")}, headers=org.auth()
    )
    assert_envelope(wrong_format, 422, "unprocessable", "avatar.image_invalid", "image")
    extra = client.post(
        "/v1/avatars",
        files={"image": ("a.png", _png(), "image/png"), "colour": (None, "red")},
        headers=org.auth(),
    )
    assert_envelope(extra, 422, "unprocessable", "validation.unknown_field", "colour")
    as_json = client.post("/v1/avatars", json={"image": "x"}, headers=org.auth())
    assert_envelope(as_json, 400, "invalid_request", "content_type.unsupported")
    broken = client.post(
        "/v1/avatars",
        content=b"--x\r\nnot a part",
        headers={**org.auth(), "Content-Type": "multipart/form-data"},
    )
    assert_envelope(broken, 400, "invalid_request", "body.malformed_multipart")


@pytest.mark.req("EP-ASSET-1", "EP-RUN-1", "CONV-4")
def test_asset_content_comes_back_with_its_media_type(
    client: Client, platform: Platform, org: Org
) -> None:
    run = client.post(
        "/v1/run/sim/speech", json={"input": {"text": "hello there"}}, headers=org.auth()
    )
    assert run.status_code == 201, run.text
    platform.clock.advance(300.0)
    done = client.get(f"/v1/runs/{run.json()['id']}", headers=org.auth()).json()
    assert done["status"] == "succeeded", done
    assets = client.get("/v1/assets", headers=org.auth()).json()["data"]
    assert assets
    for asset in assets:
        content = client.get(f"/v1/assets/{asset['id']}/content", headers=org.auth("runs_read"))
        assert content.status_code == 200
        assert content.headers["content-type"].split(";")[0] == asset["media_type"]
        assert len(content.content) == asset["byte_size"]
        assert content.headers["x-request-id"].startswith("req_")
    status = client.get(f"/v1/runs/{done['id']}/status", headers=org.auth()).json()
    assert (status["object"], status["status"]) == ("run.status", "succeeded")


@pytest.mark.req("EP-RUN-3", "RUN-DEL-1")
def test_run_deletion_answers_202_then_the_content_is_gone(
    client: Client, platform: Platform, org: Org, other_org: Org
) -> None:
    run = client.post("/v1/run/sim/speech", json={"input": {"text": "bye"}}, headers=org.auth())
    run_id = run.json()["id"]
    busy = client.delete(f"/v1/runs/{run_id}", headers=org.auth())
    assert_envelope(busy, 409, "conflict", "run.not_deletable")
    platform.clock.advance(300.0)
    deleted = client.delete(f"/v1/runs/{run_id}", headers=org.auth())
    assert deleted.status_code == 202, deleted.text
    assert deleted.json()["object"] == "run.deletion"
    assert deleted.headers["x-ratelimit-limit"] == "30"
    tombstone = client.get(f"/v1/runs/{run_id}", headers=org.auth()).json()
    assert tombstone["deleted_at"] is not None and tombstone["outputs"] == []
    again = client.delete(f"/v1/runs/{run_id}", headers=org.auth())
    assert_envelope(again, 409, "conflict", "run.already_deleted")
    starter_run = client.post(
        "/v1/run/sim/echo-text", json={"input": {"prompt": "x"}}, headers=other_org.auth()
    ).json()
    platform.clock.advance(300.0)
    refused = client.delete(f"/v1/runs/{starter_run['id']}", headers=other_org.auth())
    assert_envelope(refused, 403, "permission", "plan.feature_unavailable")


@pytest.mark.req("EP-USAGE-1", "EP-BILL-1", "EP-PIPE-1", "EP-MODEL-1", "EP-STATUS-1")
def test_the_remaining_endpoints_answer_their_shapes(client: Client, org: Org) -> None:
    usage = client.get("/v1/usage?period=current_month&timezone=Europe/Paris", headers=org.auth())
    assert usage.status_code == 200 and "credits_charged" in usage.json()
    bad_window = client.get(
        "/v1/usage?period=current_month&period_end=2026-01-02T00:00:00Z", headers=org.auth()
    )
    assert bad_window.status_code == 422
    assert bad_window.json()["error"]["code"] == "usage.window_invalid"
    quota = client.get("/v1/billing/quota", headers=org.auth()).json()
    assert quota["plan_key"] == "enterprise"
    plans = client.get("/v1/billing/plans").json()
    assert plans["object"] == "list" and {p["key"] for p in plans["data"]} >= {"free", "enterprise"}
    assert client.get("/v1/status").json()["object"] == "status"
    pipecat = client.post(
        "/v1/pipecat/sessions", json={"avatar_id": "av_stock_mock"}, headers=org.auth()
    )
    assert pipecat.status_code == 201
    assert pipecat.json()["object"] == "pipecat.session"
    assert pipecat.json()["session"]["transport"]["type"] == "pipecat"
    models = client.get("/v1/models", headers=org.auth()).json()
    assert {m["id"] for m in models["data"]} >= {"sim/echo-text", "sim/speech"}
    clock = client.get("/_sim/clock", headers=ADMIN).json()
    assert clock["seconds"] == 0.0
