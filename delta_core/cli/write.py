"""Write-side subcommands of ``delta-core``: ``checkpoint`` and ``cleanup-log``
(PROTOCOL.md "Checkpoints", "Metadata Cleanup").

``checkpoint TABLE_URI [--version N] [--part-size N] [--cleanup-log] [--json]`` prints
``{"version", "parts", "size", "size_in_bytes", "path"}`` (and ``cleanup_log``'s result when the
flag or the table's policy, ``checkpoint.cleanup_log``, asks for it);
``cleanup-log TABLE_URI [--dry-run] [--ignore-log-cleanup-disabled] [--json]`` prints what was
(or would be) deleted, or ``skipped_reason`` when nothing may be (e.g. the table has
``delta.enableExpiredLogCleanup=false``, which only the explicit override flag passes).
Both take ``--config FILE --table NAME`` (``delta_core.cli.policy``).
"""

from __future__ import annotations

import argparse

from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.cli.maintenance import add_operation_parser
from delta_core.cli.policy import resolve_options
from delta_core.maintenance.operations import CHECKPOINT, CLEANUP_LOG
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = add_operation_parser(subparsers, CHECKPOINT)
    add_table_arguments(c, policy=True)
    c.add_argument("--version", type=int, default=None, metavar="N", help="checkpoint version N")
    c.add_argument("--part-size", type=int, default=None, metavar="N",
                   help="at most N actions per file; more make a multi-part checkpoint")
    c.add_argument("--cleanup-log", action="store_true", default=None,
                   help="then delete expired log files, as cleanup-log does (policy key checkpoint.cleanup_log)")
    c.set_defaults(func=cmd_checkpoint)

    lc = add_operation_parser(subparsers, CLEANUP_LOG)
    add_table_arguments(lc, policy=True)
    lc.add_argument("--dry-run", action="store_true", default=None, help="list what would be deleted, delete nothing")
    lc.add_argument("--ignore-log-cleanup-disabled", action="store_true", default=None,
                    help="delete even though the table has delta.enableExpiredLogCleanup=false "
                         "(its owner turned log cleanup off)")
    lc.set_defaults(func=cmd_cleanup_log)


def cmd_checkpoint(args: argparse.Namespace) -> int:
    opts = resolve_options(args, CHECKPOINT)
    table = open_table(args)
    result = write_checkpoint(table, version=args.version, part_size=args.part_size)
    record = {"version": result.version, "parts": result.parts, "size": result.size,
              "size_in_bytes": result.size_in_bytes, "path": result.path}
    if opts.cleanup_log:
        record["cleanup_log"] = cleanup_log(table).to_dict()
    emit(record, args.json)
    return 0


def cmd_cleanup_log(args: argparse.Namespace) -> int:
    opts = resolve_options(args, CLEANUP_LOG)
    result = cleanup_log(open_table(args), dry_run=opts.dry_run,
                         ignore_log_cleanup_disabled=opts.ignore_log_cleanup_disabled)
    emit(result.to_dict(), args.json)
    return 0
