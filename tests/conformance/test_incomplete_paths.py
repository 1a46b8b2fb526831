"""Every path to "incomplete" is a deliberate decision: something the run could not try, never
a violation it saw.

A run is incomplete (exit 3) only when the complete invocation would have let a check run and
this one could not: a key, a model, a room, time, or the target's own refusal of something the
seed lets it refuse (no credits, no free worker). A violation is a failure. This test lists every
place the harness declares a check incomplete, each with why it is not a violation; a new one
fails it until it is decided here. The behaviour of the main ones is tested where they live
(``test_run``, ``test_context``, ``test_cli``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.req("HAR-11", "HAR-2")

PACKAGE = Path(__file__).resolve().parents[2] / "harness" / "conformance"

#: (module, function) -> why being stopped there is not a violation the run saw.
DELIBERATE: dict[tuple[str, str], str] = {
    ("avatars", "uploaded_avatar"): "the target refused the upload for credits, rate or load "
    "(402, 429, 503), which the seed lets it do",
    ("clock", "wait"): "--quick: the user asked for no wait",
    ("context_base", "wait"): "a wait longer than --max-wait, or past the run's or the check's "
    "time budget: time the user did not give",
    ("context_base", "_pick_avatar"): "the target lists no ready avatar: --avatar-id names one",
    ("context_creates", "created"): "a refusal the seed allows for what only the user can change: "
    "credits (402), another traffic's sessions holding the organization's cap, no free worker "
    "after its Retry-After, a room or avatar the target will not take (--transport-json, "
    "--avatar-id)",
    ("context", "_find_plan"): "no run body the target accepts: --model and --run-json, or "
    "the target refusing a run for credits or load",
    ("lifecycle", "_never_ran"): "the session failed or was stopped by the target before it "
    "ran (a worker lost: the seed does not say it cannot), or never reached its first frame "
    "in a room the worker cannot join (--transport-json); one left queued fails the model",
    ("runner", "_missing"): "a key the check needs was not given (--other-org-key, ...)",
    ("runner", "run"): "the run's time budget ran out, or the target stalled or went away "
    "(then exit 2)",
    ("runner", "_result"): "fuzzing off (--max-examples 0) or stopped before the fuzz, or a "
    "response check the run's traffic never met",
    ("runs", "run_lifecycle"): "the target refused a second run for credits or load",
    ("runs", "run_deletion"): "the key's organization may not delete runs (enterprise accounts "
    "only) or cannot now (402, 429): --api-key of an enterprise organization",
    ("runs", "an_asset"): "no asset, and no listed model makes one: --model with media outputs",
    ("sessions", "cap_probe"): "the first session ended before it ran (a worker lost)",
    ("sessions", "pipecat_session"): "the target refused the pipecat session for credits, rate "
    "or load",
}


def _incomplete_sites() -> set[tuple[str, str]]:
    sites: set[tuple[str, str]] = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "Incomplete"
                ):
                    sites.add((path.stem, function.name))
    return sites


def test_every_path_to_incomplete_is_decided() -> None:
    sites = _incomplete_sites()
    assert sites - set(DELIBERATE) == set(), "decide each new path to incomplete here"
    assert set(DELIBERATE) - sites == set(), "a decided path is gone: drop it"
    assert all(len(why) > 20 for why in DELIBERATE.values())
