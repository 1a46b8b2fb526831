"""The composition root: one simulated service, wired.

``Platform`` wires the kernel (clock, random streams, ids, events) to every service (accounts,
billing, avatars, sessions, runs, assets, webhooks), the contract operations over them
(``sim.operations``) and the request pipeline in front of those (``sim.pipeline``), and exposes
the pipeline's door as ``call(operation_id, caller, params)``. Services do the work and raise
``DomainError``; the pipeline applies the rules that cross every operation.
"""

from __future__ import annotations

from sim.accounts import AccountRegistry, Caller
from sim.admin import PlatformAdmin
from sim.apilog import ApiCall, ApiLog
from sim.avatars.service import AvatarService
from sim.billing.service import Billing
from sim.config import SimConfig
from sim.idempotency import IdempotencyStore
from sim.ids import IdFactory
from sim.kernel import Kernel
from sim.operations import OPERATIONS, Operation, Operations, Outcome
from sim.pipeline import Check, Params, Pipeline, PlatformHandedOver
from sim.runs.assets import AssetService
from sim.runs.service import RunService
from sim.sessions.service import SessionService
from sim.webhooks import WebhookDispatcher

__all__ = [
    "OPERATIONS",
    "ApiCall",
    "Check",
    "Operation",
    "Outcome",
    "Params",
    "Platform",
    "PlatformHandedOver",
]


class Platform:
    """One simulated service instance. Create with ``Platform.create(config)``."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.config: SimConfig = kernel.config
        self.clock = kernel.clock
        self.accounts = AccountRegistry(kernel.config, kernel.clock, kernel.ids)
        self.billing = Billing(kernel, self.accounts)
        self.avatars = AvatarService(kernel)
        self.sessions = SessionService(kernel, self.accounts, self.billing, self.avatars)
        self.assets = AssetService(kernel)
        self.runs = RunService(kernel, self.accounts, self.billing, self.assets)
        self.webhooks = WebhookDispatcher(kernel)
        self.idempotency = IdempotencyStore(kernel.clock, kernel.config.limits)
        # Request ids come from their own stream so HTTP traffic never shifts domain ids.
        self._request_ids = IdFactory(kernel.clock, kernel.streams.stream("request_ids"))
        self.api_log = ApiLog(kernel.config.history.api_log_size)
        self.admin = PlatformAdmin(self)
        self.operations = Operations(self)
        self.pipeline = Pipeline(
            self.operations,
            clock=kernel.clock,
            journal=kernel.journal,
            limits=kernel.config.limits,
            idempotency=self.idempotency,
            api_log=self.api_log,
        )
        #: Run one contract operation; raises ``DomainError`` for every refusal. The door the
        #: facade and the Python API both use is the pipeline's own ``Pipeline.call``.
        self.call = self.pipeline.call

    @classmethod
    def create(cls, config: SimConfig | None = None) -> Platform:
        return cls(Kernel.create(config))

    @property
    def handed_over(self) -> bool:
        """Whether ``hand_over`` was called: the platform answers no more calls."""
        return self.pipeline.handed_over

    def hand_over(self) -> None:
        """Refuse every later call, for good, and drop the records of the stores that grow with
        traffic (the ledger, the event log, the sessions, the runs and their assets): whoever
        exported them (the runner's tables) keeps what it needs. An answer after that would be
        read from emptied stores (an idempotent replay would find no session and answer 404),
        so a call raises ``PlatformHandedOver`` rather than answer wrongly."""
        self.pipeline.handed_over = True
        self.billing.ledger.release()
        self.kernel.events.release()
        self.sessions.store.release()
        self.runs.release()
        self.assets.release()

    def authenticate(self, authorization: str | None) -> Caller:
        return self.accounts.authenticate(authorization)

    def new_request_id(self) -> str:
        return self._request_ids.new("request")

    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)
