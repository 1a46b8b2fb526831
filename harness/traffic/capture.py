"""``capture``: a deployment's sessions, walked page by page, into a recording.

What it asks: ``GET /v1/billing/quota`` once (the plan of the key's organization), then
``GET /v1/sessions`` page after page (``limit``, ``starting_after`` the previous page's cursor)
until the list says there is no more, or, when the pages come newest first, until a whole page
was created before ``--since``. A list that is not in that order is walked to its end: the seed
promises a stable order, not which one (GAP-CHK-2), and stopping early on a guess could miss
sessions.

Why every session exactly once: each page starts after the last one's cursor, so a session
created during the walk lands before the first page and is not seen (the recording ends where
the walk began), and nothing is counted twice even if a deployment repeated a row across pages:
rows are kept by id, the first time they are seen.

Pacing: a refused page (429) is asked again after the wait its ``Retry-After`` or
``X-RateLimit-Reset`` names, in any of the forms ``harness.conformance.pacing.retry_hint``
reads (seconds, a Unix time, an HTTP date), or after a doubling backoff when it names none.
The walk does not wait ahead of a refusal on ``X-RateLimit-Remaining: 0``: only a refusal's
own wait is sure to be in the target's time (a Unix reset is read against the target's
``Date``, or this machine's clock when it sends none, which a served simulator on a fast clock
does not keep), and one refused request is cheap. ``time_factor`` scales every wait for a
target whose clock runs fast (``avatar-sim serve --time-factor F``: its seconds are F wall
seconds). A 5xx is asked again a few times, then the capture fails; so does a refused key.

Which organization: the contract shows no organization id to a key, only its plan
(``/v1/billing/quota``). Every row is labelled with ``organization``, the ``--org`` given, else
``key-`` and the first 12 hex digits of the SHA-256 of the key: stable for a key across captures
and no secret. Two keys of one organization get two labels unless both captures name it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pandas as pd

from harness.conformance.pacing import retry_hint
from harness.target import Exchange, Target
from harness.traffic.recording import Recording, recording_from_frame

__all__ = ["CaptureError", "CaptureReport", "capture", "key_label"]

#: Sessions per page asked for: the seed's largest page.
PAGE_SIZE = 100
#: Answers of 5xx in a row before the capture gives up.
SERVER_ERRORS = 5
#: The first wait when a refusal names none (doubling, at most ``MAX_BACKOFF``), target seconds.
BACKOFF = 1.0
MAX_BACKOFF = 60.0


class CaptureError(Exception):
    """The capture could not be made: the key was refused, or the target kept failing."""


@dataclass
class CaptureReport:
    """What a capture did: pages read, refusals waited out, wall seconds spent waiting."""

    pages: int = 0
    refusals: int = 0
    waited_seconds: float = 0.0
    rows_seen: int = 0
    repeated: int = 0  # rows a page repeated (kept once)
    early_stop: bool = False  # the walk stopped at --since instead of the list's end
    waits: list[float] = field(default_factory=list)  # each wait, wall seconds


def key_label(api_key: str) -> str:
    """The organization label of a key when none is given: stable, and not the secret."""
    return "key-" + hashlib.sha256(api_key.encode()).hexdigest()[:12]


def _instant(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    stamp = pd.Timestamp(value)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.to_pydatetime()


@dataclass
class _Walker:
    target: Target
    time_factor: float
    sleep: Callable[[float], None]
    report: CaptureReport

    def wait(self, target_seconds: float) -> None:
        wall = max(target_seconds, 0.0) * self.time_factor
        self.report.waits.append(wall)
        self.report.waited_seconds += wall
        if wall > 0:
            self.sleep(wall)

    def get(self, path: str, params: dict[str, Any]) -> Exchange:
        """One GET, asked again after each refusal or server error as the module says."""
        backoff, failures = BACKOFF, 0
        while True:
            exchange = self.target.request("GET", path, params=params, operation=f"GET {path}")
            if exchange.status == 429:
                self.report.refusals += 1
                hint = retry_hint(exchange)
                self.wait(backoff if hint is None else hint)
                backoff = min(backoff * 2, MAX_BACKOFF) if hint is None else BACKOFF
                continue
            if exchange.status >= 500:
                failures += 1
                if failures >= SERVER_ERRORS:
                    raise CaptureError(f"GET {path} answered {exchange.status} {failures} times")
                self.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            if exchange.status in (401, 403):
                raise CaptureError(f"the key was refused: GET {path} answered {exchange.status}")
            if exchange.status != 200:
                shown = exchange.body[:200]
                raise CaptureError(f"GET {path} answered {exchange.status}: {shown!r}")
            return exchange


def _row(session: dict[str, Any], organization: str, plan: str | None) -> dict[str, Any]:
    usage = session.get("usage") or {}
    error = session.get("error") or {}
    return {
        "session_id": str(session.get("id")),
        "organization": organization,
        "plan": plan,
        "created_at": session.get("created_at"),
        "started_at": session.get("started_at"),
        "first_frame_at": session.get("first_frame_at"),
        "status": session.get("status"),
        "error_code": error.get("code") if isinstance(error, dict) else None,
        "billable_seconds": usage.get("billable_seconds") if isinstance(usage, dict) else None,
        "quality": session.get("quality"),
        "surface": session.get("billing_surface"),
    }


def capture(
    target: Target,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    organization: str | None = None,
    page_size: int = PAGE_SIZE,
    time_factor: float = 1.0,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[CaptureReport], None] | None = None,
) -> tuple[Recording, CaptureReport]:
    """Every session of ``target``'s key created in ``[since, until]`` (each bound optional),
    once, as a recording labelled ``organization`` (default ``key_label`` of the key) whose
    start is ``since`` (default: its first session); and what the walk did."""
    report = CaptureReport()
    walker = _Walker(target, time_factor, sleep, report)
    label = organization or key_label(target.credentials.api)
    quota = walker.get("/v1/billing/quota", {}).json() or {}
    plan = quota.get("plan_key") if isinstance(quota, dict) else None
    seen: dict[str, dict[str, Any]] = {}
    cursor: str | None = None
    newest_first = True
    previous: datetime | None = None
    while True:
        params: dict[str, Any] = {"limit": page_size}
        if cursor is not None:
            params["starting_after"] = cursor
        page = walker.get("/v1/sessions", params).json() or {}
        report.pages += 1
        data = [s for s in page.get("data", []) if isinstance(s, dict) and s.get("id")]
        report.rows_seen += len(data)
        for session in data:
            created = _instant(session.get("created_at"))
            if previous is not None and created is not None and created > previous:
                newest_first = False
            previous = created if created is not None else previous
            if session["id"] in seen:
                report.repeated += 1
            else:
                seen[str(session["id"])] = session
        if progress is not None:
            progress(report)
        if not data or not page.get("has_more"):
            break
        if since is not None and newest_first and previous is not None and previous < since:
            report.early_stop = True
            break
        cursor = str(page.get("next_cursor") or data[-1]["id"])
    rows = []
    for session in seen.values():
        created = _instant(session.get("created_at"))
        if created is None:
            continue
        if (since is not None and created < since) or (until is not None and created > until):
            continue
        rows.append(_row(session, label, plan))
    frame = pd.DataFrame(rows, columns=list(_row({}, "", None)))
    info = {
        "target": target.base_url,
        "organization": label,
        "plan": plan,
        "captured_at": datetime.now(UTC).isoformat(),
        "since": None if since is None else since.isoformat(),
        "until": None if until is None else until.isoformat(),
    }
    recording = recording_from_frame(frame, f"capture of {target.base_url}", start=since, info=info)
    return recording, report
