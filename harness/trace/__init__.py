"""Requirement traceability: the catalog of ids, the tests that prove them, and the table.

The catalog (``spec/requirements.yaml``) is read by ``catalog``; the pytest side (the ``req``
marker's checks and the ``--req-report`` results file) is ``markers``, which only the pytest
plugin imports, so reading the catalog or a results file never imports pytest; ``results`` owns
the results file's format and joins it with the catalog; ``command`` is ``avatar-sim trace``.
"""

from __future__ import annotations

from harness.trace.catalog import (
    Catalog,
    CatalogError,
    Kind,
    Requirement,
    catalog_path,
    load_catalog,
)
from harness.trace.results import (
    Outcome,
    RecordedTest,
    ReportError,
    ResultsReport,
    TraceRow,
    build_trace,
    read_report,
    render_trace,
    write_report,
)

__all__ = [
    "Catalog",
    "CatalogError",
    "Kind",
    "Outcome",
    "RecordedTest",
    "ReportError",
    "Requirement",
    "ResultsReport",
    "TraceRow",
    "build_trace",
    "catalog_path",
    "load_catalog",
    "read_report",
    "render_trace",
    "write_report",
]
