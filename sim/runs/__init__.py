"""Model runs, the model catalog, assets and run deletion (the second half of the service).

``RunService`` serves the run and model endpoints' domain side, ``AssetService`` the asset
endpoints; both are plain Python on the kernel's clock. The lifecycles are the declared tables of
``sim.runs.lifecycle``; the catalog, content generators and remaining-time estimates are modules
of their own so tests and scenarios can use them directly.
"""

from __future__ import annotations

from sim.runs.assets import Asset, AssetService
from sim.runs.catalog import CATALOG, ModelSpec, find_model
from sim.runs.eta import Eta, remaining_time
from sim.runs.events import RunEvent
from sim.runs.lifecycle import (
    DELETION_TRANSITIONS,
    RUN_TERMINAL,
    RUN_TRANSITIONS,
    DeletionStatus,
    RunStatus,
)
from sim.runs.records import FileObject, OutputItem, Run, RunDeletion
from sim.runs.service import RunService

__all__ = [
    "CATALOG",
    "DELETION_TRANSITIONS",
    "RUN_TERMINAL",
    "RUN_TRANSITIONS",
    "Asset",
    "AssetService",
    "DeletionStatus",
    "Eta",
    "FileObject",
    "ModelSpec",
    "OutputItem",
    "Run",
    "RunDeletion",
    "RunEvent",
    "RunService",
    "RunStatus",
    "find_model",
    "remaining_time",
]
