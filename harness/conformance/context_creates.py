"""Creating sessions as a careful client would: paced within the seed's rate limit, a
rate-limit refusal waited out, the run's own sessions ended when the per-key cap refuses, a
``503 at_capacity`` retried after its ``Retry-After``; and what a refusal means for the script
that asked (judged by the model, or a reason the run could not try).

Why a layer of its own: every script creates through it, and the rules of pacing are one
concept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from harness.conformance.answers import is_success, refusal_code, refusal_param, session_of
from harness.conformance.checks import (
    CheckFailed,
    Incomplete,
    NotApplicable,
    NotChecked,
    is_rate_limited,
)
from harness.conformance.context_base import ContextBase
from harness.conformance.pacing import retry_hint
from harness.conformance.seed import SEED
from harness.conformance.target import Exchange

__all__ = ["CreatingContext"]

#: A 503 at_capacity is retried this many times (each after its Retry-After) before giving up.
_CAPACITY_RETRIES = 3
#: Rate-limit refusals waited out before the run looks for a whole quiet window.
_HINTED_RETRIES = 2


@dataclass
class CreatingContext(ContextBase):
    """The run's context, able to create sessions."""

    def blocked(self, role: str) -> NotChecked | None:
        """Why ``role``'s key can create no more sessions in this run, if it cannot."""
        return self._blocked.get(role)

    def create_session(
        self,
        body: Any,
        headers: Mapping[str, str] | None = None,
        *,
        role: str | None = None,
        path: str = "/v1/sessions",
        settle: bool = True,
    ) -> Exchange:
        """``POST /v1/sessions`` (or ``path``) as a careful client would: paced within the
        seed's rate limit, a rate-limit refusal waited out, this run's own sessions ended when
        the per-key cap refuses (unless ``settle`` is false), a ``503 at_capacity`` retried after
        its ``Retry-After``. Any other answer is returned to the caller to judge."""
        role = role or self.creator
        if role in self._blocked:
            raise self._blocked[role]
        pacer = self.pacer(role)
        hinted = capacity = settled = 0
        while True:
            now = self.now()
            self.wait(pacer.ready_at(now) - now, "the create rate limit of "
                      f"{SEED.creates_per_window} a minute per key", pacing=True)  # fmt: skip
            exchange = self._post_session(body, headers, role, path)
            pacer.record(self.now())
            if is_rate_limited(exchange):
                self._stop_if_limit_broken(role)
                hinted += 1
                delay = self._hint(exchange) if hinted <= _HINTED_RETRIES else None
                self.wait(
                    pacer.quiet_at(self.now()) - self.now() if delay is None else delay,
                    "a rate-limit refusal to clear",
                    pacing=True,
                )
                continue
            code = refusal_code(exchange)
            if exchange.status == 429 and code == "concurrent_sessions" and settle and settled < 2:
                settled += 1
                if not self.settle(role):
                    why = NotApplicable(
                        "stopped: the key's session cap is held by sessions that do not end ("
                        + ", ".join(sorted(self._stuck | self.watch.broken))
                        + "; reported under session_timers or terminal_states_final)"
                    )
                    self._blocked[role] = why
                    raise why
                continue
            if exchange.status == 503 and capacity < _CAPACITY_RETRIES:
                capacity += 1
                self.wait(self._hint(exchange) or 1.0, "a 503 to clear (no free worker)")
                continue
            break
        return exchange

    def _hint(self, exchange: Exchange) -> float:
        """The target's retry hint, within one rate window (a hint beyond it is not believed)."""
        window = SEED.rate_window_seconds
        hint = retry_hint(exchange)
        return min(max(hint if hint is not None else 1.0, 1.0), window + 1)

    def _stop_if_limit_broken(self, role: str) -> None:
        """Stop creating with ``role``'s key once the model has found its limiter refusing
        what no reading of the seed refuses (waiting on it again would only wait)."""
        key = self.model.rates.keys.get(role) if self.model is not None else None
        if key is not None and key.failed:
            why = NotApplicable(
                "stopped: the target refuses this key's creates where the seed admits them "
                "(reported under create_rate_limit)"
            )
            self._blocked[role] = why
            raise why

    def _post_session(
        self, body: Any, headers: Mapping[str, str] | None, role: str, path: str
    ) -> Exchange:
        exchange = self.target.request(
            "POST", path, role=role, json_body=body, headers=headers, operation=f"POST {path}"
        )
        self.remember(exchange, role)
        return exchange

    def remember(self, exchange: Exchange, role: str | None = None) -> None:
        """Note a session a create answered, so the run ends it."""
        session = session_of(exchange.json()) if is_success(exchange) else None
        session_id = session.get("id") if session is not None else None
        if isinstance(session_id, str) and session_id not in self._owner:
            self.created_sessions.append(session_id)
            self._owner[session_id] = role or self.creator

    def new_session(self, room: str, **fields: Any) -> tuple[Exchange, dict[str, Any]]:
        """Create a session with ``session_body``; what stops it says why (``Incomplete``)."""
        exchange = self.create_session(self.session_body(room, **fields))
        return exchange, self.created(exchange)

    def created(self, exchange: Exchange) -> dict[str, Any]:
        """The session a create answered, or why there is none. A refusal the seed allows for
        reasons only the user can change (credits, a room the worker can join, an avatar) leaves
        the check incomplete, naming what to give; any other refusal was judged by the model
        (``session_create``, ``concurrency_caps``) and stops the script."""
        if is_success(exchange):
            session = session_of(exchange.json())
            if session is None or not str(session.get("id", "")).startswith("sess_"):
                raise CheckFailed(f"a created session has no sess_ id: {session!r}", exchange)
            return session
        code = refusal_code(exchange) or str(exchange.status)
        param = refusal_param(exchange) or ""
        if exchange.status == 402:
            if self.model is not None and self.model.can_start_session is True:
                raise NotApplicable("stopped: a create refused 402 (reported under session_create)")
            raise Incomplete(
                f"the key's organization cannot pay for a session (402 {code})",
                "--api-key (an organization with credits)",
            )
        if exchange.status == 429 and code == "concurrent_sessions":
            if self.live_sessions(self.creator) or self._stuck:
                raise NotApplicable(
                    "stopped: the key's session cap is held by sessions that do not end "
                    "(reported under session_timers)"
                )
            raise Incomplete(
                "the organization's session cap is held by sessions this run did not make",
                "--api-key (an organization without other live sessions)",
            )
        if exchange.status == 503:
            raise Incomplete(
                f"the target had no free worker for a session ({exchange.status} {code}) "
                "after its Retry-After, several times"
            )
        if self.inputs.transport is None and (
            param.startswith("transport") or "transport" in code or "room" in code
        ):
            raise Incomplete(
                f"the target refuses the harness's transport ({exchange.status} {code}, param "
                f"{param or None}): give a room and token it accepts",
                "--transport-json",
            )
        if param.startswith("avatar") or "avatar" in code:
            raise Incomplete(
                f"the target refuses the avatar {self.avatar()} ({exchange.status} {code})",
                "--avatar-id",
            )
        raise NotApplicable(
            f"stopped: a create with every field the seed lists, at its stated values, was "
            f"refused {exchange.status} {code} (reported under session_create)"
        )
