"""``replay``: a recording played against a deployment, its observed metrics beside the
simulation's prediction for the same traffic.

The traffic is a scenario (``prediction_scenario``): one organization, speaking through the
given keys round-robin, whose only arrival is the recording (``kind: recorded``), with the
client behaviour (retries, backoff, idempotency keys) and the configuration of ``--scenario``
when one is given. The same scenario is played twice:

* **against the deployment**, by the runner's own clients (``harness.runner.engine.install``
  on a local platform that only hosts them: their clock, their draws, their keys), through the
  runner's HTTP door to the deployment's URL (``HttpDoor.remote``), the local clock following
  the wall clock scaled to the deployment's time. A client of a deployment has no webhooks to
  learn when its session ran: the replay asks (``GET /v1/sessions/{id}``) for each session
  still waiting for its first frame, every ``poll`` wall seconds, and hangs up the recorded
  length after the first frame the deployment stamped (not after the moment the replay saw
  it), mapped to the local clock by the offset between the ``created_at`` of each create and
  the local moment it was sent (their median). Once every session is over, each one is read
  again for its final state;
* **in the simulator**, ``replications`` times with fresh seeds (``run_scenario``).

Both are summarized by ``harness.runner.metrics.summarize`` over the same window (the
recording's arrivals); a metric the replay cannot observe (``UNOBSERVED``: the deployment's
ledger and its pool) is left out of the observed side rather than shown as zero.

What agreeing means (``harness.traffic.agreement.compare``): each metric's own test gives a
p-value (a proportion's Wilson intervals, observed and pooled predicted; any other metric as
one more draw of the replications, Student t, sqrt(1 + 1/n) wide), and the metrics are judged
as one family by Holm's step-down procedure at 5 % family-wise, so that a deployment that
behaves as the simulation is called different in at most 5 % of replays, however many metrics
are judged, while a metric far from its prediction is still called out.

Limits of a replay, said in its report: it sends no audio (a deployment's media path is out of
reach), so the prediction's clients send none either and sessions longer than the idle
timeout end by it in both; sessions of a surface only the service's own front ends create
(playground, embed, ...) are created through the API (``api``), in both; and what is observed
is shifted by the latency of each request, in the deployment's time (``time_factor`` magnifies
it for a fast served clock).
"""

from __future__ import annotations

import math
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pandas as pd

from harness.runner import run_scenario
from harness.runner.engine import RawRun, install, records_of
from harness.runner.http_door import HttpDoor
from harness.runner.metrics import cause_of, epoch_of, summarize
from harness.runner.sampler import PoolSampler
from harness.runner.tables import RunResult, collect
from harness.scenarios import Scenario, parse_scenario
from harness.traffic.agreement import compare
from harness.traffic.capture import _row
from harness.traffic.recording import Recording, recording_from_frame
from sim.accounts import ApiKey, Caller
from sim.errors import DomainError
from sim.lifecycle import TERMINAL
from sim.platform import Outcome, Platform

__all__ = [
    "API_SURFACES",
    "UNOBSERVED",
    "ReplayError",
    "ReplayResult",
    "compare",
    "played",
    "prediction_scenario",
    "replay",
]

#: The surfaces a client can create sessions of through the API; others become ``api``.
API_SURFACES = ("api", "pipecat")
#: Metrics a replay cannot observe: the deployment's ledger and its worker pool.
UNOBSERVED = ("credits_charged", "mean_utilization")
SETTLE_SECONDS = 120.0  # the deployment's seconds after the run to wait for the last to end
_CREATES = ("createSession", "createPipecatSession")


class ReplayError(Exception):
    """The replay could not be made (an unusable scenario for the recording, a refused key)."""


#: More than this share of the session clients refused: the deployment did not take the traffic.
MOST_REFUSED = 0.5


