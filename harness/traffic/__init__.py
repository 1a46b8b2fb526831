"""From a deployment's real traffic to the simulator and back.

One concept per module:

* ``recording``: recorded sessions, read from a capture, a user's CSV or Parquet file, or a run's
  ``tables/sessions.parquet`` into one checked type (``read_recording``);
* ``capture``: ``avatar-sim capture``, a deployment's sessions walked page by page, paced to its
  rate limits, into a recording;
* ``replay``: ``avatar-sim replay``, a recording played against a deployment by the scenarios'
  clients, its observed metrics beside the simulation's prediction (``replay_report``: its
  report, with each metric's fidelity error);
* ``fit`` and ``fresh``: the arrival rate over the day and distributions fitted to recorded
  traffic, and fresh days of demand drawn from them;
* ``calibrate``: ``avatar-sim calibrate``, the service's parameters fitted to a capture as a
  scenario overlay.

A scenario plays a recording as one of its arrivals (``kind: recorded``,
``harness.scenarios.Recorded``). Nothing is imported here, so that importing a submodule pays
only for its own dependencies.
"""
