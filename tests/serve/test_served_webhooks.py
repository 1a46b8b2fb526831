"""Webhooks from a served simulator on a fast clock verify at a real receiver (EV-3, SIM-8).

At ``--time-factor 0.002`` simulated time runs 500 times faster than the wall clock, so a few
wall seconds in, events are dated many minutes ahead of any real clock. The receiver here is a
real one (``harness.testing.WebhookReceiver``): it verifies every request with the
``standardwebhooks`` library at its default five-minute tolerance, refuses the first attempt of
every event (half of all attempts) so each is retried, and deduplicates on ``webhook-id``. Every
attempt must verify, every event must be accepted exactly once, and the payloads must keep their
simulated times.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from harness.testing import HttpAdmin, WebhookReceiver, pass_time, wait_for
from tests.serve.support import served
from tests.world import session_body

BODY: dict[str, Any] = session_body(idle_timeout_seconds=5)
#: Wall seconds of traffic: at factor 0.002 the simulated clock is then 1000 s ahead of it.
TRAFFIC_SECONDS = 2.0
#: The tolerance ``standardwebhooks`` applies (five minutes), in seconds.
TOLERANCE_SECONDS = 300


def _instant(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.req("EV-3", "SIM-8", "HAR-7")
def test_every_delivery_verifies_at_a_fast_time_factor(tmp_path: Path) -> None:
    with (
        served(tmp_path, "--time-factor", "0.002") as server,
        WebhookReceiver(fail=lambda webhook_id, attempt: attempt == 1) as hooks,
        HttpAdmin(server.base_url, server.keys["admin_token"]) as admin,
    ):
        org = server.org("enterprise")
        hooks.secret = admin.register_webhook(org["id"], hooks.url)["secret"]
        sessions = []
        with admin.client(org["keys"]["unrestricted"]) as client:
            started = time.monotonic()
            while time.monotonic() - started < TRAFFIC_SECONDS or len(sessions) < 5:
                created = client.post("/v1/sessions", json=BODY)
                if created.status_code == 429:  # the per-key create rate: wait as told
                    pass_time(client, float(created.headers["Retry-After"]))
                    continue
                assert created.is_success, created.text
                sessions.append(created.json()["id"])
                wait_for(client, sessions[-1], "ended", within=600)

        def settled() -> list[dict[str, Any]]:
            deliveries = admin.webhook_deliveries(org["id"])
            done = all(d["status"] == "succeeded" for d in deliveries)
            return deliveries if done and len(hooks.events) == len(deliveries) else []

        deadline = time.monotonic() + 30
        while not (deliveries := settled()):
            refused = [a.error for a in hooks.attempts if not a.verified]
            assert time.monotonic() < deadline, (
                f"the deliveries did not all succeed in time; {len(refused)} attempts failed "
                f"verification ({refused[:1]})"
            )
            time.sleep(0.05)

    attempts = hooks.attempts
    failed = [a for a in attempts if not a.verified]
    assert not failed, f"{len(failed)} of {len(attempts)} attempts failed: {failed[0].error}"
    # Every event accepted exactly once: a 2xx is never answered twice for one webhook-id.
    assert set(hooks.acknowledged) == {d["event_id"] for d in deliveries}
    assert max(hooks.acknowledged.values()) == 1
    refused = [a for a in attempts if a.answered == 500]
    assert len(refused) == len(attempts) - len(refused) == len(deliveries) >= 5 * 5
    # The payloads keep simulated time, which ran far ahead of the wall clock the signatures use.
    latest = max(hooks.events, key=lambda event: _instant(event["created_at"]))
    signed = max(int(a.webhook_timestamp) for a in attempts if a.webhook_id == latest["id"])
    assert _instant(latest["created_at"]) - signed > TOLERANCE_SECONDS
