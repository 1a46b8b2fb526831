"""Finding and reading the contract: the facade's loader, under the name the harness has used.

The loader lives in ``sim.asgi.openapi`` (the facade reads and serves the same files, and must
not import the harness); this module only re-exports it, so ``harness.contract.loader`` and the
facade can never disagree about which copy of ``spec/`` they read.
"""

from __future__ import annotations

from sim.asgi.openapi import (
    OPENAPI_FILE,
    PROFILE_FILE,
    SCHEMAS_DIR,
    default_spec_dir,
    load_spec,
    load_yaml,
    repo_root,
    spec_path,
)

__all__ = [
    "OPENAPI_FILE",
    "PROFILE_FILE",
    "SCHEMAS_DIR",
    "default_spec_dir",
    "load_spec",
    "load_yaml",
    "repo_root",
    "spec_path",
]
