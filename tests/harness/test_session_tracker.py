"""The session tracker behind ``created_sessions`` ends what a test created (HAR-25).

The plugin's ``--avatar-sim-serve`` per xdist worker, ``sim_target`` and ``fresh_org`` are run as a
user runs them in ``test_example_suite.py`` (``suites/target_fixtures.py``).
"""

from __future__ import annotations

import pytest


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
