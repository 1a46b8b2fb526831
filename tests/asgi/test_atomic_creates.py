"""A create that fails half-way leaves no trace (ERR-1, LIM-1, LIM-5, SIM-5, GAP-ERR-6).

Reported: a create could answer 500 after its object was stored; the organization then kept a
half-made session that held its concurrency slot. Now every create first runs all its checks and
stores nothing, then makes its changes as one unit of work that is undone if anything fails.

Proof by fault injection, for each create (sessions, pipecat sessions, avatars, runs with inline
inputs, idempotent or not, a run that gets a slot and one that waits for capacity): a failure is
injected right after each step of the create, both after each change the create registers
(every one of them in turn) and after each named collaborator it calls. Each time the answer is
the 500 envelope, the platform's state (``state_digest``: objects, indexes, cap counts, queues,
ledger rows and balances, idempotency entries, events, webhook deliveries) is exactly what it was
before, the same request then succeeds once, and the clock can run on with nothing firing for
the withdrawn object.
"""

from __future__ import annotations

import base64
import io
import struct
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from PIL import Image

from harness.target import SyncASGITransport
from sim.asgi import create_app
from sim.avatars.records import Avatar
from sim.config import RunsConfig, SimConfig
from sim.platform import Platform
from tests.asgi.support import (
    ADMIN_TOKEN,
    assert_envelope,
    make_org,
    state_digest,
)
from tests.world import session_body


class InjectedFault(RuntimeError):
    """The failure a test injects; a real bug would be any other exception."""


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (80, 80), (200, 100, 50)).save(buffer, format="PNG")
    return buffer.getvalue()


def _wav(seconds: float = 1.0, rate: int = 8000) -> bytes:
    frames = int(seconds * rate)
    data = b"\x00\x00" * frames
    header = b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
    header += struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
    return header + b"data" + struct.pack("<I", len(data)) + data


@dataclass(frozen=True)
class Create:
    """One create request and how to count what it made."""

    name: str
    method: str
    path: str
    kwargs: dict[str, Any]
    made: Callable[[Platform], int]
    config: SimConfig = field(default_factory=SimConfig)
    idempotency_key: str | None = None


SESSION = session_body(metadata={"a": 1})
PORTRAIT_RUN = {
    "input": {
        "image": base64.b64encode(_png()).decode(),
        "audio": base64.b64encode(_wav()).decode(),
    },
    "metadata": {"order": 7},
}

CREATES = [
    Create(
        "session",
        "POST",
        "/v1/sessions",
        {"json": SESSION},
        lambda p: len(p.sessions.sessions()),
    ),
    Create(
        "session-idempotent",
        "POST",
        "/v1/sessions",
        {"json": SESSION},
        lambda p: len(p.sessions.sessions()),
        idempotency_key="once-only",
    ),
    Create(
        "pipecat-session",
        "POST",
        "/v1/pipecat/sessions",
        {"json": {"avatar_id": "av_stock_mock", "quality": "mock"}},
        lambda p: len(p.sessions.sessions()),
    ),
    Create(
        "avatar",
        "POST",
        "/v1/avatars",
        {"files": {"image": ("me.png", _png(), "image/png")}, "data": {"name": "Me"}},
        lambda p: len(p.avatars.avatars()),
    ),
    Create(
        "run-with-inputs-idempotent",
        "POST",
        "/v1/run/sim/portrait-video",
        {"json": PORTRAIT_RUN},
        lambda p: len(p.runs.runs()),
        idempotency_key="run-once",
    ),
    Create(
        "run-waiting-for-capacity",
        "POST",
        "/v1/run/sim/echo-text",
        {"json": {"input": {"prompt": "hello"}}},
        lambda p: len(p.runs.runs()),
        config=SimConfig(runs=RunsConfig(run_workers=0)),
    ),
]


class World:
    def __init__(self, create: Create) -> None:
        self.create = create
        self.platform = Platform.create(create.config)
        self.org = make_org(self.platform, "Atomic", "enterprise")
        app = create_app(self.platform, admin_token=ADMIN_TOKEN)
        self.client = httpx.Client(transport=SyncASGITransport(app), base_url="http://sim")

    def send(self) -> httpx.Response:
        headers = self.org.auth()
        if self.create.idempotency_key is not None:
            headers["Idempotency-Key"] = self.create.idempotency_key
        return self.client.request(
            self.create.method, self.create.path, headers=headers, **self.create.kwargs
        )


@contextmanager
def fail_after_change(platform: Platform, number: int) -> Iterator[list[int]]:
    """Raise right after the create registers its ``number``-th change (1-based)."""
    journal = platform.kernel.journal
    original = journal.on_undo
    seen = [0]

    def on_undo(step: Callable[[], object]) -> None:
        original(step)
        seen[0] += 1
        if seen[0] == number:
            raise InjectedFault(f"after change {number}")

    journal.on_undo = on_undo  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del journal.on_undo


