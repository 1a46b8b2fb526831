"""An independent implementation of the seed specification, written from the spec alone.

It is a test target for somebody else's conformance tester: a black-box deployment of the
Realtime Avatar and Model-Run API that serves one of two readings of the points the spec leaves
open (:mod:`.readings`) and can switch on named, deliberate faults (:mod:`.faults`). Nothing here
imports the project's simulator or harness, so the two cannot share a misreading.

Entry points: ``python -m tests.independent`` (:mod:`.__main__`), :func:`.serving.serve` and
:func:`.serving.create_app`.
"""