@dataclass
class ReplayResult:
    """What a replay observed, what the simulation predicted, and the two side by side;
    ``verdict`` in one line and ``exit_code`` for a CI job (PLAN-15)."""

    scenario: Scenario
    recording: Recording  # as played: surfaces the API cannot create made ``api``
    observed: RunResult
    observed_metrics: dict[str, float]
    predicted: pd.DataFrame  # one row per replication: its seed and every metric
    comparison: pd.DataFrame  # one row per metric (``compare``)
    notes: list[str] = field(default_factory=list)
    unfinished: int = 0  # sessions not over when the replay stopped waiting
    key_prefix: str = ""  # what the replay's idempotency keys start with

    @property
    def session_clients(self) -> int:
        return int((self.observed.clients["kind"] == "session").sum())

    @property
    def refusals(self) -> dict[str, int]:
        """The session clients the deployment refused, by the code of their last answer."""
        clients = self.observed.clients
        outcomes = clients.loc[clients["kind"] == "session", "final_outcome"].astype(str)
        refused = outcomes[outcomes.map(cause_of).notna()]
        return {str(code): int(n) for code, n in refused.value_counts().sort_index().items()}

    @property
    def disagreeing(self) -> list[str]:
        agree = self.comparison["agree"]
        return [str(m) for m in self.comparison.loc[agree.eq(False).fillna(False), "metric"]]

    @property
    def mostly_refused(self) -> bool:
        return sum(self.refusals.values()) > MOST_REFUSED * max(self.session_clients, 1)

    @property
    def exit_code(self) -> int:
        """1 when a metric disagrees with the prediction or most creates were refused."""
        return 1 if self.disagreeing or self.mostly_refused else 0

    def refusals_text(self) -> str:
        """The refusals named by code and cause, e.g. ``3 rate_limited (rate limit)``."""
        said = [
            f"{n:,} {code} ({(cause_of(code) or 'other').replace('_', ' ')})"
            for code, n in self.refusals.items()
        ]
        return ", ".join(said) if said else "none"

    @property
    def verdict(self) -> str:
        """The replay in one line: agrees or not, and the refusals by cause."""
        judged = int(self.comparison["agree"].notna().sum()) if len(self.comparison) else 0
        refused = sum(self.refusals.values())
        clients = self.session_clients
        told = f"{refused:,} of {clients:,} session clients refused: {self.refusals_text()}"
        if self.mostly_refused:
            return (
                f"replay: INVALID: the deployment refused most creates ({told}); its metrics "
                "say nothing of the prediction"
            )
        if self.disagreeing:
            return (
                f"replay: DISAGREES: {', '.join(self.disagreeing)} outside the prediction "
                f"({judged} metrics judged, Holm at 5 %); {told}"
            )
        return f"replay: agrees ({judged} metrics judged, Holm at 5 %); {told}"


def played(recording: Recording) -> tuple[Recording, int]:
    """``recording`` as a replay can play it: sessions of a surface the API cannot create are
    created through the API; and how many were changed."""
    frame = recording.frame.copy()
    moved = ~frame["surface"].astype(str).isin(API_SURFACES)
    surfaces = frame["surface"].astype(str).where(~moved, "api")
    frame["surface"] = pd.Categorical(surfaces, categories=frame["surface"].cat.categories)
    return Recording(frame, recording.source, recording.start, dict(recording.info)), int(
        moved.sum()
    )


def prediction_scenario(
    path: Path,
    recording: Recording,
    *,
    keys: int,
    speed: float,
    base: Scenario | None = None,
    plan: str | None = None,
) -> Scenario:
    """The scenario a replay plays: ``base`` (or a default one) with its first organization
    alone, ``keys`` keys, and one arrival, the recording at ``path`` played ``speed`` times
    faster in the deployment's time; no other traffic, no faults, no audio.

    Without ``base`` the run lasts until the recording's last arrival and then long enough for
    its longest session; with one, its own ``duration`` and ``cooldown`` must hold the
    recording (so the limits it lifts reach as far in the replay as where it is served)."""
    span = recording.span / speed
    lengths = recording.frame["length_seconds"].dropna()
    longest = float(lengths.max()) / speed if len(lengths) else 0.0
    if base is None:
        plans = [p.key for p in parse_scenario({"duration": 1, "organizations": [{"name": "x"}]})
                 .sim_config().billing.plans]  # fmt: skip
        data: dict[str, Any] = {
            "name": "replay",
            "duration": math.floor(span) + 1.0,
            "cooldown": math.ceil(longest) + SETTLE_SECONDS,
            "organizations": [{"name": "replayed", "plan": plan if plan in plans else "free"}],
        }
    else:
        if span >= base.duration:
            raise ReplayError(
                f"the recording lasts {span:g} s at speed {speed:g}, not within the scenario's "
                f"duration {base.duration:g} s: lengthen it or play faster"
            )
        data = base.model_dump(mode="json")
    first = dict(data["organizations"][0])
    first.update(keys=keys, weight=1.0)
    sessions = dict(data.get("sessions", {}))
    sessions["audio"] = None
    arrival = {
        "kind": "recorded", "path": str(path), "speed": speed, "organization": first["name"],
    }  # fmt: skip
    data.update(
        organizations=[first],
        arrivals=[arrival],
        runs=[],
        faults=[],
        sessions=sessions,
        warmup=0.0,
        measure=None,
        records="full",
        usage_timezones=[],
    )
    return parse_scenario(data, f"the replay of {recording.source}")


