"""``python -m harness``: the same command line as the ``avatar-sim`` console script."""

from __future__ import annotations

from harness.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
