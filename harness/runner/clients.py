"""The scenario's customers as SimPy processes on the platform's own environment.

Why processes on the platform's environment: the clients then live on the same virtual clock as
the service, so a backoff of 2 s is 2 simulated seconds and every run is deterministic. Clients
reach the service only through ``Platform.call`` (the contract operations) except for what the
contract leaves to the transport or the dashboard: the audio they publish (``inject_audio``) and
sessions of the non-API surfaces (playground, embed, ...), which GAP-SES-10 says only exist
through the Python API. They learn that a session started or ended the way a real integration
does, from the service's events (the ``session.first_frame`` webhook), never by polling.

Cost per session is constant: one create (plus retries), one wait on an event, one timer for the
planned length and one end call. The talk-spurt pattern is handed to the session in one call at
the first frame (``play_audio``, GAP-SES-5), whatever the session's length, and schedules no
events.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from harness.runner.door import Door
from harness.runner.picks import WeightedPick
from harness.runner.records import CallLog, ClientLog, Tallies
from harness.scenarios.model import RUN_MODELS, ClientBehaviour, RunMix, SessionProfile
from sim.accounts import Caller
from sim.errors import DomainError
from sim.events import Event
from sim.platform import Platform
from sim.rng import Sampler, sampler
from sim.sessions.audio import TalkSpurts

__all__ = ["ClientPool", "OrgHandle"]


def _json(body: object) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise TypeError("expected a JSON object from the service")
    return body


_WATCHED = ("session.first_frame", "session.failed", "session.canceled", "session.ended")
_HANG_UP = "hang_up"  # what wakes a client whose planned length has passed


@dataclass(slots=True)
class OrgHandle:
    """One organization as its clients see it: its keys, used round-robin."""

    name: str
    id: str
    plan: str
    callers: list[Caller]
    next_key: int = 0

    def take_key(self) -> tuple[int, Caller]:
        index = self.next_key % len(self.callers)
        self.next_key += 1
        return index, self.callers[index]


@dataclass(slots=True)
class _Streams:
    mix: random.Random
    length: random.Random
    audio: random.Random
    backoff: random.Random


@dataclass(slots=True)
class ClientPool:
    """Starts one process per arrival and records what each one did: every request and arrival
    (``calls``, ``clients``; ``None`` when the run keeps only tallies) and the tallies."""

    platform: Platform
    behaviour: ClientBehaviour
    profile: SessionProfile
    streams: _Streams
    tallies: Tallies
    door: Door  # the platform itself, or its HTTP facade (harness.runner.door)
    calls: CallLog | None = None
    clients: ClientLog | None = None
    talk: TalkSpurts | None = None
    # Bound once: the clock's environment, the quality and surface picks, the length sampler.
    env: simpy.Environment = field(init=False)
    quality: WeightedPick[str] = field(init=False)
    surface: WeightedPick[str] = field(init=False)
    length: Sampler = field(init=False)
    _waiters: dict[str, simpy.Event] = field(default_factory=dict)
    _count: int = 0

    @classmethod
    def create(
        cls,
        platform: Platform,
        behaviour: ClientBehaviour,
        profile: SessionProfile,
        door: Door | None = None,
        *,
        logs: bool = True,
        interval: float = 60.0,
    ) -> ClientPool:
        """A pool on ``platform``; ``logs=False`` keeps only the tallies per ``interval``."""
        stream = platform.kernel.streams.stream
        streams = _Streams(
            mix=stream("scenario.mix"),
            length=stream("scenario.length"),
            audio=stream("scenario.audio"),
            backoff=stream("scenario.backoff"),
        )
        audio = profile.audio
        talk = None if audio is None else TalkSpurts(audio.speech, audio.silence)
        pool = cls(
            platform,
            behaviour,
            profile,
            streams,
            Tallies(interval),
            platform if door is None else door,
            calls=CallLog() if logs else None,
            clients=ClientLog() if logs else None,
            talk=talk,
        )
        platform.kernel.events.subscribe(pool._on_event, types=_WATCHED)
        return pool

    def __post_init__(self) -> None:
        self.env = self.platform.clock.env
        mix, profile = self.streams.mix, self.profile
        self.quality = WeightedPick(list(profile.quality), list(profile.quality.values()), mix)
        self.surface = WeightedPick(list(profile.surface), list(profile.surface.values()), mix)
        self.length = sampler(profile.length, self.streams.length)

    # -- events: the webhook a real client would receive ------------------------------------

    def _on_event(self, event: Event) -> None:
        session_id = event.subject
        waiter = self._waiters.pop(session_id, None) if session_id is not None else None
        if waiter is not None and not waiter.triggered:
            waiter.succeed(event.type)

    # -- arrivals ---------------------------------------------------------------------------

    def _next_client(self) -> int:
        self._count += 1
        return self._count

    def start_session_client(self, org: OrgHandle) -> None:
        quality = self.quality()
        surface = self.surface()
        length = self.length()
        self.env.process(self._session_client(self._next_client(), org, quality, surface, length))

    def start_run_client(self, org: OrgHandle, mix: RunMix) -> None:
        self.env.process(self._run_client(self._next_client(), org, mix))

    # -- one session's customer -------------------------------------------------------------

    def _session_body(
        self, client: int, quality: str, surface: str, length: float
    ) -> dict[str, Any]:
        profile = self.profile
        body: dict[str, Any] = {"avatar_id": profile.avatar_id, "quality": quality}
        if profile.idle_timeout_seconds is not None:
            body["idle_timeout_seconds"] = profile.idle_timeout_seconds
        limits = self.platform.config.limits
        body["max_duration_seconds"] = profile.max_duration_for(length, limits)
        if surface != "pipecat":
            body["transport"] = {
                "type": "livekit",
                "url": "wss://rtc.example",
                "room_name": f"room-{client}",
                "audio_source": profile.audio_source,
            }
        return body

    def _session_client(
        self, client: int, org: OrgHandle, quality: str, surface: str, length: float
    ) -> Generator[simpy.Event, Any, None]:
        arrived = float(self.env.now)
        body = self._session_body(client, quality, surface, length)
        platform, door = self.platform, self.door

        def create(caller: Caller, key: str | None) -> tuple[dict[str, Any], bool]:
            if surface == "api":
                params: dict[str, Any] = {"body": body}
                if key is not None:
                    params["idempotency_key"] = key
                answer = door.call("createSession", caller, params)
                return _json(answer.body), answer.replayed
            if surface == "pipecat":
                answer = door.call("createPipecatSession", caller, {"body": body})
                return _json(_json(answer.body)["session"]), False
            # Dashboard surfaces are created by the service's own front ends (GAP-SES-10).
            return platform.sessions.create(caller, body, billing_surface=surface), False

        idempotent = surface == "api" and self.behaviour.idempotency_keys
        key_index, caller = org.take_key()
        session, attempts, outcome = yield from self._attempts(
            client, org, key_index, caller, "createSession", surface, create, idempotent=idempotent
        )
        session_id = None if session is None else str(session["id"])
        self.tallies.client(arrived, "session", outcome, attempts)
        if self.clients is not None:
            self.clients.append(
                client=client, at=arrived, kind="session", organization=org.name,
                surface=surface, quality=quality, model=None, planned_length=length,
                attempts=attempts, resource_id=session_id, final_outcome=outcome,
            )  # fmt: skip
        if session_id is None:
            return
        waiter = self.env.event()
        self._waiters[session_id] = waiter
        happened = yield waiter
        if happened != "session.first_frame":
            return
        self._publish_audio(session_id, length)
        # The client hangs up after ``length`` unless the service ends the session first (idle
        # timeout, max duration, a lost worker), which it learns from the session.ended event.
        # One event is woken by whichever comes first (cheaper than a SimPy condition).
        wake = self.env.event()
        self._waiters[session_id] = wake

        def hang_up(_timer: simpy.Event) -> None:
            if not wake.triggered:
                wake.succeed(_HANG_UP)

        self.env.timeout(length).callbacks.append(hang_up)
        if (yield wake) != _HANG_UP or self._waiters.pop(session_id, None) is None:
            return  # the service ended it (at the same instant, at the latest)
        at = float(self.env.now)
        try:
            door.call("endSession", caller, {"session_id": session_id})
        except DomainError as error:  # pragma: no cover - the owner may always end its session
            outcome = error.code
        else:
            outcome = "ok"
        self._log(client, org, "endSession", None, key_index, 1, outcome, None, None, None,
                  session_id, at=at)  # fmt: skip

    def _publish_audio(self, session_id: str, length: float) -> None:
        """The customer talks in its rhythm until it hangs up: one call, whatever the length."""
        if self.talk is None:
            return
        until = float(self.env.now) + length
        self.platform.sessions.play_audio(
            session_id, self.talk, rng=self.streams.audio, until=until
        )

    # -- one run's customer -----------------------------------------------------------------

    def _run_client(
        self, client: int, org: OrgHandle, mix: RunMix
    ) -> Generator[simpy.Event, Any, None]:
        arrived = float(self.env.now)
        text = ("The quick brown fox jumps over the lazy dog. " * (mix.characters // 45 + 1))[
            : mix.characters
        ]
        body = {"input": {RUN_MODELS[mix.model]: text}}
        door = self.door

        def create(caller: Caller, key: str | None) -> tuple[dict[str, Any], bool]:
            params: dict[str, Any] = {"model_id": mix.model, "body": body}
            if key is not None:
                params["idempotency_key"] = key
            answer = door.call("createRun", caller, params)
            return _json(answer.body), answer.replayed

        key_index, caller = org.take_key()
        run, attempts, outcome = yield from self._attempts(
            client, org, key_index, caller, "createRun", None, create,
            idempotent=self.behaviour.idempotency_keys,
        )  # fmt: skip
        self.tallies.client(arrived, "run", outcome, attempts)
        if self.clients is not None:
            self.clients.append(
                client=client, at=arrived, kind="run", organization=org.name, surface=None,
                quality=None, model=mix.model, planned_length=None, attempts=attempts,
                resource_id=None if run is None else str(run["id"]), final_outcome=outcome,
            )  # fmt: skip

    # -- retries ----------------------------------------------------------------------------

    def _retryable(self, error: DomainError) -> bool:
        return error.code in self.behaviour.retry_on or error.type in self.behaviour.retry_on

    def _delay(self, attempt: int, error: DomainError) -> float:
        """Retry-After when the service gives one (and we honour it), else capped backoff."""
        behaviour = self.behaviour
        if behaviour.honour_retry_after and error.retry_after is not None:
            return float(error.retry_after)
        delay = min(
            behaviour.max_delay, behaviour.base_delay * behaviour.multiplier ** (attempt - 1)
        )
        if behaviour.jitter:
            delay *= 1.0 + self.streams.backoff.uniform(-behaviour.jitter, behaviour.jitter)
        return delay

    def _attempts(
        self,
        client: int,
        org: OrgHandle,
        key_index: int,
        caller: Caller,
        operation: str,
        surface: str | None,
        create: Callable[[Caller, str | None], tuple[dict[str, Any], bool]],
        *,
        idempotent: bool,
    ) -> Generator[simpy.Event, Any, tuple[dict[str, Any] | None, int, str]]:
        """Try ``create`` up to ``max_attempts`` times; returns (resource, attempts, outcome)."""
        # One key for every attempt of this client: that is what makes a retry safe.
        idem = f"scn-{client}" if idempotent else None
        attempt = 0
        while True:
            attempt += 1
            at = float(self.env.now)
            try:
                result, replayed = create(caller, idem)
            except DomainError as error:
                retry = attempt < self.behaviour.max_attempts and self._retryable(error)
                delay = self._delay(attempt, error) if retry else None
                self._log(
                    client, org, operation, surface, key_index, attempt, error.code, error.type,
                    error.retry_after, delay, None, idem, at=at,
                )  # fmt: skip
                if delay is None:
                    return None, attempt, error.code
                yield self.env.timeout(delay)
                continue
            outcome = "replayed" if replayed else "ok"
            self._log(
                client, org, operation, surface, key_index, attempt, outcome, None, None, None,
                str(result["id"]), idem, at=at,
            )  # fmt: skip
            return result, attempt, outcome

    def _log(
        self,
        client: int,
        org: OrgHandle,
        operation: str,
        surface: str | None,
        key: int,
        attempt: int,
        outcome: str,
        error_type: str | None,
        retry_after: float | None,
        delay: float | None,
        resource_id: str | None,
        idempotency_key: str | None = None,
        *,
        at: float | None = None,
    ) -> None:
        at = float(self.env.now) if at is None else at
        self.tallies.call(at, operation, outcome, attempt)
        if self.calls is not None:
            self.calls.append(
                at=at,
                client=client,
                operation=operation,
                surface=surface,
                organization=org.name,
                org_id=org.id,
                key=key,
                attempt=attempt,
                outcome=outcome,
                error_type=error_type,
                retry_after=retry_after,
                delay=delay,
                idempotency_key=idempotency_key,
                resource_id=resource_id,
            )