# -- playing against a deployment ------------------------------------------------------------


@dataclass
class _Offsets:
    """Where the deployment's instants fall on the local clock: their median difference."""

    samples: list[float] = field(default_factory=list)

    def add(self, deployment_unix: float, local: float) -> None:
        self.samples.append(deployment_unix - local)

    def local(self, stamp: str) -> float | None:
        if not self.samples:
            return None
        return pd.Timestamp(stamp).timestamp() - statistics.median(self.samples)


def _created(outcome: Outcome) -> dict[str, Any] | None:
    body = outcome.body
    if isinstance(body, dict) and isinstance(body.get("session"), dict):
        body = body["session"]  # a pipecat create
    return body if isinstance(body, dict) and "created_at" in body else None


@dataclass
class _Player:
    scenario: Scenario
    door: HttpDoor
    host: Platform
    time_factor: float
    poll: float
    sleep: Callable[[float], None]
    monotonic: Callable[[], float]
    offsets: _Offsets
    key_prefix: str = "replay-"
    started: set[str] = field(default_factory=set)

    def local_now(self, wall_start: float) -> float:
        return (self.monotonic() - wall_start) / self.time_factor

    def play(
        self,
        secrets: dict[str, str],
        api_keys: Sequence[str],
        progress: Callable[[float, float], None] | None,
    ) -> RawRun:
        """Install the scenario's clients on the host, its organization's keys speaking for
        ``api_keys`` round-robin, and follow the wall clock until every session is over."""
        scenario, host = self.scenario, self.host
        installed = install(host, scenario, self.door, key_prefix=self.key_prefix)
        org = installed.organizations[0]
        for index, local in enumerate(org.callers):
            secrets[local.key.secret] = api_keys[index % len(api_keys)]
        pool = installed.pool
        caller = org.callers[0]
        end = scenario.duration + scenario.cooldown
        step = self.poll / self.time_factor  # a poll every ``poll`` wall seconds
        wall_start = self.monotonic()
        next_poll = 0.0
        while True:
            now = min(self.local_now(wall_start), end)
            host.clock.advance_to(max(now, host.clock.now))
            if now >= next_poll:
                self._poll(pool.live, pool, caller)
                next_poll = now + step
            if progress is not None:
                progress(now, end)
            due = host.clock.next_event_at()
            idle = due is None or due > end  # the host's own timers (its billing month) wait
            if now >= end or (now >= scenario.duration and not pool.live and idle):
                break
            wake = min(next_poll, end, math.inf if due is None else due)
            # At least a microsecond: a wait rounded to nothing would never reach ``wake``.
            self.sleep(max((wake - self.local_now(wall_start)) * self.time_factor, 1e-6))
        # No pool samples: the deployment's pool is not this host's, and usage comes from the
        # deployment, not from here.
        sampler = PoolSampler(host.sessions)
        return records_of(host, scenario, scenario.seed, installed, sampler, host.clock.now,
                          usage=False)  # fmt: skip

    def _poll(self, live: dict[str, Any], pool: Any, caller: Any) -> None:
        """Ask after each session still waiting for its first frame."""
        for session_id in [s for s in live if s not in self.started]:
            try:
                body = self.door.call("retrieveSession", caller, {"session_id": session_id}).body
            except DomainError:
                return  # refused (a read limit): ask again at the next poll
            if not isinstance(body, dict):
                continue
            first_frame = body.get("first_frame_at")
            if first_frame:
                self.started.add(session_id)
                at = self.offsets.local(str(first_frame))
                pool.session_started(session_id, at if at is None else min(at, self.host.clock.now))
            elif body.get("status") in TERMINAL:
                pool.session_over(session_id)

    def final(self, session_ids: Sequence[str], caller: Any) -> list[dict[str, Any]]:
        """Each session as the deployment finally shows it, waiting (in the deployment's
        time, at most ``SETTLE_SECONDS``) for those still ending."""
        final: dict[str, dict[str, Any]] = {}
        deadline = self.monotonic() + SETTLE_SECONDS * self.time_factor
        pending = list(session_ids)
        while pending:
            waiting = []
            for session_id in pending:
                try:
                    body = self.door.call("retrieveSession", caller, {"session_id": session_id})
                except DomainError as error:
                    if error.type != "rate_limit":
                        raise
                    self.sleep((error.retry_after or 1.0) * self.time_factor)
                    waiting.append(session_id)
                    continue
                resource = body.body
                assert isinstance(resource, dict)
                final[session_id] = resource
                if resource.get("status") not in TERMINAL:
                    waiting.append(session_id)
            pending = waiting
            if not pending or self.monotonic() > deadline:
                break
            self.sleep(self.poll)
        return [final[s] for s in session_ids if s in final]


