"""A second deployment that reads the seed's open points otherwise: "other legal readings"
(HAR-5). Like ``gap_variant.py``, it is the real facade behind edits and a
configuration; each ``GapChoice`` names the seed section that leaves the point open.

Where ``gap_variant.py`` renames and reshapes (other names, other codes, other shapes), this one
answers differently where the seed lets a deployment decide how strict or how fast to be:
another organization's session or avatar is *forbidden* rather than *not found*, page sizes out of
range are clamped, an image is judged only in fitting, a 422 carries ``invalid_request`` for a
bad parameter, ``X-RateLimit-*`` come only with refusals, a rate-limit refusal says to retry
after a whole window, creates answer 202, the create limit is a fixed window (its boundary lets
up to twice the limit through), ``end`` drains a session placed on a worker before its first
frame, ``first_frame_at`` comes two seconds after
``running``, avatars are listed by name, reset times and retry delays are HTTP dates, unknown
body fields are ignored, "8 KB" is 8000 bytes, other lists default to pages of 10, and workers
boot and drain more slowly. Every choice is legal under the seed, and
``tests/conformance/test_legal_readings.py`` shows each is in effect.

``LEGAL_READINGS`` combines every choice of ``LEGAL_CHOICES``; ``LEGAL_READINGS_SLIDING`` is the
same deployment with a sliding-window-counter limiter instead of the fixed window (one limiter
at a time). ``LEGAL_READINGS_PLACED`` adds caps that count only placed sessions, which edits
alone cannot do (the deployment must read a key's sessions before it answers a create): serve
it with ``wrap=placed_only_cap``, never without (its platform's own per-key cap is two).

Wall time never enters: an edit that writes an absolute time (an HTTP date, a delayed
``first_frame_at``) learns the mapping from simulated seconds to Unix time from the
deployment's own answers (a create's ``created_at``, ``GET /v1/status``'s ``updated_at``), so the
variant is right in process and served at any time factor.
"""

from __future__ import annotations

import io
import json
import math
import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

from PIL import Image

from sim.avatars.images import check_portrait
from sim.config import AvatarConfig
from sim.errors import Unprocessable
from tests.conformance.edits import (
    App,
    Call,
    Edits,
    Keys,
    Message,
    Receive,
    Reply,
    Scope,
    Send,
    objects,
)
from tests.conformance.gap_variant import GapChoice, combined

__all__ = [
    "CREATE_LIMIT",
    "FIRST_FRAME_DELAY_SECONDS",
    "LEGAL_CHOICES",
    "LEGAL_READINGS",
    "LEGAL_READINGS_PLACED",
    "LEGAL_READINGS_SLIDING",
    "PLACED",
    "PLACED_ONLY_CAP",
    "SLIDING_WINDOW",
    "WINDOW_SECONDS",
    "placed_only_cap",
    "portrait_png",
]

#: The seed's create limit (§8: 10 requests per minute per key).
CREATE_LIMIT = 10
WINDOW_SECONDS = 60.0
FIRST_FRAME_DELAY_SECONDS = 2.0

_RATE_HEADERS = ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")
_SESSION_CREATES = ("/v1/sessions", "/v1/pipecat/sessions")


def _is_create(call: Call) -> bool:
    return call.method == "POST" and (
        call.path in (*_SESSION_CREATES, "/v1/avatars") or call.path.startswith("/v1/run/")
    )


def _success(reply: Reply) -> bool:
    return 200 <= reply.status < 300


def _created_session(call: Call, reply: Reply) -> dict[str, Any] | None:
    """The session a successful session create answered (a pipecat create nests it)."""
    if call.method != "POST" or call.path not in _SESSION_CREATES or not _success(reply):
        return None
    body = reply.json()
    session = body.get("session") if call.path == "/v1/pipecat/sessions" else body
    return session if isinstance(session, dict) else None


# -- Unix time, learned from the deployment ----------------------------------------------------


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _iso(moment: datetime) -> str:
    return (
        moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    )


