"""Write-side subcommands of ``delta-core``: ``checkpoint``, ``cleanup-log``, ``compact-log`` and ``set-properties``
(PROTOCOL.md "Checkpoints", "Metadata Cleanup", "Log Compaction Files").

``checkpoint TABLE_URI [--version N] [--sidecar-threshold N] [--spark-master URL] [--cleanup-log] [--json]``
prints ``{"version", "size", "size_in_bytes", "path", "sidecars"}`` (and ``cleanup_log``'s result when
the flag or the table's policy, ``checkpoint.cleanup_log``, asks for it); sidecars of a large
``v2Checkpoint`` table are written by Spark tasks when ``--spark-master`` is given (Spark starts
only if sidecars are due), else in this process;
``cleanup-log TABLE_URI [--dry-run] [--ignore-log-cleanup-disabled] [--json]`` prints what was
(or would be) deleted, or ``skipped_reason`` when nothing may be (e.g. the table has
``delta.enableExpiredLogCleanup=false``, which only the explicit override flag passes).
Both take ``--config FILE --table NAME`` (``delta_core.cli.policy``).
``set-properties TABLE_URI KEY=VALUE... [--json]`` commits the properties (and the protocol
upgrade a feature needs; turning on ``delta.enableInCommitTimestamps`` records its enablement
version and timestamp) and prints the new version, configuration and protocol.
``compact-log TABLE_URI [--from V --to V] [--min-commits N] [--json]`` writes
``V.V.compacted.json`` (default range: the commits after the newest checkpoint).
"""

from __future__ import annotations

import argparse

from delta_core.cli.arguments import count_from, positive_count
from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.cli.maintenance import _spark, _spark_argument, add_operation_parser
from delta_core.cli.policy import resolve_options
from delta_core.errors import UsageError
from delta_core.maintenance.operations import CHECKPOINT, CLEANUP_LOG, COMPACT_LOG
from delta_core.write.checkpoint_limits import DEFAULT_SIDECAR_THRESHOLD


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = add_operation_parser(subparsers, CHECKPOINT)
    add_table_arguments(c, policy=True)
    c.add_argument("--version", type=int, default=None, metavar="N", help="checkpoint version N")
    c.add_argument("--sidecar-threshold", type=positive_count, default=None, metavar="N",
                   help="v2Checkpoint tables with more file actions than N get a UUID-named checkpoint "
                        f"whose file actions are in sidecars of at most N (default {DEFAULT_SIDECAR_THRESHOLD})")
    _spark_argument(c)
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

    sp = subparsers.add_parser(
        "set-properties", help="set table properties, upgrading the protocol when a feature needs it",
        description="Set table properties in one commit (PROTOCOL.md \"Table Features\"); unknown "
                    "delta.* keys and features this library cannot write are refused, nothing written.")
    add_table_arguments(sp)
    sp.add_argument("properties", nargs="+", metavar="KEY=VALUE", help="a table property, repeatable")
    sp.set_defaults(func=cmd_set_properties)
    cl = add_operation_parser(subparsers, COMPACT_LOG)
    add_table_arguments(cl, policy=True)
    cl.add_argument("--from", dest="start_version", type=int, default=None, metavar="V",
                    help="first commit to compact (default: the one after the newest checkpoint)")
    cl.add_argument("--to", dest="end_version", type=int, default=None, metavar="V",
                    help="last commit to compact (default: the latest version)")
    cl.add_argument("--min-commits", type=count_from(2), default=None, metavar="N",
                    help="write nothing when the range holds fewer than N commits (default 2)")
    cl.set_defaults(func=cmd_compact_log)


def cmd_checkpoint(args: argparse.Namespace) -> int:
    from delta_core.write.checkpoint_write import write_checkpoint  # deferred: pyarrow, fsspec
    from delta_core.write.log_cleanup import cleanup_log
    opts = resolve_options(args, CHECKPOINT)
    table = open_table(args)
    writer = None
    if args.spark_master is not None:
        from delta_core.maintenance.spark.checkpoint_sidecars import spark_sidecar_writer

        writer = spark_sidecar_writer(_spark(args))  # a factory: Spark starts only for sidecars
    result = write_checkpoint(table, version=args.version, sidecar_threshold=opts.sidecar_threshold,
                              sidecar_writer=writer)
    record = {"version": result.version, "size": result.size, "size_in_bytes": result.size_in_bytes,
              "path": result.path, "sidecars": result.sidecars}
    if opts.cleanup_log:
        record["cleanup_log"] = cleanup_log(table).to_dict()
    emit(record, args.json)
    return 0


def cmd_cleanup_log(args: argparse.Namespace) -> int:
    from delta_core.write.log_cleanup import cleanup_log  # deferred: pyarrow, fsspec

    opts = resolve_options(args, CLEANUP_LOG)
    result = cleanup_log(open_table(args), dry_run=opts.dry_run,
                         ignore_log_cleanup_disabled=opts.ignore_log_cleanup_disabled)
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


def cmd_compact_log(args: argparse.Namespace) -> int:
    from delta_core.write.log_compaction import compact_log

    opts = resolve_options(args, COMPACT_LOG)
    result = compact_log(open_table(args), start_version=opts.start_version, end_version=opts.end_version,
                         min_commits=opts.min_commits)
    emit(result.to_dict(), args.json)
    return 0
