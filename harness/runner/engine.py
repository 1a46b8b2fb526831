"""``run_scenario``: one scenario, one seed, one in-process platform, tidy tables out (NB-2).

Why the direct Python API (``Platform.call``) and not HTTP: it is the same door the facade uses
(SIM-7), so the records are the ones HTTP traffic would produce, and it is much faster, which is
what lets a sweep run hundreds of simulated days. Everything happens on the platform's virtual
clock: arrivals, client backoffs, the service's timers and the utilization sampler, so the same
scenario and seed give identical tables (SIM-2).

What a run keeps is the scenario's ``records`` level (``RECORDS``): ``full`` keeps every record
(the event log, session transitions and the API log included), ``sessions`` one row per session,
arrival, request and ledger row, ``summary`` only what the per-interval tables need, so a month
of any size fits in memory. The level changes what is kept, never what happens: the same seed
gives the same simulation at every level.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from harness.runner.arrivals import (
    RecordedSession,
    arrival_instants,
    merged,
    poisson_instants,
    recorded_sessions,
)
from harness.runner.clients import ClientPool, OrgHandle
from harness.runner.door import Door
from harness.runner.faults import start_faults
from harness.runner.picks import WeightedPick
from harness.runner.records import CallLog, ClientLog
from harness.scenarios.model import Recorded, RunMix, Scenario
from harness.traffic.recording import load_recording
from sim.columns import Table
from sim.config import HistoryConfig, SimConfig
from sim.platform import Platform
from sim.sessions.scheduler import PoolMeter, PoolStatus

__all__ = [
    "RECORDS",
    "Installed",
    "RawRun",
    "install",
    "session_arrivals",
    "sim_config",
    "simulate",
]

T = TypeVar("T")

#: What the platform keeps of its own history at each records level.
RECORDS: dict[str, HistoryConfig] = {
    "full": HistoryConfig(events=True, transitions=True, api_log_size=None),
    "sessions": HistoryConfig(events=False, transitions=False, api_log_size=0),
    "summary": HistoryConfig(events=False, transitions=False, api_log_size=0),
}


@dataclass(frozen=True, slots=True)
class RawRun:
    """What one run produced, still as records; ``harness.collect`` turns it into tables."""

    scenario: Scenario
    seed: int
    records: str  # "full", "sessions" or "summary"
    platform: Platform
    organizations: tuple[OrgHandle, ...]
    pool: ClientPool
    samples: tuple[PoolStatus, ...]
    #: The pool's meter read at each sample and once more at ``end``: one more than ``samples``.
    meters: tuple[PoolMeter, ...]
    usage: tuple[tuple[str, str, dict[str, Any]], ...]  # (org name, timezone, usage summary)
    end: float

    def call_table(self) -> Table:
        """The clients' requests (``CallLog.export``; no rows when the run kept no log)."""
        return (self.pool.calls or CallLog()).export()

    def client_table(self) -> Table:
        """The clients' arrivals (``ClientLog.export``; no rows when the run kept no log)."""
        return (self.pool.clients or ClientLog()).export()


@dataclass(frozen=True, slots=True)
class Installed:
    """A scenario set up on a platform: its organizations and the clients already under way."""

    organizations: tuple[OrgHandle, ...]
    accounts: tuple[dict[str, Any], ...]  # admin records: id, name, plan and the four key kinds
    pool: ClientPool


def _organizations(
    platform: Platform, scenario: Scenario
) -> tuple[tuple[OrgHandle, ...], tuple[dict[str, Any], ...]]:
    handles = []
    accounts = []
    for org in scenario.organizations:
        made = platform.admin.create_organization(
            org.name, org.plan, concurrency_override=org.concurrency
        )
        secrets = [made["keys"]["unrestricted"]]
        secrets += [platform.admin.create_key(made["id"])["key"] for _ in range(org.keys - 1)]
        callers = [platform.authenticate(f"Bearer {secret}") for secret in secrets]
        handles.append(OrgHandle(org.name, made["id"], org.plan, callers))
        accounts.append(made)
    return tuple(handles), tuple(accounts)


