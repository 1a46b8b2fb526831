"""Inbound audio, the idle timer and the worker's output buffer (GAP-SES-5, RES-TRN-2).

Audio is modelled as intervals (a talk-spurt or a stretch of silence of some duration), never as
20 ms frames: that keeps a session's cost independent of how long it talks. The client's
publisher is one timeline, so intervals published one after another play back to back.

Idle rule: an interval resets the idle timer at its end. In ``track`` mode every frame, silence
included, counts (the timer runs only while nothing is published); in ``data_stream`` mode silence
is never sent, so only speech counts. Each speech interval adds as much avatar output to the
worker's buffer; the buffer plays out in real time. Barge-in (``lk.clear_buffer``) drops what is
buffered; the seed has the client stop its upstream publisher first, so the inbound timeline is
cut at the same instant.

A client that talks in a rhythm hands over its whole talk-spurt pattern at once (``play``): speech
and silence alternating, each drawn from a distribution, from now until it stops (``until``).
Replaying a long conversation spurt by spurt would cost in proportion to its length; instead the
stream is observed at the one moment something depends on it (it stops, is cut by an end or a
barge-in, or new audio replaces it), and that observation draws the phase the stream is in, from
the stationary law of the alternating pattern (``observe``): speaking with probability
E[speech] / (E[speech] + E[silence]), inside an interval drawn length-biased and cut uniformly.
Until then the stream keeps the idle timer reset in ``track`` mode, and its pauses are part of
one conversation in ``data_stream`` mode: the timer counts from the last speech once the stream
stops. Cost: O(1) per pattern, whatever its length.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from sim.distributions import Distribution
from sim.rng import Draw, length_biased

__all__ = ["AudioKind", "AudioTrack", "Phase", "TalkSpurts", "observe"]

AudioKind = Literal["speech", "silence"]


@dataclass(frozen=True, slots=True)
class TalkSpurts:
    """A speaker's rhythm: speech and silence intervals alternate, each from its distribution.

    What observing it needs of the two distributions (their means, their length-biased draws)
    is bound once here, because a pattern is built once per scenario and observed once per
    talking session."""

    speech: Distribution
    silence: Distribution
    speech_mean: float = field(init=False, repr=False, compare=False)
    both_means: float = field(init=False, repr=False, compare=False)  # speech + silence
    speech_length: Draw = field(init=False, repr=False, compare=False)  # length-biased
    silence_length: Draw = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        speech, silence = self.speech.mean, self.silence.mean
        if speech + silence <= 0:
            raise ValueError("speech and silence cannot both have a mean of 0")
        # A frozen dataclass sets its derived fields through ``object.__setattr__``.
        object.__setattr__(self, "speech_mean", speech)
        object.__setattr__(self, "both_means", speech + silence)
        object.__setattr__(self, "speech_length", length_biased(self.speech))
        object.__setattr__(self, "silence_length", length_biased(self.silence))


class Phase(NamedTuple):
    """Where a talk-spurt stream is at one moment: speaking or not, for how long so far, and how
    long the current interval still lasts."""

    speaking: bool
    elapsed: float
    remaining: float


def observe(pattern: TalkSpurts, rng: random.Random) -> Phase:
    """The phase of a stationary talk-spurt stream at a moment (see the module docstring)."""
    return Phase(*_phase(pattern, rng))


def _phase(pattern: TalkSpurts, rng: random.Random) -> tuple[bool, float, float]:
    """``observe``'s values as a plain tuple, for ``AudioTrack.cut``, which unpacks them at
    once."""
    speaking = rng.random() * pattern.both_means < pattern.speech_mean
    length = (pattern.speech_length if speaking else pattern.silence_length)(rng)
    into = rng.random() * length
    return speaking, into, length - into


@dataclass(slots=True)
class _Stream:
    pattern: TalkSpurts
    rng: random.Random
    start: float
    until: float | None  # None: until it is cut


@dataclass(slots=True)
class AudioTrack:
    """The audio state of one running session, in simulated seconds."""

    resets_on_silence: bool
    started_at: float
    cursor: float  # end of the inbound timeline published so far
    idle_reset_at: float  # latest moment that reset the idle timer
    output_end: float  # moment the buffered avatar output has played out
    stream: _Stream | None = None  # a talk-spurt pattern being played

    @classmethod
    def start(cls, at: float, *, resets_on_silence: bool) -> AudioTrack:
        """Begin tracking at the first frame: the idle timer starts counting from here."""
        return cls(
            resets_on_silence=resets_on_silence,
            started_at=at,
            cursor=at,
            idle_reset_at=at,
            output_end=at,
        )

    # -- explicit intervals ----------------------------------------------------------------

    def receive(self, now: float, kind: AudioKind, duration: float) -> tuple[float, float]:
        """Append one interval to the publisher's timeline; returns its (start, end).

        A talk-spurt stream still playing stops here: the publisher now sends this instead.
        """
        if duration < 0:
            raise ValueError("an audio interval cannot have a negative duration")
        self.cut(now)
        start = max(now, self.cursor)
        end = start + duration
        self.cursor = end
        if kind == "speech" or self.resets_on_silence:
            self.idle_reset_at = max(self.idle_reset_at, end)
        if kind == "speech":
            self.output_end = max(now, self.output_end) + duration
        return start, end

    # -- talk-spurt streams ----------------------------------------------------------------

    def play(
        self, now: float, pattern: TalkSpurts, rng: random.Random, until: float | None
    ) -> None:
        """Publish ``pattern`` after what is already on the timeline, until ``until`` (or until
        it is cut). A stream still playing stops at ``now``."""
        if self.stream is not None:
            self.cut(now)
        # ``max``/``min`` below written as conditionals with the same ties: each builtin call
        # parses its arguments like a keyword call.
        cursor = self.cursor
        start = cursor if cursor > now else now  # max(now, cursor)
        if until is not None and until <= start:
            return
        self.stream = _Stream(pattern, rng, start, until)

    def cut(self, now: float) -> None:
        """Stop a playing stream at ``now`` (or at its planned end, if earlier)."""
        stream = self.stream
        if stream is None:
            return
        self.stream = None
        until = stream.until
        stop = now if until is None or not until < now else until  # min(now, until)
        if stop <= stream.start:
            return  # it never started: the timeline ahead of it was still playing
        speaking, elapsed, remaining = _phase(stream.pattern, stream.rng)
        self.cursor = stop
        reset = self.idle_reset_at
        if speaking:
            self.idle_reset_at = stop if stop > reset else reset  # max(reset, stop)
            end, output = stop + remaining, self.output_end
            self.output_end = end if end > output else output
        elif self.resets_on_silence:
            self.idle_reset_at = stop if stop > reset else reset
        elif stop - elapsed > stream.start:  # the silence began after some speech
            began = stop - elapsed
            self.idle_reset_at = began if began > reset else reset

    def _settle(self, now: float) -> None:
        stream = self.stream
        if stream is not None and stream.until is not None and stream.until <= now:
            self.cut(stream.until)

    # -- what the worker sees --------------------------------------------------------------

    def buffered(self, now: float) -> float:
        """Seconds of avatar output still waiting to be played at ``now`` (a playing stream
        counts once it is cut)."""
        self._settle(now)
        left = self.output_end - now
        return left if left > 0.0 else 0.0  # max(0.0, left), as in ``play``

    def clear(self, now: float) -> float:
        """Barge-in: cut the inbound timeline and drop the buffer; returns the seconds dropped."""
        self.cut(now)
        dropped = self.buffered(now)
        self.output_end = min(self.output_end, now)
        self.cursor = min(self.cursor, now)
        self.idle_reset_at = max(min(self.idle_reset_at, now), self.started_at)
        return dropped

    def idle_deadline(self, idle_timeout: float, now: float | None = None) -> float:
        """When the idle timer fires unless more audio arrives.

        While a stream plays: in ``track`` mode its frames keep resetting the timer until it
        stops; in ``data_stream`` mode the deadline depends on when its last speech ended, known
        once it stops, so its planned end is when to look again.
        """
        stream = self.stream
        until = None if stream is None else stream.until
        if until is not None and now is not None and until <= now:  # ``_settle``, inlined
            self.cut(until)
            stream = self.stream
        if stream is None:
            return self.idle_reset_at + idle_timeout
        if stream.until is None:
            return math.inf
        return stream.until + idle_timeout if self.resets_on_silence else stream.until
