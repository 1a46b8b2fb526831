"""Derived heartbeats (GAP-SES-3) and the audio/idle/buffer model (GAP-SES-5), in isolation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.sessions.audio import AudioTrack
from sim.sessions.heartbeat import HeartbeatTrack, billable_seconds

times = st.floats(min_value=0, max_value=5_000, allow_nan=False)


@pytest.mark.req("RES-SESS-5", "SIM-4")
def test_billable_seconds_round_up() -> None:
    assert billable_seconds(2.5, 2.5) == 0
    assert billable_seconds(2.5, 2.6) == 1
    assert billable_seconds(2.5, 12.5) == 10
    assert billable_seconds(0.1, 0.1 + 3.0) == 3  # float noise does not add a second


@pytest.mark.req("RES-SESS-5", "SIM-4")
@settings(max_examples=150, deadline=None)
@given(first=times, elapsed=times, interval=st.sampled_from([1.0, 2.5, 10.0, 30.0]))
def test_usage_lags_less_than_one_interval(first: float, elapsed: float, interval: float) -> None:
    track = HeartbeatTrack(first, interval)
    now = first + elapsed
    last = track.last_received(now)
    assert first <= last <= now + 1e-6
    assert now - last < interval + 1e-6
    assert track.usage_seconds(now) <= billable_seconds(first, now)


@pytest.mark.req("RES-SESS-5", "SIM-4")
@settings(max_examples=200, deadline=None)
@given(
    first=times,
    elapsed=st.one_of(times, st.floats(-1.0, 1.0)),
    interval=st.sampled_from([1.0, 2.5, 10.0, 30.0, 0.3]),
)
def test_usage_without_losses_is_that_of_the_last_received_heartbeat(
    first: float, elapsed: float, interval: float
) -> None:
    """``usage_seconds`` computes the loss-free case in place; ``last_received`` is the rule."""
    track = HeartbeatTrack(first, interval)
    now = first + elapsed
    assert track.usage_seconds(now) == billable_seconds(first, track.last_received(now))


@pytest.mark.req("SIM-4", "SIM-9")
@settings(max_examples=150, deadline=None)
@given(start=st.floats(0, 200), duration=st.floats(0.1, 100), probe=st.floats(0, 400))
def test_lost_heartbeats_are_never_received(start: float, duration: float, probe: float) -> None:
    track = HeartbeatTrack(0.0, 10.0)
    deadline = track.lose(start, duration, loss_limit=30.0)
    last = track.last_received(probe)
    assert not (start <= last < start + duration) or last == 0.0
    if deadline is not None:  # declared lost exactly limit seconds after the last heartbeat
        assert deadline == pytest.approx(track.last_received(start) + 30.0)
        assert deadline < start + duration + 10.0


@pytest.mark.req("SIM-4")
def test_overlapping_losses_merge() -> None:
    track = HeartbeatTrack(0.0, 10.0)
    assert track.lose(15, 10, 30.0) is None  # 20 lost, 30 received
    assert track.lose(24, 20, 30.0) == pytest.approx(40.0)  # merged 15..44: 20..40 lost
    assert track.last_received(39) == 10.0
    assert track.losing(30) and not track.losing(50)


@pytest.mark.req("SES-ST-7", "RES-TRN-2")
def test_track_mode_resets_on_silence_data_stream_does_not() -> None:
    track = AudioTrack.start(0.0, resets_on_silence=True)
    stream = AudioTrack.start(0.0, resets_on_silence=False)
    for audio in (track, stream):
        audio.receive(0.0, "speech", 5)
        audio.receive(0.0, "silence", 20)  # queued after the speech on the timeline
    assert track.idle_deadline(30) == 25 + 30
    assert stream.idle_deadline(30) == 5 + 30
    assert track.cursor == stream.cursor == 25


@pytest.mark.req("RES-TRN-2")
def test_output_buffer_plays_out_and_clears() -> None:
    audio = AudioTrack.start(10.0, resets_on_silence=True)
    audio.receive(10.0, "speech", 8)
    audio.receive(10.0, "silence", 2)  # silence adds no output
    assert audio.buffered(10.0) == 8 and audio.buffered(14.0) == 4 and audio.buffered(30) == 0
    assert audio.clear(12.0) == pytest.approx(6.0)
    assert audio.buffered(12.0) == 0
    assert audio.cursor == 12.0 and audio.idle_deadline(5) == 17.0
    with pytest.raises(ValueError, match="negative"):
        audio.receive(12.0, "speech", -1)
