"""``AssetBook``: what the run knows of the organization's assets, and the rule that binds
their content.

Why a book of its own: an asset is named in three places that must agree (a run's output item
with its file size, the organization's list with a ``byte_size``, and the content itself), and
the three arrive in any order over a run.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness.conformance.model.calls import Call
from harness.conformance.model.rules import Verdict, model_rule
from harness.conformance.target import Exchange

__all__ = ["ASSETS", "AssetBook", "inline_size"]

ASSETS = model_rule("asset_content")


@dataclass
class AssetBook:
    """Sizes of the organization's assets as each place named them."""

    #: An asset's file size as a run's output item named it (its ``file.file_size``).
    file_sizes: dict[str, int] = field(default_factory=dict)
    #: An asset's byte_size as the organization's list gave it.
    byte_sizes: dict[str, int] = field(default_factory=dict)

    def output_named(self, output: dict[str, Any]) -> None:
        """A run's output item named an asset, perhaps with its file's size."""
        asset = output.get("asset_id")
        file = output.get("file")
        size = file.get("file_size") if isinstance(file, dict) else None
        if isinstance(asset, str) and isinstance(size, int) and not isinstance(size, bool):
            self.file_sizes[asset] = size

    def listed(self, asset_id: str, asset: dict[str, Any], exchange: Exchange) -> Iterator[Verdict]:
        """The organization's list showed ``asset``: its byte_size must be its file's size."""
        listed = asset.get("byte_size")
        if not isinstance(listed, int) or isinstance(listed, bool):
            return
        self.byte_sizes[asset_id] = listed
        size = self.file_sizes.get(asset_id)
        if size is None:
            return
        if listed != size:
            yield Verdict.failed(
                ASSETS, exchange,
                f"asset {asset_id} lists byte_size {listed}, but the run output naming it gave "
                f"its file {size} bytes",
            )  # fmt: skip
        else:
            yield Verdict.passed(ASSETS, exchange, edge=False)

    def content(self, asset_id: str, call: Call) -> Iterator[Verdict]:
        """The content of the organization's own asset was asked for."""
        if not call.ok and call.status not in (429, 503):
            yield Verdict.failed(
                ASSETS, call.exchange,
                f"the content of the organization's asset {asset_id} answered {call.status}",
            )  # fmt: skip
        elif call.ok and not call.exchange.body:
            yield Verdict.failed(ASSETS, call.exchange, f"asset {asset_id}'s content is empty")
        elif call.ok:
            yield Verdict.passed(ASSETS, call.exchange, edge=False)
            size = inline_size(call.exchange)
            if size is not None:
                yield from self.downloaded(asset_id, size, call.exchange)

    def downloaded(self, asset_id: str, size: int, exchange: Exchange) -> list[Verdict]:
        """The asset's content, downloaded, is ``size`` bytes: its byte_size says so."""
        listed = self.byte_sizes.get(asset_id)
        if listed is None:
            return []
        if listed != size:
            return [Verdict.failed(
                ASSETS, exchange,
                f"asset {asset_id} lists byte_size {listed}, and its content is {size} bytes",
            )]  # fmt: skip
        return [Verdict.passed(ASSETS, exchange, edge=True)]


def inline_size(exchange: Exchange) -> int | None:
    """The size of an asset's content as its answer carries it: the body itself when it is no
    JSON, or JSON that says it holds the bytes as base64 (``encoding``, ``data``); ``None`` when
    the content is elsewhere (a link) or its form is not one of those (the shape is a gap)."""
    content_type = exchange.headers.get("content-type", "")
    if "json" not in content_type.lower():
        return len(exchange.body)
    body = exchange.json()
    data = body.get("data") if isinstance(body, dict) else None
    if isinstance(body, dict) and body.get("encoding") == "base64" and isinstance(data, str):
        try:
            return len(base64.b64decode(data, validate=True))
        except ValueError:
            return None
    return None
