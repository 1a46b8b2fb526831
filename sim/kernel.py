"""The shared substrate every service of the simulated platform is built on.

One ``Kernel`` per platform: the configuration (and the values of it the services read while
they serve, compiled once: ``sim.settings``), the virtual clock (one ``simpy.Environment``),
the seeded random streams, the id factory, the event log and the journal that makes an operation
all or nothing (``sim.journal``). Services receive the kernel instead
of reaching for globals, which is what makes a run reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from sim.clock import Clock
from sim.config import SimConfig
from sim.events import EventLog
from sim.ids import IdFactory
from sim.journal import Journal
from sim.rng import RandomStreams
from sim.settings import Settings

__all__ = ["Kernel"]


@dataclass(frozen=True, slots=True)
class Kernel:
    config: SimConfig
    settings: Settings
    clock: Clock
    streams: RandomStreams
    ids: IdFactory
    events: EventLog
    journal: Journal

    @classmethod
    def create(cls, config: SimConfig | None = None) -> Kernel:
        config = config if config is not None else SimConfig()
        clock = Clock(config.epoch)
        streams = RandomStreams(config.seed)
        ids = IdFactory(clock, streams.stream("ids"))
        journal = Journal()
        events = EventLog(clock, ids, journal, keep=config.history.events)
        return cls(
            config=config,
            settings=Settings.of(config),
            clock=clock,
            streams=streams,
            ids=ids,
            events=events,
            journal=journal,
        )
