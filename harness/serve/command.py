"""``avatar-sim serve``: the command-line face of served mode (SIM-8).

Kept apart from the runner so ``--help`` and argument checks need no server imports.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.cli import positive_number

if TYPE_CHECKING:
    from harness.scenarios import Scenario
    from harness.serve.runner import ServeOptions

__all__ = ["add_arguments", "options_from", "run"]

_FACTOR_HELP = (
    "scale of the virtual clock: simulated seconds = wall seconds elapsed / F. "
    "F=1 (default) is real time, F=0.1 runs ten times faster than the wall clock, "
    "F=60 makes one simulated second last a wall minute"
)


def _whole_number(text: str, unit: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of {unit}: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _seconds(text: str) -> int:
    return _whole_number(text, "seconds")


def _log_size(text: str) -> int | Literal["all"]:
    if text.strip().lower() == "all":
        return "all"
    return _whole_number(text, "calls (or 'all')")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be 0 (any free port) to 65535")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve the simulated API on a real HTTP port (uvicorn). Prints the admin token and the "
        "API keys of the seeded organizations; admin endpoints live under /_sim/ and take "
        "`Authorization: Bearer <admin token>`. Stop with Ctrl-C or SIGTERM."
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="interface to bind (default %(default)s)"
    )
    parser.add_argument(
        "--port", type=_port, default=8080, help="port; 0 picks a free one (default %(default)s)"
    )
    clock = parser.add_mutually_exclusive_group()
    clock.add_argument(
        "--time-factor", type=positive_number, default=1.0, metavar="F", help=_FACTOR_HELP
    )
    clock.add_argument(
        "--manual-clock",
        action="store_true",
        help="freeze the virtual clock; it moves only through POST /_sim/clock/advance",
    )
    parser.add_argument(
        "--keys-out",
        type=Path,
        metavar="FILE",
        help="write the admin token, base URL and keys as JSON once the server is listening",
    )
    parser.add_argument(
        "--scenario",
        type=Path,
        metavar="FILE",
        help=(
            "a scenario YAML file: serve its configuration and organizations (each with the four "
            "kinds of key) and run its traffic on the served clock"
        ),
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=(
            "seed of the simulation (default: the scenario's, else 0): the same seed gives the "
            "same API keys and random draws"
        ),
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="log level of the server and the facade, on stderr (default %(default)s)",
    )
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="print one line per request on stdout (uvicorn's access log)",
    )
    parser.add_argument(
        "--graceful-timeout",
        type=_seconds,
        default=5,
        metavar="SECONDS",
        help=(
            "on SIGINT/SIGTERM, wall seconds in-flight requests get to finish before they are "
            "cancelled (default %(default)s)"
        ),
    )
    parser.add_argument(
        "--api-log-size",
        type=_log_size,
        default=None,
        metavar="N",
        help=(
            "calls the simulator's API log keeps, the newest first out of memory last; "
            "'all' keeps every call (default: the scenario's, else 100000)"
        ),
    )


def options_from(args: argparse.Namespace, scenario: Scenario | None) -> ServeOptions:
    """The runner's options for parsed ``args`` (``scenario`` already loaded from its file)."""
    from harness.serve.runner import ServeOptions

    return ServeOptions(
        scenario=scenario,
        host=args.host,
        port=args.port,
        time_factor=None if args.manual_clock else args.time_factor,
        keys_out=args.keys_out,
        seed=args.seed,
        log_level=args.log_level,
        access_log=args.access_log,
        graceful_timeout=args.graceful_timeout,
        api_log_size=args.api_log_size,
    )


def run(args: argparse.Namespace) -> int:
    import sys

    from harness.scenarios import ScenarioError, load_scenario
    from harness.serve.runner import serve

    scenario = None
    if args.scenario is not None:
        try:
            scenario = load_scenario(args.scenario)
        except ScenarioError as error:
            for problem in error.problems:
                print(f"avatar-sim serve: {args.scenario}: {problem}", file=sys.stderr)
            return 2
    return serve(options_from(args, scenario))
