"""Write-side subcommands of ``delta-core``: ``checkpoint`` and ``cleanup-log``
(PROTOCOL.md "Checkpoints", "Metadata Cleanup").

``checkpoint TABLE_URI [--version N] [--part-size N] [--json]`` prints
``{"version", "parts", "size", "size_in_bytes", "path"}``;
``cleanup-log TABLE_URI [--dry-run] [--ignore-log-cleanup-disabled] [--json]`` prints what was
(or would be) deleted, or ``skipped_reason`` when nothing may be (e.g. the table has
``delta.enableExpiredLogCleanup=false``, which only the explicit override flag passes).
"""

from __future__ import annotations

import argparse

from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.cli.maintenance import add_operation_parser
from delta_core.maintenance.operations import CHECKPOINT, CLEANUP_LOG
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = add_operation_parser(subparsers, CHECKPOINT)
    add_table_arguments(c)
    c.add_argument("--version", type=int, default=None, metavar="N", help="checkpoint version N")
    c.add_argument("--part-size", type=int, default=None, metavar="N",
                   help="at most N actions per file; more make a multi-part checkpoint")
    c.set_defaults(func=cmd_checkpoint)

    lc = add_operation_parser(subparsers, CLEANUP_LOG)
    add_table_arguments(lc)
    lc.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    lc.add_argument("--ignore-log-cleanup-disabled", action="store_true",
                    help="delete even though the table has delta.enableExpiredLogCleanup=false "
                         "(its owner turned log cleanup off)")
    lc.set_defaults(func=cmd_cleanup_log)


def cmd_checkpoint(args: argparse.Namespace) -> int:
    result = write_checkpoint(open_table(args), version=args.version, part_size=args.part_size)
    emit({"version": result.version, "parts": result.parts, "size": result.size,
          "size_in_bytes": result.size_in_bytes, "path": result.path}, args.json)
    return 0


def cmd_cleanup_log(args: argparse.Namespace) -> int:
    result = cleanup_log(open_table(args), dry_run=args.dry_run,
                         ignore_log_cleanup_disabled=args.ignore_log_cleanup_disabled)
    emit(result.to_dict(), args.json)
    return 0
