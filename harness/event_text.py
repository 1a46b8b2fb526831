"""The events table's ``data`` column, written column by column with Arrow (NB-2, PERF-2).

A month at ``records: full`` has about six session events per session, each a few hundred bytes
of JSON that differ from the session's other events in a few fields only. Writing each text with
one Python call per event (``SessionEvents.text``) cost about two seconds per 100,000 sessions;
here every slot of the texts' layout (``SessionEvents.layout``) is filled for a block of events at
once, by Arrow: what is the same for all of a session's events once per session (read in bulk
from the store's columns), what varies by status, usage or the event's own value per event, and
the literal text by event type. The texts are the ones ``SessionEvents.text`` writes (a test
holds the two paths equal); events that are not in the columns (other producers' events, payloads
kept whole) are written one by one by the caller's function and put in their places.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from operator import itemgetter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from harness.columns import POOL, codes, floats, unix_us
from sim.clock import Clock
from sim.events import EventLog
from sim.lifecycle import STATUSES
from sim.sessions.events import EVENT_SLOTS, SHOWN_IN, Layout, SessionEvents, Slot
from sim.sessions.store import SessionStore

__all__ = ["event_texts", "json_texts", "session_field_columns", "stamps"]

_TEXT = pa.large_string()
#: Events whose texts are assembled at a time: a multiple of 1,024 (``harness.columns``'s text
#: chunks), large enough that Arrow's per-call cost is small, small enough that a block's slot
#: columns take a few tens of megabytes.
_BLOCK = 16_384
#: Blocks assembled at once, each in its own thread: Arrow's kernels run without the
#: interpreter's lock, so two blocks take about the time of one on two cores.
_WORKERS = 2


def _literal(text: str) -> pa.Scalar:
    return pa.scalar(text, type=_TEXT)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def json_texts(values: Sequence[Any]) -> list[str]:
    """The JSON text of each value (``json.dumps`` with sorted keys, compact), with a C-level
    function mapped over the values when they are all strings, all finite floats or all ints
    (the common columns), and ``json.dumps`` per value otherwise."""
    kinds = set(map(type, values))
    if kinds <= {type(None)}:
        return ["null"] * len(values)
    if kinds <= {str}:
        return list(map(encode_basestring_ascii, values))
    if kinds <= {float} and all(map(math.isfinite, values)):
        return list(map(float.__repr__, values))
    if kinds <= {int}:
        return list(map(int.__repr__, values))
    return [_dumps(value) for value in values]


def stamps(clock: Clock, seconds: np.ndarray[Any, Any]) -> pa.Array:
    """The JSON text of ``Clock.timestamp`` of each instant (quoted), ``null`` for NaN.

    Written as bytes into one buffer, as ``harness.columns.ulids`` writes ids: ``Clock``'s
    arithmetic (microseconds rounded half to even, ``unix_us``, then floored to the
    millisecond), each distinct day's ``YYYY-MM-DDT`` taken from ``Clock.timestamp`` of one of
    its instants, the time of day from integer digits. Arrow's ``strftime`` took about 1.4 us an
    instant, a fifth of a second for a month's three timestamps per session."""
    count = len(seconds)
    missing = np.isnan(seconds)
    known = np.where(missing, 0.0, seconds)
    ms = unix_us(clock, known) // 1000
    day, within = np.divmod(ms, 86_400_000)
    _days, first, inverse = np.unique(day, return_index=True, return_inverse=True)
    prefixes = "".join(clock.timestamp(float(known[i]))[:11] for i in first.tolist())
    chars = np.empty((count, 26), dtype=np.uint8)
    chars[:, 1:12] = np.frombuffer(prefixes.encode(), dtype=np.uint8).reshape(-1, 11)[inverse]
    hour, rest = np.divmod(within, 3_600_000)
    minute, rest = np.divmod(rest, 60_000)
    second, milli = np.divmod(rest, 1000)
    zero = ord("0")
    for column, value, width in ((12, hour, 2), (15, minute, 2), (18, second, 2), (21, milli, 3)):
        for place in range(width):
            chars[:, column + place] = zero + value // 10 ** (width - 1 - place) % 10
    for column, char in ((0, '"'), (14, ":"), (17, ":"), (20, "."), (24, "Z"), (25, '"')):
        chars[:, column] = ord(char)
    offsets = np.arange(0, (count + 1) * 26, 26, dtype=np.int64)
    text = pa.Array.from_buffers(_TEXT, count, [None, pa.py_buffer(offsets), pa.py_buffer(chars)])
    if not missing.any():
        return text
    return pc.if_else(pa.array(missing), _literal("null"), text, memory_pool=POOL)


