"""Scenario overlays: a file that names another (``extends: base.yaml``) and changes some of its
fields (NB-14).

Why overlays: the tools that derive a scenario (``avatar-sim calibrate`` fits the service's
parameters to a capture, ``avatar-sim plan`` writes a pool schedule) should change only what they
found and leave everything else to the file the engineer keeps, so a later edit of that file
reaches the derived ones, and a reader sees at a glance what each tool changed. An overlay is an
ordinary scenario file, so ``run``, ``sweep``, ``plan``, ``replay --scenario`` and ``serve
--scenario`` read it like any other (``harness.scenarios.loader.read_scenario``), and overlays
stack: a plan of a calibrated scenario extends the calibration, which extends the base.

How fields combine (``merge``): a mapping merges key by key, recursively (``config.scheduler``
keeps the base's other keys when an overlay sets ``workers``); anything else, a list included,
replaces the base's value whole (an overlay's ``arrivals`` are the arrivals), and so does a
mapping that names its ``kind`` (a distribution, an arrival: one value of a union, whose fields
mean nothing for another kind). A relative path in
a file (``extends``, a recorded arrival's ``path``) is read next to the file that wrote it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["EXTENDS", "merge", "relative_to", "write_overlay"]

#: The key naming the scenario an overlay changes.
EXTENDS = "extends"


def merge(base: Any, overlay: Any) -> Any:
    """``overlay`` laid over ``base``: mappings merged key by key, anything else (and a mapping
    that names its ``kind``) replaced."""
    if not isinstance(base, Mapping) or not isinstance(overlay, Mapping) or "kind" in overlay:
        return overlay
    merged = dict(base)
    for key, value in overlay.items():
        merged[key] = merge(base[key], value) if key in base else value
    return merged


def relative_to(path: str | Path, directory: str | Path) -> str:
    """``path`` as a file in ``directory`` should name it: relative where it can be (so the two
    can move together), absolute across drives."""
    try:
        return Path(os.path.relpath(Path(path).absolute(), Path(directory).absolute())).as_posix()
    except ValueError:  # another drive (Windows): no relative path exists
        return str(Path(path).absolute())


def write_overlay(
    path: str | Path,
    changes: Mapping[str, Any],
    *,
    extends: str | Path | None = None,
    header: str = "",
) -> Path:
    """Write ``changes`` as a scenario file at ``path`` extending ``extends`` (a scenario file,
    named relative to ``path``'s directory) or, without one, as a whole scenario; ``header``
    becomes its leading comment lines. Returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {}
    if extends is not None:
        data[EXTENDS] = relative_to(extends, out.parent)
    data.update(changes)
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    out.write_text(comment + text, encoding="utf-8")
    return out
