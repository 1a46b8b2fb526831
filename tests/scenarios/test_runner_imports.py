"""The scenario runner loads only what a run through ``Platform.call`` needs.

The HTTP door (``harness.runner.http_door``) imports the ASGI facade, httpx, Starlette and the
JSON Schema validators; a run that never speaks HTTP (every sweep replication, every month of
the benchmark) must not pay their start-up time and memory.
"""

from __future__ import annotations

import json
import subprocess
import sys


def test_running_a_scenario_does_not_import_the_http_stack() -> None:
    code = (
        "import json, sys\n"
        "import harness.runner, harness.runner.tables, harness.runner.metrics\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} | "
        "{m for m in sys.modules if m.startswith('sim.asgi')})))\n"
    )
    loaded = set(
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            ).stdout
        )
    )
    assert not loaded & {"sim.asgi", "starlette", "httpx", "jsonschema", "uvicorn"}
