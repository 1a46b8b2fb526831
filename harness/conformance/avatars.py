"""Scenario checks of avatars: the portrait upload, fitting, the default page and isolation.

Uploads send a real multipart body with a PNG or JPEG portrait drawn here (Pillow), and what the
seed rules out: no file at all (refused with the envelope), another image format or a file that is
no image. The seed leaves open where an image is checked, so those two may be refused at upload
or accepted as ``processing`` and end ``failed`` in fitting; either passes, nothing else does. A
deployment keeps what it accepts (the seed has no avatar delete), so the run uploads one portrait
per format and shares the PNG one between checks.
"""

from __future__ import annotations

import io
from typing import Any

from PIL import Image, ImageDraw

from harness.conformance.checks import (
    LATE,
    CheckFailed,
    Incomplete,
    envelope_of,
    scenario_check,
)
from harness.conformance.context import Context, expect_status, is_success
from harness.conformance.scenarios import expect_foreign, walk
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["portrait", "upload"]

_SIDE = 512
_FITTING_WITHIN = 600.0
#: A refused upload: the seed gives no status, so any 4xx with the envelope (400, 415, 422...).
_REFUSALS = range(400, 500)


def portrait(image_format: str) -> bytes:
    """A small synthetic portrait (a face-like oval on a gradient) in ``image_format``."""
    image = Image.new("RGB", (_SIDE, _SIDE))
    draw = ImageDraw.Draw(image)
    for row in range(_SIDE):
        draw.line([(0, row), (_SIDE, row)], fill=(40 + row // 4, 60, 120 - row // 8))
    draw.ellipse([_SIDE // 4, _SIDE // 6, 3 * _SIDE // 4, 5 * _SIDE // 6], fill=(224, 182, 150))
    buffer = io.BytesIO()
    image.save(buffer, format=image_format)
    return buffer.getvalue()


def upload(
    ctx: Context, parts: dict[str, tuple[str, bytes, str]], name: str | None = None
) -> Exchange:
    """``POST /v1/avatars`` with the given file parts (and a ``name`` field when given)."""
    target = ctx.target
    request = target.client.build_request(
        "POST",
        "/v1/avatars",
        headers=target.authorization("api"),
        files=parts or None,
        data={"name": name} if name is not None else None,
    )
    return target.send(request, operation="createAvatar")


def uploaded_avatar(ctx: Context) -> dict[str, Any]:
    """The PNG portrait this run uploaded (uploading it on first use)."""
    if "uploaded" not in ctx.cache:
        exchange = upload(ctx, {"image": ("portrait.png", portrait("PNG"), "image/png")}, "probe")
        if exchange.status in (402, 429, 503):
            ctx.cache["uploaded"] = Incomplete(f"the target refused an upload ({exchange.status})")
        else:
            body = expect_status(exchange, what="POST /v1/avatars with a PNG portrait")
            ctx.cache["uploaded"] = (exchange, body)
    value = ctx.cache["uploaded"]
    if isinstance(value, Incomplete):
        raise value
    exchange, body = value
    if not isinstance(body, dict) or not str(body.get("id", "")).startswith("av_"):
        raise CheckFailed(f"an uploaded avatar has no av_ id: {body!r:.200}", exchange)
    return body


def _refused(exchange: Exchange, what: str) -> None:
    if exchange.status not in _REFUSALS or envelope_of(exchange) is None:
        raise CheckFailed(f"{what}: answered {exchange.status}, not a 4xx refusal", exchange)


def _refused_or_doubtful(ctx: Context, exchange: Exchange, what: str) -> None:
    """Refused at upload, or accepted as ``processing`` to fail in fitting (``avatar_fitting``
    holds it to that)."""
    body = exchange.json() if is_success(exchange) else None
    if isinstance(body, dict) and body.get("status") == "processing" and body.get("id"):
        ctx.cache.setdefault("doubtful", {})[str(body["id"])] = what
        return
    _refused(exchange, what)


@scenario_check("avatar_upload", "EP-AV-1", "CONV-3", "EP-AV-3")
def avatar_upload(ctx: Context) -> None:
    """A multipart PNG or JPEG portrait (with a name) answers an avatar in processing, which
    GET /v1/avatars/{id} returns; no file is refused; a GIF or a file that is no image is
    refused, or accepted to fail in fitting."""
    for index, (avatar, what) in enumerate(
        ((uploaded_avatar(ctx), "PNG"), (None, "JPEG")), start=1
    ):
        if avatar is None:
            parts = {"image": ("portrait.jpg", portrait("JPEG"), "image/jpeg")}
            exchange = upload(ctx, parts, "conformance jpeg")
            avatar = expect_status(exchange, what="POST /v1/avatars with a JPEG portrait")
        if not isinstance(avatar, dict) or avatar.get("status") != "processing":
            status = avatar.get("status") if isinstance(avatar, dict) else avatar
            raise CheckFailed(f"upload {index} ({what}) answered status {status!r}")
        fetched = ctx.target.request("GET", f"/v1/avatars/{avatar['id']}")
        body = expect_status(fetched, 200, what="GET /v1/avatars/{id} of an upload")
        if not isinstance(body, dict) or body.get("id") != avatar["id"]:
            raise CheckFailed("GET of an uploaded avatar answered another resource", fetched)
    gif = upload(ctx, {"image": ("portrait.gif", portrait("GIF"), "image/gif")}, "gif")
    _refused_or_doubtful(ctx, gif, "a GIF portrait")
    text = upload(ctx, {"image": ("portrait.png", b"no image here", "image/png")}, "text")
    _refused_or_doubtful(ctx, text, "a file that is no image")
    missing = upload(ctx, {}, "no file")
    _refused(missing, "an upload without an image")
    ctx.proves(missing)


def _fitted(ctx: Context, avatar_id: str, history: list[str]) -> dict[str, Any]:
    def fetch() -> dict[str, Any]:
        exchange = ctx.target.request("GET", f"/v1/avatars/{avatar_id}")
        body = expect_status(exchange, 200, what="GET /v1/avatars/{id}")
        history.append(str(body.get("status")))
        return body  # type: ignore[no-any-return]

    final = ctx.poll(
        fetch,
        lambda a: a.get("status") != "processing",
        within=_FITTING_WITHIN,
        step=5.0,
        why="an uploaded avatar's fitting",
    )
    if final.get("status") == "processing":
        raise Incomplete(f"an uploaded avatar is still processing after {_FITTING_WITHIN:g} s")
    again = fetch()
    if final.get("status") in ("ready", "failed") and again.get("status") != final.get("status"):
        raise CheckFailed(f"a {final.get('status')} avatar later showed {again.get('status')!r}")
    return final


@scenario_check("avatar_fitting", "AV-ST-1", "EP-AV-1", order=LATE, creates=1,
                budget=_FITTING_WITHIN + 60)  # fmt: skip
def avatar_fitting(ctx: Context) -> None:
    """An uploaded avatar leaves processing and, ready or failed, stays so (a status the seed
    does not name is tolerated); a ready one can start a session; an upload that was no PNG or
    JPEG portrait, if accepted, ends failed."""
    avatar_id = str(uploaded_avatar(ctx)["id"])
    history: list[str] = []
    final = _fitted(ctx, avatar_id, history)
    for doubtful, what in dict(ctx.cache.get("doubtful", {})).items():
        if _fitted(ctx, doubtful, []).get("status") != "failed":
            raise CheckFailed(f"{what} was accepted and then fitted as a usable avatar")
    if final.get("status") == "ready":
        exchange = ctx.create_session(ctx.session_body("fitted", avatar_id=avatar_id))
        session = ctx.created(exchange)
        ctx.end(str(session.get("id")))
        ctx.proves(exchange)


@scenario_check("avatar_list_default", "EP-AV-2")
def avatar_list_default(ctx: Context) -> None:
    """GET /v1/avatars without limit answers the first 20 avatars (all of them when fewer),
    with has_more telling whether there are others."""
    every = walk(ctx.target, "/v1/avatars")
    exchange = ctx.target.request("GET", "/v1/avatars", operation="listAvatars")
    body = expect_status(exchange, 200, what="GET /v1/avatars")
    data = body.get("data") if isinstance(body, dict) else None
    expected = min(len(every), SEED.avatar_page_default)
    if not isinstance(data, list) or len(data) != expected:
        count = len(data) if isinstance(data, list) else data
        raise CheckFailed(
            f"the default page holds {count} avatars; with {len(every)} listed it must hold "
            f"{expected}",
            exchange,
        )
    if body.get("has_more") is not (len(every) > SEED.avatar_page_default):
        raise CheckFailed(f"has_more is {body.get('has_more')!r} with {len(every)}", exchange)


@scenario_check("avatar_isolation", "EP-AV-3", "AUTH-7", needs=("other_org",), creates=1,
                key="other_org")  # fmt: skip
def avatar_isolation(ctx: Context) -> None:
    """Another organization cannot see (403 or 404), list or start a session with this
    organization's uploaded avatar."""
    avatar_id = str(uploaded_avatar(ctx)["id"])
    target = ctx.target
    exchange = target.request("GET", f"/v1/avatars/{avatar_id}", role="other_org")
    expect_foreign(exchange, "another organization's GET of the avatar")
    ctx.proves(exchange)
    if avatar_id in walk(target, "/v1/avatars", role="other_org"):
        raise CheckFailed(f"another organization's avatar list shows {avatar_id}")
    body = ctx.session_body("foreign-avatar", avatar_id=avatar_id)
    exchange = ctx.create_session(body, role="other_org")
    if is_success(exchange):
        target.request(
            "POST", f"/v1/sessions/{exchange.json()['id']}/end", role="other_org", observe=False
        )
        raise CheckFailed("another organization started a session with the avatar", exchange)
