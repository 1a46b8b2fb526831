"""Runs as the seed states them: what a run answers, its events, and its deletion.

``runs`` (EP-RUN-1, EP-RUN-2, RES-RUN-4, RUN-DEL-1, EP-RUN-3):

* a create answers a run of the model in its path; a retrieve and a status poll answer the run
  they name;
* a run's events come in ``sequence`` order, on every page and across the pages of a walk;
* ``DELETE`` answers 202 with a deletion naming the run; from then on the run is a tombstone: it
  stays listed (``list_walks``) and answers with empty content (no outputs, no file objects);
  its billing rows stay (``usage_accounting``);
* a run the owner never deleted keeps its content: outputs it showed do not vanish.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.readings import Readings
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.target import Exchange

__all__ = ["RUNS", "RunBook"]

RUNS = model_rule("runs")

_FILES = ("audio", "image", "video")


def _content(run: dict[str, Any]) -> bool:
    """Whether a run answer carries content (outputs or file objects)."""
    return bool(run.get("outputs")) or any(run.get(name) for name in _FILES)


@dataclass
class RunBook:
    """Every run the run has seen: its model, whether it showed content, its deletion."""

    model: dict[str, str] = field(default_factory=dict)
    had_content: set[str] = field(default_factory=set)
    deleted: set[str] = field(default_factory=set)
    #: Each run's first page of events (its sequences), and the sequences of every page by the
    #: next_cursor it gave: to follow a walk of events once ``starting_after`` is seen to move it.
    first_pages: dict[str, list[int]] = field(default_factory=dict)
    by_cursor: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    def created(
        self, path_model: str, run: dict[str, Any], exchange: Exchange
    ) -> Iterator[Verdict]:
        run_id = run.get("id")
        if isinstance(run_id, str):
            self.model[run_id] = path_model
        if run.get("model") != path_model:
            yield Verdict.failed(
                RUNS, exchange,
                f"a run created at /v1/run/{path_model} answered model {run.get('model')!r}",
            )  # fmt: skip
        else:
            yield Verdict.passed(RUNS, exchange, edge=False)
        yield from self.seen(run, exchange)

    def named(self, asked: str, answered: Any, exchange: Exchange, what: str) -> Iterator[Verdict]:
        """A retrieve or a status poll of ``asked`` answered the resource ``answered``."""
        if not isinstance(answered, dict) or answered.get("id") != asked:
            got = answered.get("id") if isinstance(answered, dict) else answered
            yield Verdict.failed(RUNS, exchange, f"{what} of {asked} answered {got!r}")

    def seen(self, run: dict[str, Any], exchange: Exchange) -> Iterator[Verdict]:
        run_id = run.get("id")
        if not isinstance(run_id, str):
            return
        if run_id in self.deleted:
            if _content(run):
                yield Verdict.failed(
                    RUNS, exchange,
                    f"run {run_id} was deleted, yet still answers its content (outputs or "
                    "files)",
                )  # fmt: skip
            else:
                yield Verdict.passed(RUNS, exchange, edge=True)
            return
        if _content(run):
            self.had_content.add(run_id)
        elif run_id in self.had_content:
            yield Verdict.failed(
                RUNS, exchange,
                f"run {run_id} lost its content although its owner never deleted it",
            )  # fmt: skip

    def deletion(self, run_id: str, exchange: Exchange) -> Iterator[Verdict]:
        """The owner's ``DELETE`` of ``run_id`` answered ``exchange``."""
        if exchange.status != 202 and 200 <= exchange.status < 300:
            yield Verdict.failed(
                RUNS, exchange, f"DELETE of a run answered {exchange.status}, not 202"
            )
            return
        if exchange.status != 202:
            return
        body = exchange.json()
        if not isinstance(body, dict) or body.get("run_id") != run_id:
            named = body.get("run_id") if isinstance(body, dict) else body
            yield Verdict.failed(RUNS, exchange, f"the deletion of {run_id} names run {named!r}")
            return
        self.deleted.add(run_id)
        yield Verdict.passed(RUNS, exchange, edge=False)

    def events(
        self, run_id: str, body: Any, after: str | None, readings: Readings, exchange: Exchange
    ) -> Iterator[Verdict]:
        """A page of a run's events (``after``: its ``starting_after``): in ``sequence`` order,
        and, once ``starting_after`` is seen to be the deployment's name for the offset (a page
        asked with it differs from the first page), a page that follows a ``next_cursor``
        repeats none of the page that gave it."""
        data = body.get("data") if isinstance(body, dict) else None
        sequences = [e.get("sequence") for e in data or [] if isinstance(e, dict)]
        numbers = [s for s in sequences if isinstance(s, int) and not isinstance(s, bool)]
        if len(numbers) != len(sequences):
            return  # a non-integer sequence is the shape check's to report
        if numbers != sorted(numbers) or len(set(numbers)) != len(numbers):
            yield Verdict.failed(
                RUNS, exchange, f"run events are not in sequence order: {numbers[:10]}"
            )
            return
        if len(numbers) > 1:
            yield Verdict.passed(RUNS, exchange, edge=True)
        cursor = body.get("next_cursor") if isinstance(body, dict) else None
        if after is None:
            self.first_pages.setdefault(run_id, numbers)
        elif run_id in self.first_pages and numbers and numbers != self.first_pages[run_id]:
            readings.hold("run events offset", "starting_after", exchange)
        if cursor is not None:
            self.by_cursor[(run_id, str(cursor))] = numbers
        previous = self.by_cursor.get((run_id, after)) if after is not None else None
        if previous is None or readings.get("run events offset") != "starting_after":
            return
        again = sorted(set(numbers) & set(previous))
        if again:
            yield Verdict.failed(
                RUNS, exchange,
                f"the page of {run_id}'s events after next_cursor {after} repeats sequences "
                f"{again[:5]} of the page that gave it",
            )  # fmt: skip
