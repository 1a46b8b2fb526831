"""Names a package lends from its modules, each imported the first time it is used.

Why: the conformance harness and the pytest toolkit list their public names in the package, but
a name's module brings heavy imports (schemathesis and the fuzzer, httpx and the simulator), and
loading the pytest plugin or asking for ``--help`` must not pay for them. Such a package says
which names each of its modules lends (``LazyNames``) and makes its ``load`` and ``names`` the
module ``__getattr__`` and ``__dir__`` of PEP 562.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["LazyNames"]


class LazyNames:
    """The names ``package`` lends, by the module each lives in: a module of the package
    (``"runner"``) or, written with a dot, a module's full name (``"harness.target"``)."""

    def __init__(self, package: str, lent: Mapping[str, Iterable[str]]) -> None:
        self.package = package
        self.homes = {name: module for module, names in lent.items() for name in names}

    def load(self, name: str) -> Any:
        """``name`` from its module, kept in the package so that the next use finds it there."""
        home = self.homes.get(name)
        if home is None:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        module = home if "." in home else f"{self.package}.{home}"
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[self.package], name, value)
        return value

    def names(self) -> list[str]:
        """The package's names, those it lends included, for ``dir()``."""
        return sorted(set(vars(sys.modules[self.package])) | set(self.homes))
