"""HAR-9: ``capture`` records every session of a deployment exactly once, across pages and
rate-limit refusals, waiting each refusal out as its headers say, with its organization's label.

In process (no wall time: the waits are recorded, not slept) a facade that refuses every other
request in each form a deployment may use; then, once in real time, ``avatar-sim capture``
against a served simulator on a fast clock whose reads are rate-limited, while sessions keep
being created, checked against the platform's own session store.
"""

from __future__ import annotations

import re
import threading
import time
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from harness import cli
from harness.runner.columns import to_frame
from harness.scenarios.lifting import Limits, lift
from harness.target import Credentials, Target
from harness.traffic.capture import CaptureError, capture, key_label
from harness.traffic.recording import read_recording
from sim.asgi.app import create_app
from sim.config import SimConfig
from sim.platform import Platform
from tests.conformance.edits import Edits
from tests.conformance.served import served

pytestmark = pytest.mark.req("HAR-9")

TRANSPORT = {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"}
DATE = pd.Timestamp("2030-01-01T00:00:00Z")
#: Each refusal's header and the wait (target seconds) it names; the last names none.
REFUSALS: list[tuple[dict[str, str], float]] = [
    ({"retry-after": "2"}, 2.0),
    ({"x-ratelimit-reset": str(int(DATE.timestamp()) + 7)}, 7.0),
    ({"retry-after": format_datetime((DATE + pd.Timedelta(seconds=11)).to_pydatetime(), True)}, 11),
    ({"x-ratelimit-reset": "3"}, 3.0),
    ({}, 1.0),  # no hint: the first step of the backoff
]


def _platform(sessions: int) -> tuple[Platform, dict[str, str], list[str]]:
    config = lift(SimConfig(), Limits(concurrency="off", rate="off"), 10**7)
    platform = Platform.create(config)
    keys = dict(platform.admin.create_organization("Acme", "pro")["keys"])
    other = dict(platform.admin.create_organization("Globex", "starter")["keys"])
    made = []
    for index in range(sessions):
        key = keys if index % 5 else other  # the other organization's are not ours to see
        caller = platform.authenticate(f"Bearer {key['unrestricted']}")
        body = {"avatar_id": "av_stock_mock", "quality": "mock", "transport": TRANSPORT}
        created = platform.call("createSession", caller, {"body": body}).body
        assert isinstance(created, dict)
        if key is keys:
            made.append(str(created["id"]))
        platform.advance(13)
    platform.advance(600)
    return platform, keys, made


class _Refusing:
    """The facade, refusing every second request with the next of ``REFUSALS``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests = 0
        self.refused = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.requests += 1
        if scope["type"] != "http" or self.requests % 2:
            await self.app(scope, receive, send)
            return
        headers, _wait = REFUSALS[self.refused % len(REFUSALS)]
        self.refused += 1
        date = format_datetime(DATE.to_pydatetime(), usegmt=True)
        raw = [(b"content-type", b"application/json"), (b"date", date.encode())]
        raw += [(k.encode(), v.encode()) for k, v in headers.items()]
        await send({"type": "http.response.start", "status": 429, "headers": raw})
        await send({"type": "http.response.body", "body": b'{"error": {"type": "rate_limit"}}'})


def test_every_session_once_across_pages_and_refusals_of_every_form() -> None:
    platform, keys, made = _platform(60)
    app = _Refusing(create_app(platform))
    target = Target.in_process(platform, Credentials(api=keys["unrestricted"]), app=app)
    slept: list[float] = []
    recording, report = capture(target, page_size=7, time_factor=0.5, sleep=slept.append)
    frame = recording.frame
    assert sorted(frame["session_id"]) == sorted(made) and len(made) == 48
    assert report.pages == 7 and report.repeated == 0 and not report.early_stop
    assert report.refusals == app.refused >= len(REFUSALS)
    expected = [REFUSALS[i % len(REFUSALS)][1] * 0.5 for i in range(app.refused)]
    assert slept == pytest.approx(expected)  # each wait as its refusal said, scaled
    assert set(frame["organization"]) == {key_label(keys["unrestricted"])}
    assert recording.info["plan"] == "pro" and set(frame["plan"]) == {"pro"}
    assert set(frame["status"].astype(str)) <= {"ended", "failed", "canceled"}  # all over


def test_rows_carry_what_the_api_shows_and_since_until_bound_them(tmp_path: Path) -> None:
    platform, keys, _made = _platform(40)
    target = Target.in_process(platform, Credentials(api=keys["unrestricted"]))
    every, _ = capture(target, organization="Acme", page_size=100)
    truth = to_frame(platform.sessions.store.export(platform.clock.now), platform.clock)
    truth = truth.set_index("session_id").loc[every.frame["session_id"]]
    frame = every.frame
    for column in ("created_at", "started_at", "first_frame_at"):
        gap = frame[column].reset_index(drop=True) - truth[column].reset_index(drop=True)
        assert frame[column].isna().tolist() == truth[column].isna().tolist()
        assert gap.abs().max() < pd.Timedelta(milliseconds=1)  # the API writes milliseconds
    assert frame["status"].astype(str).tolist() == truth["status"].astype(str).tolist()
    assert frame["billable_seconds"].tolist() == truth["billable_seconds"].tolist()
    assert frame["quality"].astype(str).tolist() == truth["quality"].astype(str).tolist()
    assert frame["surface"].astype(str).tolist() == truth["billing_surface"].astype(str).tolist()
    assert set(frame["organization"]) == {"Acme"}
    ran = truth["first_frame_at"].notna().to_numpy()
    assert frame["length_seconds"][ran].tolist() == frame["billable_seconds"][ran].tolist()
    # A window: newest first, the walk stops at the first page older than --since.
    created = frame["created_at"].sort_values().tolist()
    since, until = created[10].to_pydatetime(), created[20].to_pydatetime()
    window, report = capture(target, since=since, until=until, page_size=5)
    assert (
        window.frame["session_id"].tolist()
        == frame.sort_values("created_at")["session_id"].tolist()[10:21]
    )
    assert report.early_stop and report.pages < 8
    assert window.start == pd.Timestamp(since) and window.frame["offset_seconds"].iloc[0] == 0
    # Written and read back: the same recording, its start kept.
    again = read_recording(window.write(tmp_path / "window.parquet"))
    pd.testing.assert_frame_equal(again.frame, window.frame, check_categorical=False)
    assert again.start == window.start and again.info["organization"] == window.info["organization"]


def test_a_refused_key_and_a_failing_target_end_the_capture() -> None:
    platform, keys, _made = _platform(1)
    refused = Target.in_process(platform, Credentials(api=keys["revoked"]))
    with pytest.raises(CaptureError, match="the key was refused"):
        capture(refused)

    async def failing(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 502, "headers": []})
        await send({"type": "http.response.body", "body": b"bad gateway"})

    slept: list[float] = []
    broken = Target.asgi(failing, Credentials(api="sk_test"))
    with pytest.raises(CaptureError, match="answered 502 5 times"):
        capture(broken, sleep=slept.append)
    assert slept == [1.0, 2.0, 4.0, 8.0]


#: The served simulator: a clock 100 times the wall's, page reads limited to 3 a window.
FACTOR = 0.01
READS = 3


def test_capture_against_a_served_simulator_while_sessions_keep_coming(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Real time, about 5 s: ``avatar-sim capture`` as a user runs it, against ``serve``'s own
    pieces on a real port; every session created before the walk began is in the file exactly
    once, none twice, though the pages were refused and new sessions came in meanwhile."""
    edits = Edits(
        config={
            "limits.rate.reads_per_window": READS,
            "scheduler.max_queue_length": 10**6,
            "limits.rate.session_creates_per_window": None,
            "limits.concurrent_sessions_per_key": 10**6,
            "limits.concurrent_sessions_per_org_default": 10**6,
            "limits.concurrent_sessions_per_org_ceiling": 10**6,
            "billing.plans.enterprise.concurrent_sessions": 10**6,
        }
    )
    body = {"avatar_id": "av_stock_mock", "quality": "mock", "transport": TRANSPORT}
    with served(edits, time_factor=FACTOR) as server:
        key = server.keys["unrestricted"]

        def create_many(platform: Platform) -> None:
            caller = platform.authenticate(f"Bearer {key}")
            for _ in range(150):
                platform.call("createSession", caller, {"body": body})

        server.on_loop(create_many)
        stop = threading.Event()

        def keep_creating() -> None:
            with server.client() as client:
                while not stop.is_set():
                    client.post("/v1/sessions", json=body)
                    time.sleep(0.02)

        creator = threading.Thread(target=keep_creating, daemon=True)
        creator.start()
        out = tmp_path / "captured.parquet"
        try:
            code = cli.main(
                [
                    "capture", "--base-url", server.base_url, "--api-key", key,
                    "--out", str(out), "--page-size", "20", "--time-factor", str(FACTOR),
                    "--org", "Enterprise",
                ]
            )  # fmt: skip
        finally:
            stop.set()
            creator.join(5)
        truth = server.on_loop(lambda p: to_frame(p.sessions.store.export(p.clock.now), p.clock))
    assert code == 0
    said = capsys.readouterr().out
    assert re.search(r"in \d+ pages, [1-9]\d* refusals waited out", said), said
    recording = read_recording(out)
    captured = recording.frame["session_id"]
    assert captured.is_unique
    ours = truth[truth["org_id"] == server.organizations[0]["id"]]
    # Everything created up to the newest captured session (where the walk began) is there.
    horizon = recording.frame["created_at"].max()  # in the API's milliseconds
    expected = set(ours.loc[ours["created_at"].dt.floor("ms") <= horizon, "session_id"])
    assert set(captured) == expected and len(expected) >= 150
    assert len(ours) > len(expected), "sessions kept coming during the walk"
    assert set(recording.frame["organization"]) == {"Enterprise"}
    assert recording.info["plan"] == "enterprise"
