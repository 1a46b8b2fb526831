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


# Crockford's base32, two characters per 10 bits from a table of pairs: a ULID's text is 13
# lookups (the tests check every id against python-ulid's encoder).
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)
_LOW_40 = (1 << 40) - 1
_LOW_80 = (1 << 80) - 1


def _encode_time(epoch_ms: int) -> str:
    """The first 10 characters of a ULID: its 48-bit millisecond (and two zero bits)."""
    p = _PAIRS
    return "".join(
        (
            p[epoch_ms >> 40],
            p[(epoch_ms >> 30) & 0x3FF],
            p[(epoch_ms >> 20) & 0x3FF],
            p[(epoch_ms >> 10) & 0x3FF],
            p[epoch_ms & 0x3FF],
        )
    )


def _encode_random(bits: int) -> str:
    """The last 16 characters of a ULID: its 80 random bits, in two 40-bit halves."""
    p, high, low = _PAIRS, bits >> 40, bits & _LOW_40
    return "".join(
        (
            p[high >> 30],
            p[(high >> 20) & 0x3FF],
            p[(high >> 10) & 0x3FF],
            p[high & 0x3FF],
            p[low >> 30],
            p[(low >> 20) & 0x3FF],
            p[(low >> 10) & 0x3FF],
            p[low & 0x3FF],
        )
    )


def _encode(value: int) -> str:
    """The 26-character ULID of a whole 128-bit value."""
    return _encode_time(value >> 80) + _encode_random(value & _LOW_80)


def format_ulid(epoch_ms: int, randomness: int) -> str:
    """The 26-character ULID of a Unix millisecond and 80 random bits."""
    return _encode_time(epoch_ms) + _encode_random(randomness)


def format_value(kind: str, value: int) -> str:
    """The prefixed id of resource ``kind`` from a whole 128-bit ULID value."""
    return PREFIXES[kind] + _encode(value)


def format_id(kind: str, epoch_ms: int, randomness: int) -> str:
    """The prefixed id of resource ``kind`` (a key of ``PREFIXES``)."""
    return PREFIXES[kind] + _encode_time(epoch_ms) + _encode_random(randomness)


class IdFactory:
    def __init__(self, clock: Clock, rng: random.Random) -> None:
        self._clock = clock
        self._rng = rng
        #: ``draw()``: the random part of an id made now; ``format_id`` with the time makes the
        #: id (records that keep raw values draw it and format the id when read).
        self.draw: Callable[[], int] = partial(rng.getrandbits, 80)

    def value(self) -> int:
        """A ULID made now, as its 128-bit integer (``format_ulid`` of its parts reads it)."""
        return self._clock.epoch_ms() << 80 | self._rng.getrandbits(80)

    def new(self, kind: str) -> str:
        """A fresh id for resource ``kind`` (a key of ``PREFIXES``)."""
        bits = self._rng.getrandbits(80)  # ``format_id``'s text of now and these bits
        return PREFIXES[kind] + _encode_time(self._clock.epoch_ms()) + _encode_random(bits)

    def token(self, prefix: str, length: int = 32) -> str:
        """A random base62 secret such as an API key (``sk_live_``) or webhook secret."""
        choice = self._rng.choice
        return prefix + "".join([choice(_BASE62) for _ in range(length)])
