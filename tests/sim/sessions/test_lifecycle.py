"""The declared transition table itself (GAP-SES-1)."""

from __future__ import annotations

import pytest

from sim.errors import InternalError
from sim.lifecycle import (
    ACTIVE,
    NOT_STARTED,
    ROWS,
    ROWS_FROM,
    STATUSES,
    TERMINAL,
    TRANSITIONS,
    TRIGGERS,
    allows,
    next_status,
)


@pytest.mark.req("SES-ST-8")
def test_no_row_leaves_a_terminal_status() -> None:
    assert {"ended", "failed", "canceled"} == TERMINAL
    for (source, _trigger), _target in TRANSITIONS.items():
        assert source not in TERMINAL
    for status in TERMINAL:
        for trigger in TRIGGERS:
            with pytest.raises(InternalError):
                next_status(status, trigger)


@pytest.mark.req("SES-ST-1", "SES-ST-2", "SES-ST-3", "SES-ST-4", "SES-ST-6", "SES-ST-7")
def test_the_seed_rows_are_in_the_table() -> None:
    # (none) --create--> ... --admit--> queued: the API answers queued.
    assert next_status(next_status(None, "create"), "admit") == "queued"
    assert next_status("queued", "startup_timeout") == "failed"
    assert next_status("running", "end") == "ending"
    assert next_status("ending", "drain_complete") == "ended"
    for status in NOT_STARTED - {"created"}:
        assert next_status(status, "end") == "canceled"
    assert next_status("running", "max_duration") == "ended"
    assert next_status("running", "idle_timeout") == "ended"


@pytest.mark.req("SES-ST-9")
def test_the_gap_rows_and_nothing_else() -> None:
    assert next_status("queued", "place") == "starting"
    assert next_status("starting", "first_frame") == "running"
    assert next_status("starting", "worker_crash") == "failed"
    assert next_status("running", "worker_crash") == "failed"
    assert next_status("running", "heartbeat_lost") == "failed"
    assert next_status("ending", "worker_crash") == "ended"
    # Everything the table names is a known status and trigger; nothing else is allowed.
    for (source, trigger), target in TRANSITIONS.items():
        assert source is None or source in STATUSES
        assert trigger in TRIGGERS
        assert target in STATUSES
    assert not allows("running", "first_frame")
    assert not allows("queued", "first_frame")
    with pytest.raises(InternalError):
        next_status("queued", "drain_complete")
    assert frozenset(STATUSES) - TERMINAL == ACTIVE


@pytest.mark.req("SES-ST-1")
def test_rows_by_status_are_the_table() -> None:
    """``ROWS_FROM`` (what the service reads on every move) gives, for every status (``None``
    included) and every trigger, the very row ``ROWS`` gives, or none where the table has none."""
    for source in (None, *STATUSES):
        for trigger in TRIGGERS:
            assert ROWS_FROM[source].get(trigger) is ROWS.get((source, trigger))
    assert sum(len(rows) for rows in ROWS_FROM.values()) == len(ROWS)
