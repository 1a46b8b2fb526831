"""Inbound audio, the idle timer and the worker's output buffer (GAP-SES-5, RES-TRN-2).

Audio is modelled as intervals (a talk-spurt or a stretch of silence of some duration), never as
20 ms frames: that keeps a session's cost independent of how long it talks. The client's
publisher is one timeline, so intervals injected one after another play back to back.

Idle rule: an interval resets the idle timer at its end. In ``track`` mode every frame, silence
included, counts (the timer runs only while nothing is published); in ``data_stream`` mode silence
is never sent, so only speech counts. Each speech interval adds as much avatar output to the
worker's buffer; the buffer plays out in real time. Barge-in (``lk.clear_buffer``) drops what is
buffered; the seed has the client stop its upstream publisher first, so the inbound timeline is
cut at the same instant.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["AudioKind", "AudioTrack"]

AudioKind = Literal["speech", "silence"]


@dataclass(slots=True)
class AudioTrack:
    """The audio state of one running session, in simulated seconds."""

    resets_on_silence: bool
    started_at: float
    cursor: float  # end of the inbound timeline published so far
    idle_reset_at: float  # latest moment that reset the idle timer
    output_end: float  # moment the buffered avatar output has played out
    speech_seconds: float = 0.0
    intervals: int = 0

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

    def receive(self, now: float, kind: AudioKind, duration: float) -> tuple[float, float]:
        """Append one interval to the publisher's timeline; returns its (start, end)."""
        if duration < 0:
            raise ValueError("an audio interval cannot have a negative duration")
        start = max(now, self.cursor)
        end = start + duration
        self.cursor = end
        self.intervals += 1
        if kind == "speech" or self.resets_on_silence:
            self.idle_reset_at = max(self.idle_reset_at, end)
        if kind == "speech":
            self.output_end = max(now, self.output_end) + duration
            self.speech_seconds += duration
        return start, end

    def buffered(self, now: float) -> float:
        """Seconds of avatar output still waiting to be played at ``now``."""
        return max(0.0, self.output_end - now)

    def clear(self, now: float) -> float:
        """Barge-in: drop the buffer and cut the inbound timeline; returns the seconds dropped."""
        dropped = self.buffered(now)
        self.output_end = min(self.output_end, now)
        self.cursor = min(self.cursor, now)
        self.idle_reset_at = max(min(self.idle_reset_at, now), self.started_at)
        return dropped

    def idle_deadline(self, idle_timeout: float) -> float:
        """When the idle timer fires unless more audio arrives."""
        return self.idle_reset_at + idle_timeout