def learn_unix_time(call: Call, reply: Reply) -> None:
    """Remember Unix time minus simulated time from an answer stamped "now"."""
    if not _success(reply):
        return
    body = reply.json()
    stamp = None
    if call.method == "GET" and call.path == "/v1/status" and isinstance(body, dict):
        stamp = body.get("updated_at")
    elif _is_create(call) and isinstance(body, dict):
        created = body.get("session") if call.path == "/v1/pipecat/sessions" else body
        stamp = created.get("created_at") if isinstance(created, dict) else None
    if isinstance(stamp, str):
        call.state["unix_offset"] = _parse(stamp).timestamp() - call.now()


def unix_now(call: Call) -> float | None:
    offset = call.state.get("unix_offset")
    return None if offset is None else call.now() + float(offset)


def _http_date(unix: float) -> str:
    return format_datetime(datetime.fromtimestamp(math.floor(unix), UTC), usegmt=True)


# -- 1, 2: another organization's session or avatar is forbidden --------------------------------

_BY_ID = re.compile(r"/v1/(sessions|avatars)/([^/]+)")


def _remember_ids(call: Call, reply: Reply) -> None:
    known: set[str] = call.state.setdefault("created_ids", set())
    session = _created_session(call, reply)
    if session is not None and isinstance(session.get("id"), str):
        known.add(session["id"])
    body = reply.json()
    uploaded = call.method == "POST" and call.path == "/v1/avatars" and _success(reply)
    if uploaded and isinstance(body, dict) and isinstance(body.get("id"), str):
        known.add(body["id"])


def _forbidden(kind: str) -> Any:
    def edit(call: Call, reply: Reply) -> None:
        _remember_ids(call, reply)
        match = _BY_ID.fullmatch(call.path)
        if call.method != "GET" or reply.status != 404 or match is None or match[1] != kind:
            return
        if match[2] in call.state.get("created_ids", ()):  # it exists: another org's
            reply.status = 403
            noun = kind.removesuffix("s")
            reply.edit_error(
                type="permission",
                code=f"{noun}.forbidden",
                message=f"This {noun} belongs to another organization.",
            )

    return edit


# -- 3: page sizes out of range are clamped -----------------------------------------------------

_LISTS = {"/v1/sessions": 100, "/v1/avatars": 100, "/v1/runs": 100, "/v1/assets": 100}
_EVENTS = re.compile(r"/v1/runs/[^/]+/events")
_INTEGER = re.compile(r"[+-]?\d{1,9}")


def _page_maximum(path: str) -> int | None:
    return 500 if _EVENTS.fullmatch(path) else _LISTS.get(path)


def clamp_page_sizes(call: Call) -> None:
    top = _page_maximum(call.path)
    if call.method != "GET" or top is None:
        return
    pairs = call.query()
    clamped = [
        (n, str(min(max(int(v), 1), top))) if n == "limit" and _INTEGER.fullmatch(v) else (n, v)
        for n, v in pairs
    ]
    if clamped != pairs:
        call.set_query(clamped)


# -- 4: the image is judged in fitting, not at upload -------------------------------------------


def portrait_png(side: int = 256) -> bytes:
    """A plain PNG portrait every check accepts."""
    out = io.BytesIO()
    Image.new("RGB", (side, side), (196, 164, 132)).save(out, format="PNG")
    return out.getvalue()


_STAND_IN = portrait_png()
_BOUNDARY = re.compile(r'boundary="?([^";]+)"?')


def _parts(call: Call) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
    """The boundary and (headers, content) of each part of a multipart body."""
    found = _BOUNDARY.search(call.header("content-type") or "")
    if found is None:
        return None
    boundary = found[1].encode()
    chunks = call.body.split(b"--" + boundary)
    parts = []
    for chunk in chunks[1:-1]:
        head, _, content = chunk.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        parts.append((head, content.removesuffix(b"\r\n")))
    return boundary, parts


