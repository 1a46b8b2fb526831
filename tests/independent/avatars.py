"""Avatars: platform stock avatars and customer avatars fitted from an uploaded portrait.

An upload answers ``processing``; fitting takes three seconds and ends ``ready`` or ``failed``
with a reason. Whether a portrait that is not a readable PNG or JPEG is refused at upload or
accepted and failed in fitting is the reading's call; a portrait smaller than 64 px on a side
always fails in fitting (it decodes fine, there is just no face to fit).
"""

from __future__ import annotations

import io
import warnings
from typing import TYPE_CHECKING, Any

from PIL import Image

from .auth import Principal
from .errors import foreign, invalid, not_found
from .lists import page
from .multipart import parse_form
from .store import Avatar
from .validation import query_limit

if TYPE_CHECKING:
    from .service import Service

FITTING_SECONDS = 3.0
MIN_SIDE = 64
MAX_UPLOAD_BYTES = 10 * 1024 * 1024
MAX_NAME = 100
FILTER_VALUES = ("all", "platform", "org")
STALE_REASON = "retrying: face landmarks were unstable on the first pass"


def sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    return None


def decoded_size(data: bytes) -> tuple[int, int] | None:
    """The image's size, or None when it does not decode."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                return image.size
    except Exception:
        return None


class Avatars:
    def __init__(self, service: Service) -> None:
        self.svc = service

    def formats(self) -> tuple[str, ...]:
        if self.svc.faults.on("avatar_gif_becomes_ready"):
            return ("png", "jpeg", "gif")
        return ("png", "jpeg")

    def upload(self, principal: Principal, content_type: str, body: bytes, t: float) -> Avatar:
        reading, faults, store = self.svc.reading, self.svc.faults, self.svc.store
        try:
            parts = parse_form(content_type, body)
        except ValueError:
            raise invalid(
                reading, "body.not_multipart", "Upload the portrait as multipart/form-data."
            ) from None
        image = parts.get("image")
        if image is None or not image.data:
            raise invalid(reading, "parameter.missing", "image is required.", "image")
        if len(image.data) > MAX_UPLOAD_BYTES:
            raise invalid(reading, "image.too_large", "image is at most 10 MB.", "image")
        name = None
        if "name" in parts and not faults.on("avatar_name_ignored"):
            try:
                name = parts["name"].data.decode("utf-8").strip() or None
            except UnicodeDecodeError:
                raise invalid(
                    reading, "parameter.invalid_type", "name must be text.", "name"
                ) from None
            if name is not None and len(name) > MAX_NAME:
                raise invalid(
                    reading, "parameter.too_long", "name is at most 100 characters.", "name"
                )
        if name is None:
            stem = (image.filename or "").rsplit("/", 1)[-1].rsplit(".", 1)[0]
            name = stem if reading.default_avatar_name == "filename" and stem else "Untitled avatar"
        fmt = sniff(image.data)
        if reading.bad_image == "refuse_at_upload":
            if fmt not in self.formats():
                raise invalid(
                    reading, "image.unsupported_format", "image must be PNG or JPEG.", "image"
                )
            if decoded_size(image.data) is None:
                raise invalid(reading, "image.unreadable", "image could not be decoded.", "image")
        avatar = Avatar(
            id=store.new_id("av", t),
            org_id=principal.org.id,
            name=name,
            status="ready" if faults.on("avatar_created_ready") else "processing",
            runtime_type="realtime",
            created_at=t,
            from_photo=True,
            image=image.data,
        )
        store.avatars[avatar.id] = avatar
        if not (fmt == "jpeg" and faults.on("avatar_jpeg_stuck_processing")):
            self.svc.timeline.schedule(t + FITTING_SECONDS, lambda at: self._fit(avatar))
        return avatar

    def _fit(self, avatar: Avatar) -> None:
        fmt = sniff(avatar.image)
        size = decoded_size(avatar.image) if fmt in self.formats() else None
        if fmt not in self.formats():
            reason = "The portrait is not a PNG or JPEG image."
        elif size is None:
            reason = "The portrait could not be decoded."
        elif min(size) < MIN_SIDE:
            reason = f"The portrait is too small to fit (at least {MIN_SIDE}x{MIN_SIDE} pixels)."
        else:
            reason = None
        if reason is None:
            avatar.status = "ready"
            avatar.failure_reason = (
                STALE_REASON if self.svc.faults.on("failure_reason_on_ready_avatar") else None
            )
        else:
            avatar.status = "failed"
            avatar.failure_reason = (
                None if self.svc.faults.on("avatar_failed_without_reason") else reason
            )
        avatar.image = b"" if avatar.status == "failed" else avatar.image

    def render(self, avatar: Avatar, *, by_id: bool = False) -> dict[str, Any]:
        names = self.svc.reading.avatar_optional_fields
        is_demo = avatar.is_demo
        if by_id and is_demo and self.svc.faults.on("stock_avatar_not_demo_on_get"):
            is_demo = False
        body: dict[str, Any] = {
            "id": avatar.id,
            "object": "avatar",
            "name": avatar.name,
            "status": avatar.status,
            "is_demo": is_demo,
            "runtime_type": avatar.runtime_type,
            "created_at": self.svc.clock.iso(avatar.created_at),
        }
        if avatar.voice:
            body["voice"] = avatar.voice
        if avatar.instructions:
            body[names["instructions"]] = avatar.instructions
        if avatar.voice_style:
            body[names["voice_style"]] = avatar.voice_style
        if avatar.failure_reason is not None:
            body[names["failure_reason"]] = avatar.failure_reason
        body[names["from_photo"]] = avatar.from_photo
        return body

    def get(self, avatar_id: str, principal: Principal) -> Avatar:
        avatar = self.svc.store.avatars.get(avatar_id)
        if avatar is None:
            raise not_found("avatar", avatar_id)
        if avatar.org_id not in (None, principal.org.id):
            raise foreign(self.svc.reading, "avatar", avatar_id)
        return avatar

    def list(self, principal: Principal, query: dict[str, str]) -> dict[str, Any]:
        reading, faults, store = self.svc.reading, self.svc.faults, self.svc.store
        filter_name, search_name = reading.avatar_filter_params
        limit = query_limit(
            query,
            reading,
            default=20,
            refuse_at_or_above=100 if faults.on("avatar_page_size_100_refused") else None,
        )
        which = query.get(filter_name) or "all"
        if which not in FILTER_VALUES:
            raise invalid(
                reading,
                "parameter.invalid_value",
                f"{filter_name} must be one of {', '.join(FILTER_VALUES)}.",
                filter_name,
            )
        search = query.get(search_name)
        if search is not None and len(search) > 200:
            raise invalid(reading, "parameter.too_long", f"{search_name} is too long.", search_name)
        stock = [a for a in store.avatars.values() if a.org_id is None]
        own = [a for a in store.avatars.values() if a.org_id == principal.org.id]
        own.sort(
            key=lambda a: (a.created_at, store.order_of(a.id)),
            reverse=reading.list_order == "newest_first",
        )
        if which == "platform":
            items = stock
        elif which == "org":
            items = stock + own if faults.on("avatar_org_filter_includes_stock") else own
        else:
            items = stock + own
        if search:
            if faults.on("avatar_search_case_sensitive"):
                items = [a for a in items if search in a.name or search in a.id]
            else:
                needle = search.casefold()
                items = [
                    a for a in items if needle in a.name.casefold() or needle in a.id.casefold()
                ]
        return page(
            items,
            limit=limit,
            starting_after=query.get("starting_after"),
            id_of=lambda a: a.id,
            render=self.render,
            reading=reading,
            faults=faults,
        )
