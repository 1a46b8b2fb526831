"""The scenario's customers as callbacks on the platform's own SimPy environment.

Why on the platform's environment: the clients then live on the same virtual clock as the
service, so a backoff of 2 s is 2 simulated seconds and every run is deterministic. Clients
reach the service only through ``Platform.call`` (the contract operations) except for what the
contract leaves to the transport or the dashboard: the audio they publish (``play_audio``) and
sessions of the non-API surfaces (playground, embed, ...), which GAP-SES-10 says only exist
through the Python API. They learn that a session started or ended the way a real integration
does, from the service's events (the ``session.first_frame`` webhook), never by polling.

Why callbacks and not one SimPy process per client: a client mostly waits (for a backoff, for its
session's first frame, for its planned length to pass) and then does one thing. A process pays
for every wait with SimPy events and generator resumes (its start, an event per webhook it
awaits, its end: about five events per session on top of the timers); a small object whose
methods are the timers' callbacks, and which the event handler finds by session id, pays only
for the timers themselves. A session client schedules one event of its own, the hang-up
(plus one per retry): the create runs at the arrival, the first frame and the end arrive as the
service's events. The client reacts within the event's delivery, at the same instant: its audio
reaches the session before the service first checks the session's deadlines.

Cost per session is constant: one create (plus retries), one timer for the planned length and
one end call. The talk-spurt pattern is handed to the session in one call at the first frame
(``play_audio``, GAP-SES-5), whatever the session's length, and schedules no events.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.runner.arrivals import RecordedSession
from harness.runner.door import Door
from harness.runner.picks import WeightedPick
from harness.runner.records import CallLog, CallRecorder, ClientLog, ClientRecorder, Tallies
from harness.scenarios.parts import RUN_MODELS, ClientBehaviour, RunMix, SessionProfile
from sim.accounts import Caller
from sim.clock import Clock, Timer
from sim.config import LimitsConfig
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


#: Whether a session's client asks for the answers it does not read (it reads only the created
#: session's id). ``False`` takes the platform's unread forms, a fast path (``Platform.call``'s
#: ``reads_body``); ``True`` is their reference, every answer rendered (``make bench`` prints
#: what the fast path saves a month).
READS_BODIES = False

_FIRST_FRAME = "session.first_frame"
#: The events a session's client reacts to: its first frame, or an end it did not ask for.
_WATCHED = (_FIRST_FRAME, "session.failed", "session.canceled", "session.ended")


@dataclass(slots=True)
class OrgHandle:
    """One organization as its clients see it: its keys, used round-robin (each arriving
    client takes ``callers[next_key]`` and moves ``next_key`` on)."""

    name: str
    id: str
    plan: str
    callers: list[Caller]
    next_key: int = 0


@dataclass(slots=True)
class _Streams:
    mix: random.Random
    length: random.Random
    audio: random.Random
    backoff: random.Random


class _Client:
    """One arrival's creates: an attempt now, each retry a timer's callback, every request
    recorded. Subclasses say what is created (``create``) and what follows (``done``)."""

    __slots__ = (
        "arrived", "attempts", "caller", "idem", "key_index", "number", "org", "pool", "surface",
    )  # fmt: skip

    operation = ""  # the operationId every attempt is recorded under

    def __init__(
        self, pool: ClientPool, number: int, org: OrgHandle, surface: str | None, idempotent: bool
    ) -> None:
        self.pool = pool
        self.number = number
        self.org = org
        self.surface = surface  # the billing surface of a session create (recorded)
        self.arrived = pool.clock.now
        # The organization's keys round-robin (``OrgHandle.next_key``).
        index = org.next_key
        callers = org.callers
        org.next_key = index + 1 if index + 1 < len(callers) else 0
        self.key_index, self.caller = index, callers[index]
        # One key for every attempt of this client: that is what makes a retry safe.
        self.idem = f"{pool.key_prefix}{number}" if idempotent else None
        self.attempts = 0

    def create(self) -> tuple[dict[str, Any], bool]:
        """One attempt: the resource created and whether it was an idempotent replay."""
        raise NotImplementedError

    def done(self, resource: dict[str, Any] | None, outcome: str) -> None:
        """The creates are over: ``resource`` (``None``: every attempt refused), ``outcome``."""
        raise NotImplementedError

    def attempt(self, _timer: Timer | None = None) -> None:
        """Try to create; on a retryable refusal, try again after ``ClientPool.delay``."""
        pool, org = self.pool, self.org
        self.attempts = attempt = self.attempts + 1
        at = pool.clock.now
        try:
            result, replayed = self.create()
        except DomainError as error:
            delay = pool.delay(attempt, error)
            pool.record_call(
                at, self.number, self.operation, self.surface, org.name, org.id, self.key_index,
                attempt, error.code, error.type, error.retry_after, delay, self.idem, None,
            )  # fmt: skip
            if delay is None:
                self.done(None, error.code)
            else:
                pool.clock.call_after(delay, self.attempt)
            return
        outcome = "replayed" if replayed else "ok"
        pool.record_call(
            at, self.number, self.operation, self.surface, org.name, org.id, self.key_index,
            attempt, outcome, None, None, None, self.idem, str(result["id"]),
        )  # fmt: skip
        self.done(result, outcome)


class _SessionClient(_Client):
    """A customer who starts a session, talks from its first frame and hangs up after its
    planned ``length``, unless the service ends the session first (idle timeout, maximum
    duration, a lost worker), which it learns from the session's events."""

    __slots__ = ("body", "length", "quality", "session_id")

    operation = "createSession"

    def __init__(
        self,
        pool: ClientPool,
        number: int,
        org: OrgHandle,
        quality: str,
        surface: str,
        length: float,
    ) -> None:
        super().__init__(pool, number, org, surface, surface == "api" and pool.idempotency_keys)
        self.quality = quality
        self.length = length
        self.body: dict[str, Any] | None = pool.session_body(number, quality, surface, length)
        self.session_id: str | None = None

    def create(self) -> tuple[dict[str, Any], bool]:
        surface, body, pool = self.surface, self.body, self.pool
        if surface == "api":
            params: dict[str, Any] = {"body": body}
            if self.idem is not None:
                params["idempotency_key"] = self.idem
            # The client reads only the id (``done``): the platform renders no more of it.
            answer = pool.door.call("createSession", self.caller, params, reads_body=READS_BODIES)
            return _json(answer.body), answer.replayed
        if surface == "pipecat":
            answer = pool.door.call("createPipecatSession", self.caller, {"body": body})
            return _json(_json(answer.body)["session"]), False
        # Dashboard surfaces are created by the service's own front ends (GAP-SES-10).
        assert surface is not None  # a session client always has one
        created = pool.platform.sessions.create(
            self.caller, body, billing_surface=surface, render=READS_BODIES
        )
        return created, False

    def done(self, resource: dict[str, Any] | None, outcome: str) -> None:
        pool = self.pool
        self.body = None  # sent for good: nothing to keep while the session runs
        session_id = None if resource is None else str(resource["id"])
        pool.record_client(
            self.number, self.arrived, "session", self.org.name, self.surface, self.quality, None,
            self.length, self.attempts, session_id, outcome,
        )  # fmt: skip
        if session_id is not None:
            self.session_id = session_id
            pool.live[session_id] = self  # until the service or the client ends it

    def first_frame(self, at: float | None = None) -> None:
        """The session runs since ``at`` (default: now): talk until the planned length has
        passed since then, then hang up."""
        pool = self.pool
        now = pool.clock.now
        until = (now if at is None else at) + self.length
        if pool.talk is not None:
            assert self.session_id is not None
            pool.platform.sessions.play_audio(
                self.session_id, pool.talk, rng=pool.streams.audio, until=until
            )
        timer = Timer()
        timer.callbacks, timer.value = _ON_HANG_UP, self
        pool.clock.after(until - now, timer)

    @staticmethod
    def hang_up(timer: Timer) -> None:
        """The planned length has passed (``timer.value`` is the client): end the session,
        unless the service already did. A static method so that one callbacks list serves
        every hang-up timer."""
        client: _SessionClient = timer.value
        pool = client.pool
        session_id = client.session_id
        assert session_id is not None
        if pool.live.pop(session_id, None) is None:
            return  # the service ended it (at this instant, at the latest)
        at = pool.clock.now
        try:
            pool.door.call(
                "endSession", client.caller, {"session_id": session_id}, reads_body=READS_BODIES
            )
        except DomainError as error:  # pragma: no cover - the owner may always end its session
            outcome = error.code
        else:
            outcome = "ok"
        org = client.org
        pool.record_call(
            at, client.number, "endSession", None, org.name, org.id, client.key_index, 1, outcome,
            None, None, None, None, session_id,
        )  # fmt: skip


