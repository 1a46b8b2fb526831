"""``python -m tests.independent``: serve the independent implementation on a port.

Prints one JSON line with the base URL and the credentials once the port is bound (and writes
it to ``--keys-out``), then serves until interrupted. Unknown faults or readings exit with 2.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any

from .faults import FAULTS
from .readings import READINGS
from .serving import ServerThread, create_app


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m tests.independent",
        description="An independent implementation of the seed API, with switchable faults.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--reading", default="a", help="a or b")
    parser.add_argument("--fault", action="append", default=[], metavar="NAME")
    parser.add_argument("--time-factor", type=float, default=1.0)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--keys-out", default=None, metavar="FILE")
    parser.add_argument("--list-faults", action="store_true", help="print the fault registry")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.list_faults:
        for fault in FAULTS.values():
            print(json.dumps(fault.__dict__))
        return 0
    problems = []
    if args.reading not in READINGS:
        problems.append(f"unknown reading {args.reading!r} (choose {', '.join(READINGS)})")
    unknown = [name for name in args.fault if name not in FAULTS]
    if unknown:
        problems.append(f"unknown fault(s): {', '.join(unknown)} (see --list-faults)")
    if not args.time_factor > 0:
        problems.append("--time-factor must be positive")
    if args.workers < 1:
        problems.append("--workers must be at least 1")
    if problems:
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    app, credentials = create_app(args.reading, args.fault, args.time_factor, args.workers)
    server = ServerThread(app, args.host, args.port)
    port = server.start()
    info: dict[str, Any] = {**credentials, "base_url": f"http://{args.host}:{port}"}
    line = json.dumps(info)
    if args.keys_out:
        with open(args.keys_out, "w", encoding="utf-8") as out:
            out.write(line + "\n")
    print(line, flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(0.5) and server.thread.is_alive():
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
