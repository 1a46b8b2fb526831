"""Suite-wide settings.

Hypothesis: the machines are shared and noisy, so per-example deadlines would only measure the
neighbours; they are off everywhere. In CI (``CI`` set) the examples are derandomized, so a red
run is reproducible from its log, and nothing is written to the example database.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("dev", deadline=None)
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