#: The callbacks of every hang-up timer (one list serves them all: ``Timer``).
_ON_HANG_UP: list[Callable[[Timer], None]] = [_SessionClient.hang_up]


@functools.cache
def _prompt(characters: int) -> str:
    """A run's prompt of ``characters`` characters: one text for every run that asks as many,
    which the service keeps with each run as its input."""
    return ("The quick brown fox jumps over the lazy dog. " * (characters // 45 + 1))[:characters]


class _RunClient(_Client):
    """A customer who creates one model run (with retries) and is done."""

    __slots__ = ("body", "mix")

    operation = "createRun"

    def __init__(self, pool: ClientPool, number: int, org: OrgHandle, mix: RunMix) -> None:
        super().__init__(pool, number, org, None, pool.idempotency_keys)
        self.mix = mix
        self.body = {"input": {RUN_MODELS[mix.model]: _prompt(mix.characters)}}

    def create(self) -> tuple[dict[str, Any], bool]:
        params: dict[str, Any] = {"model_id": self.mix.model, "body": self.body}
        if self.idem is not None:
            params["idempotency_key"] = self.idem
        answer = self.pool.door.call("createRun", self.caller, params)
        return _json(answer.body), answer.replayed

    def done(self, resource: dict[str, Any] | None, outcome: str) -> None:
        self.pool.record_client(
            self.number, self.arrived, "run", self.org.name, None, None, self.mix.model, None,
            self.attempts, None if resource is None else str(resource["id"]), outcome,
        )  # fmt: skip


@dataclass(slots=True)
class ClientPool:
    """Starts one client per arrival and records what each one did: every request and arrival
    (``calls``, ``clients``; ``None`` when the run keeps only tallies) and the tallies: counted
    as they happen without logs, counted from the logs when read with them (``tallies``)."""

    platform: Platform
    behaviour: ClientBehaviour
    profile: SessionProfile
    streams: _Streams
    counted: Tallies  # what ``tallies`` gives when the run keeps no logs
    door: Door  # the platform itself, or its HTTP facade (harness.runner.door)
    calls: CallLog | None = None
    clients: ClientLog | None = None
    talk: TalkSpurts | None = None
    #: Draws the organization of an arrival that names none (set by whoever starts arrivals).
    organizations: WeightedPick[OrgHandle] | None = None
    # Bound once: the platform's clock, the quality and surface picks, the length sampler,
    # what every session body shares, whether creates carry idempotency keys, and where a
    # request and an arrival are recorded: the logs' ``append`` or the tallies' counters, with
    # the same arguments.
    clock: Clock = field(init=False)
    quality: WeightedPick[str] = field(init=False)
    surface: WeightedPick[str] = field(init=False)
    length: Sampler = field(init=False)
    limits: LimitsConfig = field(init=False)
    idempotency_keys: bool = field(init=False)
    record_call: CallRecorder = field(init=False)
    record_client: ClientRecorder = field(init=False)
    #: The session clients whose session is under way, by session id: the event handler's
    #: address book. A client leaves it when it hangs up or the service ends its session.
    live: dict[str, _SessionClient] = field(default_factory=dict)
    _count: int = 0
    _derived: tuple[int, int, Tallies] | None = None  # the logs' lengths, their tallies
    #: What every idempotency key starts with (a replay's own, so that it never reuses the
    #: keys the same scenario's clients sent a deployment before).
    key_prefix: str = "scn-"

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
        key_prefix: str = "scn-",
    ) -> ClientPool:
        """A pool on ``platform``; ``logs=False`` keeps only the tallies per ``interval``;
        ``key_prefix`` starts every idempotency key."""
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
            key_prefix=key_prefix,
        )
        platform.kernel.events.subscribe(pool._on_event, types=_WATCHED)
        return pool

    def __post_init__(self) -> None:
        self.clock = self.platform.clock
        mix, profile = self.streams.mix, self.profile
        self.quality = WeightedPick(list(profile.quality), list(profile.quality.values()), mix)
        self.surface = WeightedPick(list(profile.surface), list(profile.surface.values()), mix)
        self.length = sampler(profile.length, self.streams.length)
        self.limits = self.platform.config.limits
        self.idempotency_keys = self.behaviour.idempotency_keys
        calls, clients = self.calls, self.clients
        self.record_call = self.counted.request if calls is None else calls.append
        self.record_client = self.counted.arrival if clients is None else clients.append

    @property
    def tallies(self) -> Tallies:
        """Requests and arrivals per interval: counted as they happened, or from the logs."""
        calls, clients = self.calls, self.clients
        if calls is None or clients is None:
            return self.counted
        derived = self._derived
        if derived is None or derived[:2] != (len(calls), len(clients)):
            tallies = Tallies.of(self.counted.interval, calls, clients)
            derived = self._derived = (len(calls), len(clients), tallies)
        return derived[2]

    # -- events: the webhook a real client would receive ------------------------------------

    def _on_event(self, event: Event) -> None:
        session_id = event.subject
        if session_id is None:
            return
        if event.type == _FIRST_FRAME:
            self.session_started(session_id)
        else:
            self.session_over(session_id)

    def session_started(self, session_id: str, at: float | None = None) -> None:
        """``session_id`` had its first frame at ``at`` (default: now): its client talks and
        hangs up its planned length after. The platform's events say it in process; a client
        of a deployment learns it by asking (``harness.traffic.replay``)."""
        client = self.live.get(session_id)
        if client is not None:
            client.first_frame(at)

    def session_over(self, session_id: str) -> None:
        """The service ended ``session_id``: its client, if still waiting, will not hang up."""
        self.live.pop(session_id, None)

    # -- arrivals: each client makes its first attempt at once ------------------------------

    def start_session_client(self, org: OrgHandle | None) -> None:
        """A session client arrives now, from ``org`` (``None``: drawn from ``organizations``)."""
        if org is None:
            if self.organizations is None:
                raise ValueError("an arrival without organization needs the pool's organizations")
            org = self.organizations()
        quality = self.quality()
        surface = self.surface()
        length = self.length()
        self._count = number = self._count + 1
        _SessionClient(self, number, org, quality, surface, length).attempt()

    def start_recorded_client(self, org: OrgHandle | None, session: RecordedSession) -> None:
        """A recorded session's client arrives now, from ``org`` (``None``: drawn from
        ``organizations``), asking for the recorded quality and surface and keeping the
        session for its recorded length (drawn from the profile when it has none)."""
        if org is None:
            if self.organizations is None:
                raise ValueError("an arrival without organization needs the pool's organizations")
            org = self.organizations()
        length = self.length() if session.length is None else session.length
        self._count = number = self._count + 1
        _SessionClient(self, number, org, session.quality, session.surface, length).attempt()

    def start_run_client(self, org: OrgHandle, mix: RunMix) -> None:
        self._count = number = self._count + 1
        _RunClient(self, number, org, mix).attempt()

    def session_body(
        self, client: int, quality: str, surface: str, length: float
    ) -> dict[str, Any]:
        """What client number ``client`` asks for: a fresh body (the service may keep it)."""
        profile = self.profile
        body: dict[str, Any] = {"avatar_id": profile.avatar_id, "quality": quality}
        if profile.idle_timeout_seconds is not None:
            body["idle_timeout_seconds"] = profile.idle_timeout_seconds
        body["max_duration_seconds"] = profile.max_duration_for(length, self.limits)
        if surface != "pipecat":
            body["transport"] = {
                "type": "livekit",
                "url": "wss://rtc.example",
                "room_name": f"room-{client}",
                "audio_source": profile.audio_source,
            }
        return body

    # -- retries and records ----------------------------------------------------------------

    def _retryable(self, error: DomainError) -> bool:
        return error.code in self.behaviour.retry_on or error.type in self.behaviour.retry_on

    def delay(self, attempt: int, error: DomainError) -> float | None:
        """How long to wait before the next attempt after ``error`` (``None``: give up):
        Retry-After when the service gives one (and we honour it), else capped backoff."""
        behaviour = self.behaviour
        if attempt >= behaviour.max_attempts or not self._retryable(error):
            return None
        if behaviour.honour_retry_after and error.retry_after is not None:
            return float(error.retry_after)
        delay = min(
            behaviour.max_delay, behaviour.base_delay * behaviour.multiplier ** (attempt - 1)
        )
        if behaviour.jitter:
            delay *= 1.0 + self.streams.backoff.uniform(-behaviour.jitter, behaviour.jitter)
        return delay