def _texts(values: Sequence[str]) -> pa.Array:
    return pa.array(values, type=_TEXT, memory_pool=POOL)


def _taken(table: Sequence[str], picked: np.ndarray[Any, Any]) -> pa.Array:
    return pc.take(_texts(table), pa.array(picked.astype(np.int64)), memory_pool=POOL)


def _transports(store: SessionStore, rows: int) -> pa.Array:
    """Each session's ``transport`` text: for each shape (its keys), the values of its sessions
    one key at a time, joined in the keys' sorted order."""
    transports = store.transports[:rows]
    shapes = np.fromiter((t[0] for t in transports), dtype=np.int64, count=rows)
    found, first = np.unique(shapes, return_index=True)
    parts: list[pa.Array] = []
    order: list[np.ndarray[Any, Any]] = []
    for shape, row in zip(found.tolist(), first.tolist(), strict=True):
        keys = list(store.state(row).transport)
        picked = np.flatnonzero(shapes == shape)
        order.append(picked)
        if not keys:
            parts.append(_texts(["{}"] * len(picked)))
            continue
        selected = [transports[r] for r in picked.tolist()]
        items: list[Any] = []
        for index, key in enumerate(sorted(range(len(keys)), key=keys.__getitem__)):
            items.append(_literal(("{" if index == 0 else ",") + _dumps(keys[key]) + ":"))
            items.append(_texts(json_texts(list(map(itemgetter(key + 1), selected)))))
        items.append(_literal("}"))
        parts.append(pc.binary_join_element_wise(*items, _literal(""), memory_pool=POOL))
    joined = pa.concat_arrays(parts) if parts else _texts([])
    back = np.empty(rows, dtype=np.int64)
    if rows:
        back[np.concatenate(order)] = np.arange(rows)
    return pc.take(joined, pa.array(back), memory_pool=POOL)


def session_field_columns(
    events: SessionEvents, store: SessionStore, clock: Clock
) -> tuple[dict[str, pa.Array], np.ndarray[Any, Any]]:
    """``SessionEvents.session_fields`` of every session, one Arrow column per field, and where
    each session's row is in them.

    A finished session's fields are read in bulk from the store's columns; a live one's come
    from its working state, appended after the finished ones (``where[row]``: its index)."""
    rows = len(store)
    profiles = codes(store.profile_codes, rows)
    values = store.profiles.values
    errors = codes(store.error_codes, rows)
    vocabulary = store.reasons.values
    used = set(np.unique(errors).tolist()) - {0}
    metadata = store.metadata[:rows]
    columns: dict[str, pa.Array] = {
        "avatar_id": _taken(json_texts([p[2] for p in values]), profiles),
        "billing_surface": _taken(json_texts([p[4] for p in values]), profiles),
        "quality": _taken(json_texts([p[3] for p in values]), profiles),
        "idle_timeout_seconds": _taken(json_texts([p[5] for p in values]), profiles),
        "created_at": stamps(clock, floats(store.created_at)[:rows]),
        "started_at": stamps(clock, floats(store.started_at)[:rows]),
        "first_frame_at": stamps(clock, floats(store.first_frame_at)[:rows]),
        "error": _taken(
            [
                events.error_text(vocabulary[code] or None) if code in used else "null"
                for code in range(len(vocabulary))
            ],
            errors,
        ),
        "id": _texts(json_texts(store.ids[:rows])),
        "max_duration_seconds": _texts(json_texts(store.max_durations[:rows].tolist())),
        "metadata": _texts(["{}" if m is None else _dumps(m) for m in metadata]),
        "transport": _transports(store, rows),
    }
    where = np.arange(rows, dtype=np.int64)
    live = list(store.live_states())
    if live:
        fields = [events.session_fields(state) for state in live]
        for name, column in columns.items():
            columns[name] = pa.concat_arrays([column, _texts([f[name] for f in fields])])
        where[[state.number for state in live]] = rows + np.arange(len(live))
    return columns, where


