"""From a deployment's real traffic to the simulator and back.

One concept per module:

* ``recording``: recorded sessions, read from a capture, a user's CSV or Parquet file, or a run's
  ``tables/sessions.parquet`` into one checked type (``read_recording``);
* ``capture``: ``avatar-sim capture``, a deployment's sessions walked page by page, paced to its
  rate limits, into a recording;
* ``replay``: ``avatar-sim replay``, a recording played against a deployment by the scenarios'
  clients, its observed metrics beside the simulation's prediction.

A scenario plays a recording as one of its arrivals (``kind: recorded``,
``harness.scenarios.Recorded``). Nothing is imported here, so that importing a submodule pays
only for its own dependencies.
"""
