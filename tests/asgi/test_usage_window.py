"""Usage windows at the edges of the calendar answer ISO-8601 timestamps (CONV-2, EP-USAGE-1).

The window may start in year 1 (``0001-01-01T00:00:00Z`` is a valid ISO-8601 instant): the answer
echoes it with four-digit years, never ``1-01-01T…`` (GAP-USAGE-4).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from httpx import Client

from sim.clock import format_timestamp
from tests.asgi.support import Org

ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


@pytest.mark.req("CONV-2", "EP-USAGE-1")
@pytest.mark.parametrize(
    ("start", "end"),
    [
        ("0001-01-01T00:00:00Z", "0001-01-02T00:00:00Z"),
        ("0999-12-30T00:00:00Z", "0999-12-31T23:59:59Z"),
        ("9999-12-30T00:00:00Z", "9999-12-31T23:59:59Z"),
    ],
)
def test_usage_windows_at_the_calendar_edges_answer_four_digit_years(
    client: Client, org: Org, start: str, end: str
) -> None:
    for timezone in ("UTC", "America/Los_Angeles", "Asia/Tokyo"):
        response = client.get(
            "/v1/usage",
            params={"period_start": start, "period_end": end, "timezone": timezone},
            headers=org.auth(),
        )
        assert response.status_code == 200, response.text
        body = response.json()
        for field in ("period_start", "period_end"):
            assert ISO.match(body[field]), body[field]
        assert body["period_start"] == start.replace("Z", ".000Z")
        assert body["period_end"] == end.replace("Z", ".000Z")


@pytest.mark.req("CONV-2")
@pytest.mark.parametrize("year", [1, 9, 99, 999, 1000, 2026, 9999])
def test_timestamps_have_four_digit_years_and_parse_back(year: int) -> None:
    moment = datetime(year, 2, 3, 4, 5, 6, 789_000, tzinfo=UTC)
    text = format_timestamp(moment)
    assert ISO.match(text), text
    assert datetime.fromisoformat(text) == moment
