"""Lists: every page's envelope and size, and every complete walk's honesty.

* ``list_envelope`` (CONV-4, CONV-5): a page is ``{object: "list", data, has_more,
  next_cursor}``; ``next_cursor`` is a string (an ``av_`` id for avatars) or, for run events, an
  integer, and is absent from an empty last page.
* ``page_sizes`` (LIM-7, EP-AV-2, EP-RUN-2): a page holds no more items than asked for (1..100,
  run events 1..500, avatars 20 by default), and a size outside the range is refused or clamped,
  one way per list (an open point, learned and held), never answered with more than the
  maximum.
* ``list_walks`` (CONV-6, EP-SESS-7): a walk from a first page through ``next_cursor`` until
  ``has_more`` is false visits no item twice, and every item the run knew to be in the list when
  the walk began (made by its organization, or shown by an earlier complete walk: sessions,
  avatars and runs never leave their lists, a deleted run stays as a tombstone); two complete
  walks of one list give its items in one order.

Walks are recognised from the pages themselves: a page without ``starting_after`` begins one, a
page whose ``starting_after`` is the ``next_cursor`` of a walk's last page continues it. Whoever
walks (a script, the fuzz, a confirmation) is judged the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.calls import Call
from harness.conformance.model.readings import Readings
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["ENVELOPE", "LISTED", "PAGES", "WALKS", "ListBook"]

ENVELOPE = model_rule("list_envelope")
PAGES = model_rule("page_sizes")
WALKS = model_rule("list_walks")

#: The lists with their item prefix, largest page and default page (``None``: not stated).
LISTED: dict[str, tuple[str, int, int | None]] = {
    "listSessions": ("sess_", SEED.page_max, None),
    "listAvatars": ("av_", SEED.page_max, SEED.avatar_page_default),
    "listRuns": ("run_", SEED.page_max, None),
    "listAssets": ("asset_", SEED.page_max, None),
    "listRunEvents": ("", SEED.run_events_page_max, None),
}
#: Lists whose items never leave them (a deleted run stays listed as a tombstone).
_KEPT = frozenset({"listSessions", "listAvatars", "listRuns"})


@dataclass
class _Walk:
    """A walk in progress: its list, who walks it, what it has seen, and what it must see."""

    operation: str
    scope: tuple[str, ...]
    ids: list[str]
    cursor: Any
    expected: frozenset[str]
    pages: int = 1


@dataclass
class ListBook:
    """Walks in progress, the last complete walk of each list, and what each list must hold."""

    walks: list[_Walk] = field(default_factory=list)
    complete: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    #: Items the run made, by list scope (operation and organization, and the run's id for
    #: its events); added when the create was answered.
    made: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    #: The longest complete walk of each list (its length), to know when a page size above
    #: the maximum meets more items than the maximum.
    sizes: dict[tuple[str, ...], int] = field(default_factory=dict)
    #: Which of a page with ``has_more`` and an empty last page the run has seen.
    envelope_edges: set[str] = field(default_factory=set)

    def add(self, scope: tuple[str, ...], item_id: str) -> None:
        self.made.setdefault(scope, []).append(item_id)

    def page(self, call: Call, scope: tuple[str, ...], readings: Readings) -> Iterator[Verdict]:
        """One page of a list (by ``scope``: the operation, the organization, filters)."""
        body = call.answer
        exchange = call.exchange
        prefix, maximum, default = LISTED[call.operation]
        limit = call.limit()
        # A page size that is no integer (an empty value read as absent) is no size outside
        # the range: only the maximum binds it.
        asked = call.query.get("limit") if limit is not None else None
        if call.operation == "listRunEvents" and not readings.get("run events page size", "limit"):
            # The name of the run events' page size is an open point: ``limit`` is learned as
            # its name once a page in range holds no more than it asked while more remain.
            answer = call.answer if call.ok else None
            page = answer if isinstance(answer, dict) else {}
            data = page.get("data")
            if (
                limit is not None and 1 <= limit <= maximum and isinstance(data, list)
                and len(data) <= limit and page.get("has_more") is True
            ):  # fmt: skip
                readings.hold("run events page size", True, exchange, "limit")
            else:
                limit, asked = None, None
        if call.operation == "listRunEvents" and asked is None and not call.ok:
            return
        alone = set(call.query) == {"limit"}  # nothing else the answer could be about
        if not call.ok and call.status not in (400, 422):
            return  # not a refusal of the request's values (an unknown run, the rate limit)
        if not call.ok and alone and limit is not None and 1 <= limit <= maximum:
            yield Verdict.failed(
                PAGES, exchange,
                f"{call.operation} refused limit {limit}, within the seed's range 1..{maximum}",
            )  # fmt: skip
            return
        if not call.ok:
            if asked is not None and alone and (limit is None or not 1 <= limit <= maximum):
                held = readings.hold(
                    "page size out of range", "refused", exchange, _side(scope, limit)
                )
                if held is not None:
                    yield Verdict.failed(PAGES, exchange, held)
                else:
                    edge = limit is not None and limit > maximum
                    yield Verdict.passed(
                        PAGES, exchange, edge=edge and self.sizes.get(scope, 0) > maximum
                    )
            return
        problem = _envelope(body, call.operation == "listRunEvents", prefix)
        if problem is not None:
            yield Verdict.failed(ENVELOPE, exchange, f"{call.operation}: {problem}")
            return
        edge = body["has_more"] is True or (not body["data"] and "starting_after" not in call.query)
        if edge:
            self.envelope_edges.add("more" if body["has_more"] else "empty")
        yield Verdict.passed(ENVELOPE, exchange, edge=len(self.envelope_edges) == 2)
        count = len(body["data"])
        bound = _bound(limit, asked, maximum, default)
        if count > bound:
            yield Verdict.failed(
                PAGES, exchange,
                f"{call.operation} with limit {asked!r} answered {count} items (at most {bound})",
            )  # fmt: skip
            return
        if alone and asked is not None and (limit is None or not 1 <= limit <= maximum):
            held = readings.hold("page size out of range", "clamped", exchange, _side(scope, limit))
            if held is not None:
                yield Verdict.failed(PAGES, exchange, held)
                return
        known = self.sizes.get(scope, 0)
        edge = limit is not None and limit > maximum and known > maximum
        yield Verdict.passed(PAGES, exchange, edge=edge)
        yield from self._walk(call, scope, body, exchange)

    # -- walks -----------------------------------------------------------------------------

    def _walk(
        self, call: Call, scope: tuple[str, ...], body: dict[str, Any], exchange: Exchange
    ) -> Iterator[Verdict]:
        if call.operation == "listRunEvents":
            return
        ids = [str(item.get("id")) for item in body["data"] if isinstance(item, dict)]
        after = call.query.get("starting_after")
        if after is None:
            kept = set(self.complete.get(scope, ())) if call.operation in _KEPT else set()
            walk = _Walk(
                call.operation, scope, ids, body.get("next_cursor"),
                frozenset(self.made.get(scope, ())) | kept,
            )  # fmt: skip
            self.walks.append(walk)
        else:
            found = next(
                (w for w in self.walks if w.scope == scope and str(w.cursor) == after), None
            )
            if found is None:
                return
            walk = found
            if not ids and call.operation in _KEPT:
                self.walks.remove(walk)
                yield Verdict.failed(
                    WALKS, exchange,
                    f"a page of {walk.operation} said has_more true, and the page after it "
                    "(its next_cursor) holds nothing: has_more tells whether items remain",
                )  # fmt: skip
                return
            again = sorted(set(ids) & set(walk.ids))
            walk.ids += ids
            walk.cursor = body.get("next_cursor")
            walk.pages += 1
            if again:
                self.walks.remove(walk)
                yield Verdict.failed(
                    WALKS, exchange,
                    f"page {walk.pages} of a walk of {walk.operation} (starting_after "
                    f"{after}) shows {again[:3]} again",
                )  # fmt: skip
                return
        if body.get("has_more") is True:
            return
        self.walks.remove(walk)
        yield from self._finished(walk, exchange)

    def _finished(self, walk: _Walk, exchange: Exchange) -> Iterator[Verdict]:
        seen = walk.ids
        twice = sorted({i for i in seen if seen.count(i) > 1})
        if twice:
            yield Verdict.failed(
                WALKS, exchange, f"walking {walk.operation} visited {twice[:3]} more than once"
            )
            return
        missing = sorted(walk.expected - set(seen))
        if missing:
            yield Verdict.failed(
                WALKS, exchange,
                f"a complete walk of {walk.operation} ({len(seen)} items in {walk.pages} "
                f"pages, has_more false) misses {missing[:3]}, which were in the list when "
                "the walk began",
            )  # fmt: skip
            return
        earlier = self.complete.get(walk.scope)
        if earlier is not None:
            common = set(earlier) & set(seen)
            if [i for i in earlier if i in common] != [i for i in seen if i in common]:
                yield Verdict.failed(
                    WALKS, exchange,
                    f"two complete walks of {walk.operation} gave its items in different orders",
                )  # fmt: skip
                return
        self.complete[walk.scope] = list(seen)
        self.sizes[walk.scope] = max(self.sizes.get(walk.scope, 0), len(seen))
        made = set(self.made.get(walk.scope, ()))
        yield Verdict.passed(WALKS, exchange, edge=walk.pages > 1 and bool(made & set(seen)))


def _side(scope: tuple[str, ...], limit: int | None) -> tuple[str, str]:
    """Where a reading of an out-of-range page size is held: per list, and per side (a
    deployment may refuse a size below the range and clamp one above it)."""
    return scope[0], "below" if limit is not None and limit < 1 else "above"


def _bound(limit: int | None, asked: str | None, maximum: int, default: int | None) -> int:
    """The most items a page may hold for the ``limit`` asked."""
    if asked is None:
        return default if default is not None else maximum
    if limit is None:
        return maximum
    if limit < 1:
        return 1
    return min(limit, maximum)


def _envelope(body: Any, integer_cursor: bool, prefix: str) -> str | None:
    if not isinstance(body, dict) or body.get("object") != "list":
        return "the answer is not {object: 'list', ...}"
    if not isinstance(body.get("data"), list):
        return "data is not an array"
    if not isinstance(body.get("has_more"), bool):
        return "has_more is not a boolean"
    present = "next_cursor" in body
    cursor = body.get("next_cursor")
    if body["has_more"] and (not present or cursor is None):
        return "has_more is true but there is no next_cursor"
    if not body["data"] and not body["has_more"] and present:
        return "an empty last page carries next_cursor"
    if cursor is None:
        return None
    if integer_cursor and (not isinstance(cursor, int) or isinstance(cursor, bool)):
        return f"a run events next_cursor is not an integer: {cursor!r}"
    if not integer_cursor and not isinstance(cursor, str):
        return f"next_cursor is not a string: {cursor!r}"
    if prefix == "av_" and not cursor.startswith("av_"):
        return f"an avatar cursor is not an av_ id: {cursor!r}"
    return None
