"""Scripts that drive avatars: the portrait upload, fitting, and the default page; the model
judges every upload and read (``avatars``, ``tenant_isolation`` with ``foreign_keys``).

Uploads send a real multipart body with a PNG or JPEG portrait drawn here (Pillow), and what the
seed rules out: a multipart body without an image part, another image format, a file that is no
image. The seed leaves open where an image is checked, so those may be refused at upload or
accepted as ``processing`` and end ``failed`` in fitting; the model passes either, nothing
else. A deployment keeps what it accepts (the seed has no avatar delete), so the run uploads one
portrait per format and shares the PNG one between scripts.
"""

from __future__ import annotations

import io
import uuid
from typing import Any

from PIL import Image, ImageDraw

from harness.conformance.answers import expect_status, is_success
from harness.conformance.checks import LATE, CheckFailed, Incomplete, scenario_check
from harness.conformance.context import Context
from harness.conformance.listing import walk
from harness.conformance.model.avatar_book import FITTING_BOUND
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["portrait", "uploaded_avatar"]

_SIDE = 512
_FITTING_STEP = 5.0


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


def uploaded_avatar(ctx: Context) -> dict[str, Any]:
    """The PNG portrait this run uploaded (uploading it on first use)."""
    if "uploaded" not in ctx.cache:
        name = f"conformance portrait {uuid.uuid4().hex[:8]}"
        exchange = _upload_as(ctx, ("portrait.png", portrait("PNG"), "image/png"), name)
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


def _upload_as(ctx: Context, image: tuple[str, bytes, str] | None, name: str) -> Exchange:
    """A multipart upload: ``image`` as the file part when given, and the ``name`` part (so a
    body without an image is still ``multipart/form-data``)."""
    target = ctx.target
    files: dict[str, Any] = {"name": (None, name)}
    if image is not None:
        files["image"] = image
    request = target.client.build_request(
        "POST", "/v1/avatars", headers=target.authorization("api"), files=files
    )
    return target.send(request, operation="createAvatar")


@scenario_check("avatar_upload")
def avatar_upload(ctx: Context) -> None:
    """A PNG and a JPEG portrait, each with a name; a GIF; a file that is no image; and a
    multipart body with a name and no image (the model judges each upload and each read)."""
    avatar = uploaded_avatar(ctx)
    ctx.target.request("GET", f"/v1/avatars/{avatar['id']}")
    jpeg = _upload_as(ctx, ("portrait.jpg", portrait("JPEG"), "image/jpeg"), "conformance jpeg")
    made = jpeg.json() if is_success(jpeg) else None
    if isinstance(made, dict) and isinstance(made.get("id"), str):
        ctx.target.request("GET", f"/v1/avatars/{made['id']}")
        ctx.cache.setdefault("jpeg", []).append(str(made["id"]))
    for image, name in (
        (("portrait.gif", portrait("GIF"), "image/gif"), "conformance gif"),
        (("portrait.png", b"no image here", "image/png"), "conformance text"),
    ):
        exchange = _upload_as(ctx, image, name)
        made = exchange.json() if is_success(exchange) else None
        if isinstance(made, dict) and isinstance(made.get("id"), str):
            ctx.cache.setdefault("doubtful", []).append(str(made["id"]))
    ctx.proves(_upload_as(ctx, None, "conformance no image"))


def _fitted(ctx: Context, avatar_id: str) -> dict[str, Any]:
    def fetch() -> dict[str, Any]:
        exchange = ctx.target.request("GET", f"/v1/avatars/{avatar_id}")
        body = expect_status(exchange, 200, what="GET /v1/avatars/{id}")
        return body  # type: ignore[no-any-return]

    # Waited past the bound, a last read shows the model an avatar still processing: a failure
    # of avatars, not a check left undone.
    return ctx.poll(
        fetch,
        lambda a: a.get("status") != "processing",
        within=FITTING_BOUND + _FITTING_STEP,
        step=_FITTING_STEP,
        why="an uploaded avatar's fitting",
    )


@scenario_check(
    "avatar_fitting", order=LATE, creates=3, budget=FITTING_BOUND + _FITTING_STEP + 60
)  # fmt: skip
def avatar_fitting(ctx: Context) -> None:
    """Every avatar this run uploaded is watched until fitted (the accepted uploads that were no
    portrait first), read once more, and offered for a session: the model holds a failed avatar
    to a refusal and a reason, a ready one to an acceptance and no failure reason, an upload
    that was no portrait to never becoming ready, and fitting to an end."""
    own = [str(uploaded_avatar(ctx)["id"]), *ctx.cache.get("jpeg", [])]
    doubtful = list(ctx.cache.get("doubtful", []))
    finals = {avatar_id: _fitted(ctx, avatar_id) for avatar_id in [*doubtful, *own]}
    for avatar_id, final in finals.items():
        ctx.target.request("GET", f"/v1/avatars/{avatar_id}")
        if final.get("status") in ("ready", "failed"):
            exchange = ctx.create_session(ctx.session_body("fitted", avatar_id=avatar_id))
            if is_success(exchange):
                ctx.end(str(exchange.json()["id"]))
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
