"""Which simulator a test talks to (``SimTarget``), and the served one ``--avatar-sim-serve``
starts for the run.

Why a served simulator per process: by URL, one server's clock, worker pool and faults are
shared by every test that talks to it, so two tests running in parallel against it see each
other's time jumps and faults. With ``--avatar-sim-serve`` each pytest process (each xdist
worker, started lazily by the first test that needs it) runs its own ``avatar-sim serve`` on a
free loopback port with a manual clock, so a suite runs by URL, over real HTTP, in parallel,
each worker on its own clock; and with a manual clock, time moves only when a helper moves it,
stopping at the same simulated moments as in process.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import pytest

from harness.testing import options

__all__ = ["SimTarget", "avatar_sim_served", "resolve"]


@dataclass(frozen=True, slots=True)
class SimTarget:
    """What the run's tests talk to: ``kind`` (``in_process`` or ``url``), the ``base_url``
    (``None`` in process), the API key ``api_client`` sends, the served simulator's
    ``admin_token`` (``None`` in process and for a deployment), the key's organization
    ``org_id`` (``None`` for a deployment) and whether the plugin started the server
    (``served``). The ``sim_target`` fixture gives it.

    Example::

        def test_machine_by_url(sim_target):
            if sim_target.kind == "url" and sim_target.admin_token:
                SessionMachine.at_url(sim_target.base_url, admin_token=sim_target.admin_token)
    """

    kind: Literal["in_process", "url"]
    base_url: str | None
    api_key: str
    admin_token: str | None
    org_id: str | None
    served: bool = False


@pytest.fixture(scope="session")
def avatar_sim_served() -> Iterator[SimTarget]:
    """The served simulator of this pytest process (``--avatar-sim-serve``), stopped at the end
    of the run."""
    from harness.serve.background import serve_in_background

    with serve_in_background(time_factor=None) as server:
        first = server.keys["organizations"][0]
        yield SimTarget(
            kind="url",
            base_url=server.base_url,
            api_key=str(first["keys"]["unrestricted"]),
            admin_token=server.admin_token,
            org_id=str(first["id"]),
            served=True,
        )


def resolve(request: pytest.FixtureRequest) -> SimTarget:
    """The run's target, from its options (``None`` fields where there is nothing to know)."""
    config = request.config
    if options.serving(config):
        served: SimTarget = request.getfixturevalue("avatar_sim_served")
        return served
    url = options.base_url(config)
    if url is None:
        org = request.getfixturevalue("sim_org")
        return SimTarget("in_process", None, str(org["keys"]["unrestricted"]), None, org["id"])
    key = options.api_key(config) or ""
    token = options.admin_token(config)
    org_id = None
    if token is not None:
        from harness.testing.admin import AdminRefused
        from harness.testing.http_admin import HttpAdmin

        with HttpAdmin(url, token) as admin:
            try:
                org_id = str(admin.describe_key(key)["org_id"])
            except AdminRefused:
                org_id = None  # a key of another deployment behind the same simulator
    return SimTarget("url", url, key, token, org_id)
