"""The ``avatar-sim`` command line (also ``python -m harness``).

Why a table of commands: each subcommand lives in its own module exposing
``add_arguments(parser)`` and ``run(args) -> int``, and is imported only when it is the command
being run, so ``avatar-sim trace`` does not pay for (or break on) the imports of ``conformance``
or ``sweep``. To add a command, write its module and add one ``Command`` line to ``COMMANDS``;
its one-line help here is what ``avatar-sim --help`` shows without importing anything.

Every command exits the same way, so a script or CI job can tell the cases apart: 0 success, 1 a
check failed, 2 a usage error (argparse's own errors exit 2 as well).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from importlib import metadata
from typing import Protocol, cast

from harness.gc_policy import rare_collections

__all__ = ["COMMANDS", "Command", "CommandModule", "build_parser", "main", "positive_number"]

PROG = "avatar-sim"


class CommandModule(Protocol):
    """What a command module provides."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, the module implementing it, and its one-line help."""

    name: str
    module: str
    help: str
    #: Whether the command simulates runs: it then has the cycle collector run rarely
    #: (``harness.gc_policy``), a choice for the process that only its owner makes.
    simulates: bool = False


COMMANDS: list[Command] = [
    Command(
        "demo",
        "harness.demo.command",
        "play a scripted day through the facade and summarise it",
        True,
    ),
    Command(
        "run",
        "harness.runner.command",
        "run a scenario file; write its tables and a summary",
        True,
    ),
    Command(
        "sweep", "harness.sweep.command", "run a parameter sweep with replications and CIs", True
    ),
    Command(
        "plan",
        "harness.plan.command",
        "find the fewest workers per step that meet SLOs; confirm against Erlang C",
        True,
    ),
    Command("serve", "harness.serve.command", "serve the simulated API on a real HTTP port"),
    Command(
        "examples",
        "harness.examples.command",
        "copy the example scenarios, sweeps, notebooks and test suite",
    ),
    Command("conformance", "harness.conformance.command", "hold a deployment to the contract"),
    Command(
        "capture", "harness.traffic.capture_command", "record a deployment's sessions to a file"
    ),
    Command(
        "calibrate",
        "harness.traffic.calibrate_command",
        "fit a capture's arrivals, lengths, start-up and pool into a scenario overlay",
        True,
    ),
    Command(
        "replay",
        "harness.traffic.replay_command",
        "play a recording against a deployment, beside the simulation's prediction",
        True,
    ),
    Command("spec", "harness.contract.command", "build, check or diff the contract in spec/"),
    Command(
        "trace",
        "harness.trace.command",
        "list every requirement id with the passing tests that prove it",
    ),
]


def positive_number(text: str) -> float:
    """An option's value that must be a positive, finite number (argparse's ``type``): anything
    else is a usage error naming the value."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive, finite number")
    return value


def _version() -> str:
    try:
        return metadata.version("avatar-sim")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _selected(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: the first argument that is not an option."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def _load(command: Command) -> CommandModule:
    return cast(CommandModule, importlib.import_module(command.module))


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser, with the arguments of the subcommand selected by ``argv`` (if any) loaded."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Simulator and conformance harness for the Realtime Avatar and Model-Run API.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    selected = _selected(argv)
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help)
        if command.name == selected:
            module = _load(command)
            module.add_arguments(sub)
            sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default: ``sys.argv[1:]``) and run the selected command."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(arguments)
    except ImportError as exc:
        command = _selected(arguments)
        print(f"{PROG} {command}: cannot load the command: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(arguments)
    chosen = next(c for c in COMMANDS if c.name == args.command)
    with rare_collections() if chosen.simulates else nullcontext():
        return int(args.handler(args))
