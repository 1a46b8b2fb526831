"""Usage as the seed states it: the window asked for, and totals that account for what was made.

* ``usage_window`` (EP-USAGE-1, RES-USAGE-1): ``period`` (``current_month`` or
  ``previous_month``) or the ``period_start`` + ``period_end`` pair, never both and never half a
  pair; an explicit window is answered with the bounds asked; the previous month ends where the
  current one begins; a window far in the future holds no usage.
* ``usage_accounting`` (RES-USAGE-1, RES-USAGE-2, RUN-DEL-1): within one window the totals
  never fall (billing rows are never removed, a deleted run's included); ``by_quality``'s
  seconds add up to ``billable_seconds``; and what the run made is there: the billable seconds
  of its sessions, and each charged run of a catalog model under ``by_model`` keyed by the model
  id, with at least its charge (``expect``, called by the script that made them).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from harness.conformance.model.calls import Call
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.responses import utc_instant
from harness.conformance.target import Exchange

__all__ = ["ACCOUNTING", "FAR_FUTURE", "WINDOW", "Expected", "UsageBook"]

WINDOW = model_rule("usage_window")
ACCOUNTING = model_rule("usage_accounting")

#: A window no deployment can have usage in.
FAR_FUTURE = {"period_start": "2099-01-01T00:00:00Z", "period_end": "2099-01-02T00:00:00Z"}
_TOTALS = ("billable_seconds", "sessions", "credits_charged")
_SLICES = ("by_model", "by_quality")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True)
class Expected:
    """What the run made in a window between two reads: seconds by quality, and charges by
    model."""

    seconds_by_quality: Mapping[str, int] = field(default_factory=dict)
    sessions: int = 0
    charges_by_model: Mapping[str, float] = field(default_factory=dict)
    #: Sessions made that contributed no usage (canceled before they ran): they must not count.
    unbilled: int = 0


@dataclass
class UsageBook:
    """Every usage answer by window, and the months as last answered."""

    last: dict[tuple[str, str], tuple[dict[str, Any], Exchange]] = field(default_factory=dict)
    months: dict[str, dict[str, Any]] = field(default_factory=dict)
    deletions: int = 0  # run deletions the run made so far
    deletions_at_read: dict[tuple[str, str], int] = field(default_factory=dict)

    def answer(self, call: Call) -> Iterator[Verdict]:
        query, exchange = call.query, call.exchange
        pair = [name for name in ("period_start", "period_end") if name in query]
        period = query.get("period")
        wrong = None
        if len(pair) == 1:
            wrong = f"{pair[0]} alone"
        elif pair and period is not None:
            wrong = "period together with the explicit pair"
        elif period is not None and period not in ("current_month", "previous_month"):
            wrong = f"period {period!r}"
        if wrong is not None:
            if call.ok:
                yield Verdict.failed(WINDOW, exchange, f"GET /v1/usage with {wrong} answered 200")
            elif 400 <= call.status < 500 and call.status != 429:
                yield Verdict.passed(WINDOW, exchange, edge=False)
            return
        if not call.ok or not isinstance(call.answer, dict):
            return
        body: dict[str, Any] = call.answer
        if pair:
            yield from self._explicit(query, body, exchange)
        elif period is not None:
            yield from self._month(period, body, exchange)
        yield from self._totals(body, exchange)

    def _explicit(
        self, query: Mapping[str, str], body: dict[str, Any], exchange: Exchange
    ) -> Iterator[Verdict]:
        asked = {name: utc_instant(query[name]) for name in ("period_start", "period_end")}
        if None in asked.values():
            return
        for name, instant in asked.items():
            if utc_instant(body.get(name)) != instant:
                yield Verdict.failed(
                    WINDOW, exchange,
                    f"usage asked for {name} {query[name]} answered {body.get(name)!r}",
                )  # fmt: skip
                return
        start = asked["period_start"]
        assert start is not None
        if start >= datetime.fromisoformat("2090-01-01T00:00:00+00:00"):
            charged = [_number(body.get(name)) for name in _TOTALS]
            if any(value for value in charged):
                yield Verdict.failed(
                    WINDOW, exchange,
                    f"a window in {start.year} answered usage "
                    + ", ".join(f"{n} {body.get(n)}" for n in _TOTALS),
                )  # fmt: skip
                return
            current = self.months.get("current_month", {})
            yield Verdict.passed(
                WINDOW, exchange, edge=bool(_number(current.get("credits_charged")))
            )
            return
        yield Verdict.passed(WINDOW, exchange, edge=False)

    def _month(self, period: str, body: dict[str, Any], exchange: Exchange) -> Iterator[Verdict]:
        self.months[period] = body
        current, previous = self.months.get("current_month"), self.months.get("previous_month")
        if current is None or previous is None:
            return
        end, start = (
            utc_instant(previous.get("period_end")),
            utc_instant(current.get("period_start")),
        )
        if end is not None and start is not None and end != start:
            yield Verdict.failed(
                WINDOW, exchange,
                f"previous_month ends {previous.get('period_end')} but current_month begins "
                f"{current.get('period_start')}",
            )  # fmt: skip

    def _totals(self, body: dict[str, Any], exchange: Exchange) -> Iterator[Verdict]:
        window = (str(body.get("period_start")), str(body.get("period_end")))
        by_quality = body.get("by_quality")
        total = _number(body.get("billable_seconds"))
        if isinstance(by_quality, dict) and total is not None:
            seconds = [_number(v) for v in by_quality.values()]
            if None not in seconds and abs(sum(s or 0.0 for s in seconds) - total) > 0.5:
                yield Verdict.failed(
                    ACCOUNTING, exchange,
                    f"by_quality adds up to {sum(s or 0.0 for s in seconds):g} seconds, "
                    f"billable_seconds is {total:g}",
                )  # fmt: skip
                return
        earlier = self.last.get(window)
        self.last[window] = (body, exchange)
        deletions_before = self.deletions_at_read.get(window)
        self.deletions_at_read[window] = self.deletions
        if earlier is None:
            return
        fell = _fell(earlier[0], body)
        if fell:
            yield Verdict.failed(
                ACCOUNTING, exchange,
                f"usage for one window fell between two reads: {fell}"
                + (" (a run was deleted between them)" if deletions_before != self.deletions
                   else ""),
            )  # fmt: skip
            return
        yield Verdict.passed(
            ACCOUNTING, exchange,
            edge=deletions_before is not None and deletions_before != self.deletions,
        )  # fmt: skip

    def _named(self, model: str, *bodies: Any) -> bool:
        """Whether ``by_model`` ever named ``model`` (then it is no internal model)."""
        seen = any(model in _slice_names(body) for body in bodies)
        return seen or any(model in _slice_names(body) for body, _ in self.last.values())

    def expect(self, before: Any, after: Any, made: Expected, exchange: Exchange) -> Verdict:
        """Two reads of one window around what the run made: the totals rose by at least it."""
        short: list[str] = []
        if not isinstance(before, dict) or not isinstance(after, dict):
            return Verdict.failed(ACCOUNTING, exchange, "usage answered no object")
        seconds = sum(made.seconds_by_quality.values())
        if _rise(before, after, "billable_seconds") < seconds:
            short.append(
                f"billable_seconds rose {_rise(before, after, 'billable_seconds'):g}, the run's "
                f"sessions billed {seconds}"
            )
        if _rise(before, after, "sessions") < made.sessions:
            short.append(
                f"sessions rose {_rise(before, after, 'sessions'):g} for {made.sessions} billed"
            )
        elif made.unbilled and _rise(before, after, "sessions") > made.sessions:
            short.append(
                f"sessions rose {_rise(before, after, 'sessions'):g} although only "
                f"{made.sessions} of the {made.sessions + made.unbilled} sessions made "
                "contributed usage (the others were canceled before they ran)"
            )
        for quality, billed in made.seconds_by_quality.items():
            rose = _rise(before, after, "by_quality", quality)
            if billed and rose < billed:
                short.append(f"by_quality[{quality}] rose {rose:g} for {billed} s billed")
        named = [m for m in made.charges_by_model if self._named(m, before, after)]
        charged_models = [m for m, c in made.charges_by_model.items() if c >= 1]
        if charged_models and not named:
            short.append(
                f"by_model names none of the models charged ({', '.join(charged_models)}); "
                "the seed leaves internal models out, not every model a customer runs"
            )
        for model in named:
            charged = made.charges_by_model[model]
            rose = _rise(before, after, "by_model", model)
            if charged >= 1 and rose < int(charged):
                short.append(f"by_model[{model}] rose {rose:g} for {charged:g} credits charged")
        if short:
            return Verdict.failed(
                ACCOUNTING, exchange, "usage does not account for what the run made: "
                + "; ".join(short),
            )  # fmt: skip
        return Verdict.passed(ACCOUNTING, exchange, edge=bool(made.charges_by_model))


def _slice_names(body: Any) -> set[str]:
    by_model = body.get("by_model") if isinstance(body, dict) else None
    return set(by_model) if isinstance(by_model, dict) else set()


def _value(body: Mapping[str, Any], name: str, key: str | None = None) -> float:
    value = body.get(name)
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    return _number(value) or 0.0


def _rise(
    before: Mapping[str, Any], after: Mapping[str, Any], name: str, key: str | None = None
) -> float:
    return _value(after, name, key) - _value(before, name, key)


def _fell(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    for name in _TOTALS:
        if _rise(before, after, name) < 0:
            return f"{name} {before.get(name)} then {after.get(name)}"
    for name in _SLICES:
        slices = before.get(name)
        for key in slices if isinstance(slices, dict) else {}:
            if _rise(before, after, name, key) < 0:
                return (
                    f"{name}[{key}] {_value(before, name, key):g} then {_value(after, name, key):g}"
                )
    return None
