"""The plugin's options, and the checks that stop a run at once when one of them is wrong.

Why checked up front: a wrong admin token used to fail every test that waited (``wait_for``
reads the served clock with it) and error every teardown, and a URL where nothing listens gave a
connection traceback in every test, none of them naming the option at fault. So before any test
runs, the plugin asks the target three questions: does the URL answer, is the key accepted, is
the admin token valid. The first "no" ends the run with one line naming the option and pytest's
usage-error code (4), in the controlling process only (xdist workers inherit its verdict).

Which target a run has: the in-process simulator (no option), a URL (``--avatar-sim-base-url``
with ``--avatar-sim-api-key``, and ``--avatar-sim-admin-token`` for a served simulator's
controls), or a served simulator the plugin starts itself, one per xdist worker
(``--avatar-sim-serve``; ``harness.testing.serving``).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

__all__ = [
    "ADMIN_TOKEN_OPTION",
    "API_KEY_OPTION",
    "BASE_URL_OPTION",
    "EXIT_USAGE",
    "SERVE_OPTION",
    "add_options",
    "admin_token",
    "api_key",
    "base_url",
    "check_options",
    "check_target",
    "preflight",
    "serving",
]

BASE_URL_OPTION = "--avatar-sim-base-url"
API_KEY_OPTION = "--avatar-sim-api-key"
ADMIN_TOKEN_OPTION = "--avatar-sim-admin-token"
SERVE_OPTION = "--avatar-sim-serve"
#: pytest's own exit code for a usage error.
EXIT_USAGE = int(pytest.ExitCode.USAGE_ERROR)
#: Wall seconds each preflight request may take.
PREFLIGHT_TIMEOUT = 10.0


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("avatar-sim", "avatar-sim")
    group.addoption(
        BASE_URL_OPTION,
        dest="avatar_sim_base_url",
        default=None,
        metavar="URL",
        help="run api_client against this deployment instead of the in-process simulator",
    )
    group.addoption(
        API_KEY_OPTION,
        dest="avatar_sim_api_key",
        default=None,
        metavar="KEY",
        help="the API key api_client sends to the deployment of --avatar-sim-base-url",
    )
    group.addoption(
        ADMIN_TOKEN_OPTION,
        dest="avatar_sim_admin_token",
        default=None,
        metavar="TOKEN",
        help="the /_sim admin token of the served simulator at --avatar-sim-base-url: gives "
        "the sim_admin, fresh_org and play_audio fixtures and session_events' reasons there "
        "(tests that need sim_admin skip without it); wait_for then counts simulated seconds",
    )
    group.addoption(
        SERVE_OPTION,
        dest="avatar_sim_serve",
        action="store_true",
        default=False,
        help="start a served simulator (avatar-sim serve, manual clock) for the run, one per "
        "xdist worker, and run api_client and sim_admin against it by URL",
    )


def base_url(config: pytest.Config) -> str | None:
    value = config.getoption("avatar_sim_base_url", default=None)
    return str(value).rstrip("/") if value else None


def api_key(config: pytest.Config) -> str | None:
    value = config.getoption("avatar_sim_api_key", default=None)
    return str(value) if value else None


def admin_token(config: pytest.Config) -> str | None:
    value = config.getoption("avatar_sim_admin_token", default=None)
    return str(value) if value else None


def serving(config: pytest.Config) -> bool:
    return bool(config.getoption("avatar_sim_serve", default=False))


def check_options(config: pytest.Config) -> None:
    """Options that cannot go together are a usage error, reported before any test runs."""
    url = base_url(config)
    if serving(config) and (url or api_key(config) or admin_token(config)):
        raise pytest.UsageError(
            f"{SERVE_OPTION} starts its own simulator: drop {BASE_URL_OPTION}, "
            f"{API_KEY_OPTION} and {ADMIN_TOKEN_OPTION}"
        )
    if url and not api_key(config):
        raise pytest.UsageError(f"{BASE_URL_OPTION} needs {API_KEY_OPTION}")
    if admin_token(config) and not url:
        raise pytest.UsageError(f"{ADMIN_TOKEN_OPTION} needs {BASE_URL_OPTION}")


def check_target(config: pytest.Config) -> None:
    """At session start, in the controlling process: end the run with one line naming the
    option at fault when the target does not answer, refuses the key or the admin token."""
    if hasattr(config, "workerinput"):  # an xdist worker: the controller has checked
        return
    url, key = base_url(config), api_key(config)
    if not url or not key:
        return
    problem = preflight(url, key, admin_token(config))
    if problem is not None:
        pytest.exit(problem, returncode=EXIT_USAGE)


def preflight(url: str, key: str, token: str | None) -> str | None:
    """What is wrong with the target, in one line naming the option, or ``None``."""
    with httpx.Client(base_url=url, timeout=PREFLIGHT_TIMEOUT) as http:
        try:
            answer = http.get(
                "/v1/sessions", params={"limit": 1}, headers={"Authorization": f"Bearer {key}"}
            )
        except httpx.HTTPError as error:
            reason = str(error) or type(error).__name__
            return f"{BASE_URL_OPTION} {url}: nothing answers there ({reason})"
        if answer.status_code in (401, 403):
            return f"{API_KEY_OPTION}: {url} refused the key ({_said(answer)})"
        if answer.status_code >= 300 and answer.status_code != 429:
            return f"{BASE_URL_OPTION} {url}: GET /v1/sessions answered {_said(answer)}"
        if token is None:
            return None
        try:
            clock = http.get("/_sim/clock", headers={"Authorization": f"Bearer {token}"})
        except httpx.HTTPError as error:
            return f"{BASE_URL_OPTION} {url}: the admin API does not answer ({error})"
        if clock.status_code == 404:
            return (
                f"{ADMIN_TOKEN_OPTION}: {url} has no /_sim admin API (only a served simulator "
                "has one; drop the token for a deployment)"
            )
        if clock.status_code != 200:
            return f"{ADMIN_TOKEN_OPTION}: {url} refused the admin token ({_said(clock)})"
    return None


def _said(response: httpx.Response) -> str:
    try:
        error: Any = response.json().get("error", {})
        code = error.get("code") if isinstance(error, dict) else None
    except (ValueError, AttributeError):
        code = None
    return f"{response.status_code} {code}" if code else str(response.status_code)