def _observed_sessions(
    resources: list[dict[str, Any]], clients: pd.DataFrame, epoch: pd.Timestamp, lag: float
) -> pd.DataFrame:
    """The deployment's sessions as the metrics read them: a ``sessions`` table's columns.

    Their instants move onto the local run's time (the metrics' windows are in it): by ``lag``,
    the deployment's clock less the local one, and further for a session whose creation would
    then precede its client's request (the lag is a median over answers that came a latency
    late), so the window counts the sessions whose clients arrived in it, as the simulation's."""
    rows = [_row(r, "replayed", None) for r in resources]
    frame = recording_from_frame(pd.DataFrame(rows, columns=list(_row({}, "", None)))).frame
    sessions = clients[clients["kind"] == "session"].set_index("resource_id")
    made, asked = sessions["client"], sessions["t"]
    frame["client"] = pd.array([made.get(s, pd.NA) for s in frame["session_id"]], dtype="Int64")
    local = (frame["created_at"] - epoch).dt.total_seconds() - lag
    request = pd.Series([asked.get(s, -math.inf) for s in frame["session_id"]], index=frame.index)
    moved = epoch + pd.to_timedelta(local.clip(lower=request), unit="s").dt.ceil("us")
    shift = moved - frame["created_at"]
    for column in ("started_at", "first_frame_at"):
        frame[column] = frame[column] + shift
    frame["created_at"] = moved
    created = frame["created_at"]
    frame["placement_wait_seconds"] = (frame["started_at"] - created).dt.total_seconds()
    frame["first_frame_wait_seconds"] = (frame["first_frame_at"] - created).dt.total_seconds()
    return frame


# -- the whole replay ------------------------------------------------------------------------


