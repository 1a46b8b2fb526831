"""Avatars: the stock catalog, portrait uploads and their fitting (AV-ST-1, EP-AV-1..3).

``create`` checks the portrait (``prepare_create``, which stores nothing), then in one unit of
work (``sim.journal``) records a ``processing`` avatar and, once that succeeded, starts one SimPy
process that sleeps for the fitting time and then moves the avatar to ``ready`` or ``failed``
(emitting ``avatar.ready`` / ``avatar.failed`` with the rendered avatar). The fitting time, the
outcome and the failure reason are drawn from the ``fitting`` stream at upload time, in upload
order, so they do not depend on how other processes interleave. One timeout per avatar: the cost
of an avatar does not grow with anything.

Every lookup is scoped to the caller's organization (AUTH-7, GAP-AUTH-3): another organization's
avatar does not exist for you, exactly like an unknown id. Rate limits are not applied here; the
platform's door (``sim.platform``) applies them to every limited operation once.
"""

from __future__ import annotations

import builtins
from collections.abc import Generator
from dataclasses import replace
from typing import Any, Literal

import simpy

from sim.accounts import Caller
from sim.avatars.catalog import STOCK_AVATARS, USABLE_STOCK_IDS, stock_avatar
from sim.avatars.images import check_portrait
from sim.avatars.lifecycle import AvatarTrigger, next_status
from sim.avatars.records import Avatar
from sim.errors import Conflict, NotFound, Unprocessable
from sim.journal import Prepared, committed, discard
from sim.kernel import Kernel
from sim.pagination import paginate
from sim.rng import sample

__all__ = ["FAILURE_REASONS", "SCOPES", "AvatarScope", "AvatarService"]

AvatarScope = Literal["all", "platform", "org"]
SCOPES: tuple[AvatarScope, ...] = ("all", "platform", "org")

#: Why a fitting can fail; one is drawn for each failed avatar. Each asks for a new upload.
FAILURE_REASONS: tuple[str, ...] = (
    "No face was detected in the portrait.",
    "More than one face was detected in the portrait.",
    "The face is too small or partly hidden; upload a closer, unobstructed portrait.",
    "The portrait is too blurry to fit a model; upload a sharper image.",
)


