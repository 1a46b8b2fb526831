"""One door: every operation, ``createSession`` included, runs through its ``Operations`` method.

The pipeline applies the rules that cross every operation and knows no service: it reads each
operation's declaration (``sim.operations.OPERATIONS``) and calls the method it names. Held two
ways: the pipeline's syntax tree imports no service and names no operation, and a platform whose
operation methods are replaced by recorders reaches every recorder, the plain create too.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from sim.config import SimConfig
from sim.operations import OPERATIONS, UNREAD, Operations
from sim.platform import Platform
from sim.sessions.validation import SessionRequest

PIPELINE = Path(__file__).resolve().parents[3] / "sim" / "pipeline.py"
#: The domain's packages and modules that hold services: the pipeline imports none of them.
SERVICES = ("sim.sessions", "sim.runs", "sim.avatars", "sim.billing", "sim.webhooks")
BODY = {
    "avatar_id": "av_stock_anna",
    "transport": {"type": "livekit", "url": "wss://rtc.example", "room_name": "r1"},
}


class _Reached(Exception):
    """Raised by a recorder: the call got to this operation method."""


def _tree() -> ast.Module:
    return ast.parse(PIPELINE.read_text(encoding="utf-8"))


@pytest.mark.req("SIM-7")
def test_the_pipeline_imports_no_service_and_names_no_operation() -> None:
    tree = _tree()
    imported = [
        node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
    ] + [
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    ]
    assert not [name for name in imported if name.startswith(SERVICES)]
    texts = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert not texts & set(OPERATIONS)


def _recording(monkeypatch: pytest.MonkeyPatch, seen: list[tuple[str, Any]]) -> Platform:
    """A platform whose every operation method (full and unread forms) records its parameters
    and raises ``_Reached``; the readers (``Operation.reads``) stay what they are."""
    methods = {operation.method for operation in OPERATIONS.values()} | set(UNREAD.values())
    for name in methods:

        def record(self: Operations, caller: Any, params: Any, name: str = name) -> Any:
            seen.append((name, params))
            raise _Reached(name)

        monkeypatch.setattr(Operations, name, record)
    platform = Platform.create(SimConfig(seed=3))
    return platform


@pytest.mark.req("SIM-7")
@pytest.mark.parametrize("reads_body", [True, False])
def test_every_operation_reaches_the_method_it_declares(
    monkeypatch: pytest.MonkeyPatch, reads_body: bool
) -> None:
    seen: list[tuple[str, Any]] = []
    platform = _recording(monkeypatch, seen)
    org = platform.admin.create_organization("Door", "pro")
    caller = platform.authenticate(f"Bearer {org['keys']['unrestricted']}")
    for operation_id, operation in OPERATIONS.items():
        params: dict[str, Any] = {"body": dict(BODY)} if operation_id == "createSession" else {}
        with pytest.raises(_Reached) as reached:
            platform.call(operation_id, caller, params, reads_body=reads_body)
        expected = operation.method if reads_body else UNREAD.get(operation_id, operation.method)
        assert str(reached.value) == expected
    assert [name for name, _ in seen] == [
        operation.method if reads_body else UNREAD.get(operation_id, operation.method)
        for operation_id, operation in OPERATIONS.items()
    ]


@pytest.mark.req("SIM-7")
def test_a_plain_create_reaches_its_method_with_the_body_read_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The plain create's reader hands its method the request it read; any other create's
    parameters reach the method as sent."""
    seen: list[tuple[str, Any]] = []
    platform = _recording(monkeypatch, seen)
    org = platform.admin.create_organization("Door", "pro")
    caller = platform.authenticate(f"Bearer {org['keys']['unrestricted']}")
    with pytest.raises(_Reached):
        platform.call("createSession", caller, {"body": dict(BODY)})
    with pytest.raises(_Reached):
        platform.call("createSession", caller, {"body": {**BODY, "metadata": {"k": "v"}}})
    (first, plain), (second, general) = seen
    assert first == second == "op_create_session"
    assert isinstance(plain["body"], SessionRequest)
    assert plain["body"].avatar_id == BODY["avatar_id"]
    assert general == {"body": {**BODY, "metadata": {"k": "v"}}}