def replay(
    recording: Recording,
    base_url: str,
    api_keys: Sequence[str],
    *,
    out: Path,
    speed: float | None = None,
    time_factor: float = 1.0,
    base: Scenario | None = None,
    replications: int = 10,
    seed: int | None = None,
    poll: float = 0.25,
    timeout: float = 30.0,
    transport: httpx.AsyncBaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    monotonic: Callable[[], float] = time.monotonic,
    progress: Callable[[float, float], None] | None = None,
    key_prefix: str | None = None,
) -> ReplayResult:
    """Play ``recording`` against the deployment at ``base_url`` through ``api_keys`` (of one
    organization), ``speed`` times faster than recorded in wall time (default: as recorded
    in the deployment's time, ``1 / time_factor``), and predict the same traffic with
    ``replications`` runs; the played recording is written to ``out/recording.parquet``.

    ``time_factor``: the deployment's wall seconds per second of its own time (``avatar-sim
    serve --time-factor``). ``transport``, ``sleep`` and ``monotonic``: for a test's
    in-process deployment and clock. ``key_prefix``: what every idempotency key starts with
    (default: ``replay-`` and a fresh random token, so a replay never reuses keys the same
    traffic sent before: a deployment would refuse them as reused)."""
    if not api_keys:
        raise ReplayError("give at least one API key")
    wall_speed = 1.0 / time_factor if speed is None else speed
    target_speed = wall_speed * time_factor
    notes: list[str] = []
    traffic, moved = played(recording)
    if moved:
        notes.append(
            f"{moved} sessions of surfaces only the service's own front ends create were "
            "created through the API (surface api), in the replay and the prediction alike"
        )
    out.mkdir(parents=True, exist_ok=True)
    path = traffic.write(out / "recording.parquet")
    offsets = _Offsets()
    secrets: dict[str, str] = {}

    def answered(operation_id: str, outcome: Outcome) -> None:
        created = _created(outcome) if operation_id in _CREATES else None
        if created is not None:
            offsets.add(pd.Timestamp(created["created_at"]).timestamp(), host.clock.now)

    door = HttpDoor.remote(
        base_url, secrets, timeout=timeout, transport=transport, answered=answered
    )
    try:
        quota = door.call("getQuota", _probe_caller(api_keys[0]), {}).body
    except DomainError as error:
        door.close()
        raise ReplayError(f"the deployment refused the key: {error.code}") from None
    plan = quota.get("plan_key") if isinstance(quota, dict) else None
    scenario = prediction_scenario(
        path, traffic, keys=len(api_keys), speed=target_speed, base=base, plan=plan
    )
    if seed is not None:
        scenario = scenario.model_copy(update={"seed": seed})
    host = Platform.create(scenario.sim_config())
    prefix = f"replay-{uuid.uuid4().hex[:12]}-" if key_prefix is None else key_prefix
    player = _Player(scenario, door, host, time_factor, poll, sleep, monotonic, offsets, prefix)
    try:
        raw = player.play(secrets, api_keys, progress)
        observed = collect(raw)
        caller = raw.organizations[0].callers[0]
        made = observed.clients[observed.clients["kind"] == "session"]["resource_id"].dropna()
        resources = player.final([str(s) for s in made], caller)
    finally:
        door.close()
    # The deployment's clock, read through its sessions' stamps, onto the local run's.
    lag = statistics.median(offsets.samples) if offsets.samples else 0.0
    epoch = epoch_of(observed)
    sessions = _observed_sessions(resources, observed.clients, epoch, lag - epoch.timestamp())
    unfinished = int((~sessions["status"].astype(str).isin(TERMINAL)).sum())
    observed = replace(observed, sessions=sessions)
    window = (0.0, scenario.duration)
    metrics = summarize(observed, window)
    for name in UNOBSERVED:
        if name in metrics:
            metrics[name] = math.nan
    first = scenario.seed + 1 if seed is None else seed + 1
    rows = []
    for index in range(replications):
        run_seed = first + index
        rows.append({"seed": run_seed, **summarize(run_scenario(scenario, run_seed), window)})
    predicted = pd.DataFrame(rows)
    comparison = compare(metrics, predicted, int(sessions["first_frame_at"].notna().sum()))
    if unfinished:
        notes.append(f"{unfinished} sessions were not over when the replay stopped waiting")
    notes.append(
        f"the replay sent no audio; so did the prediction's clients: sessions longer than "
        f"the idle timeout ({_idle(scenario)} s) end by it in both"
    )
    return ReplayResult(scenario, traffic, observed, metrics, predicted, comparison, notes,
                        unfinished, prefix)  # fmt: skip


def _idle(scenario: Scenario) -> int:
    named = scenario.session_profile().idle_timeout_seconds
    return named if named is not None else scenario.sim_config().limits.idle_timeout_default_seconds


def _probe_caller(secret: str) -> Caller:
    """A caller carrying ``secret`` for the door, before any local key speaks for it."""
    return Caller("", ApiKey(secret, "", "production", None, 0.0))
