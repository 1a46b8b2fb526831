"""The served simulator's console: a page at ``CONSOLE_PATH`` that shows it at work (HAR-30).

Its routes are ``harness.serve.console.routes`` (imported by the runner, since they load the
facade); its page, script, style and icon are the package data in ``static/``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["CONSOLE_PATH"]

#: Where ``avatar-sim serve`` serves the console (under the admin mount ``/_sim``).
CONSOLE_PATH: Final = "/_sim/console"
