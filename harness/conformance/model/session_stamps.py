"""A session's stamps and the fields it was created with, as every answer shows them.

* ``session_stamps`` (RES-SESS-4): ``started_at`` and ``first_frame_at`` follow ``created_at``
  in the order of their events, never show while the session is queued, are set once a frame
  was produced, and once shown neither change nor disappear.
* ``session_unchanged`` (RES-SESS-1, RES-SESS-7, RES-TRN-1): wherever a session appears it
  answers the avatar, quality, metadata, transport and timeouts it was created with.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.model.session_facts import TERMINAL, SessionFacts, fail_once
from harness.conformance.responses import utc_instant
from harness.conformance.target import Exchange

__all__ = ["STAMPS", "UNCHANGED", "judge_stamps", "judge_unchanged"]

_UNPLACED = frozenset({"created", "queued"})

STAMPS = model_rule("session_stamps")
UNCHANGED = model_rule("session_unchanged")


def judge_unchanged(
    facts: SessionFacts, resource: dict[str, Any], exchange: Exchange
) -> Iterator[Verdict]:
    """Wherever a session appears it answers what it was created with."""
    transport = resource.get("transport")
    compared = False
    for name, value in facts.fixed.items():
        holder = transport if name.startswith("transport.") else resource
        key = name.removeprefix("transport.")
        if not isinstance(holder, dict) or key not in holder:
            continue
        compared = True
        if holder[key] != value:
            yield fail_once(
                facts, UNCHANGED, exchange,
                f"session {facts.id} answers {name} {holder[key]!r}, created as {value!r}",
            )  # fmt: skip
            return
    if compared and len(facts.statuses) > 1:
        yield Verdict.passed(UNCHANGED, exchange, edge=True)


# -- session_stamps ----------------------------------------------------------------------


def judge_stamps(
    facts: SessionFacts, status: str, resource: dict[str, Any], exchange: Exchange
) -> Iterator[Verdict]:
    names = ("created_at", "started_at", "first_frame_at")
    instants = [utc_instant(resource.get(name)) for name in names]
    known = [instant for instant in instants if instant is not None]
    if known != sorted(known):
        shown = ", ".join(f"{n} {resource.get(n)}" for n in names)
        yield fail_once(facts, STAMPS, exchange, f"session {facts.id}: {shown} out of order")
        return
    if status in _UNPLACED and resource.get("first_frame_at") is not None:
        yield fail_once(
            facts, STAMPS, exchange,
            f"session {facts.id} is {status} yet shows first_frame_at (set by the first "
            "frame, which comes from a worker)",
        )  # fmt: skip
        return
    for name in names[1:]:
        value, before = resource.get(name), facts.stamps.get(name)
        if before is not None and value != before:
            yield fail_once(
                facts, STAMPS, exchange,
                f"session {facts.id} showed {name} {before} and now {value!r}: it is set "
                "once, by its event",
            )  # fmt: skip
            return
        if isinstance(value, str):
            facts.stamps[name] = value
    usage = resource.get("usage")
    frames = usage.get("frames") if isinstance(usage, dict) else None
    if isinstance(frames, int) and frames > 0 and resource.get("first_frame_at") is None:
        yield fail_once(
            facts, STAMPS, exchange,
            f"session {facts.id} produced {frames} frames but shows no first_frame_at (set "
            "by session.first_frame, when the first frame is produced)",
        )  # fmt: skip
        return
    if status in TERMINAL and len(facts.stamps) == 2:
        yield Verdict.passed(STAMPS, exchange, edge=True)
