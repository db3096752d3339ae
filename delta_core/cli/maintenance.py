"""Maintenance subcommands of ``delta-core``: ``compact``, ``zorder``, ``vacuum``, ``manifest``,
``cluster``, ``cluster-by`` and ``purge``.

Liquid clustering has two commands, as Delta Spark has ``ALTER TABLE ... CLUSTER BY`` and
``OPTIMIZE``: ``cluster-by TABLE --columns a,b`` (or ``--none``) sets the clustering columns and
commits nothing else; ``cluster TABLE [--full]`` is the registry's ``cluster`` operation and
clusters (``compact`` on a clustered table does the same, as ``OPTIMIZE`` does there).

Each builds (or joins) a Spark session only when it needs one (compaction and Z-order always;
purge when it has files to rewrite; vacuum only with ``--delete-on-spark``), runs the operation and prints its metrics record —
``--json`` prints ``metrics.to_dict()`` as one document (``version`` is the version committed,
or null). Errors are reported by ``delta_core.cli.main.main`` (exit status 2). With ``--config
FILE --table NAME`` the table and its options come from tables.yaml and flags given win
(``delta_core.cli.policy.resolve_options``); ``vacuum`` without ``--json`` leads with the counts and
bytes it deleted or, on a dry run, would delete.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

from delta_core.cli.arguments import byte_size, column_list, ratio, retention_hours
from delta_core.cli.common import add_table_arguments, emit, open_table, table_storage_options
from delta_core.cli.policy import resolve_options
from delta_core.errors import ConfigError
from delta_core.maintenance.operations import CLUSTER, COMPACT, MANIFEST, PURGE, VACUUM, ZORDER, Operation
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO, ZORDER_CURVES
from delta_core.model.durations import format_duration
from delta_core.model.sizes import format_size


def _spark_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spark-master", default=None, metavar="URL",
                        help="Spark master (default $SPARK_MASTER or local[*]): local[N], spark://host:port, "
                             "sc://host:port (Spark Connect), yarn, k8s://...")


def add_operation_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
                         op: Operation) -> argparse.ArgumentParser:
    """The registry entry's subcommand: its command name, help and description."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        op.cli_command, help=op.summary, description=op.description)
    return parser


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = add_operation_parser(subparsers, COMPACT)
    add_table_arguments(c, policy=True)
    _spark_argument(c)
    c.add_argument("--where", default=None, metavar="EXPR",
                   help="partition predicate, e.g. \"date >= '2024-01-01' AND region = 'eu'\"")
    c.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                   help="target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)")
    c.add_argument("--min-file-size", type=byte_size, default=None, metavar="SIZE",
                   help="only files smaller than this are packed (default 3/4 of the target)")
    c.add_argument("--max-deleted-rows-ratio", type=ratio, default=None, metavar="R",
                   help="also rewrite files whose deletion vectors delete more than this share of their rows, "
                        f"even alone (default {DEFAULT_MAX_DELETED_ROWS_RATIO}, as Delta Spark's OPTIMIZE)")
    c.add_argument("--full", action="store_true",
                   help="clustered tables: recluster every file, not only the unclustered ones (OPTIMIZE FULL)")
    c.set_defaults(func=cmd_compact)

    z = add_operation_parser(subparsers, ZORDER)
    add_table_arguments(z, policy=True)
    _spark_argument(z)
    z.add_argument("--columns", type=column_list, default=None, metavar="A,B",
                   help="comma-separated data columns (required unless the policy's zorder.columns names them)")
    z.add_argument("--curve", choices=ZORDER_CURVES, default=None,
                   help=f"space-filling curve to sort along (default {ZORDER_CURVES[0]})")
    z.add_argument("--where", default=None, metavar="EXPR", help="partition predicate")
    z.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                   help="target file size: bytes, 128MB or 64MiB")
    z.set_defaults(func=cmd_zorder)

    v = add_operation_parser(subparsers, VACUUM)
    add_table_arguments(v, policy=True)
    _spark_argument(v)
    v.add_argument("--retention-hours", type=retention_hours, default=None, metavar="H",
                   help="retention (default delta.deletedFileRetentionDuration, 7 days)")
    # store_true with default None: "not given" lets the policy decide
    v.add_argument("--dry-run", action="store_true", default=None,
                   help="count and list what would be deleted, with its bytes; delete nothing")
    v.add_argument("--force", action="store_true", default=None, help="allow a retention shorter than the table's")
    v.add_argument("--delete-on-spark", action="store_true", help="list and delete as Spark tasks instead of threads")
    v.add_argument("--lite", action="store_true",
                   help="list nothing: delete what the log removed since the last vacuum (Delta's VACUUM LITE)")
    v.add_argument("--inventory", default=None, metavar="URI",
                   help="plan from this storage inventory instead of listing the table (Delta's VACUUM ... USING "
                        "INVENTORY): a Delta table or Parquet/CSV files with path, length, isDir, modificationTime; "
                        "read with the table's --storage-option values")
    v.set_defaults(func=cmd_vacuum)

    m = add_operation_parser(subparsers, MANIFEST)
    add_table_arguments(m, policy=True)
    _spark_argument(m)
    m.add_argument("--incremental", action="store_true", default=None,
                   help="rewrite only the partitions changed since the last generated version")
    m.set_defaults(func=cmd_manifest)

    cl = add_operation_parser(subparsers, CLUSTER)
    add_table_arguments(cl, policy=True)
    _spark_argument(cl)
    cl.add_argument("--columns", type=column_list, default=None, metavar="A,B",
                    help="make these the clustering columns first (as cluster-by); default: the table's own")
    cl.add_argument("--full", action="store_true", default=None, help="recluster every file (OPTIMIZE FULL)")
    cl.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                    help="target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)")
    cl.set_defaults(func=cmd_cluster)

    cb = subparsers.add_parser(
        "cluster-by", help="set or clear the clustering columns (ALTER TABLE ... CLUSTER BY)",
        description="Set the table's liquid clustering columns (upgrading its protocol to a clustered "
                    "table's when needed), or clear them with --none. Commits no data; run cluster to cluster.")
    add_table_arguments(cb)
    which = cb.add_mutually_exclusive_group(required=True)
    which.add_argument("--columns", type=column_list, metavar="A,B", help="comma-separated top-level data columns (at most 4)")
    which.add_argument("--none", action="store_true", help="clear the clustering columns (CLUSTER BY NONE)")
    cb.set_defaults(func=cmd_cluster_by)

    p = add_operation_parser(subparsers, PURGE)
    add_table_arguments(p, policy=True)
    _spark_argument(p)
    p.add_argument("--where", default=None, metavar="EXPR", help="partition predicate")
    p.add_argument("--max-deleted-rows-ratio", type=ratio, default=None, metavar="R",
                   help="only rewrite files with more than this share of rows deleted (default 0: "
                        "every file with a deleted row, as REORG ... APPLY (PURGE))")
    p.set_defaults(func=cmd_purge)


