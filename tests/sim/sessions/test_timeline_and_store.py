"""Talk-spurt patterns as one call, the session store and the lean session core.

- A client's whole talk pattern reaches the session in one call; what the worker sees follows
  the pattern's stationary law (PERF-1, GAP-SES-5 via RES-TRN-2 and SES-ST-7).
- Finished sessions live in columns and read back exactly as they were (PERF-2, PERF-3).
- The transition table's rows carry each session's outcome (SES-ST-2, SES-ST-6, SES-ST-7).
- Pool counts are kept as the pool changes (PERF-4, SIM-3).
"""

from __future__ import annotations

import math
import random
import statistics
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sim.config import SchedulerConfig, SimConfig
from sim.distributions import Constant, Exponential, LogNormal, Uniform
from sim.errors import Unprocessable
from sim.lifecycle import FAILURE_MESSAGES, SESSION_TRANSITIONS, TERMINAL
from sim.sessions.audio import AudioTrack, TalkSpurts, observe

if TYPE_CHECKING:
    from conftest import Kit, World

FIRST_FRAME = 2.5
TALK = TalkSpurts(speech=Exponential(mean=4.0), silence=Exponential(mean=2.0))


def running(world: World, kit: Kit, **overrides: Any) -> tuple[Any, str]:
    caller = world.caller(plan="enterprise")  # sessions of up to an hour
    made = world.service.create(caller, kit.body(**overrides))
    world.advance(FIRST_FRAME)
    assert world.service.retrieve(caller, made["id"])["status"] == "running"
    return caller, made["id"]


# -- talk-spurt patterns ---------------------------------------------------------------------


@pytest.mark.req("PERF-1", "SES-ST-7", "RES-TRN-2")
def test_a_pattern_keeps_a_track_session_alive_until_the_client_stops(
    world_fixed: World, kit: Kit
) -> None:
    world = world_fixed
    caller, session_id = running(world, kit, idle_timeout_seconds=10, max_duration_seconds=3600)
    world.service.play_audio(session_id, TALK, rng=random.Random(1), until=world.now + 1000)
    world.advance(999)  # pauses inside the pattern never reach the idle timer in track mode
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 1000 + 10 - 0.01)
    assert world.service.retrieve(caller, session_id)["status"] == "running"
    world.at(FIRST_FRAME + 1000 + 10)
    ended = world.kernel.events.of_type("session.ended")[0]
    assert ended.data["reason"] == "idle_timeout"
    assert ended.at == pytest.approx(FIRST_FRAME + 1000 + 10)


@pytest.mark.req("PERF-1", "SES-ST-7")
def test_in_data_stream_mode_the_timer_counts_from_the_last_speech(kit: Kit) -> None:
    """When the pattern stops in a pause, the timeout counts from the speech before it."""
    ends: list[float] = []
    for seed in range(40):
        world = kit.world(
            SimConfig(
                seed=seed,
                scheduler=SchedulerConfig(
                    worker_boot=Constant(value=2.0), first_frame_latency=Constant(value=0.5)
                ),
            )
        )
        transport = dict(kit.body()["transport"], audio_source="data_stream")
        _caller, session_id = running(world, kit, transport=transport, idle_timeout_seconds=10)
        stop = world.now + 100
        world.service.play_audio(session_id, TALK, rng=random.Random(seed), until=stop)
        world.advance(200)
        ended = world.kernel.events.of_type("session.ended")[0]
        assert ended.data["reason"] == "idle_timeout"
        assert stop - 10 - 1e-6 <= ended.at - 10 <= stop + 1e-6  # last speech within the pattern
        ends.append(ended.at - 10)
    assert min(ends) < stop - 1e-6 < max(ends) + 1e-6  # some stopped in a pause, some speaking