def _join(boundary: bytes, parts: list[tuple[bytes, bytes]]) -> bytes:
    out = b"".join(b"--" + boundary + b"\r\n" + h + b"\r\n\r\n" + c + b"\r\n" for h, c in parts)
    return out + b"--" + boundary + b"--\r\n"


def judge_image_in_fitting(call: Call) -> None:
    """An upload the image checks refuse is accepted (a stand-in is fitted) and marked to fail."""
    if call.method != "POST" or call.path != "/v1/avatars":
        return
    parsed = _parts(call)
    if parsed is None:
        return
    boundary, parts = parsed
    for index, (head, content) in enumerate(parts):
        if b'name="image"' not in head:
            continue
        try:
            check_portrait(content, AvatarConfig())
        except Unprocessable as refusal:
            lines = [ln for ln in head.split(b"\r\n") if not ln.lower().startswith(b"content-type")]
            parts[index] = (b"\r\n".join([*lines, b"Content-Type: image/png"]), _STAND_IN)
            call.body = _join(boundary, parts)
            call.notes["fails_in_fitting"] = refusal.message
        return


def _remember_doomed(call: Call, reply: Reply) -> None:
    reason = call.notes.get("fails_in_fitting")
    body = reply.json()
    if reason and _success(reply) and isinstance(body, dict):
        call.state.setdefault("doomed", {})[body.get("id")] = f"Fitting failed: {reason}"


def _doomed_shown_failed(call: Call, reply: Reply) -> None:
    doomed: dict[str, str] = call.state.get("doomed", {})
    body = reply.json()
    if not doomed or body is None:
        return
    changed = False
    for item in objects(body):
        fitted = item.get("status") != "processing"  # fitting is over: it failed
        if item.get("object") == "avatar" and item.get("id") in doomed and fitted:
            item["status"] = "failed"
            item["failure_reason"] = doomed[item["id"]]
            changed = True
    if changed:
        reply.set_json(body)


def _doomed_not_usable(call: Call) -> None:
    body = call.json()
    if call.method != "POST" or call.path not in _SESSION_CREATES or not isinstance(body, dict):
        return
    avatar_id = body.get("avatar_id")
    if avatar_id in call.state.get("doomed", {}):
        message = f"Avatar {avatar_id} is failed, not ready for sessions."
        call.refuse(409, "conflict", "avatar.not_ready", message, "avatar_id")


# -- 5: a bad parameter's 422 says invalid_request ----------------------------------------------


def parameter_refusals_invalid_request(call: Call, reply: Reply) -> None:
    if reply.status == 422 and call.method == "GET" and reply.error() is not None:
        reply.edit_error(type="invalid_request")


# -- 6, 7: rate-limit headers only on refusals; Retry-After only where the seed names it ------


def rate_headers_only_on_refusals(call: Call, reply: Reply) -> None:
    if _success(reply):
        for name in _RATE_HEADERS:
            reply.drop(name)


# -- 8: creates answer 202 -----------------------------------------------------------------------


def creates_answer_202(call: Call, reply: Reply) -> None:
    if _is_create(call) and reply.status in (200, 201):
        reply.status = 202


# -- 9: the create limit as a fixed window (and, apart, as a sliding-window counter) -------------


def _window(call: Call) -> int:
    return math.floor(call.now() / WINDOW_SECONDS)


def _counts(call: Call) -> dict[tuple[str, int], int]:
    counts: dict[tuple[str, int], int] = call.state.setdefault("window_counts", {})
    return counts


def _limited(call: Call, retry_after: int, reset_sim: float) -> None:
    call.refuse(429, "rate_limit", "rate_limited", "Too many session creates.", None)
    assert call.answer is not None
    _rate_headers(call, call.answer, 0, reset_sim)
    call.answer.set_header("Retry-After", str(max(retry_after, 1)))


