"""Cursor pagination shared by every list (CONV-4, CONV-5, CONV-6).

Lists are walked in a fixed order; the cursor is the id (or sequence) of the last item returned.
An unknown cursor is refused rather than silently restarting the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from sim.config import LimitsConfig
from sim.errors import Unprocessable

__all__ = ["newest_first_page", "page", "validate_limit"]

T = TypeVar("T")


def validate_limit(limit: int, minimum: int, maximum: int, param: str = "limit") -> int:
    message = f"{param} must be an integer from {minimum} to {maximum}."
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise Unprocessable("validation.type", message, param=param)
    if not minimum <= limit <= maximum:
        raise Unprocessable("validation.range", message, param=param)
    return limit


def page(
    items: Sequence[T],
    *,
    limit: int,
    starting_after: Any | None,
    cursor_of: Callable[[T], Any],
    render: Callable[[T], dict[str, Any]],
    param: str = "starting_after",
) -> dict[str, Any]:
    """One page of ``items`` (already filtered and ordered) as the list envelope.

    ``next_cursor`` is the cursor of the last item on the page; it is omitted only when the page
    is empty and there is nothing more (the seed's rule).
    """
    start = 0
    if starting_after is not None:
        for index, item in enumerate(items):
            if cursor_of(item) == starting_after:
                start = index + 1
                break
        else:
            raise Unprocessable(
                "validation.cursor", f"{param} does not name an item of this list.", param=param
            )
    chunk = items[start : start + limit]
    has_more = start + limit < len(items)
    body: dict[str, Any] = {
        "object": "list",
        "data": [render(i) for i in chunk],
        "has_more": has_more,
    }
    if chunk:
        body["next_cursor"] = cursor_of(chunk[-1])
    return body


def newest_first_page(
    oldest_first: Sequence[T],
    *,
    limit: int,
    starting_after: str | None,
    limits: LimitsConfig,
    cursor_of: Callable[[T], str],
    render: Callable[[T], dict[str, Any]],
) -> dict[str, Any]:
    """The usual list of one organization's resources: newest first, ``limit`` in the page-size
    range, a ``starting_after`` id of at most ``cursor_max_length`` characters (runs, assets)."""
    validate_limit(limit, limits.page_size_min, limits.page_size_max)
    if starting_after is not None and len(starting_after) > limits.cursor_max_length:
        raise Unprocessable(
            "validation.range",
            f"starting_after is at most {limits.cursor_max_length} characters.",
            param="starting_after",
        )
    return page(
        oldest_first[::-1],
        limit=limit,
        starting_after=starting_after,
        cursor_of=cursor_of,
        render=render,
    )
