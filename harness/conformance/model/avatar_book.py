"""Avatars as the seed states them: uploads, fitting, and which avatars start sessions.

``avatars`` (EP-AV-1, AV-ST-1, RES-AV-1):

* an upload (multipart, a PNG or JPEG ``image``, an optional ``name``) answers an avatar in
  ``processing`` with the name it was given and ``is_demo`` false (it is a customer's, not the
  platform's); an upload without an ``image`` part is refused;
* an upload that is no PNG or JPEG portrait is refused, or accepted to end ``failed`` in fitting
  (the seed leaves where): such an avatar never becomes ``ready``;
* fitting ends ``ready`` or ``failed``, and neither changes after;
* a ``failed`` avatar is not usable: a session create with it is refused;
* an avatar both organizations are shown, uploaded by neither, is one of the platform's stock
  avatars: ``is_demo`` true.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.rules import Verdict, model_rule
from harness.target import Exchange

__all__ = ["AVATARS", "AvatarBook"]

AVATARS = model_rule("avatars")

_FITTED = frozenset({"ready", "failed"})
#: The avatar fields the seed names; a failure reason, whose name it does not show, is another.
_NAMED = frozenset({"id", "object", "name", "status", "is_demo", "runtime_type", "created_at",
                    "voice"})  # fmt: skip
#: Target seconds an upload may stay processing (the seed states no bound: this allows ten
#: minutes of fitting).
FITTING_BOUND = 600.0


def _said(value: Any) -> bool:
    """Whether a field says something: a non-empty string, or an object holding one."""
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, dict):
        return any(_said(v) for v in value.values())
    return False


def _sayings(avatar: dict[str, Any]) -> set[str]:
    """The fields beyond those the seed names that say something."""
    return {k for k, v in avatar.items() if k not in _NAMED and _said(v)}


@dataclass
class AvatarBook:
    """Every avatar the run has seen: its statuses, who uploaded it, who was shown it."""

    uploaded: dict[str, str] = field(default_factory=dict)  # id -> uploading organization
    doubtful: dict[str, str] = field(default_factory=dict)  # id -> what it was (no portrait)
    fitted: dict[str, str] = field(default_factory=dict)  # id -> ready / failed, once fitted
    shown_to: dict[str, set[str]] = field(default_factory=dict)  # id -> organizations
    demo: dict[str, Any] = field(default_factory=dict)  # id -> is_demo as last answered
    judged_stock: set[str] = field(default_factory=set)
    stuck: set[str] = field(default_factory=set)
    uploaded_at: dict[str, float] = field(default_factory=dict)  # id -> run time of the upload
    #: Fields an own upload shows while processing: whatever else a failed one shows is its
    #: failure reason (the seed names four optional fields but not what they are called).
    at_upload: set[str] = field(default_factory=set)
    reasons: set[str] = field(default_factory=set)

    def status(self, avatar_id: str) -> str | None:
        return self.fitted.get(avatar_id)

    def usable(self, avatar_id: str, org: str) -> bool:
        """Known ready and visible to ``org``: a create with it must not be refused for it."""
        return self.fitted.get(avatar_id) == "ready" and org in self.shown_to.get(avatar_id, ())

    def upload(
        self,
        avatar: dict[str, Any],
        org: str,
        name: str | None,
        portrait: bool,
        exchange: Exchange,
        at: float = 0.0,
    ) -> Iterator[Verdict]:
        """An accepted upload answered ``avatar`` (at the run's time ``at``)."""
        avatar_id = str(avatar.get("id"))
        self.uploaded[avatar_id] = org
        self.uploaded_at[avatar_id] = at
        self.at_upload |= _sayings(avatar)
        if not portrait:
            self.doubtful[avatar_id] = "an upload that is no PNG or JPEG portrait"
        wrong = []
        if avatar.get("status") != "processing":
            wrong.append(f"status {avatar.get('status')!r}, not processing")
        if name is not None and name == name.strip() and name and avatar.get("name") != name:
            wrong.append(f"name {avatar.get('name')!r} for {name!r} uploaded")
        if avatar.get("is_demo") is not False:
            wrong.append(f"is_demo {avatar.get('is_demo')!r} for a customer's upload")
        yield Verdict.judged(
            AVATARS,
            exchange,
            "an upload answered " + "; ".join(wrong) if wrong else None,
            edge=False,
        )
        yield from self.seen(avatar, org, exchange, at)

    def seen(
        self, avatar: dict[str, Any], org: str, exchange: Exchange, at: float = 0.0
    ) -> Iterator[Verdict]:
        """One answer showing ``avatar`` to ``org`` (at the run's time ``at``)."""
        avatar_id, status = avatar.get("id"), avatar.get("status")
        if not isinstance(avatar_id, str):
            return
        yield from self._reason(avatar_id, status, avatar, exchange)
        since = self.uploaded_at.get(avatar_id)
        if status == "processing" and since is not None and at - since > FITTING_BOUND:
            yield from self._once(
                self.stuck, avatar_id, exchange,
                f"avatar {avatar_id} is still processing {at - since:.0f} s after its upload; "
                f"fitting ends ready or failed (allowed {FITTING_BOUND:g} s)",
            )  # fmt: skip
            return
        self.shown_to.setdefault(avatar_id, set()).add(org)
        self.demo[avatar_id] = avatar.get("is_demo")
        before = self.fitted.get(avatar_id)
        if before is not None and status != before:
            yield Verdict.failed(
                AVATARS, exchange, f"avatar {avatar_id} was {before} and later showed {status!r}"
            )
            return
        if isinstance(status, str) and status in _FITTED and before is None:
            self.fitted[avatar_id] = status
            if status == "ready" and avatar_id in self.doubtful:
                yield Verdict.failed(
                    AVATARS, exchange,
                    f"{self.doubtful[avatar_id]} was accepted and fitted ready (it must be "
                    "refused at upload or fail in fitting)",
                )  # fmt: skip
                return
        uploader = self.uploaded.get(avatar_id)
        if uploader is not None and avatar.get("is_demo") is not False:
            yield Verdict.failed(
                AVATARS, exchange,
                f"the customer's avatar {avatar_id} answered is_demo {avatar.get('is_demo')!r}",
            )  # fmt: skip
            return
        if uploader is None and len(self.shown_to[avatar_id]) > 1:
            if avatar.get("is_demo") is True:
                yield Verdict.passed(AVATARS, exchange, edge=True)
            else:
                yield from self._once(
                    self.judged_stock, avatar_id, exchange,
                    f"avatar {avatar_id}, shown to both organizations and uploaded by neither "
                    f"(a platform stock avatar), answered is_demo {avatar.get('is_demo')!r}",
                )  # fmt: skip

    @staticmethod
    def _once(
        told: set[str], avatar_id: str, exchange: Exchange, message: str
    ) -> Iterator[Verdict]:
        """A failure told once per avatar (``told``: the avatars it was told of already): an
        avatar stuck in fitting, or a stock one answering the wrong is_demo, stays so: one failure
        says it."""
        if avatar_id not in told:
            told.add(avatar_id)
            yield Verdict.failed(AVATARS, exchange, message)

    def _reason(
        self, avatar_id: str, status: Any, avatar: dict[str, Any], exchange: Exchange
    ) -> Iterator[Verdict]:
        """A failed upload of the run's carries a failure reason (a field beyond those the seed
        names and those every upload shows); a ready one carries no field a failed one used
        for its reason."""
        if avatar_id not in self.uploaded:
            return
        extra = _sayings(avatar) - self.at_upload
        if status == "failed":
            if not extra:
                yield Verdict.failed(
                    AVATARS, exchange,
                    f"the failed avatar {avatar_id} carries no failure reason (no field beyond "
                    "those every upload shows says why)",
                )  # fmt: skip
            else:
                self.reasons |= extra
                yield Verdict.passed(AVATARS, exchange, edge=False)
        elif status == "ready" and extra & self.reasons:
            yield Verdict.failed(
                AVATARS, exchange,
                f"the ready avatar {avatar_id} carries {sorted(extra & self.reasons)}, the "
                "field a failed avatar gives its reason in (set only while failed)",
            )  # fmt: skip

    def judge_missing_image(self, exchange: Exchange) -> Iterator[Verdict]:
        if 200 <= exchange.status < 300:
            yield Verdict.failed(
                AVATARS, exchange, f"an upload without an image answered {exchange.status}"
            )
        elif 400 <= exchange.status < 500 and exchange.status != 429:
            yield Verdict.passed(AVATARS, exchange, edge=False)

    def judge_session_with(
        self, avatar_id: str, accepted: bool, exchange: Exchange
    ) -> Iterator[Verdict]:
        """A session create named ``avatar_id``."""
        if self.fitted.get(avatar_id) != "failed":
            return
        if accepted:
            yield Verdict.failed(
                AVATARS, exchange,
                f"a session was created with the failed avatar {avatar_id} (a failed avatar is "
                "not usable)",
            )  # fmt: skip
        elif exchange.status not in (429, 503):
            yield Verdict.passed(AVATARS, exchange, edge=True)
