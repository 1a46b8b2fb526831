"""avatar-sim's harness: what drives and checks the simulated service, or any deployment.

Each subpackage is one tool: ``contract`` (the spec's derived files and diff), ``conformance``
(holding a deployment to the seed), ``testing`` (the pytest toolkit and plugin), ``scenarios``,
``runner``, ``sweep`` and ``plan`` (load, capacity and cost), ``traffic`` (capture, calibrate,
replay), ``serve`` (the simulator on a real port), ``trace`` (requirement traceability) and
``examples``. Entry point: ``avatar-sim`` (``python -m harness``, ``harness.cli``).
"""