def _rate_headers(call: Call, reply: Reply, remaining: int, reset_sim: float) -> None:
    offset = call.state.get("unix_offset")
    # Unix seconds once the mapping is known (always, after one accepted create); else seconds
    # from now, which is a standard form too.
    reset = reset_sim + offset if offset is not None else reset_sim - call.now()
    reply.set_header("X-RateLimit-Limit", str(CREATE_LIMIT))
    reply.set_header("X-RateLimit-Remaining", str(max(remaining, 0)))
    reply.set_header("X-RateLimit-Reset", str(math.ceil(reset)))


def _is_session_create(call: Call) -> bool:
    return call.method == "POST" and call.path == "/v1/sessions"


def fixed_window_gate(call: Call) -> None:
    if not _is_session_create(call):
        return
    window = _window(call)
    call.notes["window"] = window
    if _counts(call).get((call.header("authorization") or "", window), 0) >= CREATE_LIMIT:
        ends = (window + 1) * WINDOW_SECONDS
        _limited(call, math.ceil(ends - call.now()), ends)


def fixed_window_count(call: Call, reply: Reply) -> None:
    """Only accepted creates count; the headers tell what is left of this window."""
    if not _is_session_create(call) or call.answer is not None or "window" not in call.notes:
        return
    window = call.notes["window"]
    key = (call.header("authorization") or "", window)
    if _success(reply):
        _counts(call)[key] = _counts(call).get(key, 0) + 1
    used = _counts(call).get(key, 0)
    _rate_headers(call, reply, CREATE_LIMIT - used, (window + 1) * WINDOW_SECONDS)


def _estimate(call: Call, at: float) -> float:
    """Cloudflare's sliding-window counter: this window's count plus the last one's, weighted by
    the share of the sliding minute that still overlaps it."""
    key = call.header("authorization") or ""
    window = math.floor(at / WINDOW_SECONDS)
    share = 1 - (at - window * WINDOW_SECONDS) / WINDOW_SECONDS
    counts = _counts(call)
    return counts.get((key, window - 1), 0) * share + counts.get((key, window), 0)


def sliding_counter_gate(call: Call) -> None:
    if not _is_session_create(call):
        return
    now = call.now()
    call.notes["window"] = _window(call)
    if _estimate(call, now) + 1 > CREATE_LIMIT:
        wait = next(s for s in range(1, int(2 * WINDOW_SECONDS) + 2) if
                    _estimate(call, now + s) + 1 <= CREATE_LIMIT)  # fmt: skip
        _limited(call, wait, now + wait)


def sliding_counter_count(call: Call, reply: Reply) -> None:
    if not _is_session_create(call) or call.answer is not None or "window" not in call.notes:
        return
    key = (call.header("authorization") or "", call.notes["window"])
    if _success(reply):
        _counts(call)[key] = _counts(call).get(key, 0) + 1
    left = math.floor(CREATE_LIMIT - _estimate(call, call.now()))
    _rate_headers(call, reply, left, (call.notes["window"] + 1) * WINDOW_SECONDS)


# -- 10: end drains a session placed on a worker before its first frame -------------------------


def end_drains_starting(call: Call, reply: Reply) -> None:
    """``end`` on a session placed on a worker (``started_at`` set) but not running yet drains
    it: ``ending``, then ``ended`` on the next read, where the simulator cancels it. The seed's
    "not yet started" may be read as "before session.starting"."""
    drained: set[str] = call.state.setdefault("drained_starting", set())
    body = reply.json()
    ending = call.method == "POST" and call.path.endswith("/end")
    for session in (s for s in objects(body) if s.get("object") == "session"):
        first = session.get("id") not in drained
        if ending and first and session.get("status") == "canceled" and session.get("started_at"):
            drained.add(session["id"])
            session["status"] = "ending"
            continue
        if session.get("id") in drained and session.get("status") == "canceled":
            session["status"] = "ended"
    if isinstance(body, dict | list):
        reply.set_json(body)


