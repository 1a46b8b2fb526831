"""What the run knows of each session, and the seed's rules about how a session moves.

Every answer that shows a session (a create, a retrieve, an end, a page of a list) is one
observation, stamped with the run's clock when it arrived. From them the model judges:

* ``session_transitions`` (SES-ST-3, SES-ST-4, SES-ST-5): ``end`` answers a row of the seed's
  table for how far the session had got (a session seen ``running`` ran, whatever its stamps);
  ``canceled`` comes only from its owner's ``end``; ``ending`` leads only to ``ended``.
* ``startup_timeout`` (SES-ST-2): no session waits ``queued`` past the start-up timeout (plus
  ``STARTUP_SLACK``).
* ``session_timers`` (SES-ST-6, SES-ST-7): no session stays ``ending`` longer than
  ``DRAIN_BOUND``; a running session is ended by its max duration, or with no audio by its idle
  timeout, within ``TIMER_SLACK`` of the limit, and never ends on its own before either could
  have fired.
* ``session_stamps`` (RES-SESS-4): the stamps' order, and that they are set once.

Times are the run's (target seconds on its clock), never the target's own stamps, so a
deployment's clock offset cannot make a rule fail. Bounds are taken on the safe side: a timer is
counted from the first time the run saw the session running (it cannot have started later), an
early end from the moment the create was sent (it cannot have started earlier).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.keys import Org
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.model.session_facts import TERMINAL, SessionFacts, fail_once
from harness.conformance.model.session_stamps import judge_stamps, judge_unchanged
from harness.conformance.seed import SEED
from harness.conformance.watch import mentions
from harness.target import Exchange

__all__ = [
    "DRAIN_BOUND",
    "END_RULES",
    "STARTUP_SLACK",
    "TERMINAL",
    "TIMER_SLACK",
    "EndRule",
    "SessionBook",
    "SessionFacts",
]

_PLACED = frozenset({"starting", "running", "ending"})
_UNPLACED = frozenset({"created", "queued"})

#: Target seconds the harness allows beyond a seed timer for the answer that shows it fired.
STARTUP_SLACK = 5.0
TIMER_SLACK = 5.0
#: Target seconds an ``ending`` session may take to drain (the seed states no bound: in-flight
#: frames are a fraction of a second; this allows a minute).
DRAIN_BOUND = 60.0

TRANSITIONS = model_rule("session_transitions")
STARTUP = model_rule("startup_timeout")
TIMERS = model_rule("session_timers")


_PROGRESS = ("not_started", "placed", "ran")


def _further(seen: str, answer: dict[str, Any]) -> str:
    """How far the session had got: what the run saw before the end, or further where the end's
    answer shows it went on since (the target's clock kept moving): a first frame ran, a start
    placed."""
    shown = (
        "ran" if answer.get("first_frame_at") is not None
        else "placed" if answer.get("started_at") is not None
        else "not_started"
    )  # fmt: skip
    return max(seen, shown, key=_PROGRESS.index)


def _mentions_timer(value: Any) -> bool:
    """Whether a failed session's error names one of the timers (its code, in any shape)."""
    if isinstance(value, str):
        return "max_duration" in value or "idle_timeout" in value
    if isinstance(value, dict):
        return any(_mentions_timer(v) for k, v in value.items() if k != "message")
    return False


@dataclass(frozen=True, slots=True)
class EndRule:
    """A row of the seed's table for ``POST /v1/sessions/{id}/end``, by how far the session
    had got (``progress``) when the end was sent."""

    progress: str
    outcomes: frozenset[str]
    requirement: str
    described: str


#: ``end`` on a session that ran (seen running or with a first frame), that was placed but not
#: seen running (``starting``: either reading of "not yet started" passes), or that had surely
#: not started.
END_RULES: tuple[EndRule, ...] = (
    EndRule("ran", frozenset({"ending", "ended"}), "SES-ST-3", "a running"),
    EndRule("placed", frozenset({"canceled", "ending", "ended"}), "SES-ST-3, SES-ST-4", "a placed"),
    EndRule("not_started", frozenset({"canceled"}), "SES-ST-4", "a not yet started"),
)  # fmt: skip


@dataclass
class SessionBook:
    """Every session the run has seen, and the judgements of how they moved."""

    #: Whether sessions may receive audio the run does not send (a real room given with
    #: ``--transport-json``): then the idle timeout is not judged.
    audio_may_flow: bool = False
    sessions: dict[str, SessionFacts] = field(default_factory=dict)

    def get(self, session_id: str) -> SessionFacts | None:
        return self.sessions.get(session_id)

    def facts(self, session_id: str, org: Org | None, role: str | None) -> SessionFacts:
        found = self.sessions.get(session_id)
        if found is None:
            found = self.sessions[session_id] = SessionFacts(session_id, org, role)
        return found

    def owned_by(self, role: str) -> list[SessionFacts]:
        return [s for s in self.sessions.values() if s.role == role]

    def live(self, role: str) -> list[SessionFacts]:
        """The role's sessions last seen in a non-terminal status."""
        return [s for s in self.owned_by(role) if s.last is not None and s.terminal is None]

    # -- observations ------------------------------------------------------------------------

    def created(
        self,
        resource: dict[str, Any],
        *,
        org: Org | None,
        role: str | None,
        sent: float,
        at: float,
    ) -> SessionFacts:
        """A create answered ``resource`` (sent at ``sent``, answered at ``at``)."""
        facts = self.facts(str(resource["id"]), org, role)
        if facts.sent is None:
            facts.sent, facts.created = sent, at
            facts.role, facts.org = role, org
            transport = resource.get("transport")
            facts.fixed = {
                name: resource.get(name)
                for name in ("avatar_id", "quality", "metadata", "idle_timeout_seconds",
                             "max_duration_seconds", "created_at")
                if name in resource
            }  # fmt: skip
            if isinstance(transport, dict):
                facts.fixed.update({
                    f"transport.{name}": transport[name]
                    for name in ("type", "url", "room_name") if name in transport
                })  # fmt: skip
        idle, limit = resource.get("idle_timeout_seconds"), resource.get("max_duration_seconds")
        facts.idle = idle if isinstance(idle, int) and not isinstance(idle, bool) else None
        facts.max_duration = (
            limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        )
        return facts

    def end_sent(self, session_id: str, at: float) -> None:
        facts = self.sessions.get(session_id)
        if facts is not None:
            facts.ends_sent.append(at)

    def seen(
        self,
        resource: dict[str, Any],
        at: float,
        exchange: Exchange,
        *,
        org: Org | None,
        order: int = 0,
    ) -> Iterator[Verdict]:
        """One observation of ``resource`` (the model's ``order``-th); the verdicts it gives."""
        session_id, status = resource.get("id"), resource.get("status")
        if not isinstance(session_id, str) or not isinstance(status, str):
            return
        facts = self.facts(session_id, org, None)
        before = facts.last
        yield from self._transition(facts, before, status, exchange)
        facts.statuses.append((at, status, order))
        if facts.placed_at is None and (
            status in _PLACED or resource.get("started_at") is not None
        ):
            facts.placed_at = at
        if facts.running_at is None and (
            status in ("running", "ending") or resource.get("first_frame_at") is not None
        ):
            facts.running_at = at
        if facts.ending_at is None and status == "ending":
            facts.ending_at = at
        yield from self._timers(facts, status, resource, at, exchange)
        yield from judge_stamps(facts, status, resource, exchange)
        yield from judge_unchanged(facts, resource, exchange)

    # -- session_transitions -----------------------------------------------------------------

    def _transition(
        self, facts: SessionFacts, before: str | None, status: str, exchange: Exchange
    ) -> Iterator[Verdict]:
        if before is None or before == status:
            return
        if before == "ending" and status not in ("ended", "failed"):
            yield fail_once(
                facts, TRANSITIONS, exchange,
                f"session {facts.id} was ending and then showed {status!r}; ending drains to "
                "ended",
            )  # fmt: skip
        if status == "canceled" and not facts.ends_sent and facts.role is not None:
            yield fail_once(
                facts, TRANSITIONS, exchange,
                f"session {facts.id} became canceled although its owner never ended it (only "
                "end cancels a session)",
            )  # fmt: skip

    def judge_end(
        self, session_id: str, answer: dict[str, Any], exchange: Exchange, sent: float = 0.0
    ) -> Iterator[Verdict]:
        """``end`` (sent at ``sent``) answered ``answer``: a row of the seed's table for how far
        the session had got before the end was sent."""
        facts = self.sessions.get(session_id)
        if facts is None or facts.last is None:
            return  # never seen before: how far it had got is unknown
        status = answer.get("status")
        before = facts.last
        if before in TERMINAL:
            if status != before:
                yield fail_once(
                    facts, TRANSITIONS, exchange,
                    f"end on a {before} session answered {status!r}; a terminal session is "
                    "answered unchanged (SES-ST-5)",
                )  # fmt: skip
            else:
                yield Verdict.passed(TRANSITIONS, exchange, edge=False)
            return
        reached = _further(facts.progress(), answer)
        if status == "failed":
            error = answer.get("error")
            if reached == "not_started" and mentions(error, "no_capacity"):
                yield Verdict.passed(TRANSITIONS, exchange, edge=False)
                return  # the start-up timeout failed the job a moment before the end arrived
            yield fail_once(
                facts, TRANSITIONS, exchange,
                f"end on a session last seen {before!r} answered 'failed' with error {error!r}; "
                "end never fails a session, and only the start-up timeout (no_capacity) fails "
                "one that had not run",
            )  # fmt: skip
            return
        rule = next(r for r in END_RULES if r.progress == reached)
        if (
            before == "running" and status == "ended" and not facts.ends_sent
            and not self._timer_could_fire(facts, sent)
        ):  # fmt: skip
            yield fail_once(
                facts, TRANSITIONS, exchange,
                f"end on a running session (last seen {before!r}) answered 'ended' at once, "
                "before any timer could end it; a running session ends through ending "
                "(SES-ST-3)",
            )  # fmt: skip
            return
        if status not in rule.outcomes:
            yield fail_once(
                facts, TRANSITIONS, exchange,
                f"end on {rule.described} session (last seen {before!r}) answered {status!r}; "
                f"the seed allows {sorted(rule.outcomes)} ({rule.requirement})",
            )  # fmt: skip
            return
        yield Verdict.passed(TRANSITIONS, exchange, edge=reached != "placed")

    def _timer_could_fire(self, facts: SessionFacts, sent: float) -> bool:
        """Whether a timer may have ended the session by itself before an end sent at
        ``sent`` (then ``end`` answers it ended, unchanged)."""
        if facts.running_at is None:
            return True  # when it began to run is not known
        limits = [limit for limit, _ in self._limits(facts, audio_known=True)]
        return not limits or sent - facts.running_at >= min(limits) - TIMER_SLACK

    def judge_end_refused(self, session_id: str, exchange: Exchange) -> Iterator[Verdict]:
        """``end`` answered no 200 on a session the run had seen terminal: the seed answers
        200 with the session unchanged."""
        facts = self.sessions.get(session_id)
        if facts is None or facts.terminal is None or exchange.status in (200, 429, 503):
            return
        yield fail_once(
            facts, TRANSITIONS, exchange,
            f"end on the {facts.terminal} session {session_id} answered {exchange.status}; a "
            "terminal session is answered 200, unchanged (SES-ST-5)",
        )  # fmt: skip

    # -- session_timers ----------------------------------------------------------------------

    def _timers(
        self,
        facts: SessionFacts,
        status: str,
        resource: dict[str, Any],
        at: float,
        exchange: Exchange,
    ) -> Iterator[Verdict]:
        startup = SEED.startup_timeout_seconds
        if (
            status in _UNPLACED
            and resource.get("started_at") is None
            and facts.created is not None
            and at - facts.created > startup + STARTUP_SLACK
        ):
            yield fail_once(
                facts, STARTUP, exchange,
                f"session {facts.id} is still {status!r} {at - facts.created:.0f} s after its "
                f"create was answered; a job not placed within {startup:g} s fails no_capacity "
                "(SES-ST-2)",
            )  # fmt: skip
        if (
            status == "failed" and facts.placed_at is None and facts.created is not None
            and mentions(resource.get("error"), "no_capacity")
        ):  # fmt: skip
            unplaced = [t for t, s, _ in facts.statuses if s in _UNPLACED]
            waited = max(unplaced, default=facts.created) - facts.created
            yield Verdict.passed(STARTUP, exchange, edge=waited >= startup - STARTUP_SLACK)
        error = resource.get("error")
        if status == "failed" and _mentions_timer(error):
            yield fail_once(
                facts, TIMERS, exchange,
                f"session {facts.id} failed with error {error!r}: a timer ended it, and the "
                "seed's rows end a session by its max duration or idle timeout as ended",
            )  # fmt: skip
        if (
            status == "ending"
            and facts.ending_at is not None
            and at - facts.ending_at > DRAIN_BOUND
        ):
            yield fail_once(
                facts, TIMERS, exchange,
                f"session {facts.id} is still ending {at - facts.ending_at:.0f} s after it was "
                f"first seen ending; ending drains to ended (allowed {DRAIN_BOUND:g} s)",
            )  # fmt: skip
        if status == "running" and facts.running_at is not None and not facts.ends_sent:
            for limit, name in self._limits(facts):
                if at - facts.running_at > limit + TIMER_SLACK:
                    yield fail_once(
                        facts, TIMERS, exchange,
                        f"session {facts.id} ({name} {limit} s) is still running "
                        f"{at - facts.running_at:.0f} s after it was first seen running",
                    )  # fmt: skip
        if status == "ended" and not facts.ends_sent and facts.sent is not None:
            limits = [limit for limit, _ in self._limits(facts, audio_known=True)]
            shortest = min(limits, default=None)
            if shortest is not None and at - facts.sent < shortest - TIMER_SLACK:
                yield fail_once(
                    facts, TIMERS, exchange,
                    f"session {facts.id} ended {at - facts.sent:.0f} s after its create was "
                    f"sent, before its shortest timer ({shortest} s) could fire, and nobody "
                    "ended it",
                )  # fmt: skip
            elif facts.running_at is not None:
                yield Verdict.passed(TIMERS, exchange, edge=True)

    def _limits(self, facts: SessionFacts, audio_known: bool = False) -> list[tuple[int, str]]:
        """The timers that end a running session: max duration always; the idle timeout when
        no audio can reach it (or, for an early end, whenever it could fire first)."""
        out = []
        if facts.max_duration is not None:
            out.append((facts.max_duration, "max_duration_seconds"))
        if facts.idle is not None and (audio_known or not self.audio_may_flow):
            out.append((facts.idle, "idle_timeout_seconds"))
        return out
