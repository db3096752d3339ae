"""``delta-core cluster-by``: set or clear a table's liquid clustering columns.

Delta Spark has ``ALTER TABLE ... CLUSTER BY`` beside ``OPTIMIZE``: ``cluster-by TABLE --columns
a,b`` (or ``--none``) sets the clustering columns and commits nothing else; clustering itself is
the registry's ``cluster`` operation (``delta_core.cli.operations``), and ``compact`` on a
clustered table does the same, as ``OPTIMIZE`` does there. As text, the summary line every
maintenance command opens with (``report.summary_line``) comes first.
"""

from __future__ import annotations

import argparse

from delta_core.cli.arguments import column_list
from delta_core.cli.common import emit, open_table, table_command
from delta_core.maintenance.report import summary_line


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cb = table_command(
        subparsers, "cluster-by", cmd_cluster_by, help="set or clear the clustering columns (ALTER TABLE ... CLUSTER BY)",
        description="Set the table's liquid clustering columns (upgrading its protocol to a clustered "
                    "table's when needed), or clear them with --none. Commits no data; run cluster to cluster.")
    which = cb.add_mutually_exclusive_group(required=True)
    which.add_argument("--columns", type=column_list, metavar="A,B", help="comma-separated top-level data columns (at most 4)")
    which.add_argument("--none", action="store_true", help="clear the clustering columns (CLUSTER BY NONE)")


def cmd_cluster_by(args: argparse.Namespace) -> int:
    from delta_core.maintenance.cluster_by import cluster_by

    table = open_table(args)
    result = cluster_by(table, None if args.none else list(args.columns))
    if not args.json:
        emit(summary_line("Cluster by", result), False)  # the gist first; the record follows
    emit(result.to_dict(), args.json)
    return 0