def _changes_of(create: Create) -> int:
    world = World(create)
    with fail_after_change(world.platform, 0) as seen:  # 0: count, never fail
        assert world.send().status_code == 201
    return seen[0]


def _assert_no_trace_and_recovery(world: World, before: str, response: httpx.Response) -> None:
    assert_envelope(response, 500, "internal", "internal_error")
    assert state_digest(world.platform) == before
    retried = world.send()
    assert retried.status_code == 201, retried.text
    assert world.create.made(world.platform) == 1
    world.platform.clock.advance(900)  # timers of a withdrawn object would fire here
    assert world.create.made(world.platform) == 1
    again = world.send()  # and the platform still answers (a replay, a cap, or a second one)
    assert again.status_code < 500, again.text


@pytest.mark.req("ERR-1", "LIM-1", "LIM-5", "SIM-5", "EP-SESS-1", "EP-PIPE-1", "EP-AV-1")
@pytest.mark.parametrize("create", CREATES, ids=lambda c: c.name)
def test_a_failure_after_any_change_of_a_create_leaves_no_trace(create: Create) -> None:
    changes = _changes_of(create)
    assert changes >= 2  # the create really is several steps
    for number in range(1, changes + 1):
        world = World(create)
        before = state_digest(world.platform)
        with fail_after_change(world.platform, number):
            response = world.send()
        _assert_no_trace_and_recovery(world, before, response)


#: Named collaborators each create calls while it changes the platform (after its checks).
STEPS: dict[str, tuple[str, ...]] = {
    "session": (
        "kernel.ids.new",
        "sessions._move",
        "sessions._emit",
        "kernel.events.emit_values",
        "sessions._scheduler.enqueue",
        "sessions._render",
    ),
    "session-idempotent": ("sessions._scheduler.enqueue", "idempotency.store"),
    "pipecat-session": ("sessions._scheduler.enqueue", "sessions._render"),
    "avatar": ("kernel.ids.new", "avatars._rng.random", "Avatar.to_resource"),
    "run-with-inputs-idempotent": (
        "billing.reserve_run",
        "assets.store",
        "runs._move",
        "runs._slots.admit",
        "kernel.events.emit",
        "runs._render",
        "idempotency.store",
    ),
    "run-waiting-for-capacity": ("billing.reserve_run", "runs._slots.admit", "runs._emit"),
}


def _target(platform: Platform, dotted: str) -> tuple[Any, str]:
    owner_path, _, attribute = dotted.rpartition(".")
    if owner_path == "Avatar":
        return Avatar, attribute
    owner: Any = platform
    for part in owner_path.split("."):
        owner = getattr(owner, part)
    return owner, attribute


@pytest.mark.req("ERR-1", "LIM-1", "LIM-5", "SIM-5")
@pytest.mark.parametrize(
    ("create", "step"),
    [(c, step) for c in CREATES for step in STEPS[c.name]],
    ids=lambda value: value.name if isinstance(value, Create) else value,
)
def test_a_failure_after_each_named_step_of_a_create_leaves_no_trace(
    create: Create, step: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(create)
    before = state_digest(world.platform)
    owner, attribute = _target(world.platform, step)
    original = getattr(owner, attribute)
    calls = [0]

    def then_fail(*args: Any, **kwargs: Any) -> Any:
        original(*args, **kwargs)
        calls[0] += 1
        raise InjectedFault(f"after {step}")

    monkeypatch.setattr(owner, attribute, then_fail)
    response = world.send()
    monkeypatch.undo()
    assert calls[0] == 1, f"{step} was not called by the create"
    _assert_no_trace_and_recovery(world, before, response)


@pytest.mark.req("ERR-1", "SIM-7", "LIM-5")
@pytest.mark.parametrize(
    ("operation", "params"),
    [
        ("createSession", {"body": SESSION, "idempotency_key": "py-once"}),
        ("createRun", {"model_id": "sim/portrait-video", "body": PORTRAIT_RUN}),
    ],
)
def test_the_python_api_is_all_or_nothing_too(operation: str, params: dict[str, Any]) -> None:
    counting = Platform.create()
    caller = counting.authenticate(
        f"Bearer {make_org(counting, 'Py', 'enterprise').keys['unrestricted']}"
    )
    with fail_after_change(counting, 0) as seen:
        counting.call(operation, caller, dict(params))
    for number in range(1, seen[0] + 1):
        platform = Platform.create()
        org = make_org(platform, "Py", "enterprise")
        caller = platform.authenticate(f"Bearer {org.keys['unrestricted']}")
        before = state_digest(platform)
        with fail_after_change(platform, number), pytest.raises(InjectedFault):
            platform.call(operation, caller, dict(params))
        assert state_digest(platform) == before
        assert not platform.call(operation, caller, dict(params)).replayed
