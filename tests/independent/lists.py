"""Cursor pagination, the same for every list (run events have their own integer cursor).

The envelope is ``{object: "list", data, has_more, next_cursor}``; ``next_cursor`` names the
last item of the page and is left out when the page is empty and nothing follows. A cursor that
names no item is refused or answered with an empty page, by reading.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from .errors import invalid
from .faults import FaultSet
from .readings import Reading

T = TypeVar("T")


def page(
    items: Sequence[T],
    *,
    limit: int,
    starting_after: str | None,
    id_of: Callable[[T], str],
    render: Callable[[T], dict[str, Any]],
    reading: Reading,
    faults: FaultSet,
    inclusive_cursor: bool = False,
    cursor_param: str = "starting_after",
) -> dict[str, Any]:
    start = 0
    if starting_after:
        ids = [id_of(item) for item in items]
        if starting_after in ids:
            start = ids.index(starting_after) + (0 if inclusive_cursor else 1)
        elif reading.unknown_cursor == "refuse":
            raise invalid(
                reading,
                "cursor.invalid",
                "starting_after does not name an item of this list.",
                cursor_param,
            )
        else:
            start = len(items)
    chunk = list(items[start : start + limit])
    if faults.on("has_more_true_on_exact_page"):
        has_more = len(chunk) == limit
    else:
        has_more = start + limit < len(items)
    body: dict[str, Any] = {
        "object": "list",
        "data": [render(item) for item in chunk],
        "has_more": has_more,
    }
    if chunk:
        body["next_cursor"] = id_of(chunk[-1])
    elif has_more:
        body["next_cursor"] = starting_after
    elif faults.on("next_cursor_null_on_empty"):
        body["next_cursor"] = None
    return body


def order(items: list[T], reading: Reading, key: Callable[[T], Any]) -> list[T]:
    """Sort by creation, in the reading's direction."""
    return sorted(items, key=key, reverse=reading.list_order == "newest_first")
