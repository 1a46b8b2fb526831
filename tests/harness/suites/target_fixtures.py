"""The target fixtures and the clean-up, as a suite sees them (HAR-25).

Not collected here: ``tests/harness/test_example_suite.py`` copies it beside the example suite and
runs it in every mode. ``fresh_org`` is a new organization of the test's own, ``sim_target``
names the run's organization, and what a test created is over once it has ended (unless it asked
to keep it). Its tests read each other's notes (``LEFT``), so they run in file order.
"""

from harness.testing import create_session

BODY = {
    "avatar_id": "av_stock_mock",
    "idle_timeout_seconds": 600,
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "fixtures"},
}
LEFT = []


def test_fresh_org_is_new_and_its_own(api_client, fresh_org, sim_target, sim_admin):
    assert fresh_org.id != sim_target.org_id
    assert sim_admin.describe_key(fresh_org.keys["unrestricted"])["org_id"] == fresh_org.id
    assert sim_admin.describe_key(sim_target.api_key)["org_id"] == sim_target.org_id
    mine = create_session(fresh_org.client, BODY)
    theirs = create_session(api_client, BODY)
    assert mine.status_code == theirs.status_code == 201
    LEFT.extend(
        [
            (fresh_org.keys["unrestricted"], mine.json()["id"]),
            (sim_target.api_key, theirs.json()["id"]),
        ]
    )


def test_what_a_test_created_was_ended_after_it(sim_admin, sim_target):
    if sim_target.kind == "in_process":
        return  # a new simulator per test: the tracker's own test looks there
    for key, session_id in LEFT:
        with sim_admin.client(key) as client:
            status = client.get(f"/v1/sessions/{session_id}").json()["status"]
            assert status in ("ended", "canceled", "failed"), (session_id, status)


def test_a_test_may_keep_them(api_client, created_sessions):
    created_sessions.enabled = False
    LEFT.append(("keep", create_session(api_client, BODY).json()["id"]))


def test_kept_ones_stay(api_client, sim_target):
    kept = [session_id for key, session_id in LEFT if key == "keep"]
    if sim_target.kind == "in_process":
        return  # a new simulator per test: nothing to look at
    assert api_client.get(f"/v1/sessions/{kept[0]}").json()["status"] not in ("ended", "canceled")
    api_client.post(f"/v1/sessions/{kept[0]}/end")  # leave the shared key as it was found