class AvatarService:
    """Implements ``sim.ports.AvatarLookup`` for sessions."""

    def __init__(self, kernel: Kernel) -> None:
        self._kernel = kernel
        self._config = kernel.config.avatars
        self._rng = kernel.streams.stream("fitting")
        self._own: dict[str, Avatar] = {}  # customer avatars by id, in creation order
        self._by_org: dict[str, list[str]] = {}  # org id -> its avatar ids, oldest first

    # -- operations ----------------------------------------------------------------------------

    def prepare_create(
        self,
        caller: Caller,
        *,
        image: bytes | None,
        filename: str | None,
        content_type: str | None,
        name: str | None,
    ) -> Prepared:
        """Every check of a portrait upload; nothing is stored, drawn or started until
        ``commit``, which answers an avatar in ``processing`` whose fitting has started."""
        caller.require_unrestricted()
        if image is None:
            raise Unprocessable("validation.required", "An image file is required.", param="image")
        portrait = check_portrait(image, self._config)
        org_id = caller.org_id
        default_name = f"Avatar {len(self._by_org.get(org_id, [])) + 1}"
        clean_name = self._validate_name(name, default=default_name)

        def commit() -> dict[str, Any]:
            journal = self._kernel.journal
            clock = self._kernel.clock
            avatar = Avatar(
                id=self._kernel.ids.new("avatar"),
                name=clean_name,
                status=next_status(None, "upload"),
                is_demo=False,
                runtime_type="realtime",
                created_at=clock.now,
                org_id=org_id,
                from_photo_upload=True,
                portrait=portrait,
                upload_filename=filename,
                upload_content_type=content_type,
            )
            journal.on_undo(lambda: self._own.pop(avatar.id, None))
            self._own[avatar.id] = avatar
            org_ids = self._by_org.setdefault(org_id, [])
            journal.on_undo(lambda: discard(org_ids, avatar.id))
            org_ids.append(avatar.id)
            duration = sample(self._config.fitting_time, self._rng)
            fails = self._rng.random() < self._config.fitting_failure_probability
            reason = self._rng.choice(FAILURE_REASONS) if fails else None
            # Fitting starts once the upload is accepted for good, never for a failed one.
            journal.defer(lambda: self._start_fitting(avatar.id, duration, reason))
            return avatar.to_resource(clock)

        return Prepared(commit)

    create = committed(prepare_create)

    def _start_fitting(self, avatar_id: str, duration: float, reason: str | None) -> None:
        self._kernel.clock.env.process(self._fit(avatar_id, duration, reason))

    def retrieve(self, caller: Caller, avatar_id: str) -> dict[str, Any]:
        caller.require_unrestricted()
        avatar = self._visible(caller.org_id, avatar_id)
        if avatar is None:
            raise NotFound("avatar.not_found", f"No avatar {avatar_id}.")
        return avatar.to_resource(self._kernel.clock)

    def list(
        self,
        caller: Caller,
        *,
        limit: int,
        starting_after: str | None,
        scope: str = "all",
        q: str | None = None,
    ) -> dict[str, Any]:
        """Stock avatars first (catalog order), then the organization's own, oldest first.

        New uploads join the end of the order, so a walk that started earlier reaches them once
        and never sees an item twice (CONV-6).
        """
        caller.require_unrestricted()
        if scope not in SCOPES:
            raise Unprocessable(
                "validation.enum", f"scope must be one of {', '.join(SCOPES)}.", param="scope"
            )
        if q is not None and not 1 <= len(q) <= self._config.query_max_length:
            raise Unprocessable(
                "validation.range",
                f"q must be 1 to {self._config.query_max_length} characters.",
                param="q",
            )
        items: builtins.list[Avatar] = []
        if scope in ("all", "platform"):
            items.extend(STOCK_AVATARS)
        if scope in ("all", "org"):
            items.extend(self._own[i] for i in self._by_org.get(caller.org_id, []))
        if q is not None:
            needle = q.casefold()
            items = [a for a in items if needle in a.name.casefold() or needle in a.id.casefold()]
        clock = self._kernel.clock
        return paginate(
            items,
            limit=limit,
            starting_after=starting_after,
            limits=self._kernel.config.limits,
            render=lambda a: a.to_resource(clock),
        )

    # -- for other services and collectors -----------------------------------------------------

    def require_usable(self, org_id: str, avatar_id: str) -> None:
        """A stock avatar or the organization's own ``ready`` one, else refuse (GAP-SES-8)."""
        if avatar_id in USABLE_STOCK_IDS:  # what most creates ask for, answered at once
            return
        avatar = self._visible(org_id, avatar_id)
        if avatar is None:
            raise NotFound("avatar.not_found", f"No avatar {avatar_id}.", param="avatar_id")
        if not avatar.usable:
            raise Conflict(
                "avatar.not_ready",
                f"Avatar {avatar_id} is {avatar.status}, not ready for sessions.",
                param="avatar_id",
            )

    def get(self, org_id: str, avatar_id: str) -> Avatar | None:
        """The avatar as ``org_id`` sees it: stock, its own, or ``None``."""
        return self._visible(org_id, avatar_id)

    def avatars(self) -> builtins.list[Avatar]:
        """Every customer avatar's current record, in creation order (stock ones excluded)."""
        return builtins.list(self._own.values())

    # -- internals -----------------------------------------------------------------------------

    def _visible(self, org_id: str, avatar_id: str) -> Avatar | None:
        stock = stock_avatar(avatar_id)
        if stock is not None:
            return stock
        avatar = self._own.get(avatar_id)
        return avatar if avatar is not None and avatar.org_id == org_id else None

    def _validate_name(self, name: str | None, *, default: str) -> str:
        if name is None:
            return default
        longest = self._config.name_max_length
        if not 1 <= len(name) <= longest:
            raise Unprocessable(
                "validation.range", f"name must be 1 to {longest} characters.", param="name"
            )
        if not name.strip():
            raise Unprocessable("validation.format", "name must not be blank.", param="name")
        return name

    def _fit(
        self, avatar_id: str, duration: float, failure_reason: str | None
    ) -> Generator[simpy.Event, Any, None]:
        yield self._kernel.clock.env.timeout(duration)
        trigger: AvatarTrigger = "fitting_failed" if failure_reason else "fitting_succeeded"
        current = self._own[avatar_id]
        avatar = replace(
            current,
            status=next_status(current.status, trigger),
            failure_reason=failure_reason,
            completed_at=self._kernel.clock.now,
        )
        self._own[avatar_id] = avatar
        assert avatar.org_id is not None  # customer avatars always belong to an organization
        self._kernel.events.emit(
            f"avatar.{avatar.status}",
            avatar.org_id,
            {"object": avatar.to_resource(self._kernel.clock)},
        )
