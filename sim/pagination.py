"""Cursor pagination shared by every list (CONV-4, CONV-5, CONV-6, LIM-7).

Every list endpoint goes through ``paginate``: the same checks (``limit`` in the configured range,
a ``starting_after`` of at most ``cursor_max_length`` characters), the same cursor rule (the
cursor is the id of the last item returned, and an unknown one is refused rather than silently
restarting the walk) and the same envelope. Lists differ only in what they hand it: the items in
their fixed order, how to read an item's cursor and render it, and optionally a filter applied
after the cursor is placed (the session list positions its cursor in the unfiltered list,
GAP-SES-6). Run events page by integer sequence with ``page_at``, the same envelope.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from operator import attrgetter
from typing import Any, TypeVar

from sim.config import LimitsConfig
from sim.errors import Unprocessable

__all__ = ["page", "page_at", "paginate", "validate_limit"]

T = TypeVar("T")

_PARAM = "starting_after"


def validate_limit(limit: int, minimum: int, maximum: int, param: str = "limit") -> int:
    message = f"{param} must be an integer from {minimum} to {maximum}."
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise Unprocessable("validation.type", message, param=param)
    if not minimum <= limit <= maximum:
        raise Unprocessable("validation.range", message, param=param)
    return limit


def _unknown_cursor(detail: str = "does not name an item of this list") -> Unprocessable:
    return Unprocessable("validation.cursor", f"{_PARAM} {detail}.", param=_PARAM)


def page_at(
    items: Sequence[T],
    start: int,
    *,
    limit: int,
    cursor_of: Callable[[T], Any],
    render: Callable[[T], dict[str, Any]],
) -> dict[str, Any]:
    """The list envelope of ``items[start:start + limit]``.

    ``next_cursor`` is the cursor of the last item on the page; it is omitted only when the page
    is empty and there is nothing more (the seed's rule).
    """
    chunk = items[start : start + limit]
    body: dict[str, Any] = {
        "object": "list",
        "data": [render(i) for i in chunk],
        "has_more": start + limit < len(items),
    }
    if chunk:
        body["next_cursor"] = cursor_of(chunk[-1])
    return body


def page(
    items: Sequence[T],
    *,
    limit: int,
    starting_after: Any | None,
    cursor_of: Callable[[T], Any],
    render: Callable[[T], dict[str, Any]],
) -> dict[str, Any]:
    """One page of ``items`` (already filtered and ordered) after the item ``starting_after``."""
    start = 0
    if starting_after is not None:
        for index, item in enumerate(items):
            if cursor_of(item) == starting_after:
                start = index + 1
                break
        else:
            raise _unknown_cursor()
    return page_at(items, start, limit=limit, cursor_of=cursor_of, render=render)


def paginate(
    items: Sequence[T],
    *,
    limit: int,
    starting_after: str | None,
    limits: LimitsConfig,
    render: Callable[[T], dict[str, Any]],
    cursor_of: Callable[[T], str] = attrgetter("id"),
    keep: Callable[[T], bool] | None = None,
) -> dict[str, Any]:
    """A page of a list endpoint: ``items`` in the list's order, ``keep`` (optional) filters
    what follows the cursor. An item's cursor is its ``id`` unless ``cursor_of`` says otherwise.
    A cursor longer than ``cursor_max_length`` cannot name an item and is refused like an
    unknown one."""
    validate_limit(limit, limits.page_size_min, limits.page_size_max)
    if starting_after is not None and len(starting_after) > limits.cursor_max_length:
        raise _unknown_cursor(f"is at most {limits.cursor_max_length} characters")
    if keep is None:
        return page(
            items, limit=limit, starting_after=starting_after, cursor_of=cursor_of, render=render
        )
    start = 0
    if starting_after is not None:
        start = next(
            (i + 1 for i, item in enumerate(items) if cursor_of(item) == starting_after), -1
        )
        if start < 0:
            raise _unknown_cursor()
    kept: list[T] = []
    for item in islice(items, start, None):
        if keep(item):
            kept.append(item)
            if len(kept) > limit:  # one more than the page says whether there is more
                break
    return page_at(kept, 0, limit=limit, cursor_of=cursor_of, render=render)