# -- a rate-limit refusal says to retry after a whole window --------------------------------------


def retry_after_a_window(call: Call, reply: Reply) -> None:
    """A conservative hint: every rate-limit refusal says to retry after a whole window."""
    error = reply.error()
    if reply.status == 429 and error is not None and error.get("type") == "rate_limit":
        reply.set_header("Retry-After", str(int(WINDOW_SECONDS)))


# -- 11: first_frame_at comes two seconds after running -----------------------------------------


def first_frame_later(call: Call, reply: Reply) -> None:
    now = unix_now(call)
    body = reply.json()
    if now is None or body is None:
        return
    changed = False
    for item in objects(body):
        stamp = item.get("first_frame_at")
        if item.get("object") == "session" and isinstance(stamp, str):
            later = _parse(stamp) + timedelta(seconds=FIRST_FRAME_DELAY_SECONDS)
            item["first_frame_at"] = _iso(later) if later.timestamp() <= now else None
            changed = True
    if changed:
        reply.set_json(body)


# -- 12: avatars listed by name --------------------------------------------------------------------

_AVATAR_DEFAULT_PAGE = 20
#: How many avatars the edit asks the facade for at once, to order them all by name (its
#: configuration allows it; what a client asks for is still clamped to 100 by the page-size
#: choice before this edit sees it).
_EVERY_AVATAR = 1000


def avatars_by_name_request(call: Call) -> None:
    """Ask the facade for every avatar at once; the response edit pages them by name."""
    if call.method != "GET" or call.path != "/v1/avatars":
        return
    pairs = call.query()
    limits = [v for n, v in pairs if n == "limit"]
    cursors = [v for n, v in pairs if n == "starting_after"]
    if len(limits) > 1 or len(cursors) > 1:
        return
    limit = limits[0] if limits else str(_AVATAR_DEFAULT_PAGE)
    cursor = cursors[0] if cursors else None
    if not re.fullmatch(r"\d{1,3}", limit) or not 1 <= int(limit) <= 100:
        return  # the facade refuses it
    if cursor is not None and (not cursor.startswith("av_") or len(cursor) > 40):
        return  # the facade refuses it
    call.notes["by_name"] = (int(limit), cursor)
    kept = [(n, v) for n, v in pairs if n not in ("limit", "starting_after")]
    call.set_query([*kept, ("limit", str(_EVERY_AVATAR))])


def avatars_by_name_response(call: Call, reply: Reply) -> None:
    asked = call.notes.get("by_name")
    body = reply.json()
    if asked is None or reply.status != 200 or not isinstance(body, dict):
        return
    limit, cursor = asked
    ordered = sorted(body["data"], key=lambda a: (str(a.get("name", "")).casefold(), a["id"]))
    start = 0
    if cursor is not None:
        ids = [a["id"] for a in ordered]
        if cursor not in ids:
            reply.status = 422
            request_id = reply.header("x-request-id")
            reply.set_json({"error": {
                "type": "unprocessable", "code": "validation.cursor",
                "message": "starting_after does not name an item of this list.",
                "param": "starting_after", "request_id": request_id,
            }})  # fmt: skip
            return
        start = ids.index(cursor) + 1
    page = ordered[start : start + limit]
    more = start + limit < len(ordered) or bool(body.get("has_more"))
    listed: dict[str, Any] = {"object": "list", "data": page, "has_more": more}
    if page:
        listed["next_cursor"] = page[-1]["id"]
    reply.set_json(listed)


# -- 13: reset times and retry delays as HTTP dates ---------------------------------------------


def http_dates(call: Call, reply: Reply) -> None:
    reset = reply.header("x-ratelimit-reset")
    retry = reply.header("retry-after")
    now = unix_now(call)
    if reset is not None and reset.isdigit() and int(reset) > 10**9:  # Unix seconds
        reply.set_header("X-RateLimit-Reset", _http_date(int(reset)))
    if retry is not None and retry.isdigit() and now is not None:
        reply.set_header("Retry-After", _http_date(now + int(retry)))
    if (reset or retry) and now is not None:
        reply.set_header("Date", _http_date(now))