def _schedule(
    scenario: Scenario, platform: Platform, orgs: tuple[OrgHandle, ...]
) -> Iterator[tuple[float, OrgHandle | None]]:
    """Every arrival but the recorded ones as (time, fixed organization or None), in time
    order, drawn as it comes."""
    by_name = {o.name: o for o in orgs}
    epoch = platform.config.epoch
    stream = platform.kernel.streams.stream
    return merged(
        (
            arrival_instants(
                arrival, scenario.duration, epoch, stream(f"scenario.arrivals.{index}")
            ),
            None if arrival.organization is None else by_name[arrival.organization],
        )
        for index, arrival in enumerate(scenario.arrivals)
        if not isinstance(arrival, Recorded)
    )


def _recorded(
    scenario: Scenario, platform: Platform, orgs: tuple[OrgHandle, ...]
) -> Iterator[Iterator[tuple[float, tuple[OrgHandle | None, RecordedSession]]]]:
    """Each recorded arrival's sessions as (time, (organization or None, session)), in time
    order; every one draws from the stream its position gives it, as the other kinds do."""
    by_name = {o.name: o for o in orgs}
    stream = platform.kernel.streams.stream
    for index, arrival in enumerate(scenario.arrivals):
        if isinstance(arrival, Recorded):
            sessions = recorded_sessions(
                arrival,
                load_recording(arrival.path),
                scenario.duration,
                stream(f"scenario.arrivals.{index}"),
            )
            yield (
                (at, (None if s.organization is None else by_name[s.organization], s))
                for at, s in sessions
            )


def _runs(
    pool: ClientPool, scenario: Scenario, orgs: tuple[OrgHandle, ...]
) -> Iterator[tuple[float, tuple[OrgHandle, RunMix]]]:
    """Every run arrival as (time, (organization, mix)), in time order, drawn as it comes."""
    stream = pool.platform.kernel.streams.stream
    weights = [o.weight for o in scenario.organizations]
    pick = stream("scenario.runs.mix")
    plan = merged(
        (
            poisson_instants(
                mix.rate_per_hour, 0.0, scenario.duration, stream(f"scenario.runs.{i}")
            ),
            i,
        )
        for i, mix in enumerate(scenario.runs)
    )
    by_name = {o.name: o for o in orgs}
    for at, index in plan:
        mix = scenario.runs[index]
        if mix.organization is not None:
            org = by_name[mix.organization]
        else:  # from a stream of its own: drawn a little ahead, the same organization
            org = pick.choices(orgs, weights=weights)[0]
        yield at, (org, mix)


def _between(
    plan: Iterator[tuple[float, T]], start: float, end: float
) -> Iterator[tuple[float, T]]:
    """The instants of ``plan`` in ``[start, end)`` (all of them by default)."""
    if start <= 0.0 and end == math.inf:
        return plan
    return itertools.takewhile(lambda item: item[0] < end, (i for i in plan if i[0] >= start))


def _grid(every: float, end: float) -> Iterator[tuple[float, None]]:
    """The sampling instants ``0, every, 2 every, ...`` up to ``end``."""
    for i in range(math.floor(end / every + 1e-9) + 1):
        yield i * every, None


def _usage(
    platform: Platform, scenario: Scenario, orgs: tuple[OrgHandle, ...], end: float
) -> tuple[tuple[str, str, dict[str, Any]], ...]:
    """``GET /v1/usage`` of the whole run per organization and timezone, as the API computes it."""
    clock = platform.clock
    stop = max(1, math.ceil(end))
    out = []
    for org in orgs:
        for timezone in scenario.usage_timezones:
            params = {
                "period_start": clock.timestamp(0.0),
                "period_end": clock.timestamp(float(stop)),
                "timezone": timezone,
            }
            body = platform.call("getUsage", org.callers[0], params).body
            assert isinstance(body, dict)
            out.append((org.name, timezone, body))
    return tuple(out)


