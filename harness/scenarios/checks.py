"""The scenario checks that look at more than one field, runnable on a partly valid file.

Why apart from the pydantic model: pydantic runs a model's own validator only once every field
is valid, so a file with a bad rate *and* an arrival naming a missing organization would be
refused in two rounds. Here the checks take the parts that did validate (``Parts.of_data``
validates each part on its own and skips what fails), so the loader reports every problem of a
file at once; the model's validator runs the same checks on a fully valid scenario.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from harness.scenarios.durations import parse_duration
from harness.scenarios.lifting import Limits
from harness.scenarios.parts import (
    Arrival,
    Burst,
    CapacityLoss,
    Organization,
    Poisson,
    PoolChange,
    Recorded,
    RunMix,
)
from harness.scenarios.problems import Loc, Problem
from sim.config import SimConfig

if TYPE_CHECKING:  # for its annotation only: the scenario's validator runs these checks
    from harness.scenarios.model import Scenario

__all__ = ["Parts", "cross_field_problems", "non_finite"]

T = TypeVar("T")


def non_finite(data: object, loc: Loc = ()) -> Iterator[Problem]:
    """Every NaN or infinite number anywhere in ``data`` (YAML's ``.nan``, ``.inf``)."""
    if isinstance(data, float) and not math.isfinite(data):
        yield Problem(loc, f"must be a finite number, not {data}")
    elif isinstance(data, Mapping):
        for key, value in data.items():
            yield from non_finite(value, (*loc, str(key)))
    elif isinstance(data, list | tuple):
        for index, value in enumerate(data):
            yield from non_finite(value, (*loc, index))


def _attempt(parse: Callable[[Any], T], value: Any) -> T | None:
    try:
        return parse(value)
    except (ValidationError, ValueError, TypeError):
        return None


def _items(parse: Callable[[Any], T], values: Any) -> list[tuple[int, T]]:
    if not isinstance(values, list | tuple):
        return []
    parsed = [(i, _attempt(parse, v)) for i, v in enumerate(values)]
    return [(i, item) for i, item in parsed if item is not None]


@dataclass(frozen=True)
class Parts:
    """The parts of a scenario the cross-field checks need; a part that is invalid is absent."""

    duration: float | None
    cooldown: float | None
    warmup: float | None
    measure: float | None
    config: SimConfig | None
    limits: Limits | None
    organizations: list[tuple[int, Organization]]
    names: list[object]  # every organization's name as written, valid or not
    arrivals: list[tuple[int, Arrival]]
    runs: list[tuple[int, RunMix]]
    faults: list[tuple[int, CapacityLoss]]
    pool_schedule: list[tuple[int, PoolChange]]
    idle_timeout: object
    max_duration: object
    usage_timezones: tuple[str, ...]
    non_finite: list[Problem] = field(default_factory=list)

    @classmethod
    def of(cls, scenario: Scenario) -> Parts:
        """The parts of a scenario that validated as a whole."""
        return cls(
            duration=scenario.duration,
            cooldown=scenario.cooldown,
            warmup=scenario.warmup,
            measure=scenario.measure,
            config=SimConfig.model_validate(scenario.config),
            limits=scenario.limits,
            organizations=list(enumerate(scenario.organizations)),
            names=[o.name for o in scenario.organizations],
            arrivals=list(enumerate(scenario.arrivals)),
            runs=list(enumerate(scenario.runs)),
            faults=list(enumerate(scenario.faults)),
            pool_schedule=list(enumerate(scenario.pool_schedule)),
            idle_timeout=scenario.sessions.idle_timeout_seconds,
            max_duration=scenario.sessions.max_duration_seconds,
            usage_timezones=scenario.usage_timezones,
            non_finite=[
                *non_finite(scenario.config, ("config",)),
                *non_finite(scenario.sessions.model_dump(by_alias=True), ("sessions",)),
            ],
        )

    @classmethod
    def of_data(cls, data: Mapping[str, Any]) -> Parts:
        """The parts of raw scenario data that validate on their own."""

        def seconds(name: str, default: float | None) -> float | None:
            return _attempt(parse_duration, data[name]) if name in data else default

        config = data.get("config", {})
        sessions = data.get("sessions")
        sessions = sessions if isinstance(sessions, Mapping) else {}
        organizations = data.get("organizations")
        zones = data.get("usage_timezones", ("UTC",))
        return cls(
            duration=seconds("duration", None),
            cooldown=seconds("cooldown", 0.0),
            warmup=seconds("warmup", 0.0),
            measure=seconds("measure", None),
            config=_attempt(SimConfig.model_validate, config)
            if isinstance(config, Mapping) and "seed" not in config
            else None,
            limits=_attempt(Limits.model_validate, data.get("limits", {})),
            organizations=_items(Organization.model_validate, organizations),
            names=[
                item.get("name") if isinstance(item, Mapping) else None
                for item in (organizations if isinstance(organizations, list | tuple) else [])
            ],
            arrivals=_items(TypeAdapter(Arrival).validate_python, data.get("arrivals", ())),
            runs=_items(RunMix.model_validate, data.get("runs", ())),
            faults=_items(CapacityLoss.model_validate, data.get("faults", ())),
            pool_schedule=_items(PoolChange.model_validate, data.get("pool_schedule", ())),
            idle_timeout=sessions.get("idle_timeout_seconds"),
            max_duration=sessions.get("max_duration_seconds"),
            usage_timezones=tuple(z for z in zones if isinstance(z, str))
            if isinstance(zones, list | tuple)
            else (),
            non_finite=list(non_finite(data)),
        )


def _organizations(parts: Parts) -> Iterator[Problem]:
    config, limits = parts.config, parts.limits
    for i, org in parts.organizations:
        if config is not None:
            plans = [p.key for p in config.billing.plans]
            if org.plan not in plans:
                yield Problem(
                    ("organizations", i, "plan"),
                    f"unknown plan {org.plan!r}; allowed: {', '.join(plans)}",
                )
        if org.concurrency is None:
            continue
        if limits is not None and limits.concurrency == "off":
            yield Problem(
                ("organizations", i, "concurrency"),
                "a concurrency override has no effect with `limits.concurrency: off`",
            )
        elif config is not None and org.concurrency > (
            ceiling := config.limits.concurrent_sessions_per_org_ceiling
        ):
            yield Problem(
                ("organizations", i, "concurrency"),
                f"{org.concurrency} exceeds the organization ceiling {ceiling}",
            )
    names = parts.names
    for i, name in enumerate(names):
        if name is not None and names.index(name) != i:
            yield Problem(("organizations", i, "name"), f"{name!r} is used twice")
    for where, items in (("arrivals", parts.arrivals), ("runs", parts.runs)):
        for i, item in items:
            if item.organization is not None and item.organization not in names:
                yield Problem(
                    (where, i, "organization"), f"no organization named {item.organization!r}"
                )


def _timeline(parts: Parts) -> Iterator[Problem]:
    """Every arrival, fault and window lies within the run."""
    duration = parts.duration
    for i, arrival in parts.arrivals:
        if isinstance(arrival, Poisson):
            if arrival.end is not None and arrival.end <= arrival.start:
                yield Problem(("arrivals", i, "end"), "must be after start")
            if duration is not None and arrival.start >= duration:
                yield Problem(
                    ("arrivals", i, "start"), f"is not before the duration {duration:g} s"
                )
            if duration is not None and arrival.end is not None and arrival.end > duration:
                yield Problem(("arrivals", i, "end"), f"is after the duration {duration:g} s")
        elif (
            isinstance(arrival, Burst)
            and duration is not None
            and arrival.at + arrival.within > duration
        ):
            yield Problem(
                ("arrivals", i, "at"),
                f"the burst ends at {arrival.at + arrival.within:g} s, after the duration "
                f"{duration:g} s",
            )
    run_end = None if duration is None or parts.cooldown is None else duration + parts.cooldown
    for i, fault in parts.faults:
        if duration is not None and fault.at >= duration:
            yield Problem(("faults", i, "at"), f"is not before the duration {duration:g} s")
        if fault.until is not None:
            if fault.until <= fault.at:
                yield Problem(("faults", i, "until"), "must be after at")
            elif run_end is not None and fault.until > run_end:
                yield Problem(
                    ("faults", i, "until"), f"is after the end of the run ({run_end:g} s)"
                )
    previous = None
    for i, change in parts.pool_schedule:
        if previous is not None and change.at <= previous:
            yield Problem(("pool_schedule", i, "at"), "must be after the previous change")
        elif run_end is not None and change.at >= run_end:
            yield Problem(
                ("pool_schedule", i, "at"), f"is not before the end of the run ({run_end:g} s)"
            )
        previous = change.at
    if duration is not None and parts.warmup is not None:
        if parts.warmup >= duration:
            yield Problem(("warmup",), f"must be shorter than the duration {duration:g} s")
        elif parts.measure is not None and parts.warmup + parts.measure > duration:
            yield Problem(
                ("measure",),
                f"the window ends at {parts.warmup + parts.measure:g} s, after the duration "
                f"{duration:g} s",
            )
    if parts.measure is not None and parts.measure <= 0:
        yield Problem(("measure",), "must be > 0")


def _recordings(parts: Parts) -> Iterator[Problem]:
    """Each recorded arrival's file reads as a recording, its organizations are the
    scenario's, and some of its sessions fall within the run."""
    from harness.traffic.recording import RecordingError, load_recording  # pandas: on demand

    for i, arrival in parts.arrivals:
        if not isinstance(arrival, Recorded):
            continue
        try:
            recording = load_recording(arrival.path)
        except RecordingError as error:
            for problem in error.problems:
                yield Problem(("arrivals", i, "path"), f"{error.source}: {problem}")
            continue
        timeless = arrival.since is not None and recording.start is None
        if timeless:
            yield Problem(
                ("arrivals", i, "since"),
                f"{arrival.path} is written in offsets (offset_seconds), with no instants",
            )
        if arrival.organization is None:
            unknown = [o for o in recording.organizations() if o not in parts.names]
            if unknown:
                shown = ", ".join(repr(o) for o in unknown[:5])
                more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
                yield Problem(
                    ("arrivals", i, "path"),
                    f"{arrival.path} has sessions of {shown}{more}, not among the scenario's "
                    "organizations: add them, or set `organization` to send every session "
                    "of the recording as one of them",
                )
        if parts.duration is None or timeless:
            continue
        if arrival.shift >= parts.duration:
            yield Problem(
                ("arrivals", i, "shift"), f"is not before the duration {parts.duration:g} s"
            )
            continue
        played = recording if arrival.since is None else recording.since(arrival.since)
        offsets = played.frame["offset_seconds"] / arrival.speed + arrival.shift
        if not ((offsets >= 0) & (offsets < parts.duration)).any():
            yield Problem(
                ("arrivals", i, "path"),
                f"none of the {len(played)} sessions of {arrival.path} falls within the run "
                f"(offsets {played.span / arrival.speed:g} s long from {arrival.shift:g} s, "
                f"duration {parts.duration:g} s)",
            )


def _limits(parts: Parts) -> Iterator[Problem]:
    limits, config = parts.limits, parts.config
    if limits is None:
        return
    if (
        limits.queue == "off"
        and config is not None
        and config.scheduler.admission_policy == "reject"
    ):
        yield Problem(
            ("limits", "queue"), "the reject admission policy has no queue to lift; remove it"
        )
    if limits.idle_timeout == "off" and parts.idle_timeout is not None:
        yield Problem(
            ("sessions", "idle_timeout_seconds"), "contradicts `limits.idle_timeout: off`"
        )
    if limits.max_duration == "off" and parts.max_duration is not None:
        yield Problem(
            ("sessions", "max_duration_seconds"), "contradicts `limits.max_duration: off`"
        )


def _usage_window(parts: Parts) -> Iterator[Problem]:
    if parts.config is None or parts.duration is None or parts.cooldown is None:
        return
    window_days = parts.config.billing.usage_window_max_days
    if parts.usage_timezones and parts.duration + parts.cooldown > window_days * 86_400:
        yield Problem(
            ("duration",),
            f"with usage_timezones the run must fit one usage window ({window_days} days); "
            "shorten it or set usage_timezones: []",
        )


def cross_field_problems(parts: Parts) -> list[Problem]:
    """Every problem that involves more than one field (or the whole file)."""
    return [
        *parts.non_finite,
        *_organizations(parts),
        *_timeline(parts),
        *_recordings(parts),
        *_limits(parts),
        *_usage_window(parts),
    ]