# -- 14: unknown body fields are ignored ---------------------------------------------------------

#: The fields the seed lists for a session create and for its livekit transport.
SESSION_FIELDS = frozenset(
    {"avatar_id", "transport", "idle_timeout_seconds", "max_duration_seconds", "metadata",
     "quality"}
)  # fmt: skip
LIVEKIT_FIELDS = frozenset({"type", "url", "room_name", "worker_token", "audio_source"})


def unknown_fields_ignored(call: Call) -> None:
    body = call.json()
    if not _is_session_create(call) or not isinstance(body, dict):
        return
    kept = {k: v for k, v in body.items() if k in SESSION_FIELDS}
    transport = kept.get("transport")
    if isinstance(transport, dict) and transport.get("type") == "livekit":
        kept["transport"] = {k: v for k, v in transport.items() if k in LIVEKIT_FIELDS}
    if kept != body:
        call.set_json(kept)


# -- the choices ----------------------------------------------------------------------------------

_CLOCK = (learn_unix_time,)

SLIDING_WINDOW = GapChoice(
    "create limit as a sliding-window counter",
    "§8: 10 requests per minute per key; how the minute is measured is not shown",
    Edits(request=(sliding_counter_gate,), response=(*_CLOCK, sliding_counter_count),
          config={"limits.rate.session_creates_per_window": None}),
)  # fmt: skip

FIXED_WINDOW = GapChoice(
    "create limit as a fixed window of 10 accepted creates per clock minute",
    "§8: 10 requests per minute per key; the window's shape and what counts are not shown "
    "(a fixed window lets up to 20 through across its boundary)",
    Edits(request=(fixed_window_gate,), response=(*_CLOCK, fixed_window_count),
          config={"limits.rate.session_creates_per_window": None}),
)  # fmt: skip

