"""``cluster-by``: set, change or clear a table's clustering columns (Delta Spark's
``ALTER TABLE ... CLUSTER BY (a, b)`` / ``CLUSTER BY NONE``).

PROTOCOL.md "Clustered Table": the columns live in the ``delta.clustering`` domain (physical
names; ``clustering_domain`` in ``delta_core.model.clustering``), the table must list
``clustering`` and ``domainMetadata`` among its writer features (writer version 7; the protocol
is upgraded in the same commit when it does not), a clustered table must not be partitioned, and
every file must have statistics for a column that becomes a clustering column. One commit,
operation ``CLUSTER BY``, no file actions. Clearing the columns writes an empty list and keeps the
feature, as Delta Spark does; on a table that is not clustered it commits nothing. Setting the
columns a table already has commits nothing either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError, UnsupportedTableForOperationError
from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.maintenance.zorder_plan import validate_columns
from delta_core.model.clustering import (
    CLUSTERING_FEATURES,
    MAX_CLUSTERING_COLUMNS,
    ClusteringColumn,
    clustering_columns,
    clustering_domain,
    is_clustered_table,
    resolve_columns,
)
from delta_core.model.delta_operations import CLUSTER_BY
from delta_core.model.stats import MIN_PREFIX, NULL_COUNT_PREFIX
from delta_core.model.table_features import check_write_supported
from delta_core.write.feature_enablement import upgrade_protocol
from delta_core.write.operation_records import ClusterByParameters
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterByResult(OperationMetrics):
    """What ``cluster_by`` committed: ``version`` (None: nothing to change), the logical columns
    before and after, and whether the protocol was upgraded to a clustered table's."""

    old_columns: tuple[str, ...]
    new_columns: tuple[str, ...]
    protocol_upgraded: bool

    def outcome(self) -> str:
        if self.version is None:
            return f"clustering columns already {', '.join(self.new_columns) or 'none'}: nothing to commit"
        return (f"clustering columns {', '.join(self.old_columns) or 'none'} -> {', '.join(self.new_columns) or 'none'}, "
                f"committed version {self.version}" + (" (protocol upgraded)" if self.protocol_upgraded else ""))


def cluster_by(table: DeltaTable, columns: Sequence[str] | None) -> ClusterByResult:
    """Make ``columns`` the clustering columns of ``table`` (``None`` or empty: clear them)."""
    watch = Stopwatch()
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    clustered = is_clustered_table(snapshot.protocol)
    old = (clustering_columns(snapshot.domain_metadata, snapshot.schema, path=table.uri, version=snapshot.version)
           if clustered else ())
    new = _new_columns(snapshot, list(columns or ()), old, path=table.uri) if columns else ()

    def result(version: int | None, upgraded: bool) -> ClusterByResult:
        return ClusterByResult(version=version, old_columns=tuple(c.name for c in old),
                               new_columns=tuple(c.name for c in new), protocol_upgraded=upgraded,
                               num_removed_files=0, num_added_files=0, removed_bytes=0, added_bytes=0,
                               duration_seconds=watch.seconds())

    if new == old:
        return result(None, False)  # already so (CLUSTER BY NONE on an unclustered table included)
    txn = Transaction(table, read_snapshot=snapshot, operation=CLUSTER_BY,
                      operation_parameters=ClusterByParameters(tuple(c.name for c in old),
                                                               tuple(c.name for c in new)))
    txn.add_action(clustering_domain(new))
    protocol = upgrade_protocol(snapshot.protocol, set(CLUSTERING_FEATURES))
    if protocol != snapshot.protocol:
        txn.add_action(protocol)
    committed = txn.commit()
    return result(committed.version, protocol != snapshot.protocol)


def _new_columns(snapshot: Snapshot, names: list[str], old: Sequence[ClusteringColumn], *,
                 path: str) -> tuple[ClusteringColumn, ...]:
    """Validate the requested columns (the module docstring's rules) or raise saying why."""
    if snapshot.partition_columns:
        raise UnsupportedTableForOperationError(
            f"the table is partitioned by {', '.join(snapshot.partition_columns)}; the Delta protocol "
            "forbids a table to be clustered and partitioned at once. Recreate it unpartitioned to cluster it",
            path=path, version=snapshot.version)
    if len(names) > MAX_CLUSTERING_COLUMNS:
        raise ConfigError(
            f"{len(names)} clustering columns given; Delta allows at most {MAX_CLUSTERING_COLUMNS} "
            "(Delta Spark's clusteredTable.numClusteringColumnsLimit), so choose the most selective ones",
            path=path, version=snapshot.version)
    props = snapshot.properties
    try:
        resolved = resolve_columns(snapshot.schema, names)
        nested = [c.name for c in resolved if len(c.logical) > 1]
        if nested:
            raise ConfigError(f"nested clustering column(s) {', '.join(nested)}: this library clusters on "
                              "top-level columns only; choose top-level columns or set these with Delta Spark")
        validate_columns(snapshot.schema, [c.logical[0] for c in resolved], partition_columns=(),
                         num_indexed_cols=props.num_indexed_cols, stats_columns=props.stats_columns,
                         operation="cluster")
    except ConfigError as exc:
        raise ConfigError(str(exc), path=path, version=snapshot.version) from None
    added = [c for c in resolved if c not in old]
    _check_files_have_stats(snapshot, added, path=path)
    return resolved


def _check_files_have_stats(snapshot: Snapshot, columns: Sequence[ClusteringColumn], *, path: str) -> None:
    """PROTOCOL.md "Clustered Table": a new clustering column needs stats in every live file."""
    if not columns or not snapshot.num_files:
        return
    stats = snapshot.file_stats()
    for column in columns:
        name = ".".join(column.logical)
        lo, nulls = MIN_PREFIX + name, NULL_COUNT_PREFIX + name
        if lo not in stats.column_names or nulls not in stats.column_names:
            has = pa.array([False] * stats.num_rows)
        else:
            # an all-null column has no min but a null count equal to the row count
            has = pc.or_kleene(pc.is_valid(stats.column(lo)), pc.is_valid(stats.column(nulls)))
        missing = stats.filter(pc.invert(has))
        if missing.num_rows:
            raise ConfigError(
                f"{missing.num_rows} of {stats.num_rows} live file(s) have no statistics for column "
                f"{column.name!r} (e.g. {missing.column('path')[0].as_py()}); a clustered table needs them "
                f"in every file. Rewrite those files with stats first (delta-core zorder TABLE --columns "
                f"{column.name} writes full stats), then retry", path=path, version=snapshot.version)
