"""Which target a plain httpx client talks to: the seam behind the toolkit's ``wait_for``.

Why a registry: a test holds an ``httpx.Client`` (a fixture's, or one it made), and the helpers
that wait need the client's target to know how time passes there. ``bind`` (beside ``Target``,
whose ``client_for`` binds) records it; an unbound client with a real base URL is taken to be a
deployment (wall clock, no admin API).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx

from harness.target.target import BOUND, Target, UrlTarget, bind

if TYPE_CHECKING:
    from harness.testing.admin import SimAdmin

__all__ = ["UnknownTarget", "target_of", "url_client"]


class UnknownTarget(LookupError):
    """A client none of the helpers knows how to wait on (an in-process app not bound)."""


def target_of(client: httpx.Client) -> Target:
    """The target ``client`` was bound to; an unbound client with a real base URL is taken to
    be a deployment (wall clock, no admin API).

    Example::

        if target_of(api_client).admin is None:
            pytest.skip("needs the simulator's controls")
    """
    target = BOUND.get(client)
    if target is not None:
        return target
    host = client.base_url.host
    if not host or host == "testserver":
        raise UnknownTarget(
            "this client talks to an in-process app the avatar-sim helpers do not know: use the "
            "api_client fixture or sim_admin.client(key), or bind(client, InProcessTarget(...))"
        )
    deployment = UrlTarget(str(client.base_url))
    bind(client, deployment)
    return deployment


def url_client(
    base_url: str, key: str, *, admin: SimAdmin | None = None, timeout: float = 30.0
) -> httpx.Client:
    """A client of ``base_url`` authenticated with ``key``, bound to a ``UrlTarget``."""
    return UrlTarget(base_url, admin, timeout=timeout).client_for(key)