@dataclass(frozen=True)
class _Part:
    """One part of the joined texts: a literal (the same for every type, or by type) or a slot,
    which some types may not have (``present``, by type: ``None`` when every type has it)."""

    literal: str | None = None
    by_type: tuple[str, ...] | None = None
    slot: str | None = None
    present: tuple[bool, ...] | None = None


def _supersequence(first: list[str], second: list[str]) -> list[str]:
    """A shortest sequence that has both sequences as subsequences (by their longest common
    subsequence)."""
    n, m = len(first), len(second)
    common = [[0] * (m + 1) for _ in range(n + 1)]
    for i in reversed(range(n)):
        for j in reversed(range(m)):
            common[i][j] = (
                common[i + 1][j + 1] + 1
                if first[i] == second[j]
                else max(common[i + 1][j], common[i][j + 1])
            )
    merged: list[str] = []
    i = j = 0
    while i < n and j < m:
        if first[i] == second[j]:
            merged.append(first[i])
            i, j = i + 1, j + 1
        elif common[i + 1][j] >= common[i][j + 1]:
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    return merged + first[i:] + second[j:]


def _parts(layouts: Sequence[Layout]) -> list[_Part]:
    """The layouts of every type as one sequence of parts: the slots of all of them (a shortest
    common supersequence of their slot names), each type's literal text before each."""
    split: list[tuple[list[str], list[str]]] = []  # per type: literals before each slot, slots
    for layout in layouts:
        gaps, slots = [""], []
        for item in layout:
            if isinstance(item, Slot):
                slots.append(item.name)
                gaps.append("")
            else:
                gaps[-1] += item
        split.append((gaps, slots))
    common: list[str] = []
    for _gaps, slots in split:
        common = _supersequence(common, slots)
    gaps_by_type, present_by_type = [], []
    for gaps, slots in split:
        aligned, present = [""] * (len(common) + 1), [False] * len(common)
        at = 0
        for index, name in enumerate(slots):
            at = common.index(name, at)
            aligned[at], present[at] = gaps[index], True
            at += 1
        aligned[-1] = gaps[-1]
        gaps_by_type.append(aligned)
        present_by_type.append(present)
    parts: list[_Part] = []
    for index in range(len(common) + 1):
        literals = tuple(g[index] for g in gaps_by_type)
        if len(set(literals)) == 1:
            if literals[0]:
                parts.append(_Part(literal=literals[0]))
        else:
            parts.append(_Part(by_type=literals))
        if index < len(common):
            having = tuple(p[index] for p in present_by_type)
            parts.append(_Part(slot=common[index], present=None if all(having) else having))
    return parts


def _sessional(part: _Part) -> bool:
    """Whether a part's text is the same in all of a session's events, whatever their type."""
    if part.slot is None:
        return part.by_type is None
    return part.slot not in EVENT_SLOTS and part.present is None


def _runs(parts: list[_Part]) -> list[list[_Part]]:
    """The parts in runs: each run of parts that are the same in all of a session's events
    (written once per session), and each other part alone."""
    runs: list[list[_Part]] = []
    for part in parts:
        if _sessional(part) and runs and all(map(_sessional, runs[-1])):
            runs[-1].append(part)
        else:
            runs.append([part])
    return runs


#: Each event's index into a part's pool, for the events ``start:stop`` (a block): worked out
#: a block at a time, so only the few whole-log columns it is read from are kept.
_Index = Callable[[int, int], np.ndarray[Any, Any]]
#: Where a part of the texts comes from: a literal, or ``pool[index(start, stop)]``.
_Source = str | tuple[pa.Array, _Index]


def _with_empty(pool: pa.Array, text: str = "") -> tuple[pa.Array, int]:
    """``pool`` with ``text`` appended, and where it is."""
    return pa.concat_arrays([pool, _texts([text])]), len(pool)