LEGAL_CHOICES: tuple[GapChoice, ...] = (
    GapChoice("another organization's session is forbidden",
              "§4 GET /v1/sessions/{session_id}, §7: how another organization's session is "
              "refused is not shown (404 or 403)",
              Edits(response=(_forbidden("sessions"),))),
    GapChoice("another organization's avatar is forbidden",
              "§4 GET /v1/avatars/{avatar_id}, §7: how another organization's avatar is refused "
              "is not shown (404 or 403)",
              Edits(response=(_forbidden("avatars"),))),
    GapChoice("page sizes out of range are clamped",
              "§8: page size 1..100, run events 1..500; what a size outside gets is not shown",
              Edits(request=(clamp_page_sizes,))),
    GapChoice("the image is judged in fitting",
              "§3 Avatar states, §4 POST /v1/avatars: an upload answers processing and fitting "
              "may fail; where a bad image is caught is not shown",
              Edits(request=(judge_image_in_fitting, _doomed_not_usable),
                    response=(_remember_doomed, _doomed_shown_failed))),
    GapChoice("a bad parameter is 422 invalid_request",
              "§7: type maps only roughly to the status; the type of a 422 is not shown",
              Edits(response=(parameter_refusals_invalid_request,))),
    FIXED_WINDOW,  # before the header choices, which change what it writes
    GapChoice("X-RateLimit headers only on refusals",
              "§8 rule 2: rate-limited responses carry X-RateLimit-*; others need not",
              Edits(response=(rate_headers_only_on_refusals,))),
    GapChoice("rate-limit refusals say to retry after a whole window",
              "§8 rule 2: a 429 carries Retry-After; how long it says is not shown",
              Edits(response=(retry_after_a_window,))),
    GapChoice("creates answer 202",
              "§4: the success status of POST /v1/sessions, /v1/avatars and run creates is not "
              "shown", Edits(response=(creates_answer_202,))),
    GapChoice("end drains a session placed on a worker",
              "§3 Session states: end cancels a session \"not yet started\"; whether a session "
              "placed on a worker, before its first frame, has started is not shown",
              Edits(response=(end_drains_starting,))),
    GapChoice("first_frame_at two seconds after running",
              "§2 Session, §6: first_frame_at is set on session.first_frame, whose time after "
              "running is not shown", Edits(response=(*_CLOCK, first_frame_later))),
    GapChoice("avatars listed by name",
              "§4 GET /v1/avatars: no order is stated",
              Edits(request=(avatars_by_name_request,), response=(avatars_by_name_response,),
                    config={"limits.page_size_max": _EVERY_AVATAR})),
    GapChoice("unknown body fields ignored",
              "§4 POST /v1/sessions: the body's fields are listed; refusing others is not "
              "required", Edits(request=(unknown_fields_ignored,))),
    GapChoice("metadata limit of 8000 bytes",
              "§8: metadata size 8 KB; whether a KB is 1000 or 1024 bytes is not shown",
              Edits(config={"limits.metadata_max_bytes": 8000})),
    GapChoice("default page of 10, run events 50",
              "§8: page size 1..100; a default is stated only for avatars (20)",
              Edits(config={"limits.page_size_default": 10,
                            "limits.run_events_page_size_default": 50})),
    GapChoice("slower start-up and drain",
              "§3: how long a placed session takes to its first frame, and how long ending "
              "drains, are not shown",
              Edits(config={"scheduler.worker_boot": {"kind": "constant", "value": 6.0},
                            "sessions.drain_base_seconds": 4.0,
                            "sessions.drain_max_seconds": 8.0})),
    GapChoice("reset times and retry delays as HTTP dates",
              "§8 rule 2: the form of X-RateLimit-Reset and Retry-After is not shown (HTTP's "
              "Retry-After may be a date)", Edits(response=(*_CLOCK, http_dates))),
)  # fmt: skip

LEGAL_READINGS = combined(LEGAL_CHOICES)
LEGAL_READINGS_SLIDING = combined(
    tuple(SLIDING_WINDOW if choice is FIXED_WINDOW else choice for choice in LEGAL_CHOICES)
)


# -- caps that count only placed sessions (a wrapper: it must read sessions to decide) ----------

#: Session states in which a worker holds the session: the ones this reading counts.
PLACED = frozenset({"starting", "running", "ending"})
_TERMINAL = frozenset({"ended", "failed", "canceled"})


class _Exchange:
    """One buffered request through an ASGI app, as the wrapper makes or forwards it."""

    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


async def _through(app: App, scope: Scope, body: bytes) -> _Exchange:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    answer = _Exchange(0, [], b"")

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            answer.status, answer.headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            answer.body += message.get("body", b"")

    await app(scope, receive, send)
    return answer


