"""``--avatar-sim-serve``, ``sim_target``, ``fresh_org`` and ``created_sessions`` in a project of
their own (HAR-27, HAR-25).

Each pytest process gets a served simulator of its own: with ``-n 2`` two xdist workers report
two base URLs, and one worker's clock jump is not seen by the other. ``sim_target`` names the
target in each mode; ``fresh_org`` is a new organization in process and by URL; the sessions a
test creates are over once it has ended.
"""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

WHO = """
import json, os, time
from pathlib import Path

def _write(sim_target, sim_admin, name):
    before = sim_admin.now()
    if name == "a":
        sim_admin.advance(3600)
    time.sleep(1.5)  # both workers are up at once
    Path(f"{name}.json").write_text(json.dumps({
        "worker": os.environ.get("PYTEST_XDIST_WORKER"),
        "url": sim_target.base_url, "served": sim_target.served, "kind": sim_target.kind,
        "org": sim_target.org_id, "token": bool(sim_target.admin_token),
        "moved": sim_admin.now() - before,
    }))

def test_a(sim_target, sim_admin):
    _write(sim_target, sim_admin, "a")

def test_b(sim_target, sim_admin):
    _write(sim_target, sim_admin, "b")
"""

FIXTURES = """
from harness.testing import create_session, wait_for

BODY = {"avatar_id": "av_stock_mock", "idle_timeout_seconds": 600,
        "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"}}
LEFT = []

def test_fresh_org_is_new_and_its_own(api_client, fresh_org, sim_target, sim_admin):
    assert fresh_org.id != sim_target.org_id
    assert sim_admin.describe_key(fresh_org.keys["unrestricted"])["org_id"] == fresh_org.id
    assert sim_admin.describe_key(sim_target.api_key)["org_id"] == sim_target.org_id
    mine = create_session(fresh_org.client, BODY)
    theirs = create_session(api_client, BODY)
    assert mine.status_code == theirs.status_code == 201
    LEFT.extend([(fresh_org.keys["unrestricted"], mine.json()["id"]),
                 (sim_target.api_key, theirs.json()["id"])])

def test_what_a_test_created_was_ended_after_it(sim_admin, sim_target):
    if sim_target.kind == "in_process":
        return  # a new simulator per test: test_the_tracker_ends_what_was_created looks there
    for key, session_id in LEFT:
        with sim_admin.client(key) as client:
            status = client.get(f"/v1/sessions/{session_id}").json()["status"]
            assert status in ("ended", "canceled", "failed"), (session_id, status)

def test_a_test_may_keep_them(api_client, created_sessions):
    created_sessions.enabled = False
    kept = create_session(api_client, BODY).json()
    LEFT.append(("keep", kept["id"]))

def test_kept_ones_stay(api_client, sim_target):
    kept = [i for k, i in LEFT if k == "keep"]
    if sim_target.kind == "in_process":
        return  # a new simulator per test: nothing to look at
    assert api_client.get(f"/v1/sessions/{kept[0]}").json()["status"] not in ("ended", "canceled")
"""


@pytest.mark.req("HAR-27")
def test_each_xdist_worker_has_a_served_simulator_and_a_clock_of_its_own(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_who=WHO)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--avatar-sim-serve"
    )
    result.assert_outcomes(passed=2)
    a, b = (json.loads((pytester.path / f"{n}.json").read_text()) for n in "ab")
    assert a["worker"] != b["worker"] and a["url"] != b["url"]
    assert a["kind"] == b["kind"] == "url" and a["served"] and b["served"]
    assert a["org"] and a["token"]
    assert a["moved"] >= 3600 and b["moved"] < 3600  # a's jump is not b's


@pytest.mark.req("HAR-25")
@pytest.mark.parametrize("mode", [[], ["--avatar-sim-serve"]], ids=["in_process", "by_url"])
def test_the_target_fixtures_and_the_clean_up(pytester: pytest.Pytester, mode: list[str]) -> None:
    pytester.makepyfile(test_fixtures=FIXTURES)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *mode)
    result.assert_outcomes(passed=4)


@pytest.mark.req("HAR-25")
def test_the_tracker_ends_what_was_created_in_process() -> None:
    from harness.testing import InProcessAdmin, SessionTracker, create_session
    from sim.platform import Platform

    admin = InProcessAdmin(Platform.create())
    org = admin.create_organization()
    tracker = SessionTracker()
    body = {
        "avatar_id": "av_stock_mock",
        "idle_timeout_seconds": 600,
        "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r"},
    }
    with tracker.watch(admin.client(org["keys"]["unrestricted"])) as client:
        made = create_session(client, body).json()
        refused = create_session(client, body)  # the key's cap: not a session, not tracked
        assert refused.status_code == 429 and tracker.ids == [made["id"]]
        tracker.end_all()
        assert client.get(f"/v1/sessions/{made['id']}").json()["status"] == "canceled"
        assert tracker.ids == []
