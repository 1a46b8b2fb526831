"""The testing reference page's tables, written from the code's own declarations.

Why generated: the vocabulary a test author needs (event types, their data keys and reasons, the
``SimAdmin`` methods and their units, the fault parameters and their limits, every helper and
fixture) was found with ``pydoc``, ``openapi.yaml`` and ``DECISIONS.md``. Here each table is read
from where the behaviour is declared: ``SESSION_EVENTS`` and the session and run transition
tables, ``SimAdmin``'s signatures (units are ``Annotated`` on them), ``SimConfig``'s defaults,
``harness.testing.__all__`` and the plugin's fixtures. The page holds hand-written prose around
marked blocks (``<!-- generated: NAME -->`` … ``<!-- end: NAME -->``) that this module rewrites;
``tests/harness/test_testing_reference.py`` fails when a block and the code differ.

``python -m harness.testing.reference`` rewrites the page; ``--check`` exits 1 when it is stale.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, get_type_hints

__all__ = ["BLOCKS", "PAGE", "render", "tables"]

#: The page, relative to the checkout.
PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing-reference.md"

#: The fault parameters: (fault, ``SimConfig`` path, what it bounds). Durations are simulated
#: seconds unless named in ``WALL_SECONDS``; other numbers are counts.
FAULT_PARAMETERS: tuple[tuple[str, str, str], ...] = (
    ("capacity", "scheduler.workers", "workers in the pool at the start"),
    ("capacity", "admin.workers_max", "the most workers `set_capacity` accepts"),
    ("no_capacity", "limits.startup_timeout_seconds", "a queued session fails after"),
    ("at_capacity", "scheduler.max_queue_length", "sessions that may wait for a worker"),
    ("worker_crash", "scheduler.worker_restart_seconds", "a crashed worker is back after"),
    ("slow_startup", "admin.duration_max_seconds", "the longest extra boot time or duration"),
    ("heartbeat_loss", "sessions.heartbeat_interval_seconds", "between two heartbeats"),
    ("heartbeat_loss", "sessions.heartbeat_loss_limit_seconds", "silence before `worker_lost`"),
    ("purge_failure", "runs.max_pending_purges", "deletions waiting to be purged"),
    ("webhooks", "webhooks.retry_delays_seconds", "waits between a delivery's attempts"),
    ("webhooks", "webhooks.attempt_timeout_seconds", "an attempt unanswered after this failed"),
    ("clock", "admin.clock_advance_max_seconds", "the most one `advance` moves the clock"),
    ("idempotency", "limits.idempotency_window_seconds", "a key is remembered for"),
)
#: Parameters counted by the wall clock: a receiver answers in real time whatever the clock does.
WALL_SECONDS = frozenset({"webhooks.attempt_timeout_seconds"})


def _first_line(thing: Any) -> str:
    text = inspect.getdoc(thing) or ""
    first = text.split("\n\n")[0].replace("\n", " ").strip()
    return first.replace("``", "`").replace("|", "\\|")


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def events_table() -> str:
    """Each event type a session or run publishes, its data keys, and why it comes."""
    from sim.lifecycle import SESSION_TRANSITIONS
    from sim.runs.lifecycle import RUN_TRANSITIONS
    from sim.sessions.events import SESSION_EVENTS

    rows: list[tuple[str, ...]] = []
    for event_type, fields in SESSION_EVENTS.items():
        keys = ["object"]
        keys += [fields.field] if fields.field else []
        keys += ["tracks"] * fields.tracks + ["usage"] * fields.usage + ["rpc"] * fields.rpc
        reasons = sorted(
            {
                f"`{row.end_reason or row.error_code}`"
                for row in SESSION_TRANSITIONS
                if row.event == event_type and (row.end_reason or row.error_code)
            }
        )
        moves = sorted(
            {
                f"{row.source} → {row.target}"
                for row in SESSION_TRANSITIONS
                if row.event == event_type
            }
        )
        rows.append(
            (
                f"`{event_type}`",
                ", ".join(f"`{key}`" for key in keys),
                ", ".join(reasons) or "",
                "; ".join(moves) or "(reports the session, moves nothing)",
            )
        )
    for run_event in dict.fromkeys(row.event for row in RUN_TRANSITIONS):
        moves = sorted(
            {
                f"{row.source.value if row.source else '(new)'} → {row.target.value} "
                f"({row.trigger})"
                for row in RUN_TRANSITIONS
                if row.event == run_event
            }
        )
        rows.append((f"`{run_event}`", "`object`", "", "; ".join(moves)))
    return _table(("event type", "data keys", "reasons / codes", "moves"), rows)


def admin_table() -> str:
    """Every public ``SimAdmin`` method, its parameters with their units, and what it does."""
    from harness.testing.admin import SimAdmin, Unit

    rows: list[tuple[str, ...]] = []
    for name, member in vars(SimAdmin).items():
        if name.startswith("_") or not callable(member) or name == "close":
            continue
        hints = get_type_hints(member, include_extras=True)
        params = []
        for parameter in list(inspect.signature(member).parameters.values())[1:]:
            unit = _unit_of(hints.get(parameter.name), Unit)
            star = "**" if parameter.kind is inspect.Parameter.VAR_KEYWORD else ""
            params.append(f"{star}{parameter.name}" + (f" ({unit})" if unit else ""))
        answer = _unit_of(hints.get("return"), Unit) or _type_name(hints.get("return"))
        rows.append((f"`{name}`", ", ".join(params) or "", answer, _first_line(member)))
    return _table(("method", "parameters (units)", "answers", "does"), rows)


def _unit_of(hint: Any, unit_type: type) -> str | None:
    for extra in getattr(hint, "__metadata__", ()):
        if isinstance(extra, unit_type):
            return str(getattr(extra, "name"))  # noqa: B009 - unit_type is Unit
    for arg in getattr(hint, "__args__", ()) or ():  # Optional[SimSeconds]
        found = _unit_of(arg, unit_type)
        if found:
            return found
    return None


def _type_name(hint: Any) -> str:
    if hint is None or hint is type(None):
        return "nothing"
    module = getattr(hint, "__module__", "")
    name = getattr(hint, "__name__", None) or str(hint)
    return f"{module}.{name}" if module.startswith("httpx") else str(name)


def faults_table() -> str:
    """The fault parameters with their defaults (the limits a test meets), from ``SimConfig``."""
    from sim.config import SimConfig

    config = SimConfig()
    rows: list[tuple[str, ...]] = []
    for fault, path, meaning in FAULT_PARAMETERS:
        value: Any = config
        for part in path.split("."):
            value = getattr(value, part)
        values = value if isinstance(value, tuple) else (value,)
        shown = ", ".join(_number(v) for v in values)
        unit = "count"
        if path.endswith("seconds"):
            unit = "wall seconds" if path in WALL_SECONDS else "simulated seconds"
        rows.append((f"`{fault}`", f"`{path}`", f"{shown} ({unit})", meaning))
    return _table(("fault", "`SimConfig` field", "default", "meaning"), rows)


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def helpers_table() -> str:
    """Every public name of ``harness.testing`` and every fixture, with its first sentence."""
    import harness.testing
    from harness.testing import fixtures

    rows = [
        (f"`{name}`", _first_line(getattr(harness.testing, name)))
        for name in harness.testing.__all__
    ]
    rows += [
        (f"`{name}` (fixture)", _first_line(getattr(fixtures, name))) for name in fixtures.FIXTURES
    ]
    return _table(("name", "what it is"), rows)


def statuses_table() -> str:
    """The statuses each ``wait_for`` helper accepts (anything else is a misspelling)."""
    from harness.testing.statuses import statuses_of

    rows = []
    for kind, helper in (
        ("session", "wait_for"),
        ("run", "wait_for_run"),
        ("avatar", "wait_for_avatar"),
        ("delivery", "wait_for_delivery"),
    ):
        known, final = statuses_of(kind)
        rows.append(
            (
                f"`{helper}`",
                ", ".join(f"`{s}`" for s in sorted(known - final)),
                ", ".join(f"`{s}`" for s in sorted(final)),
            )
        )
    return _table(("helper", "statuses", "final (never left)"), rows)


#: The page's generated blocks, by name.
BLOCKS: dict[str, Callable[[], str]] = {
    "helpers": helpers_table,
    "statuses": statuses_table,
    "events": events_table,
    "admin": admin_table,
    "faults": faults_table,
}


def tables() -> dict[str, str]:
    return {name: make() for name, make in BLOCKS.items()}


def _block(table: str) -> Callable[[re.Match[str]], str]:
    def fill(match: re.Match[str]) -> str:
        return match.group(1) + table + "\n" + match.group(2)

    return fill


def render(page: str) -> str:
    """``page`` with each generated block rewritten from the code (a missing block is an
    error: the page must show every table)."""
    for name, table in tables().items():
        pattern = re.compile(
            rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.DOTALL
        )
        if not pattern.search(page):
            raise ValueError(f"the page has no block {name!r}")
        page = pattern.sub(_block(table), page)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.testing.reference")
    parser.add_argument("--check", action="store_true", help="exit 1 when the page is stale")
    parser.add_argument("--page", type=Path, default=PAGE)
    args = parser.parse_args(argv)
    current = args.page.read_text(encoding="utf-8")
    fresh = render(current)
    if args.check:
        if fresh != current:
            print(f"{args.page} is stale: python -m harness.testing.reference", file=sys.stderr)
            return 1
        return 0
    args.page.write_text(fresh, encoding="utf-8")
    print(args.page)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
