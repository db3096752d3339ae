"""The ``delta-core`` entry point: one parser, with the commands of ``delta_core.cli.read``,
``delta_core.cli.operations`` (one per registry entry), ``delta_core.cli.maintenance``,
``delta_core.cli.write``, ``delta_core.cli.health`` and ``delta_core.cli.maintenance_history``, registered explicitly.

A command builds only its own part of the parser: the command modules are imported in order
until one registers the command named on the command line (all of them for ``--help``, or a name
none knows), so ``describe`` never imports the registry, the tables.yaml reader or health.

Every ``DeltaError`` ends the command with exit status 2 (see ``delta_core.cli.common``);
other exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from delta_core.cli.common import EXIT_ERROR, EXIT_OK, report_error
from delta_core.cli.parser import Parser
from delta_core.cli.progress import progress_for
from delta_core.cli.version import VersionAction
from delta_core.errors import DeltaError, UsageError

# Each exposes ``register(subparsers)``; the cheapest to import first.
COMMAND_MODULES = tuple(f"delta_core.cli.{name}" for name in (
    "read", "operations", "maintenance", "write", "health", "maintenance_history"))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``delta-core`` parser; with ``command``, only as far as the first command module
    that registers it (every module when none does)."""
    parser = Parser(
        prog="delta-core", description="Inspect and maintain Delta Lake tables with delta_core.")
    parser.add_argument("--version", action=VersionAction, help="print the package version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
        if command is not None and command in subparsers.choices:
            break
    return parser


def command_named(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` opens with; None when it opens with a top-level option (``-h``,
    ``--version``), which needs the whole parser."""
    return argv[0] if argv and not argv[0].startswith("-") else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 usage or Delta error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that an argument error is reported the way the caller asked.
    as_json = "--json" in argv
    verbose = "--verbose" in argv
    try:
        parser = build_parser(command_named(argv))
        args = parser.parse_args(argv)
        func: Callable[[argparse.Namespace], int | None] | None = getattr(args, "func", None)
        if func is None:  # a command group invoked without its subcommand
            raise UsageError(f"{args.command} needs a subcommand; see {parser.prog} {args.command} --help")
        with progress_for(args):  # bars on a terminal only, never with --json
            status = func(args)
    except DeltaError as exc:
        report_error(exc, as_json, verbose=verbose)
        return EXIT_ERROR
    except BrokenPipeError:
        # e.g. `delta-core history t | head`: the reader left; nothing more to say
        return EXIT_OK
    return EXIT_OK if status is None else int(status)


if __name__ == "__main__":
    raise SystemExit(main())
