"""The spec's request bounds, taken from the running configuration (SIM-6).

``spec/openapi.yaml`` writes every configurable request bound with the seed's value, as
documentation, and names the configuration field it comes from in ``x-config``::

    idle_timeout_seconds:
      type: integer
      minimum: 1
      maximum: 600
      x-config: {minimum: limits.idle_timeout_min_seconds, maximum: limits.idle_timeout_max_seconds}

``configured(document, config)`` returns a copy of the document in which each such keyword holds
the running configuration's value. The facade validates requests against that copy, so a
platform configured with ``idle_timeout_max_seconds: 1200`` accepts 900 through HTTP exactly as
through ``Platform.call``: the configuration is the one source of every limit, and with the
default configuration the copy equals the spec (a test holds the two together).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any, Final

from pydantic import BaseModel

from sim.config import SimConfig

__all__ = ["CONFIG_KEY", "config_value", "configured", "configured_keywords"]

CONFIG_KEY: Final = "x-config"


def config_value(config: SimConfig, dotted: str) -> Any:
    """The value of ``config`` at ``dotted`` (``limits.idle_timeout_max_seconds``)."""
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, BaseModel) or part not in type(node).model_fields:
            raise KeyError(f"x-config names no configuration field {dotted!r}")
        node = getattr(node, part)
    return node


def configured(document: Mapping[str, Any], config: SimConfig) -> dict[str, Any]:
    """A copy of ``document`` with every ``x-config`` keyword set from ``config``."""
    patched: dict[str, Any] = copy.deepcopy(dict(document))
    for node, keyword, dotted in configured_keywords(patched):
        node[keyword] = config_value(config, dotted)
    return patched


def configured_keywords(document: Any) -> Iterator[tuple[dict[str, Any], str, str]]:
    """Every ``(schema node, keyword, configuration path)`` an ``x-config`` names."""
    stack: list[Any] = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            mapping = node.get(CONFIG_KEY)
            if isinstance(mapping, dict):
                for keyword, dotted in mapping.items():
                    yield node, str(keyword), str(dotted)
            stack.extend(value for key, value in node.items() if key != CONFIG_KEY)
        elif isinstance(node, list):
            stack.extend(node)
