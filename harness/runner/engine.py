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

A run ends as a ``RawRun``: the tables its stores and the runner's own records export
(``sim.columns.Table``), and nothing live. ``simulate`` plays the scenario and hands its platform
over (its records exported, then released); ``play`` keeps the platform for whoever wants to
look at it or call it afterwards (``Played``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar, Unpack

from harness.runner.arrivals import (
    RecordedSession,
    arrival_instants,
    merged,
    poisson_instants,
    recorded_sessions,
)
from harness.runner.clients import ClientPool, OrgHandle
from harness.runner.columns import RunEpoch
from harness.runner.door import Door
from harness.runner.faults import start_faults
from harness.runner.picks import WeightedPick
from harness.runner.records import CallLog, ClientLog
from harness.runner.sampler import PoolSampler
from harness.scenarios.model import Scenario
from harness.scenarios.parts import Recorded, RunMix
from harness.traffic.recording import load_recording
from sim.accounts import Caller
from sim.columns import Table
from sim.config import HistoryConfig, SimConfig
from sim.platform import Platform

__all__ = [
    "RECORDS",
    "Installed",
    "PlayOptions",
    "Played",
    "RawRun",
    "RunOrganization",
    "install",
    "play",
    "records_of",
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
class RunOrganization:
    """One organization of a run as its clients knew it: its name, id, plan and the keys they
    used (``callers``, in the order they took them)."""

    name: str
    id: str
    plan: str
    callers: tuple[Caller, ...]


#: The tables of a ``RawRun``, by name, and what exports each one.
RAW_TABLES: tuple[str, ...] = (
    "utilization",  # the runner's pool sampler (``PoolSampler.export``)
    "runs",  # ``RunService.export``
    "organizations",  # ``AccountRegistry.export``
    "usage",  # ``Billing.export_usage``: one row per organization and timezone ...
    "usage_daily",  # ... and one per local day and billing surface of each
    "quotas",  # ``Billing.export_quotas``
    "ledger",  # ``Ledger.export``
    "events",  # ``EventLog.export``
    "sessions",  # ``SessionStore.export``
    "requests",  # the clients' tallies (``Tallies.export``): requests per interval ...
    "arrivals",  # ... and arrivals per interval
    "clients",  # ``ClientLog.export`` (no rows when the run kept no log)
    "calls",  # ``CallLog.export`` (no rows when the run kept no log)
)


@dataclass(frozen=True, slots=True)
class RawRun:
    """What one run produced, as tables: each store's export by name (``RAW_TABLES``) and what
    reading them needs. ``harness.runner.tables.collect`` turns it into data frames; it holds no
    live object (the platform that produced it may be gone)."""

    scenario: Scenario
    seed: int
    records: str  # "full", "sessions" or "summary"
    organizations: tuple[RunOrganization, ...]
    epoch: RunEpoch  # of the run's clock: the tables' times and ids are read with it
    frames_per_second: int  # the configured video frame rate (frames are billable seconds x it)
    end: float
    #: Every table of ``RAW_TABLES``; a collect that releases the run takes them out as it goes.
    tables: dict[str, Table]


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


@dataclass(frozen=True, slots=True)
class Played:
    """A scenario played on a platform that is still live: call it or look at it, then take
    its tables (``records``), or take them and release the platform's records (``hand_over``)."""

    scenario: Scenario
    seed: int
    platform: Platform
    installed: Installed
    sampler: PoolSampler
    end: float

    @property
    def organizations(self) -> tuple[OrgHandle, ...]:
        return self.installed.organizations

    @property
    def pool(self) -> ClientPool:
        return self.installed.pool

    def records(self) -> RawRun:
        """The run's tables, exported now (``records_of``); the platform stays as it is. The
        tables share the stores' columns: collect them before the platform moves on."""
        return records_of(self.platform, self.scenario, self.seed, self.installed,
                          self.sampler, self.end)  # fmt: skip

    def hand_over(self) -> RawRun:
        """``records``, then the platform's records released: it answers no more calls
        (``Platform.hand_over``), and what the tables hold is all that is left of them."""
        return records_of(self.platform, self.scenario, self.seed, self.installed,
                          self.sampler, self.end, hand_over=True)  # fmt: skip


def records_of(
    platform: Platform,
    scenario: Scenario,
    seed: int,
    installed: Installed,
    sampler: PoolSampler,
    end: float,
    *,
    usage: bool = True,
    hand_over: bool = False,
) -> RawRun:
    """Every table of a run on ``platform`` (``RAW_TABLES``), exported now, in an order that
    asks each store before anything another export does could change it (a quota or usage
    summary may close a billing period, which writes ledger rows and events).

    ``usage``: whether to ask for the whole run's usage (``GET /v1/usage`` from the start to
    ``end``, in each of the scenario's ``usage_timezones``). ``hand_over``: then release the
    platform's records (``Platform.hand_over``): the tables hold what they need of them."""
    clock, pool = platform.clock, installed.pool
    stop = float(max(1, math.ceil(end)))
    zones = scenario.usage_timezones if usage else ()
    tables = {"utilization": sampler.export(), "runs": platform.runs.export()}
    tables["organizations"] = platform.accounts.export()
    tables["usage"], tables["usage_daily"] = platform.billing.export_usage(
        zones, clock.timestamp(0.0), clock.timestamp(stop)
    )
    tables["quotas"] = platform.billing.export_quotas()
    tables["ledger"] = platform.billing.ledger.export()
    tables["events"] = platform.kernel.events.export()
    tables["sessions"] = platform.sessions.store.export(clock.now)
    tables["requests"], tables["arrivals"] = pool.tallies.export()
    tables["clients"] = (pool.clients or ClientLog()).export()
    tables["calls"] = (pool.calls or CallLog()).export()
    organizations = tuple(
        RunOrganization(org.name, org.id, org.plan, tuple(org.callers))
        for org in installed.organizations
    )
    if hand_over:
        platform.hand_over()
        pool.calls = pool.clients = None
    return RawRun(
        scenario,
        seed,
        scenario.records,
        organizations,
        RunEpoch.of(clock),
        platform.config.sessions.frames_per_second,
        end,
        tables,
    )


def play(
    scenario: Scenario,
    seed: int | None = None,
    *,
    door: Callable[[Platform], Door] | None = None,
    progress: Callable[[float], None] | None = None,
    arrivals_from: float = 0.0,
    arrivals_until: float = math.inf,
    end: float | None = None,
) -> Played:
    """Run ``scenario`` (with ``seed``, default the file's) on a new platform and return it
    live (``simulate`` takes its tables and lets it go).

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
    # One sampler on a fixed grid: its cost grows with the samples, not the sessions.
    sampler = PoolSampler(platform.sessions)
    platform.clock.follow(_grid(scenario.sample_every, end), sampler.sample)
    steps = 1 if progress is None else 100
    for step in range(1, steps + 1):
        platform.clock.advance_to(end * step / steps)
        if progress is not None:
            progress(float(platform.clock.now))
    sampler.close()  # the last interval runs to the end
    return Played(scenario, run_seed, platform, installed, sampler, end)


class PlayOptions(TypedDict, total=False):
    """``play``'s keyword arguments, which ``simulate`` passes on as they are."""

    door: Callable[[Platform], Door] | None
    progress: Callable[[float], None] | None
    arrivals_from: float
    arrivals_until: float
    end: float | None


def simulate(scenario: Scenario, seed: int | None = None, **options: Unpack[PlayOptions]) -> RawRun:
    """``play`` the scenario (the same arguments) and return its tables, its platform handed
    over: nothing else holds it, so its records go as soon as their tables no longer need
    them."""
    return play(scenario, seed, **options).hand_over()