def install(
    platform: Platform,
    scenario: Scenario,
    door: Door | None = None,
    *,
    logs: bool | None = None,
    arrivals_from: float = 0.0,
    arrivals_until: float = math.inf,
    key_prefix: str = "scn-",
) -> Installed:
    """Create the scenario's organizations on ``platform`` and start its traffic: arrivals and
    runs become timers on the platform's clock (``Clock.follow``), so they unfold as the clock
    advances, whoever advances it (``simulate`` below, or the wall-clock driver of
    ``avatar-sim serve``).

    Clients call through ``door`` (default: ``platform.call``; see ``harness.runner.door``).
    ``logs``: whether the clients log every request and arrival (default: unless the scenario's
    records level is ``summary``); they always keep their per-interval tallies.
    ``arrivals_from``, ``arrivals_until``: clients (of sessions and runs) that would arrive
    before the one or from the other on do not come; the ones between arrive exactly when they
    would have (a planner simulates a window of a long scenario this way). ``key_prefix``
    starts every idempotency key the clients send (a replay's own)."""
    orgs, accounts = _organizations(platform, scenario)
    keep = scenario.records != "summary" if logs is None else logs
    pool = ClientPool.create(
        platform,
        scenario.client,
        scenario.session_profile(),
        door,
        logs=keep,
        interval=scenario.sample_every,
        key_prefix=key_prefix,
    )
    start_faults(platform, scenario.faults, scenario.pool_schedule)
    pool.organizations = WeightedPick(
        orgs, [o.weight for o in scenario.organizations], pool.streams.mix
    )
    window = (arrivals_from, arrivals_until)
    sessions = _between(_schedule(scenario, platform, orgs), *window)
    platform.clock.follow(sessions, pool.start_session_client)
    for recorded in _recorded(scenario, platform, orgs):
        platform.clock.follow(
            _between(recorded, *window), lambda tagged: pool.start_recorded_client(*tagged)
        )
    if scenario.runs:
        runs = _between(_runs(pool, scenario, orgs), *window)
        platform.clock.follow(runs, lambda run: pool.start_run_client(*run))
    return Installed(orgs, accounts, pool)


def session_arrivals(
    scenario: Scenario, seed: int | None = None
) -> list[tuple[float, float | None]]:
    """Every session client's arrival of ``scenario`` with ``seed`` (default: the file's) as
    (time, recorded length or ``None``), drawn exactly as a run with that seed draws them
    (the same named streams), without running anything: the demand a planner sizes for."""
    platform = Platform.create(sim_config(scenario, seed))
    orgs, _ = _organizations(platform, scenario)
    found: list[tuple[float, float | None]] = [
        (at, None) for at, _ in _schedule(scenario, platform, orgs)
    ]
    for recorded in _recorded(scenario, platform, orgs):
        found += [(at, session.length) for at, (_, session) in recorded]
    return sorted(found, key=lambda item: item[0])


def sim_config(scenario: Scenario, seed: int | None = None) -> SimConfig:
    """The platform's configuration for a run: the scenario's, keeping its records level."""
    config = scenario.sim_config(seed)
    return config.model_copy(update={"history": RECORDS[scenario.records]})


def simulate(
    scenario: Scenario,
    seed: int | None = None,
    *,
    door: Callable[[Platform], Door] | None = None,
    progress: Callable[[float], None] | None = None,
    arrivals_from: float = 0.0,
    arrivals_until: float = math.inf,
    end: float | None = None,
) -> RawRun:
    """Run ``scenario`` (with ``seed``, default the file's) and return its raw records.

    ``door`` builds the door the clients use from the platform (default: ``Platform.call``);
    ``progress`` is told the simulated time after each hundredth of the run (advancing in steps
    runs exactly the same events as advancing at once); ``arrivals_from``, ``arrivals_until``:
    only the clients between them arrive (``install``); ``end``: where the run stops (default:
    the scenario's duration and cooldown).
    """
    run_seed = scenario.seed if seed is None else seed
    platform = Platform.create(sim_config(scenario, run_seed))
    installed = install(
        platform,
        scenario,
        None if door is None else door(platform),
        arrivals_from=arrivals_from,
        arrivals_until=arrivals_until,
    )
    end = scenario.duration + scenario.cooldown if end is None else end
    samples: list[PoolStatus] = []
    meters: list[PoolMeter] = []
    # One sampler on a fixed grid: its cost grows with the samples, not the sessions. It reads
    # the pool as it is and its meter (worker-seconds, and the peaks since the last reading).
    status, meter = platform.sessions.pool_status, platform.sessions.pool_meter

    def sample(_: None) -> None:
        samples.append(status())
        meters.append(meter())

    platform.clock.follow(_grid(scenario.sample_every, end), sample)
    steps = 1 if progress is None else 100
    for step in range(1, steps + 1):
        platform.clock.advance_to(end * step / steps)
        if progress is not None:
            progress(float(platform.clock.now))
    meters.append(meter())  # the last interval runs to the end
    orgs = installed.organizations
    usage = _usage(platform, scenario, orgs, end)
    return RawRun(
        scenario,
        run_seed,
        scenario.records,
        platform,
        orgs,
        installed.pool,
        tuple(samples),
        tuple(meters),
        usage,
        end,
    )
