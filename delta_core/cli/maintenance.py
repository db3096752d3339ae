"""``delta-core cluster-by``: set or clear a table's liquid clustering columns.

Delta Spark has ``ALTER TABLE ... CLUSTER BY`` beside ``OPTIMIZE``: ``cluster-by TABLE --columns
a,b`` (or ``--none``) sets the clustering columns and commits nothing else; clustering itself is
the registry's ``cluster`` operation (``delta_core.cli.operations``), and ``compact`` on a
clustered table does the same, as ``OPTIMIZE`` does there. As text, a summary line opens the
output.
"""

from __future__ import annotations

import argparse
import datetime as dt
from typing import TYPE_CHECKING

from delta_core.cli.arguments import column_list
from delta_core.cli.common import add_table_arguments, emit, open_table
from delta_core.model.durations import format_duration

if TYPE_CHECKING:
    from delta_core.maintenance.cluster_by import ClusterByResult


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cb = subparsers.add_parser(
        "cluster-by", help="set or clear the clustering columns (ALTER TABLE ... CLUSTER BY)",
        description="Set the table's liquid clustering columns (upgrading its protocol to a clustered "
                    "table's when needed), or clear them with --none. Commits no data; run cluster to cluster.")
    add_table_arguments(cb)
    which = cb.add_mutually_exclusive_group(required=True)
    which.add_argument("--columns", type=column_list, metavar="A,B", help="comma-separated top-level data columns (at most 4)")
    which.add_argument("--none", action="store_true", help="clear the clustering columns (CLUSTER BY NONE)")
    cb.set_defaults(func=cmd_cluster_by)


def cmd_cluster_by(args: argparse.Namespace) -> int:
    from delta_core.maintenance.cluster_by import cluster_by

    table = open_table(args)
    result = cluster_by(table, None if args.none else list(args.columns))
    if not args.json:
        emit(cluster_by_summary(table.uri, result), False)  # the gist first; the record follows
    emit(result.to_dict(), args.json)
    return 0


def cluster_by_summary(uri: str, result: ClusterByResult) -> str:
    """One line: the clustering columns now and before, the version committed, how long."""
    def named(columns: tuple[str, ...]) -> str:
        return ", ".join(columns) or "none"

    took = format_duration(dt.timedelta(seconds=result.duration_seconds))
    if result.version is None:
        return f"cluster-by {uri}: clustering columns already {named(result.new_columns)}; nothing committed ({took})"
    upgraded = ", protocol upgraded" if result.protocol_upgraded else ""
    return (f"cluster-by {uri}: clustering columns {named(result.new_columns)} (were {named(result.old_columns)}); "
            f"committed version {result.version}{upgraded}, 0 data files rewritten ({took})")
