"""Maintenance subcommands of ``delta-core``: ``compact``, ``zorder``, ``vacuum``, ``manifest``,
``cluster`` and ``cluster-by``.

Liquid clustering has two commands, as Delta Spark has ``ALTER TABLE ... CLUSTER BY`` and
``OPTIMIZE``: ``cluster-by TABLE --columns a,b`` (or ``--none``) sets the clustering columns and
commits nothing else; ``cluster TABLE [--full]`` is the registry's ``cluster`` operation and
clusters (``compact`` on a clustered table does the same, as ``OPTIMIZE`` does there).

Each builds (or joins) a Spark session only when it needs one (compaction and Z-order always;
vacuum only with ``--delete-on-spark``), runs the operation and prints its metrics record —
``--json`` prints ``metrics.to_dict()`` as one document (``version`` is the version committed,
or null). Errors are reported by ``delta_core.cli.main.main`` (exit status 2).
"""

from __future__ import annotations

import argparse
from typing import Any

from delta_core.cli.arguments import byte_size, ratio, retention_hours
from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.errors import ConfigError
from delta_core.maintenance.operations import CLUSTER, COMPACT, MANIFEST, VACUUM, ZORDER, Operation
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO, ZORDER_CURVES


def _spark_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--spark-master", default=None, metavar="URL",
                        help="Spark master (default $SPARK_MASTER or local[*]); any spark.master value works")


def add_operation_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
                         op: Operation) -> argparse.ArgumentParser:
    """The registry entry's subcommand: its command name, help and description."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        op.cli_command, help=op.summary, description=op.description)
    return parser


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    c = add_operation_parser(subparsers, COMPACT)
    add_table_arguments(c)
    _spark_argument(c)
    c.add_argument("--where", default=None, metavar="EXPR",
                   help="partition predicate, e.g. \"date >= '2024-01-01' AND region = 'eu'\"")
    c.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                   help="target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)")
    c.add_argument("--min-file-size", type=byte_size, default=None, metavar="SIZE",
                   help="only files smaller than this are packed (default 3/4 of the target)")
    c.add_argument("--max-deleted-rows-ratio", type=ratio, default=DEFAULT_MAX_DELETED_ROWS_RATIO, metavar="R",
                   help="also rewrite files whose deletion vectors delete more than this share of their rows, "
                        f"even alone (default {DEFAULT_MAX_DELETED_ROWS_RATIO}, as Delta Spark's OPTIMIZE)")
    c.add_argument("--full", action="store_true",
                   help="clustered tables: recluster every file, not only the unclustered ones (OPTIMIZE FULL)")
    c.set_defaults(func=cmd_compact)

    z = add_operation_parser(subparsers, ZORDER)
    add_table_arguments(z)
    _spark_argument(z)
    z.add_argument("--columns", required=True, metavar="A,B", help="comma-separated data columns")
    z.add_argument("--curve", choices=ZORDER_CURVES, default=ZORDER_CURVES[0])
    z.add_argument("--where", default=None, metavar="EXPR", help="partition predicate")
    z.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                   help="target file size: bytes, 128MB or 64MiB")
    z.set_defaults(func=cmd_zorder)

    v = add_operation_parser(subparsers, VACUUM)
    add_table_arguments(v)
    _spark_argument(v)
    v.add_argument("--retention-hours", type=retention_hours, default=None, metavar="H",
                   help="retention (default delta.deletedFileRetentionDuration, 7 days)")
    v.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    v.add_argument("--force", action="store_true", help="allow a retention shorter than the table's")
    v.add_argument("--delete-on-spark", action="store_true", help="delete as Spark tasks instead of threads")
    v.add_argument("--lite", action="store_true",
                   help="list nothing: delete what the log removed since the last vacuum (Delta's VACUUM LITE)")
    v.set_defaults(func=cmd_vacuum)

    m = add_operation_parser(subparsers, MANIFEST)
    add_table_arguments(m)
    _spark_argument(m)
    m.add_argument("--incremental", action="store_true",
                   help="rewrite only the partitions changed since the last generated version")
    m.set_defaults(func=cmd_manifest)

    cl = add_operation_parser(subparsers, CLUSTER)
    add_table_arguments(cl)
    _spark_argument(cl)
    cl.add_argument("--columns", default=None, metavar="A,B",
                    help="make these the clustering columns first (as cluster-by); default: the table's own")
    cl.add_argument("--full", action="store_true", help="recluster every file (OPTIMIZE FULL)")
    cl.add_argument("--target-size", type=byte_size, default=None, metavar="SIZE",
                    help="target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)")
    cl.set_defaults(func=cmd_cluster)

    cb = subparsers.add_parser(
        "cluster-by", help="set or clear the clustering columns (ALTER TABLE ... CLUSTER BY)",
        description="Set the table's liquid clustering columns (upgrading its protocol to a clustered "
                    "table's when needed), or clear them with --none. Commits no data; run cluster to cluster.")
    add_table_arguments(cb)
    which = cb.add_mutually_exclusive_group(required=True)
    which.add_argument("--columns", metavar="A,B", help="comma-separated top-level data columns (at most 4)")
    which.add_argument("--none", action="store_true", help="clear the clustering columns (CLUSTER BY NONE)")
    cb.set_defaults(func=cmd_cluster_by)


def _spark(args: argparse.Namespace) -> Any:
    """A factory: the operations start Spark only once they know there is work."""
    from delta_core.maintenance.spark.session import build_spark_session

    # Spark's own logging stays off the console unless --verbose: errors arrive typed.
    return lambda: build_spark_session(master=args.spark_master, quiet=not args.verbose)


def _columns(text: str) -> list[str]:
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise ConfigError("--columns needs at least one column name")
    return cols


def cmd_compact(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.compaction import compact

    table = open_table(args)
    metrics = compact(table, _spark(args), where=args.where, target_size=args.target_size,
                      min_file_size=args.min_file_size, max_deleted_rows_ratio=args.max_deleted_rows_ratio,
                      full=args.full)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_zorder(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.zorder import zorder

    table = open_table(args)
    columns = _columns(args.columns)
    metrics = zorder(table, _spark(args), columns, curve=args.curve, where=args.where,
                     target_size=args.target_size)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_vacuum(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.vacuum import vacuum

    table = open_table(args)
    spark = _spark(args)() if args.delete_on_spark else None
    metrics = vacuum(table, retention_hours=args.retention_hours, dry_run=args.dry_run, force=args.force,
                     spark=spark, mode="lite" if args.lite else "full")
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    from delta_core.maintenance.manifest import generate_manifests

    table = open_table(args)
    metrics = generate_manifests(table, incremental=args.incremental)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_cluster(args: argparse.Namespace) -> int:
    from delta_core.maintenance.spark.cluster import cluster

    table = open_table(args)
    columns = _columns(args.columns) if args.columns is not None else None
    metrics = cluster(table, _spark(args), columns=columns, full=args.full, target_size=args.target_size)
    emit(metrics.to_dict(), args.json)
    return 0


def cmd_cluster_by(args: argparse.Namespace) -> int:
    from delta_core.maintenance.cluster_by import cluster_by

    table = open_table(args)
    result = cluster_by(table, None if args.none else _columns(args.columns))
    emit(result.to_dict(), args.json)
    return 0
