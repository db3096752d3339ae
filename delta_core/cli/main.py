"""The ``delta-core`` entry point: one parser, with the commands of ``delta_core.cli.read``,
``delta_core.cli.operations`` (one per registry entry), ``delta_core.cli.maintenance``,
``delta_core.cli.write``, ``delta_core.cli.health`` and ``delta_core.cli.maintenance_history``, registered explicitly.

Every ``DeltaError`` ends the command with exit status 2 (see ``delta_core.cli.common``);
other exceptions are bugs and keep their traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from delta_core.cli import health, maintenance, maintenance_history, operations, read, write
from delta_core.cli.common import EXIT_ERROR, EXIT_OK, report_error
from delta_core.cli.parser import Parser
from delta_core.cli.progress import progress_for
from delta_core.cli.version import VersionAction
from delta_core.errors import DeltaError, UsageError

COMMAND_MODULES = (read, operations, maintenance, write, health, maintenance_history)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="delta-core", description="Inspect and maintain Delta Lake tables with delta_core.")
    parser.add_argument("--version", action=VersionAction, help="print the package version and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 2 usage or Delta error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that an argument error is reported the way the caller asked.
    as_json = "--json" in argv
    verbose = "--verbose" in argv
    try:
        parser = build_parser()
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
