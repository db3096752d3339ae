"""Write-side subcommands of ``delta-core``: ``checkpoint`` and ``cleanup-log``
(PROTOCOL.md "Checkpoints", "Metadata Cleanup").

``checkpoint TABLE_URI [--version N] [--part-size N] [--json]`` prints
``{"version", "parts", "size", "size_in_bytes", "path"}``;
``cleanup-log TABLE_URI [--dry-run] [--ignore-log-cleanup-disabled] [--json]`` prints what was
(or would be) deleted, or ``skipped_reason`` when nothing may be (e.g. the table has
``delta.enableExpiredLogCleanup=false``, which only the explicit override flag passes).
``set-properties TABLE_URI KEY=VALUE... [--json]`` commits the properties (and the protocol
upgrade a feature needs; turning on ``delta.enableInCommitTimestamps`` records its enablement
version and timestamp) and prints the new version, configuration and protocol.
"""

from __future__ import annotations

import argparse

from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.cli.maintenance import add_operation_parser
from delta_core.errors import UsageError
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

    sp = subparsers.add_parser(
        "set-properties", help="set table properties, upgrading the protocol when a feature needs it",
        description="Set table properties in one commit (PROTOCOL.md \"Table Features\"); unknown "
                    "delta.* keys and features this library cannot write are refused, nothing written.")
    add_table_arguments(sp)
    sp.add_argument("properties", nargs="+", metavar="KEY=VALUE", help="a table property, repeatable")
    sp.set_defaults(func=cmd_set_properties)


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


def cmd_set_properties(args: argparse.Namespace) -> int:
    from delta_core.write.table_writes import set_properties  # deferred: pyarrow

    properties: dict[str, str] = {}
    for item in args.properties:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"property {item!r} must look like KEY=VALUE")
        properties[key.strip()] = value
    table = open_table(args)
    result = set_properties(table, properties)
    protocol, metadata = table.protocol_and_metadata(result.version)
    emit({"version": result.version, "configuration": dict(metadata.configuration),
          "min_reader_version": protocol.min_reader_version, "min_writer_version": protocol.min_writer_version,
          "reader_features": None if protocol.reader_features is None else sorted(protocol.reader_features),
          "writer_features": None if protocol.writer_features is None else sorted(protocol.writer_features)},
         args.json)
    return 0