def _prefixed(literal: str, pool: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(_literal(literal), pool, _literal(""), memory_pool=POOL)


def _sliced(column: np.ndarray[Any, Any]) -> _Index:
    return lambda start, stop: column[start:stop]


def _either(
    chosen: np.ndarray[Any, Any], by: np.ndarray[Any, Any], index: _Index, other: int
) -> _Index:
    """``index`` where ``chosen[by[event]]``, ``other`` elsewhere."""
    return lambda start, stop: np.where(chosen[by[start:stop]], index(start, stop), other)


@dataclass
class _Events:
    """What the sources are read from, per event: its type (index into the layouts), session
    (its index in the session field columns), status code, usage seconds, and where its own
    value's text is in ``values``; the field columns, by session."""

    events: SessionEvents
    kind: np.ndarray[Any, Any]
    at: np.ndarray[Any, Any]
    status: np.ndarray[Any, Any]
    seconds: np.ndarray[Any, Any]
    ours: np.ndarray[Any, Any]
    fields: dict[str, pa.Array]
    values: pa.Array
    value_at: np.ndarray[Any, Any]


def _slot_source(part: _Part, data: _Events) -> tuple[pa.Array, _Index]:
    """The pool and index of a slot: a session's field (``null`` where its status does not
    show it), the status, the usage, the event's own value; ``""`` for types without it."""
    name = str(part.slot)
    index: _Index
    if name in SHOWN_IN:
        pool, null = _with_empty(data.fields[name], "null")
        shown = np.array([status in SHOWN_IN[name] for status in STATUSES])
        index = _either(shown, data.status, _sliced(data.at), null)
    elif name == "status":
        pool, index = _texts(json_texts(list(STATUSES))), _sliced(data.status)
    elif name == "usage":
        distinct = np.unique(data.seconds[data.ours])
        pool = _texts([data.events.usage_text(s) for s in distinct.tolist()] or ["null"])
        last, seconds = max(len(distinct) - 1, 0), data.seconds

        def index(start: int, stop: int) -> np.ndarray[Any, Any]:
            return np.minimum(np.searchsorted(distinct, seconds[start:stop]), last)

    elif name == "value":
        pool, index = data.values, _sliced(data.value_at)
    else:  # a session's field that some types do not show
        pool, index = data.fields[name], _sliced(data.at)
    if part.present is not None:
        pool, empty = _with_empty(pool)
        index = _either(np.array(part.present), data.kind, index, empty)
    return pool, index


def _value_texts(
    log: EventLog, kind: np.ndarray[Any, Any], ours: np.ndarray[Any, Any], valued: list[int]
) -> tuple[pa.Array, np.ndarray[Any, Any]]:
    """The texts of the ``value`` slot of every event of the ``valued`` types, one type at a
    time (the values of one type are of one Python type: one mapped call each), and where each
    event's is (0 for the others)."""
    values = log.values
    texts: list[str] = []
    at = np.zeros(len(kind), dtype=np.int32)
    for number in valued:
        picked = np.flatnonzero(ours & (kind == number))
        at[picked] = len(texts) + np.arange(len(picked))
        texts += json_texts([values[i] for i in picked.tolist()])
    return _texts(texts or ["null"]), at


def _sources(runs: list[list[_Part]], data: _Events) -> list[_Source]:
    """Each run's source. A run of literals just before a slot that every type has is written
    into that slot's pool instead (one part less per event)."""
    sources: list[_Source] = []
    pending = ""
    for run in runs:
        if all(part.literal is not None for part in run):
            pending += "".join(str(part.literal) for part in run)
            continue
        part = run[0]
        index: _Index
        if all(map(_sessional, run)):  # one text per session
            items = [
                _literal(p.literal) if p.literal is not None else data.fields[str(p.slot)]
                for p in run
            ]
            pool = pc.binary_join_element_wise(*items, _literal(""), memory_pool=POOL)
            index = _sliced(data.at)
        elif part.by_type is not None:
            pool, index = _texts(part.by_type), _sliced(data.kind)
        else:
            pool, index = _slot_source(part, data)
        if pending and (part.by_type is None and part.present is None):
            pool, pending = _prefixed(pending, pool), ""
        if pending:
            sources.append(pending)
            pending = ""
        sources.append((pool, index))
    if pending:
        sources.append(pending)
    return sources


def _classified(
    log: EventLog, events: SessionEvents, store: SessionStore
) -> tuple[np.ndarray[Any, Any], ...]:
    """Each event's type (its index in ``events.handles``), session row and status code, and
    whether it is assembled: a session type, a session of the store, a status of the
    lifecycle (the values of the others are zero)."""
    count = len(log)
    handles = codes(log.handles, count)
    rows = codes(log.rows, count)
    type_of = np.full(max(events.handles.values()) + 2, -1, dtype=np.int64)
    for index, handle in enumerate(events.handles.values()):
        type_of[handle] = index
    kind = type_of[np.minimum(handles, len(type_of) - 1)]
    try:
        statuses = pa.array(log.statuses[:count], type=_TEXT, memory_pool=POOL)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # another producer's values: not all text
        statuses = pa.array([s if type(s) is str else None for s in log.statuses[:count]], _TEXT)
    status = pc.index_in(statuses, value_set=pa.array(STATUSES, type=_TEXT), memory_pool=POOL)
    status_code = status.fill_null(-1).to_numpy().astype(np.int64)
    ours = (kind >= 0) & (rows < len(store)) & (status_code >= 0)
    kind[~ours], rows[~ours], status_code[~ours] = 0, 0, 0
    return kind.astype(np.int32), rows, status_code.astype(np.int32), ours


def event_texts(
    log: EventLog,
    events: SessionEvents,
    store: SessionStore,
    clock: Clock,
    other: Callable[[int], str],
    block: int = _BLOCK,
) -> pa.ChunkedArray:
    """The ``data`` text of every event of ``log``, in order, as a large_string column (chunks
    of ``block`` texts, a multiple of 1,024).

    Session events in the columns whose session is in ``store`` are assembled a block at a
    time: each part of their layouts taken for the block's events from its pool, then joined.
    ``other(index)`` writes every other event's text (one by one)."""
    count = len(log)
    kind, rows, status, ours = _classified(log, events, store)
    outside = np.flatnonzero(~ours)
    sources: list[_Source] = []
    if ours.any():
        layouts = [events.layout(type_) for type_ in events.handles]
        valued = [number for number, layout in enumerate(layouts) if Slot("value") in layout]
        values, value_at = _value_texts(log, kind, ours, valued)
        fields, where = session_field_columns(events, store, clock)
        at = where[rows].astype(np.int32)
        del rows, where
        seconds = np.frombuffer(log.seconds, dtype=np.uint32, count=count).copy()
        data = _Events(events, kind, at, status, seconds, ours, fields, values, value_at)
        sources = _sources(_runs(_parts(layouts)), data)
        del data, fields, values, value_at, at, seconds
    starts = range(0, count, block)
    # The texts not assembled, written first, one by one, in this thread (the caller's
    # function is plain Python); then each block's takes and join, which are Arrow's and let go
    # of the interpreter, two blocks at a time.
    others: list[tuple[np.ndarray[Any, Any], pa.Array | None]] = []
    for start in starts:
        stop = min(start + block, count)
        inside = outside[(outside >= start) & (outside < stop)]
        texts = _texts([other(i) for i in inside.tolist()]) if len(inside) else None
        others.append((inside - start, texts))

    def assemble(number: int) -> pa.Array:
        start = starts[number]
        stop = min(start + block, count)
        inside, texts = others[number]
        if len(inside) == stop - start:  # nothing to assemble
            assert texts is not None
            return texts
        items = [
            _literal(source)
            if isinstance(source, str)
            else pc.take(source[0], pa.array(source[1](start, stop)), memory_pool=POOL)
            for source in sources
        ]
        chunk = pc.binary_join_element_wise(*items, _literal(""), memory_pool=POOL)
        del items
        if texts is None:
            return chunk
        mask = np.zeros(stop - start, dtype=bool)
        mask[inside] = True
        return pc.replace_with_mask(chunk, pa.array(mask), texts, memory_pool=POOL)

    with ThreadPoolExecutor(max_workers=_WORKERS) as workers:
        chunks = list(workers.map(assemble, range(len(starts))))
    return pa.chunked_array(chunks, type=_TEXT)