@pytest.mark.req("PERF-1", "RES-TRN-2")
def test_ending_while_speaking_drains_the_rest_of_the_spurt(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    speech_only = TalkSpurts(speech=Constant(value=6.0), silence=Constant(value=0.0))
    caller, session_id = running(world, kit)
    world.service.play_audio(session_id, speech_only, rng=random.Random(2), until=None)
    world.advance(30)
    world.service.end(caller, session_id)
    drain = world.kernel.events.of_type("session.ending")[0].data["drain_seconds"]
    assert 1.0 <= drain <= 1.0 + 6.0  # drain_base + what remains of a 6 s spurt
    audio = AudioTrack.start(0.0, resets_on_silence=True)
    audio.play(0.0, speech_only, random.Random(2), until=None)
    audio.cut(30.0)
    assert audio.buffered(30.0) == pytest.approx(drain - 1.0)


@pytest.mark.req("PERF-1", "RES-TRN-2")
def test_barge_in_cuts_a_pattern_and_drops_its_spurt(world_fixed: World, kit: Kit) -> None:
    world = world_fixed
    caller, session_id = running(world, kit, idle_timeout_seconds=20)
    always = TalkSpurts(speech=Constant(value=8.0), silence=Constant(value=0.0))
    world.service.play_audio(session_id, always, rng=random.Random(3), until=world.now + 500)
    world.advance(50)
    world.service.clear_buffer(session_id)
    dropped = world.kernel.events.of_type("session.barge_in")[0].data["dropped_seconds"]
    assert 0 < dropped <= 8.0
    world.advance(20)  # the publisher stopped at the barge-in: idle 20 s later
    assert world.service.retrieve(caller, session_id)["status"] == "ended"
    assert world.kernel.events.of_type("session.ended")[0].data["reason"] == "idle_timeout"


@pytest.mark.req("PERF-1")
def test_a_pattern_sent_before_the_first_frame_or_after_the_end_changes_nothing(
    world_fixed: World, kit: Kit
) -> None:
    world = world_fixed
    caller = world.caller()
    made = world.service.create(caller, kit.body(idle_timeout_seconds=5))
    world.service.play_audio(made["id"], TALK, rng=random.Random(1), until=1e6)
    world.advance(FIRST_FRAME + 5)
    assert world.service.retrieve(caller, made["id"])["status"] == "ended"
    world.service.play_audio(made["id"], TALK, rng=random.Random(1), until=1e6)
    with pytest.raises(ValueError, match="mean of 0"):
        TalkSpurts(speech=Constant(value=0.0), silence=Constant(value=0.0))
    with pytest.raises(Unprocessable):
        world.service.rpc(made["id"], "lk.unknown")


PATTERNS = [
    TalkSpurts(speech=Exponential(mean=4.0), silence=Exponential(mean=2.0)),
    TalkSpurts(speech=LogNormal(median=4.0, sigma=0.6, cap=10.0), silence=Uniform(low=1, high=3)),
    TalkSpurts(speech=LogNormal(median=2.0, sigma=0.5), silence=Constant(value=1.5)),
]


@pytest.mark.req("PERF-1", "RES-TRN-2")
@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_observed_phase_follows_the_stationary_law(pattern: TalkSpurts) -> None:
    """n = 40,000 observations per pattern. Renewal theory for an alternating stationary
    process: P(speaking) = E[S] / (E[S] + E[Q]); inside a speech interval the time already
    spoken and the time left both have mean E[S^2] / (2 E[S]). The theory's moments come from
    200,000 direct draws of S; tolerances are 4 standard errors."""
    rng = random.Random(11)
    n = 40_000
    phases = [observe(pattern, rng) for _ in range(n)]
    speaking = [p for p in phases if p.speaking]
    p = pattern.speech.mean / (pattern.speech.mean + pattern.silence.mean)
    assert abs(len(speaking) / n - p) < 4 * math.sqrt(p * (1 - p) / n)
    from sim.rng import sample

    draws = [sample(pattern.speech, rng) for _ in range(200_000)]
    mean_s, mean_s2 = statistics.fmean(draws), statistics.fmean(d * d for d in draws)
    expected = mean_s2 / (2 * mean_s)
    for values in ([x.remaining for x in speaking], [x.elapsed for x in speaking]):
        error = statistics.stdev(values) / math.sqrt(len(values))
        assert abs(statistics.fmean(values) - expected) < 4 * error + 0.01 * expected
        assert all(v >= 0 for v in values)


@pytest.mark.req("PERF-1")
@settings(max_examples=60, deadline=None)
@given(
    until=st.floats(1, 10_000), cut=st.floats(0, 20_000), track=st.booleans(), seed=st.integers()
)
def test_a_pattern_is_observed_once_and_its_answers_agree(
    until: float, cut: float, track: bool, seed: int
) -> None:
    audio = AudioTrack.start(0.0, resets_on_silence=track)
    audio.play(0.0, TALK, random.Random(seed), until=until)
    stop = min(cut, until)
    deadline_before = audio.idle_deadline(30, now=min(cut, until - 1e-9))
    audio.cut(cut)
    assert audio.stream is None and audio.cursor == pytest.approx(stop)
    assert audio.idle_reset_at <= stop + 1e-9
    if track:
        assert audio.idle_reset_at == pytest.approx(stop)
    assert audio.idle_deadline(30) >= min(deadline_before, stop + 30) - 30 - 1e-9
    before = (audio.cursor, audio.idle_reset_at, audio.output_end)
    audio.cut(cut + 5)  # nothing plays any more: a second cut observes nothing
    assert (audio.cursor, audio.idle_reset_at, audio.output_end) == before


# -- the store ---------------------------------------------------------------------------------


@pytest.mark.req("PERF-2", "PERF-3", "SIM-2")
def test_finished_sessions_live_in_columns_and_read_back_as_they_were(
    world: World, kit: Kit
) -> None:
    callers = [world.caller() for _ in range(6)]
    made = [
        world.service.create(
            c, kit.body(metadata={"n": i, "name": "Zoë"}, quality=["lite", "pro"][i % 2])
        )["id"]
        for i, c in enumerate(callers)
    ]
    world.advance(8)
    world.service.end(callers[0], made[0])
    world.service.faults.crash_worker(session_id=made[1])
    world.advance(5)
    for caller, session_id in zip(callers[2:4], made[2:4], strict=True):
        world.service.end(caller, session_id)
    world.advance(10)
    before_archive = {s: world.service.session(s) for s in made}
    rendered = {s: world.service.retrieve(c, s) for c, s in zip(callers, made, strict=True)}
    store = world.service.store
    finished = [s for s in made if world.service.session(s).status in TERMINAL]
    assert len(finished) == 4
    for session_id in finished:
        row = store.row(session_id)
        assert row is not None and store.live(row) is None  # no live object is kept
    world.advance(1000)  # everyone is finished now
    assert list(store.live_states()) == []
    for caller, session_id in zip(callers, made, strict=True):
        if session_id in finished:
            assert world.service.retrieve(caller, session_id) == rendered[session_id]
            assert world.service.session(session_id) == before_archive[session_id]


@pytest.mark.req("SES-ST-2", "SES-ST-6", "SES-ST-7", "RES-SESS-6")
def test_every_terminal_row_names_its_outcome() -> None:
    for row in SESSION_TRANSITIONS:
        assert row.event is not None or row.source is None
        if row.target == "ended":
            assert row.end_reason is not None and row.error_code is None
        elif row.target == "failed":
            assert row.error_code in FAILURE_MESSAGES and row.end_reason is None
        else:
            assert row.end_reason is None and row.error_code is None
    reasons = {(r.source, r.trigger): r.end_reason for r in SESSION_TRANSITIONS if r.end_reason}
    assert reasons[("running", "max_duration")] == "max_duration"
    assert reasons[("running", "idle_timeout")] == "idle_timeout"
    assert reasons[("ending", "drain_complete")] == "client_request"


@pytest.mark.req("SES-ST-2", "RES-SESS-6")
def test_a_session_takes_its_outcome_from_the_row(
    world_fixed: World, kit: Kit, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Change a row's outcome and the session follows it: no second decision in code."""
    from dataclasses import replace

    import sim.lifecycle as lifecycle

    key = ("running", "max_duration")
    patched = replace(lifecycle.ROWS[key], end_reason="stopwatch")
    monkeypatch.setitem(lifecycle.ROWS, key, patched)  # type: ignore[arg-type]
    # The same row as the service reads it on every move (the table by status, then trigger).
    monkeypatch.setitem(lifecycle.ROWS_FROM["running"], "max_duration", patched)
    _caller, session_id = running(world_fixed, kit, max_duration_seconds=5)
    world_fixed.advance(10)
    assert world_fixed.kernel.events.of_type("session.ended")[0].data["reason"] == "stopwatch"
    assert world_fixed.service.session(session_id).end_reason == "stopwatch"


# -- pool counts and paging --------------------------------------------------------------------


@pytest.mark.req("PERF-4", "SIM-3")
def test_pool_counts_match_a_scan_of_the_workers(kit: Kit) -> None:
    world = kit.world(SimConfig(scheduler=SchedulerConfig(workers=3, max_queue_length=50)))
    rng = random.Random(5)
    callers = [world.caller() for _ in range(40)]
    made: list[tuple[Any, str]] = []
    for step in range(300):
        action = rng.random()
        if action < 0.35 and callers:
            caller = callers.pop()
            made.append((caller, world.service.create(caller, kit.body())["id"]))
        elif action < 0.55 and made:
            caller, session_id = made[rng.randrange(len(made))]
            world.service.end(caller, session_id)
        elif action < 0.62:
            world.service.faults.set_capacity(rng.randrange(0, 6))
        elif action < 0.66:
            workers = world.service.workers()
            if workers:
                world.service.faults.crash_worker(worker_id=rng.choice(workers).id)
        world.advance(rng.uniform(0, 8))
        pool = world.service.pool_status()
        workers = world.service.workers()
        assert (pool.idle, pool.busy, pool.restarting, pool.workers) == (
            sum(w.status == "idle" for w in workers),
            sum(w.status == "busy" for w in workers),
            sum(w.status == "restarting" for w in workers),
            len(workers),
        ), step


@pytest.mark.req("LIM-7", "CONV-4", "EP-SESS-7")
def test_the_session_list_refuses_a_cursor_longer_than_any_id(world: World, kit: Kit) -> None:
    caller = world.caller()
    world.service.create(caller, kit.body())
    limit = world.kernel.config.limits.cursor_max_length
    with pytest.raises(Unprocessable) as caught:
        world.service.list(caller, limit=10, starting_after="s" * (limit + 1), status=None)
    assert (caught.value.code, caught.value.param) == ("validation.cursor", "starting_after")
    assert f"at most {limit} characters" in caught.value.message  # the shared paging check


@pytest.mark.req("PERF-4", "SIM-3")
def test_admission_and_status_never_scan_the_pool(kit: Kit) -> None:
    world = kit.world(SimConfig(scheduler=SchedulerConfig(workers=2_000)))
    scheduler = world.service._scheduler
    scans: list[int] = []

    class Watched(dict[str, Any]):
        def values(self) -> Any:
            scans.append(1)
            return super().values()

    scheduler._workers = Watched(scheduler._workers)
    callers = [world.caller() for _ in range(50)]
    for caller in callers:
        world.service.create(caller, kit.body())
        world.service.pool_status()
    world.advance(30)
    for _ in range(20):
        world.service.pool_status()
    assert scans == []
