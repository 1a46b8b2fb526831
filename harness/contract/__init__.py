"""Contract tooling: the spec's derived files, the contract profile and the additive-only diff.

``spec/openapi.yaml`` is the hand-written contract of the simulator. This package

- finds and reads it (``load_spec``), from a checkout or an installed wheel;
- derives one self-contained JSON Schema per component (``spec/schemas/``) and the contract
  profile the conformance harness applies to deployments (``spec/profile/``), deterministically
  (``build_all``, ``check``);
- compares two versions and reports what breaks the additive-only rule (``diff_specs``, VER-1).

Command line: ``avatar-sim spec build|check|diff`` (``harness.contract.command``).
"""

from __future__ import annotations

from harness.contract.build import (
    build_all,
    check,
    component_schema,
    component_schemas,
    derive_all,
    stale_files,
)
from harness.contract.diff import Finding, diff_specs
from harness.contract.loader import default_spec_dir, load_spec, load_yaml, spec_path
from harness.contract.profile import derive_profile, gap_ids

__all__ = [
    "Finding",
    "build_all",
    "check",
    "component_schema",
    "component_schemas",
    "default_spec_dir",
    "derive_all",
    "derive_profile",
    "diff_specs",
    "gap_ids",
    "load_spec",
    "load_yaml",
    "spec_path",
    "stale_files",
]
