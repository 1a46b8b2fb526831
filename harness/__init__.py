"""avatar-sim's harness: what drives and checks the simulated service (and any deployment).

Contract tooling, traceability, served mode, the demo job and, as they land, scenarios, the
runner, sweeps and conformance checks. Entry point: ``avatar-sim`` (``python -m harness``).
"""
