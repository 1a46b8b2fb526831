"""The simulator's own controls: accounts, audio, faults and webhooks (SIM-8, SIM-9).

These are not part of the contract. The facade serves them under ``/_sim/`` behind an admin
token; scenarios and tests call them directly. Each returns a JSON-ready dict so both paths show
the same thing. Time is not here: it is ``platform.clock``.

The reads at the end (organizations, any organization's sessions, the active faults, the pool
against time) are what a watcher of a served simulator needs and a tenant's key cannot show; each
is a view of state the services already hold (HAR-31), never a copy kept here, except the pool's
samples, which only exist once ``sample_pool`` starts them (``sim.pool_samples``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from sim.accounts import ENVIRONMENTS, SCOPES, Environment, Scope
from sim.distributions import Constant
from sim.errors import NotFound, Unprocessable
from sim.lifecycle import STATUSES
from sim.pool_samples import PoolSamples

if TYPE_CHECKING:
    from sim.platform import Platform

__all__ = ["PlatformAdmin"]

#: The keys every organization created through the admin API gets, by kind.
KEY_SCOPES: dict[str, frozenset[Scope] | None] = {
    "unrestricted": None,
    "runs_read": frozenset({"runs:read"}),
    "runs_write": frozenset({"runs:write"}),
    "revoked": None,
}


class PlatformAdmin:
    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._pool_samples: PoolSamples | None = None

    # -- accounts ------------------------------------------------------------------------------

    def create_organization(
        self,
        name: str,
        plan: str = "free",
        *,
        environment: Environment = "production",
        concurrency_override: int | None = None,
    ) -> dict[str, Any]:
        """An organization with its billing opened and one key of each kind (``revoked`` is
        revoked at once, so clients can exercise the 401 path)."""
        platform = self._platform
        try:
            platform.config.billing.plan(plan)
        except KeyError:
            raise Unprocessable(
                "validation.enum", f"Unknown plan {plan!r}.", param="plan"
            ) from None
        org = platform.accounts.create_organization(name, plan)
        if concurrency_override is not None:
            platform.accounts.set_concurrency_override(org.id, concurrency_override)
        platform.billing.open_account(org.id, plan)
        keys: dict[str, str] = {}
        for kind, scopes in KEY_SCOPES.items():
            key = platform.accounts.create_key(org.id, environment=environment, scopes=scopes)
            if kind == "revoked":
                platform.accounts.revoke_key(key.secret)
            keys[kind] = key.secret
        return {"id": org.id, "name": org.name, "plan": plan, "keys": keys}

    def create_key(
        self,
        org_id: str,
        scopes: Sequence[Scope] | None = None,
        environment: Environment = "production",
    ) -> dict[str, Any]:
        _check_choice("environment", environment, ENVIRONMENTS)
        for index, scope in enumerate(scopes or ()):
            _check_choice(f"scopes.{index}", scope, SCOPES)
        key = self._platform.accounts.create_key(
            org_id, environment=environment, scopes=None if scopes is None else frozenset(scopes)
        )
        return {
            "key": key.secret,
            "org_id": org_id,
            "environment": environment,
            "scopes": None if key.scopes is None else sorted(key.scopes),
        }

    def describe_key(self, secret: str) -> dict[str, Any]:
        """What the simulator knows of a key (its organization above all), so a test given only
        a key can find the organization it acts for."""
        key = self._platform.accounts.key(secret)
        if key is None:
            raise NotFound("api_key.not_found", "No such API key.", param="key")
        return {
            "key": key.secret,
            "org_id": key.org_id,
            "environment": key.environment,
            "scopes": None if key.scopes is None else sorted(key.scopes),
            "revoked": key.revoked_at is not None,
        }

    def revoke_key(self, secret: str) -> dict[str, Any]:
        key = self._platform.accounts.revoke_key(secret)
        return {"key": key.secret, "revoked": True}

    def set_concurrency_override(self, org_id: str, limit: int | None) -> dict[str, Any]:
        org = self._platform.accounts.set_concurrency_override(org_id, limit)
        return {"id": org.id, "concurrency_override": org.concurrency_override}

    # -- sessions: audio and worker RPCs -------------------------------------------------------

    def inject_audio(
        self, session_id: str, kind: Literal["speech", "silence"], duration: float
    ) -> dict[str, Any]:
        self._platform.sessions.inject_audio(session_id, kind=kind, duration=duration)
        return self._session(session_id)

    def clear_buffer(self, session_id: str) -> dict[str, Any]:
        self._platform.sessions.clear_buffer(session_id)
        return self._session(session_id)

    # -- faults --------------------------------------------------------------------------------

    def crash_worker(self, session_id: str) -> dict[str, Any]:
        worker_id = self._platform.sessions.faults.crash_worker(session_id=session_id)
        return {"worker_id": worker_id, "session": self._session(session_id)}

    def set_capacity(self, workers: int) -> dict[str, Any]:
        self._platform.sessions.faults.set_capacity(workers)
        return self._pool()

    def capacity(self) -> dict[str, Any]:
        """The worker pool as it is, so a client that changes capacity can put it back."""
        return self._pool()

    def set_queue_size(self, jobs: int) -> dict[str, Any]:
        """Bound the wait queue: with no idle worker and ``jobs`` waiting, a create is refused
        ``503 at_capacity`` (0 and no worker: every create is)."""
        self._platform.sessions.faults.set_queue_size(jobs)
        return self._pool()

    def slow_startup(self, extra_seconds: float, duration: float | None) -> dict[str, Any]:
        """Slow every worker boot by ``extra_seconds`` for ``duration`` (``None``: for good);
        no extra seconds for good clears the fault, so a client can undo what it set."""
        faults = self._platform.sessions.faults
        if extra_seconds == 0 and duration is None:
            faults.clear_slow_startup()
        else:
            faults.slow_startup(extra_seconds, duration=duration)
        return self._pool()

    def lose_heartbeats(self, session_id: str, duration: float) -> dict[str, Any]:
        lost_at = self._platform.sessions.faults.lose_heartbeats(session_id, duration)
        clock = self._platform.clock
        return {
            "session": self._session(session_id),
            "lost_at": clock.timestamp_or_none(lost_at),
        }

    def fail_purges(self, enabled: bool) -> dict[str, Any]:
        self._platform.runs.set_purge_failure(enabled)
        return {"purge_failure": enabled}

    # -- webhooks ------------------------------------------------------------------------------

    def register_webhook(
        self, org_id: str, url: str, event_types: Sequence[str] | None = None
    ) -> dict[str, Any]:
        self._platform.accounts.organization(org_id)
        endpoint = self._platform.webhooks.register_endpoint(org_id, url, event_types)
        return endpoint.to_resource(self._platform.clock)

    def unregister_webhook(self, endpoint_id: str) -> dict[str, Any]:
        """Remove an endpoint, whichever organization's: deliveries to it not yet attempted
        end ``canceled``."""
        webhooks = self._platform.webhooks
        for endpoint in webhooks.endpoints():
            if endpoint.id == endpoint_id:
                webhooks.remove_endpoint(endpoint.org_id, endpoint_id)
                return {"id": endpoint_id, "object": "webhook_endpoint", "deleted": True}
        raise NotFound("webhook_endpoint.not_found", f"No webhook endpoint {endpoint_id}.")

    def webhook_deliveries(self, org_id: str) -> dict[str, Any]:
        clock = self._platform.clock
        webhooks = self._platform.webhooks
        deliveries = []
        for delivery in webhooks.deliveries(org_id):
            rendered = delivery.to_resource(clock)
            rendered["attempts"] = [a.to_resource(clock) for a in webhooks.attempts(delivery.id)]
            deliveries.append(rendered)
        return {"object": "list", "data": deliveries}

    # -- what happened to a session ------------------------------------------------------------

    def session_events(self, session_id: str) -> dict[str, Any]:
        """The session's lifecycle events from the event log, oldest first, each with its time,
        the status it reports and its own fields (``reason`` of ``session.ended``, ``code`` of
        ``session.failed``, ...): why and when a session moved, which its resource does not say.
        ``NotFound`` for an unknown session."""
        self._platform.sessions.render(session_id)  # refuses an unknown id
        events = []
        for event in self._platform.kernel.events:
            if event.subject != session_id or not event.type.startswith("session."):
                continue
            data = dict(event.data)
            session = data.pop("object", None)
            status = session.get("status") if isinstance(session, dict) else None
            events.append(
                {
                    "id": event.id,
                    "type": event.type,
                    "created_at": event.created_at,
                    "status": status,
                    "data": data,
                }
            )
        return {"object": "list", "session_id": session_id, "data": events}

    # -- reads for a watcher (HAR-31) -----------------------------------------------------------

    def organizations(self) -> dict[str, Any]:
        """Every organization, oldest first, with its plan and concurrency limit."""
        platform = self._platform
        accounts = platform.accounts
        data = [
            {
                "id": org.id,
                "object": "organization",
                "name": org.name,
                "plan": org.plan_key,
                "created_at": platform.clock.timestamp(org.created_at),
                "concurrency_limit": accounts.concurrency_limit(org.id),
                "concurrency_override": org.concurrency_override,
            }
            for org in accounts.organizations()
        ]
        return {"object": "list", "data": data}

    def sessions(self, org_id: str, *, status: str | None = None, limit: int) -> dict[str, Any]:
        """An organization's sessions, newest first (at most ``limit``, of ``status`` if given),
        with how many it has in each status: what ``GET /v1/sessions`` shows its own key, for
        any organization. ``NotFound`` for an unknown organization."""
        platform = self._platform
        platform.accounts.organization(org_id)
        if status is not None and status not in STATUSES:
            raise Unprocessable(
                "validation.enum", f"status must be one of: {', '.join(STATUSES)}.", param="status"
            )
        store = platform.sessions.store
        rows = store.org_rows(org_id)
        counts = Counter(store.status(row) for row in rows)
        data: list[dict[str, Any]] = []
        for row in reversed(rows):
            if len(data) >= limit:
                break
            if status is None or store.status(row) == status:
                data.append(platform.sessions.render(store.ids[row]))
        return {
            "object": "list",
            "org_id": org_id,
            "total": len(rows),
            "counts": {name: counts[name] for name in STATUSES if counts[name]},
            "data": data,
        }

    def session(self, session_id: str) -> dict[str, Any]:
        """Any session's resource and the organization it belongs to (``NotFound`` if none)."""
        sessions = self._platform.sessions
        return {**sessions.render(session_id), "org_id": sessions.session(session_id).org_id}

    def faults(self) -> dict[str, Any]:
        """The faults in force now, each with its parameters: a pool whose capacity or wait queue
        differs from the configured one (both 0: ``at_capacity``), slow start-up, sessions losing
        heartbeats, failing purges, and workers still restarting after a crash."""
        platform = self._platform
        clock = platform.clock
        fleet = platform.sessions.faults
        pool = platform.sessions.pool_status()
        configured = platform.config.scheduler.workers
        active: list[dict[str, Any]] = []
        if pool.restarting:
            active.append(
                {
                    "fault": "worker_crash",
                    "restarting_workers": pool.restarting,
                    "crashes": fleet.state.crashes,
                }
            )
        if pool.capacity != configured:
            active.append({"fault": "capacity", "workers": pool.capacity, "configured": configured})
        queue, bound = fleet.queue_size, platform.config.scheduler.max_queue_length
        if queue != bound and platform.config.scheduler.admission_policy == "queue":
            active.append({"fault": "queue_size", "size": queue, "configured": bound})
        slow = fleet.state.slow
        if slow is not None and fleet.state.slow_active(clock.now):
            extra = slow.extra
            active.append(
                {
                    "fault": "slow_startup",
                    "extra_seconds": extra.value if isinstance(extra, Constant) else None,
                    "distribution": extra.model_dump(mode="json"),
                    "until": clock.timestamp_or_none(slow.until),
                }
            )
        for session_id, until in fleet.heartbeat_losses(clock.now):
            loss = {"fault": "heartbeat_loss", "session_id": session_id}
            active.append({**loss, "until": clock.timestamp(until)})
        if platform.runs.purge_failure:
            active.append({"fault": "purge_failure", "enabled": True})
        return {"object": "list", "data": active}

    def sample_pool(self, every: float, keep: int) -> None:
        """Start reading the pool every ``every`` simulated seconds, keeping ``keep`` readings
        (once: a second call is refused, so two samplers never share one ring)."""
        if self._pool_samples is not None:
            raise RuntimeError("the pool is sampled already")
        platform = self._platform
        self._pool_samples = PoolSamples(
            platform.clock, platform.sessions.pool_status, every=every, keep=keep
        )

    def pool(self) -> dict[str, Any]:
        """The pool now, its configured size, and its samples against time (oldest first; none
        until ``sample_pool`` starts them)."""
        platform = self._platform
        clock = platform.clock
        sampler = self._pool_samples
        samples = [] if sampler is None else sampler.samples()
        return {
            **self._pool(),
            "at": clock.timestamp(),
            "configured_workers": platform.config.scheduler.workers,
            "sample_every_seconds": None if sampler is None else sampler.every,
            "samples": [
                {
                    "at": clock.timestamp(sample.at),
                    "seconds": sample.at,
                    "capacity": sample.capacity,
                    "workers": sample.workers,
                    "idle": sample.idle,
                    "busy": sample.busy,
                    "restarting": sample.restarting,
                    "queued": sample.queued,
                }
                for sample in samples
            ],
        }

    # -- views ---------------------------------------------------------------------------------

    def _session(self, session_id: str) -> dict[str, Any]:
        return self._platform.sessions.render(session_id)

    def _pool(self) -> dict[str, Any]:
        pool = self._platform.sessions.pool_status()
        return {
            "capacity": pool.capacity,
            "workers": pool.workers,
            "idle": pool.idle,
            "busy": pool.busy,
            "restarting": pool.restarting,
            "queued": pool.queued,
            "queue_size": self._platform.sessions.faults.queue_size,
        }


def _check_choice(param: str, value: object, choices: Sequence[str]) -> None:
    """Refuse a value outside ``choices`` as the served route does (a Python caller's strings
    are not held to the ``Literal`` types, so the same call must be refused here too)."""
    if value not in choices:
        raise Unprocessable(
            "validation.enum", f"{param}: must be one of {', '.join(choices)}.", param=param
        )
