"""HAR-5: "other legal readings", the second deployment that decides the seed's open points
otherwise (``tests/conformance/legal_readings.py``), has at least fifteen choices, each naming the
seed section that leaves it open, and each is in effect: its witness holds against the variant
and fails against the plain facade, so the variant cannot pass a conformance run by doing
nothing. (The run against the whole variant is the harness's own test.)
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from PIL import Image

from harness.conformance.inputs import DEFAULT_TRANSPORT
from harness.conformance.target import Exchange
from tests.conformance.edits import Edits
from tests.conformance.gap_variant import GapChoice, combined
from tests.conformance.legal_readings import (
    CREATE_LIMIT,
    FIRST_FRAME_DELAY_SECONDS,
    LEGAL_CHOICES,
    LEGAL_READINGS,
    LEGAL_READINGS_PLACED,
    LEGAL_READINGS_SLIDING,
    PLACED,
    PLACED_ONLY_CAP,
    SLIDING_WINDOW,
    WINDOW_SECONDS,
    placed_only_cap,
    portrait_png,
)
from tests.conformance.support import Simulated, simulated

pytestmark = pytest.mark.req("HAR-5", "HAR-2")

SESSION = {"avatar_id": "av_stock_mock", "transport": dict(DEFAULT_TRANSPORT), "quality": "mock"}
PLAIN = combined(())


def _create(sim: Simulated, body: dict[str, Any] | None = None, role: str = "api") -> Exchange:
    return sim.target.request("POST", "/v1/sessions", json_body=body or SESSION, role=role)


def _end(sim: Simulated, exchange: Exchange) -> None:
    sim.target.request("POST", f"/v1/sessions/{exchange.json()['id']}/end")


def _session(sim: Simulated, session_id: str) -> dict[str, Any]:
    answer: dict[str, Any] = sim.target.request("GET", f"/v1/sessions/{session_id}").json()
    return answer


def _upload(sim: Simulated, content: bytes, name: str, kind: str = "image/png") -> Exchange:
    target = sim.target
    request = target.client.build_request(
        "POST",
        "/v1/avatars",
        headers=target.authorization("api"),
        files={"image": ("portrait", content, kind)},
        data={"name": name},
    )
    return target.send(request)


def _to_next_window(sim: Simulated, into: float) -> None:
    """Move the clock to ``into`` seconds after the start of the next clock minute."""
    now = sim.platform.clock.now
    sim.platform.advance((math.floor(now / WINDOW_SECONDS) + 1) * WINDOW_SECONDS + into - now)


def _burst(sim: Simulated, count: int) -> tuple[int, Exchange | None]:
    """Up to ``count`` creates (each ended at once); how many were accepted before a refusal."""
    for accepted in range(count):
        exchange = _create(sim)
        if not 200 <= exchange.status < 300:
            return accepted, exchange
        _end(sim, exchange)
    return count, None


# -- the witnesses ------------------------------------------------------------------------------


def sessions_forbidden(sim: Simulated) -> None:
    session_id = _create(sim).json()["id"]
    theirs = sim.target.request("GET", f"/v1/sessions/{session_id}", role="other_org")
    assert theirs.status == 403 and theirs.json()["error"]["type"] == "permission"
    missing = sim.target.request("GET", "/v1/sessions/sess_01AAAAAAAAAAAAAAAAAAAAAAAA")
    assert missing.status == 404


def avatars_forbidden(sim: Simulated) -> None:
    avatar_id = _upload(sim, portrait_png(), "mine").json()["id"]
    theirs = sim.target.request("GET", f"/v1/avatars/{avatar_id}", role="other_org")
    assert theirs.status == 403 and theirs.json()["error"]["type"] == "permission"
    assert sim.target.request("GET", "/v1/avatars/av_01AAAAAAAAAAAAAAAAAAAAAAAA").status == 404


def pages_clamped(sim: Simulated) -> None:
    run_id = sim.target.request("GET", "/v1/runs").json()["data"][0]["id"]
    for path, size in (("/v1/sessions", 0), ("/v1/runs", 101), (f"/v1/runs/{run_id}/events", 501)):
        assert sim.target.request("GET", path, params={"limit": size}).status == 200, path
    assert sim.target.request("GET", "/v1/assets", params={"limit": "many"}).status in (400, 422)


def image_in_fitting(sim: Simulated) -> None:
    gif = io.BytesIO()
    Image.new("RGB", (128, 128), (10, 200, 10)).save(gif, format="GIF")
    uploaded = _upload(sim, gif.getvalue(), "animated", "image/gif")
    assert 200 <= uploaded.status < 300 and uploaded.json()["status"] == "processing"
    avatar_id = uploaded.json()["id"]
    sim.platform.advance(700)  # longer than the longest fitting
    avatar = sim.target.request("GET", f"/v1/avatars/{avatar_id}").json()
    assert avatar["status"] == "failed" and "GIF" in avatar["failure_reason"]
    listed = sim.target.request("GET", "/v1/avatars", params={"limit": 100}).json()["data"]
    assert next(a for a in listed if a["id"] == avatar_id)["status"] == "failed"
    refused = _create(sim, {**SESSION, "avatar_id": avatar_id})
    assert refused.status == 409
    fine = _upload(sim, portrait_png(), "fine").json()["id"]  # a good image is not marked
    sim.platform.advance(700)
    assert sim.target.request("GET", f"/v1/avatars/{fine}").json()["status"] == "ready"


def parameter_422_invalid_request(sim: Simulated) -> None:
    bad_parameter = sim.target.request("GET", "/v1/sessions", params={"colour": "blue"})
    assert bad_parameter.status == 422
    assert bad_parameter.json()["error"]["type"] == "invalid_request"
    bad_body = _create(sim, {**SESSION, "idle_timeout_seconds": 0})
    assert bad_body.status == 422 and bad_body.json()["error"]["type"] == "unprocessable"


def rate_headers_only_on_refusals(sim: Simulated) -> None:
    created = _create(sim)
    assert 200 <= created.status < 300
    assert not {h for h in created.headers if h.startswith("x-ratelimit-")}
    run = sim.target.request(
        "POST", "/v1/run/sim/echo-text", json_body={"input": {"prompt": "hi"}}
    )  # fmt: skip
    assert 200 <= run.status < 300 and "x-ratelimit-limit" not in run.headers


def retry_after_a_window(sim: Simulated) -> None:
    _to_next_window(sim, 1)
    _, refusal = _burst(sim, 3 * CREATE_LIMIT)
    assert refusal is not None and refusal.status == 429
    now = parsedate_to_datetime(refusal.headers["date"])
    retry = parsedate_to_datetime(refusal.headers["retry-after"])
    assert abs((retry - now).total_seconds() - WINDOW_SECONDS) <= 1


def end_drains_starting(sim: Simulated) -> None:
    session_id = _create(sim).json()["id"]
    for _ in range(30):
        sim.platform.advance(0.5)
        if _session(sim, session_id)["status"] == "starting":
            break
    ended = sim.target.request("POST", f"/v1/sessions/{session_id}/end").json()
    assert ended["status"] == "ending"
    assert _session(sim, session_id)["status"] == "ended"


def creates_answer_202(sim: Simulated) -> None:
    assert _create(sim).status == 202
    assert _upload(sim, portrait_png(), "portrait").status == 202


def fixed_window(sim: Simulated) -> None:
    _to_next_window(sim, WINDOW_SECONDS - 10)
    accepted, refusal = _burst(sim, 3 * CREATE_LIMIT)
    assert accepted == CREATE_LIMIT and refusal is not None
    assert refusal.status == 429 and refusal.json()["error"]["type"] == "rate_limit"
    sim.platform.advance(11)  # across the window's boundary, 11 s after the burst
    again, _ = _burst(sim, 3 * CREATE_LIMIT)
    assert again == CREATE_LIMIT  # twice the limit within 21 s: a fixed window's boundary


def sliding_window(sim: Simulated) -> None:
    _to_next_window(sim, WINDOW_SECONDS - 10)
    accepted, refusal = _burst(sim, 3 * CREATE_LIMIT)
    assert accepted == CREATE_LIMIT and refusal is not None and refusal.status == 429
    sim.platform.advance(11)
    assert _burst(sim, 1)[0] == 0  # a fixed window would admit ten here
    sim.platform.advance(29)  # half-way into the next window: half the last one still counts
    partly, _ = _burst(sim, 3 * CREATE_LIMIT)
    assert 1 <= partly < CREATE_LIMIT  # a sliding log would admit none, a fixed window ten


def first_frame_later(sim: Simulated) -> None:
    session_id = _create(sim).json()["id"]
    for _ in range(30):
        sim.platform.advance(1)
        seen = _session(sim, session_id)
        if seen["status"] == "running":
            break
    assert seen["status"] == "running" and seen["first_frame_at"] is None
    sim.platform.advance(FIRST_FRAME_DELAY_SECONDS + 1)
    assert _session(sim, session_id)["first_frame_at"] is not None


def avatars_by_name(sim: Simulated) -> None:
    for name in ("zz first", "AA second", "mm third"):
        _upload(sim, portrait_png(), name)
    listed = sim.target.request("GET", "/v1/avatars", params={"limit": 100}).json()["data"]
    names = [a["name"] for a in listed]
    assert names == sorted(names, key=str.casefold) and "zz first" in names
    walked: list[str] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"starting_after": cursor} if cursor else {})}
        page = sim.target.request("GET", "/v1/avatars", params=params).json()
        walked += [a["name"] for a in page["data"]]
        if not page["has_more"]:
            break
        cursor = page["next_cursor"]
    assert walked == names


def unknown_fields_ignored(sim: Simulated) -> None:
    created = _create(sim, {**SESSION, "colour": "blue"})
    assert 200 <= created.status < 300 and "colour" not in created.json()


def metadata_8000_bytes(sim: Simulated) -> None:
    refused = _create(sim, {**SESSION, "metadata": {"note": "x" * 8080}})
    assert refused.status in (400, 422)
    assert 200 <= _create(sim, {**SESSION, "metadata": {"note": "x" * 7900}}).status < 300


def default_pages(sim: Simulated) -> None:
    for _ in range(11):
        _to_next_window(sim, 1)
        _end(sim, _create(sim))
    page = sim.target.request("GET", "/v1/sessions").json()
    assert len(page["data"]) == 10 and page["has_more"]
    assert sim.platform.config.limits.run_events_page_size_default == 50


def slower_start_and_drain(sim: Simulated) -> None:
    session_id = _create(sim).json()["id"]
    sim.platform.advance(5)
    assert _session(sim, session_id)["status"] == "starting"
    sim.platform.advance(5)
    assert _session(sim, session_id)["status"] == "running"
    sim.target.request("POST", f"/v1/sessions/{session_id}/end")
    sim.platform.advance(3)
    assert _session(sim, session_id)["status"] == "ending"
    sim.platform.advance(2)
    assert _session(sim, session_id)["status"] == "ended"


def http_dates(sim: Simulated) -> None:
    _to_next_window(sim, 1)
    _, refusal = _burst(sim, 3 * CREATE_LIMIT)
    assert refusal is not None and refusal.status == 429
    assert not refusal.headers["retry-after"].isdigit()
    now = parsedate_to_datetime(refusal.headers["date"])
    retry = parsedate_to_datetime(refusal.headers["retry-after"])
    reset = parsedate_to_datetime(refusal.headers["x-ratelimit-reset"])
    assert now < retry and now < reset  # both name a moment to come, as dates
    assert (reset - now).total_seconds() <= WINDOW_SECONDS


WITNESSES: dict[str, Callable[[Simulated], None]] = {
    "another organization's session is forbidden": sessions_forbidden,
    "another organization's avatar is forbidden": avatars_forbidden,
    "page sizes out of range are clamped": pages_clamped,
    "the image is judged in fitting": image_in_fitting,
    "a bad parameter is 422 invalid_request": parameter_422_invalid_request,
    "create limit as a fixed window of 10 accepted creates per clock minute": fixed_window,
    "X-RateLimit headers only on refusals": rate_headers_only_on_refusals,
    "rate-limit refusals say to retry after a whole window": retry_after_a_window,
    "creates answer 202": creates_answer_202,
    "end drains a session placed on a worker": end_drains_starting,
    "first_frame_at two seconds after running": first_frame_later,
    "avatars listed by name": avatars_by_name,
    "unknown body fields ignored": unknown_fields_ignored,
    "metadata limit of 8000 bytes": metadata_8000_bytes,
    "default page of 10, run events 50": default_pages,
    "slower start-up and drain": slower_start_and_drain,
    "reset times and retry delays as HTTP dates": http_dates,
}


def test_there_are_at_least_fifteen_choices_each_naming_the_seed() -> None:
    assert len(LEGAL_CHOICES) >= 15
    assert len({choice.name for choice in LEGAL_CHOICES}) == len(LEGAL_CHOICES)
    for choice in (*LEGAL_CHOICES, SLIDING_WINDOW):
        assert choice.seed.startswith("§"), choice.name
        assert choice.edits.request or choice.edits.response or choice.edits.config


def test_every_choice_has_a_witness() -> None:
    assert set(WITNESSES) == {choice.name for choice in LEGAL_CHOICES}


@pytest.mark.parametrize("choice", LEGAL_CHOICES, ids=[c.name for c in LEGAL_CHOICES])
def test_each_choice_is_in_effect(choice: GapChoice) -> None:
    # Each witness runs against the whole variant (the choices meet in one deployment), and
    # against the plain facade it must fail.
    WITNESSES[choice.name](simulated(edits=LEGAL_READINGS))
    with pytest.raises((AssertionError, KeyError, IndexError, StopIteration, TypeError)):
        WITNESSES[choice.name](simulated(edits=PLAIN))


def _only_limiters_differ(edits: Edits) -> set[Any]:
    return {*edits.request, *edits.response} - {
        *SLIDING_WINDOW.edits.request,
        *SLIDING_WINDOW.edits.response,
    }


def test_the_sliding_window_variant_swaps_only_the_limiter_and_is_in_effect() -> None:
    fixed = next(c for c in LEGAL_CHOICES if c.name.startswith("create limit as a fixed"))
    fixed_edits = {*fixed.edits.request, *fixed.edits.response}
    assert _only_limiters_differ(LEGAL_READINGS_SLIDING) == (
        {*LEGAL_READINGS.request, *LEGAL_READINGS.response} - fixed_edits
    )
    sliding_window(simulated(edits=LEGAL_READINGS_SLIDING))
    for other in (LEGAL_READINGS, PLAIN):
        with pytest.raises(AssertionError):
            sliding_window(simulated(edits=other))


def placed_only_cap_witness(sim: Simulated) -> None:
    first = _create(sim)
    second = _create(sim)  # the first is still queued: it does not count yet
    assert 200 <= second.status < 300 and second.json()["status"] == "queued"
    ids = [first.json()["id"], second.json()["id"]]
    for _ in range(20):
        sim.platform.advance(1)
        statuses = [_session(sim, i)["status"] for i in ids]
        listed = [s["status"] for s in sim.target.request("GET", "/v1/sessions").json()["data"]]
        assert sum(s in PLACED for s in statuses) <= 1 and sum(s in PLACED for s in listed) <= 1
    assert statuses[0] == "running"
    shown = _session(sim, ids[1])
    assert shown["status"] == "failed" and shown["error"]["code"] == "no_capacity"
    refused = _create(sim)  # now one is placed: the cap is held
    assert refused.status == 429 and refused.json()["error"]["code"] == "concurrent_sessions"


def test_the_placed_only_cap_is_in_effect_only_with_its_wrapper() -> None:
    placed_only_cap_witness(simulated(edits=LEGAL_READINGS_PLACED, wrap=placed_only_cap))
    for edits in (LEGAL_READINGS, PLAIN):
        with pytest.raises(AssertionError):
            placed_only_cap_witness(simulated(edits=edits))
    assert PLACED_ONLY_CAP.seed.startswith("§")
