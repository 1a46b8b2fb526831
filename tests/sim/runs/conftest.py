"""Fixtures for the run tests: a small world (kernel, accounts, fake billing, assets, runs).

Billing is a recording fake of ``BillingPort``: it keeps every reserve/settle/release row, never
removes one, and refuses a reservation above the organization's configured balance, so tests can
prove what the run service asks of billing without depending on the real ledger. Helpers are
fixtures because tests run in importlib mode (test modules cannot import each other).
"""

from __future__ import annotations

import base64
import io
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from PIL import Image

from sim.accounts import Caller
from sim.config import ModelConfig, RunsConfig, SimConfig
from sim.distributions import Constant
from sim.errors import QuotaExceeded
from sim.ports import RunCharge, SessionUsage
from sim.runs import AssetService, RunService
from tests.world import World as BaseWorld


@dataclass
class RecordingBilling:
    """A ``BillingPort`` that records rows; ``balances`` caps what an org may reserve."""

    rows: list[tuple[str, str, int | None]] = field(default_factory=list)
    charges: dict[str, RunCharge] = field(default_factory=dict)
    balances: dict[str, int] = field(default_factory=dict)

    def open_account(self, org_id: str, plan_key: str) -> None:
        del org_id, plan_key

    def ensure_can_start_session(self, org_id: str) -> None:
        del org_id

    def charge_session(self, usage: SessionUsage) -> None:
        del usage

    def held(self, org_id: str) -> int:
        held: dict[str, int] = {}
        for kind, run_id, credits in self.rows:
            if self.charges[run_id].org_id != org_id:
                continue
            if kind == "reserve":
                held[run_id] = credits or 0
            else:
                held.pop(run_id, None)
        return sum(held.values())

    def ensure_can_reserve(self, org_id: str, credits: int) -> None:
        balance = self.balances.get(org_id)
        if balance is not None and self.held(org_id) + credits > balance:
            raise QuotaExceeded("insufficient_credits", "Not enough credits for this run.")

    def reserve_run(self, charge: RunCharge, credits: int) -> None:
        self.ensure_can_reserve(charge.org_id, credits)
        self.charges[charge.run_id] = charge
        self.rows.append(("reserve", charge.run_id, credits))

    def cancel_reservation(self, run_id: str) -> None:
        self.rows = [row for row in self.rows if row[1] != run_id]

    def settle_run(self, run_id: str, credits: int) -> None:
        self.rows.append(("settle", run_id, credits))

    def release_run(self, run_id: str) -> None:
        self.rows.append(("release", run_id, None))

    def for_run(self, run_id: str) -> list[tuple[str, int | None]]:
        return [(kind, credits) for kind, rid, credits in self.rows if rid == run_id]


@dataclass
class World(BaseWorld):
    billing: RecordingBilling
    assets: AssetService
    runs: RunService
    alice: Caller = field(init=False)  # unrestricted key of an enterprise org A
    bob: Caller = field(init=False)  # unrestricted key of another enterprise org B
    carol: Caller = field(init=False)  # unrestricted key of a free-plan org C

    def __post_init__(self) -> None:
        self.alice = self.caller(self.org("enterprise", "A"))
        self.bob = self.caller(self.org("enterprise", "B"))
        self.carol = self.caller(self.org("free", "C"))

    def speech(self, caller: Caller | None = None, text: str = "hello there") -> dict[str, Any]:
        return self.runs.create(caller or self.alice, "sim/speech", {"input": {"text": text}})

    def finish(self, run_id: str, caller: Caller | None = None) -> dict[str, Any]:
        """Advance until the run is terminal (bounded) and return it."""
        for _ in range(1000):
            body = self.runs.retrieve(caller or self.alice, run_id)
            if body["status"] in ("succeeded", "failed", "canceled"):
                return body
            self.advance(1.0)
        raise AssertionError(f"{run_id} never finished")


def constant_models(seconds: float = 10.0, failure_probability: float = 0.0) -> dict[str, Any]:
    """The default model configs with every duration replaced by a constant."""
    models = RunsConfig().models
    return {
        model_id: ModelConfig(
            duration=Constant(value=seconds),
            failure_probability=failure_probability,
            credits_per_unit=cfg.credits_per_unit,
            pricing_version=cfg.pricing_version,
        )
        for model_id, cfg in models.items()
    }


def build_world(seed: int = 11, **runs_fields: Any) -> World:
    config = SimConfig(seed=seed, runs=RunsConfig(**runs_fields))
    kernel, accounts = World.parts(config)
    billing = RecordingBilling()
    assets = AssetService(kernel)
    return World(kernel, accounts, billing, assets, RunService(kernel, accounts, billing, assets))


def wav_bytes(seconds: float = 2.0, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(b"\x01\x00" * int(seconds * rate))
    return out.getvalue()


def png_bytes(size: tuple[int, int] = (96, 80)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, color=(20, 40, 60)).save(out, format="PNG")
    return out.getvalue()


@dataclass(frozen=True)
class Media:
    wav: Callable[..., bytes]
    png: Callable[..., bytes]

    @staticmethod
    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()


@pytest.fixture
def world() -> World:
    return build_world(models=constant_models())


@pytest.fixture(scope="session")
def make_world() -> Callable[..., World]:
    return build_world


@pytest.fixture(scope="session")
def models() -> Callable[..., dict[str, Any]]:
    return constant_models


@pytest.fixture(scope="session")
def media() -> Media:
    return Media(wav=wav_bytes, png=png_bytes)