def _spark(args: argparse.Namespace) -> Any:
    """A factory: the operations start Spark only once they know there is work."""
    from delta_core.maintenance.spark.session import build_spark_session

    # Spark's own logging stays off the console unless --verbose: errors arrive typed.
    return lambda: build_spark_session(master=args.spark_master, quiet=not args.verbose)


def cmd_compact(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.compaction import compact

    opts = resolve_options(args, COMPACT)
    table = open_table(args)
    metrics = compact(table, _spark(args), where=opts.where, target_size=opts.target_size,
                      min_file_size=opts.min_file_size, max_deleted_rows_ratio=opts.max_deleted_rows_ratio,
                      full=args.full)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_zorder(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.zorder import zorder

    opts = resolve_options(args, ZORDER)
    if not opts.columns:
        raise ConfigError("zorder needs columns: give --columns a,b, or zorder.columns in the table's policy")
    table = open_table(args)
    metrics = zorder(table, _spark(args), list(opts.columns), curve=opts.curve, where=opts.where,
                     target_size=opts.target_size)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_vacuum(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.vacuum import vacuum

    opts = resolve_options(args, VACUUM)
    table = open_table(args)
    spark = _spark(args) if args.delete_on_spark else None  # a factory: Spark starts only with work
    metrics = vacuum(table, retention_hours=opts.retention_hours, dry_run=opts.dry_run, force=opts.force,
                     spark=spark, mode="lite" if args.lite else opts.mode, inventory=opts.inventory,
                     inventory_storage_options=table_storage_options(args))
    if args.json:
        emit(metrics.to_dict(), True)
        return 0
    # a person reads the counts and bytes first; the record (paths included) follows
    done = "would delete" if metrics.dry_run else "deleted"
    count = metrics.num_files_to_delete if metrics.dry_run else metrics.num_deleted_files
    emit(f"vacuum{' dry run' if metrics.dry_run else ''}: {done} {count} of {metrics.files_listed} listed "
         f"files, {format_size(metrics.bytes_to_delete)}; {metrics.young_kept} unreferenced files "
         f"younger than the retention ({format_duration(dt.timedelta(hours=metrics.retention_hours))}) "
         "kept", False)
    emit(metrics.to_dict(), False)
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from delta_core.maintenance.manifest import generate_manifests

    opts = resolve_options(args, MANIFEST)
    table = open_table(args)
    metrics = generate_manifests(table, incremental=opts.incremental)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.cluster import cluster

    opts = resolve_options(args, CLUSTER)
    table = open_table(args)
    metrics = cluster(table, _spark(args), columns=list(opts.columns) or None, full=opts.full,
                      target_size=opts.target_size)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_cluster_by(args: argparse.Namespace) -> int:
    from delta_core.maintenance.cluster_by import cluster_by

    table = open_table(args)
    result = cluster_by(table, None if args.none else list(args.columns))
    emit(result.to_dict(), args.json)
    return 0


def cmd_purge(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.purge import purge

    opts = resolve_options(args, PURGE)
    table = open_table(args)
    metrics = purge(table, _spark(args), where=opts.where, max_deleted_rows_ratio=opts.max_deleted_rows_ratio)
    emit(metrics.to_dict(), args.json)
    return 0
