"""Helpers shared by the facade's tests: an in-process HTTP transport, seeded keys, bodies.

Every test gets a fresh platform (seed 0) so no test leaks state into another. Requests go
through a plain ``httpx.Client`` whose transport hands each request to the app over ASGI
(httpx's own ``ASGITransport``, driven synchronously), in-process, with the manual virtual clock:
time moves only when a test advances it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from sim.distributions import Constant, Distribution, LogNormal, Uniform
from sim.platform import Platform
from tests.world import session_body as world_session_body

ADMIN_TOKEN = "simadmin_test-token"


def session_body(**overrides: Any) -> dict[str, Any]:
    """A valid ``POST /v1/sessions`` body with a worker token; keyword arguments replace or add
    fields."""
    return {**world_session_body(worker_token="worker-token"), **overrides}


@dataclass(frozen=True)
class Org:
    id: str
    plan: str
    keys: dict[str, str]

    def auth(self, kind: str = "unrestricted") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[kind]}"}


def make_org(platform: Platform, name: str, plan: str) -> Org:
    """An organization created through the simulator's admin controls, with its four keys."""
    created = platform.admin.create_organization(name, plan)
    return Org(id=created["id"], plan=created["plan"], keys=dict(created["keys"]))


ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}


ENVELOPE_KEYS = {"type", "code", "message", "param", "request_id"}


#: Reads every organization and every anonymous client relies on: whatever a request did, these
#: must keep answering 200 with valid JSON.
PUBLIC_READS = (
    "/v1/status",
    "/v1/billing/plans",
    "/v1/models",
    "/v1/sessions",
    "/v1/avatars",
    "/v1/runs",
    "/v1/assets",
    "/v1/usage",
    "/v1/usage?period=previous_month&timezone=Pacific/Kiritimati",
    "/v1/billing/quota",
)


def strict_json(text: str | bytes) -> Any:
    """Parse JSON as strictly as a client in another language would: ``NaN``, ``Infinity`` and
    bytes that are not UTF-8 are errors (Python's parser accepts the first two)."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    raw = text.decode("utf-8") if isinstance(text, bytes) else text
    return json.loads(raw, parse_constant=refuse)


def assert_envelope(
    response: httpx.Response, status: int, type_: str, code: str, param: str | None = None
) -> None:
    """``response`` is exactly the error envelope with these values, echoing its request id."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == ENVELOPE_KEYS
    assert (error["type"], error["code"], error["param"]) == (type_, code, param)
    assert error["request_id"] == response.headers["x-request-id"]
    assert error["request_id"].startswith("req_")
    assert response.headers["content-type"] == "application/json"


def upper_bound(dist: Distribution) -> float:
    """The largest value ``dist`` can draw (tests wait this long for a random duration)."""
    if isinstance(dist, LogNormal) and dist.cap is not None:
        return dist.cap
    if isinstance(dist, Constant):
        return dist.value
    if isinstance(dist, Uniform):
        return dist.high
    raise ValueError(f"{dist!r} has no upper bound")


def state_digest(platform: Platform) -> str:
    """Everything a request could store, count or charge, as one comparable text.

    Sessions, runs, avatars and assets (and the indexes that find them), the concurrency counts,
    the scheduler's queue, run slots and queues, relays, ledger rows and balances, idempotency
    entries, events and webhook deliveries, accounts and keys. Not in it, by design: the API log
    and the rate-limit windows (they record every request, refused ones included, GAP-LIM-1), the
    random streams (ids a failed request drew are not reused) and SimPy's calendar (a no-op wake-up
    may stay scheduled; tests advance the clock to show nothing fires for a withdrawn object).
    """
    sessions = platform.sessions
    runs = platform.runs
    orgs = [org.id for org in platform.accounts.organizations()]
    state: dict[str, Any] = {
        "accounts": [repr(org) for org in platform.accounts.organizations()],
        "keys": sorted(repr(key) for key in platform.accounts._keys.values()),
        "sessions": [sessions.render(s.id) for s in sessions.sessions()],
        "sessions_by_org": {k: list(v) for k, v in sessions.store._by_org.items() if v},
        "caps": [
            sorted((k, n) for k, n in sessions._caps._by_key.items() if n),
            sorted((k, n) for k, n in sessions._caps._by_org.items() if n),
        ],
        "queue": sessions.queued(),
        "pool": repr(sessions.pool_status()),
        "relays": sorted(sessions._relays),
        "runs": [repr(run) for run in runs.runs()],
        "runs_by_org": {k: [r.id for r in v] for k, v in runs._by_org.items() if v},
        "runs_queued": {k: sorted(v) for k, v in runs._queued.items() if v},
        "run_slots": [runs._slots.free, [r.id for r in runs._slots.waiting]],
        "avatars": [repr(avatar) for avatar in platform.avatars.avatars()],
        "avatars_by_org": {k: list(v) for k, v in platform.avatars._by_org.items() if v},
        "assets": [repr(asset) for asset in platform.assets.assets()],
        "ledger": [repr(entry) for entry in platform.billing.entries()],
        "balances": {org: repr(platform.billing.balances(org)) for org in orgs},
        # As a replay gives them: a body kept as its renderer is compared by what it renders.
        "idempotency": sorted(map(repr, platform.idempotency.replays())),
        "events": [repr(event) for event in platform.kernel.events],
        "deliveries": [repr(d) for d in platform.webhooks.deliveries()],
    }
    return json.dumps(state, sort_keys=True, default=repr)
