"""``avatar-sim demo``: the scripted day (``day``), its summary (``summary``) and the command
that adds the default scenario's report (``command``)."""

from __future__ import annotations

from harness.demo.day import DemoResult, run_demo
from harness.demo.summary import render_summary, write_outputs

__all__ = ["DemoResult", "render_summary", "run_demo", "write_outputs"]