class PlacedOnlyCap:
    """The per-key cap counts placed sessions only (``PLACED``): a create while the key's other
    live sessions are all still queued is accepted; once one of them is placed, the later ones
    cannot be (the key's cap is held) and fail with ``no_capacity``, as a session the scheduler
    cannot place does. The platform's own per-key cap is raised (``PLACED_ONLY_CAP``'s config)
    so that it accepts the second create; this wrapper refuses the rest and, before it answers
    anything, ends a session the platform placed beside another of the same key and shows it
    failed from then on, so no client ever sees two placed sessions on one key."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.by_key: dict[str, list[str]] = {}
        self.displaced: set[str] = set()
        self.keyed: set[tuple[str, str]] = set()  # (key, Idempotency-Key) of answered creates

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or str(scope["path"]).startswith("/_sim/"):
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await self._enforce(scope)
        auth = _header(scope, b"authorization")
        creates = scope["method"] == "POST" and scope["path"] in _SESSION_CREATES
        # A replay of an idempotent create answers the original response, whatever the cap.
        replay = (auth, _header(scope, b"idempotency-key")) in self.keyed
        if creates and not replay and any(s in PLACED for _, s in await self._live(scope, auth)):
            answer = _refusal()
        else:
            answer = await _through(self.app, scope, body)
            if creates and 200 <= answer.status < 300:
                if _header(scope, b"idempotency-key"):
                    self.keyed.add((auth, _header(scope, b"idempotency-key")))
                created = answer.json()
                session = created.get("session") if "session" in created else created
                known = self.by_key.setdefault(auth, [])
                if session.get("id") not in known:
                    known.append(session["id"])
        if self.displaced:
            self._show_failed(answer)
        headers = [(k, v) for k, v in answer.headers if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body})

    async def _live(self, scope: Scope, auth: str) -> list[tuple[str, str]]:
        """The key's sessions that have not ended, with their status, oldest first."""
        live = []
        for session_id in list(self.by_key.get(auth, [])):
            read = _request(scope, "GET", f"/v1/sessions/{session_id}", auth)
            status = (await _through(self.app, read, b"")).json().get("status")
            if session_id in self.displaced or status in _TERMINAL:
                self.by_key[auth].remove(session_id)
            else:
                live.append((session_id, str(status)))
        return live

    async def _enforce(self, scope: Scope) -> None:
        for auth in [a for a, ids in self.by_key.items() if len(ids) > 1]:
            placed = [sid for sid, status in await self._live(scope, auth) if status in PLACED]
            for session_id in placed[1:]:
                end = _request(scope, "POST", f"/v1/sessions/{session_id}/end", auth)
                await _through(self.app, end, b"")
                self.displaced.add(session_id)
                self.by_key[auth].remove(session_id)

    def _show_failed(self, answer: _Exchange) -> None:
        body = answer.json()
        changed = False
        for item in objects(body):
            if item.get("object") == "session" and item.get("id") in self.displaced:
                item.update(
                    status="failed",
                    started_at=None,
                    first_frame_at=None,
                    usage={"billable_seconds": 0, "frames": 0},
                    error={"code": "no_capacity", "message": "The key's session cap was held."},
                )
                changed = True
        if changed:
            answer.body = json.dumps(body).encode()


def _request(scope: Scope, method: str, path: str, auth: str) -> Scope:
    """A request of the wrapper's own, on the connection of ``scope``, with key ``auth``."""
    headers = [(b"authorization", auth.encode())]
    return {**scope, "method": method, "path": path, "raw_path": path.encode(),
            "query_string": b"", "headers": headers}  # fmt: skip


def _header(scope: Scope, name: bytes) -> str:
    return next((v.decode() for k, v in scope["headers"] if k.lower() == name), "")


def _refusal() -> _Exchange:
    call = Call({}, b"", {}, lambda: 0.0, {})
    call.refuse(
        429,
        "quota_exceeded",
        "concurrent_sessions",
        "This API key already has 1 active session(s); end one first.",
        None,
    )
    assert call.answer is not None
    call.answer.set_header("Retry-After", "1")  # every 429 carries one (the seed's rule 2)
    return _Exchange(call.answer.status, call.answer.headers, call.answer.body)


def placed_only_cap(app: App, keys: Keys) -> App:
    """The ``wrap`` of ``PLACED_ONLY_CAP``, for ``simulated(wrap=...)`` or ``served(wrap=...)``."""
    return PlacedOnlyCap(app)


PLACED_ONLY_CAP = GapChoice(
    "caps count only placed sessions",
    "§8 rule 1 and the limits table: 1 concurrent session per key; whether a queued session "
    "counts is not shown",
    Edits(config={"limits.concurrent_sessions_per_key": 2}),
)
#: The whole variant with the placed-only cap: serve it with ``wrap=placed_only_cap`` (without
#: the wrapper its per-key cap would be two, which no reading allows).
LEGAL_READINGS_PLACED = combined((*LEGAL_CHOICES, PLACED_ONLY_CAP))
