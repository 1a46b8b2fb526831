"""Prefixed, time-ordered ids: ``sess_01J…``, ``run_…``, ``req_…``.

The time part of each ULID is the simulated time, and the random part comes from the seeded
``ids`` stream, so the same seed gives the same ids. API keys and secrets are base62 strings drawn
from the same stream.

High-volume records (events, ledger rows) keep only the 80 random bits drawn when they were
written (``IdFactory.draw``) next to their simulated time, and format the id when they are read
(``format_id``): the same bits and the same millisecond give the same string, so an id read later
is exactly the one that would have been written at once.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from functools import partial

from sim.clock import Clock

__all__ = ["PREFIXES", "IdFactory", "format_id", "format_ulid", "format_value"]

#: Every id prefix the service hands out, by resource.
PREFIXES: dict[str, str] = {
    "session": "sess_",
    "avatar": "av_",
    "run": "run_",
    "asset": "asset_",
    "request": "req_",
    "event": "evt_",
    "run_deletion": "rdel_",
    "organization": "org_",
    "embed": "emb_",
    "webhook_endpoint": "we_",
    "delivery": "whd_",
    "ledger_entry": "le_",
    "message": "msg_",
}

_BASE62 = string.digits + string.ascii_letters


# Crockford's base32, two characters per 10 bits: a ULID is 13 table lookups. python-ulid's
# encoder (the reference: the tests check every id against it) builds an object and two lists
# per id, a noticeable share of a session's cost when millions of ids are made.
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)


def _encode(value: int) -> str:
    # The 13 pairs written out: a third cheaper than a comprehension over the shifts.
    p = _PAIRS
    return "".join(
        (
            p[value >> 120],
            p[(value >> 110) & 0x3FF],
            p[(value >> 100) & 0x3FF],
            p[(value >> 90) & 0x3FF],
            p[(value >> 80) & 0x3FF],
            p[(value >> 70) & 0x3FF],
            p[(value >> 60) & 0x3FF],
            p[(value >> 50) & 0x3FF],
            p[(value >> 40) & 0x3FF],
            p[(value >> 30) & 0x3FF],
            p[(value >> 20) & 0x3FF],
            p[(value >> 10) & 0x3FF],
            p[value & 0x3FF],
        )
    )


def format_ulid(epoch_ms: int, randomness: int) -> str:
    """The 26-character ULID of a Unix millisecond and 80 random bits."""
    return _encode((epoch_ms << 80) | randomness)


def format_value(kind: str, value: int) -> str:
    """The prefixed id of resource ``kind`` from a whole 128-bit ULID value."""
    return PREFIXES[kind] + _encode(value)


def format_id(kind: str, epoch_ms: int, randomness: int) -> str:
    """The prefixed id of resource ``kind`` (a key of ``PREFIXES``)."""
    return PREFIXES[kind] + format_ulid(epoch_ms, randomness)


class IdFactory:
    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self._clock = clock
        self._env = clock.env
        self._epoch_us = clock.epoch_us
        self._rng = rng
        self._at: float | None = None  # the instant whose millisecond is cached
        self._shifted = 0  # its Unix millisecond, shifted into the time part of a ULID
        #: ``draw()``: the random part of an id made now; ``format_id`` with the time makes the
        #: id. Bound to the stream's ``getrandbits(80)`` directly (C code): every event draws
        #: one, and a method around it cost a Python frame per event.
        self.draw: Callable[[], int] = partial(rng.getrandbits, 80)

    def value(self) -> int:
        """A ULID made now, as its 128-bit integer (``format_ulid`` of its parts reads it).

        ``Clock.epoch_ms(now)`` written out (a test holds them equal): every session and ledger
        row takes an id, and the three calls behind the property and the method were most of
        what an id cost."""
        now = self._env._now
        if now != self._at:
            ms = int((self._epoch_us + round(now * 1_000_000)) / 1_000_000 * 1000)
            self._at, self._shifted = now, ms << 80
        return self._shifted | self._rng.getrandbits(80)

    def ulid(self) -> str:
        return _encode(self.value())

    def new(self, kind: str) -> str:
        """A fresh id for resource ``kind`` (a key of ``PREFIXES``)."""
        # ``ulid()`` with ``value()`` written out: two calls fewer per id (every session).
        now = self._env._now
        if now != self._at:
            ms = int((self._epoch_us + round(now * 1_000_000)) / 1_000_000 * 1000)
            self._at, self._shifted = now, ms << 80
        return PREFIXES[kind] + _encode(self._shifted | self._rng.getrandbits(80))

    def token(self, prefix: str, length: int = 32) -> str:
        """A random base62 secret such as an API key (``sk_live_``) or webhook secret."""
        return prefix + "".join(self._rng.choice(_BASE62) for _ in range(length))
