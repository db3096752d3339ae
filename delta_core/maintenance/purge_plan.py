"""Purge planning (pure): which files ``REORG TABLE ... APPLY (PURGE)`` rewrites.

PROTOCOL.md "Deletion Vectors": the rows a file's deletion vector marks are no longer in the
table, but their bytes stay in the file until it is rewritten; "Column Mapping": a dropped
column's values stay in the files that held it. Purge rewrites exactly those files, as Delta
Spark's ``DeltaPurgeOperation`` selects them:

- every file with a deletion vector that deletes at least one row, and every file with a deletion
  vector but no ``numRecords`` statistic (its ratio is unknown). ``max_deleted_rows_ratio`` (0 by
  default, Delta's REORG) raises the bar: only files where more than that share of the rows is
  deleted (the test compaction uses, ``compaction_plan.over_deleted_rows_ratio``). Automation runs
  purge with the table's policy ratio (``delta_core.config.automated_runs``), so it rewrites only
  the files that pay, as OPTIMIZE's ``maxDeletedRowsRatio`` does;
- every file the caller found to hold a dropped column (``dropped_columns.files_with_dropped_columns``
  reads the footers; this module does no IO).

Unlike OPTIMIZE, purge does not bin-pack: each selected file becomes one group and is rewritten
into one file on its own. A purge only removes what readers no longer see, so it keeps the
table's file layout (Z-order or liquid clustering, file sizes) as it was rather than merging
files of different clusters. A table with nothing to purge yields an empty plan, and nothing is
committed.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.bin_packing import partition_key_columns, partition_key_names, sort_order
from delta_core.maintenance.compaction_plan import (
    check_deleted_rows_ratio,
    kept_rows,
    over_deleted_rows_ratio,
    ratio_columns,
    selection_mask,
)
from delta_core.maintenance.file_groups import FileGroup, batch_groups, group_file_list, groups_of
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.predicate import parse_predicate
from delta_core.model.arrow_values import take_rows
from delta_core.write.operation_records import ReorgParameters

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class PurgePlan:
    read_version: int
    predicate: str | None  # SQL of the partition predicate, None for the whole table
    max_deleted_rows_ratio: float
    groups: tuple[FileGroup, ...]  # one file each, ordered by partition then path
    files_considered: int  # files inside the predicate
    files_with_deletion_vectors: int  # selected for their deletion vector
    files_with_dropped_columns: int  # selected for a dropped column (some also have a DV)
    deleted_rows: int  # rows the selected deletion vectors delete: gone from the files afterwards

    @property
    def num_input_files(self) -> int:
        return len(self.groups)

    @property
    def input_bytes(self) -> int:
        return sum(g.total_size for g in self.groups)

    @property
    def is_empty(self) -> bool:
        return not self.groups

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> list[tuple[FileGroup, ...]]:
        """Consecutive groups of at most ``max_bytes`` input per commit."""
        return batch_groups(self.groups, max_bytes)

    def operation_parameters(self) -> ReorgParameters:
        return ReorgParameters(predicate=self.predicate)


# What a purge plan reads of each file besides ``ratio_columns``: its statistics stay unread (at 10M
# files they are gigabytes).
PURGE_COLUMNS = ("path", "partition_values", "size")
# REORG ... APPLY (PURGE): every file with a deleted row (a run given no ratio)
REORG_DELETED_ROWS_RATIO = 0.0


def select_files(snapshot: Snapshot, where: str | None,
                 columns: Sequence[str] | None = None) -> tuple[pa.Table, str | None]:
    """Rows of ``snapshot.files`` (only ``columns`` of them when given) inside the partition
    predicate ``where`` (all when None), and the predicate's SQL."""
    files = snapshot.files if columns is None else snapshot.file_columns(*columns)
    mask, predicate = selection(snapshot, where, files)
    return kept_rows(files, mask), predicate


def selection(snapshot: Snapshot, where: str | None, files: pa.Table) -> tuple[pa.Array, str | None]:
    """Which rows of ``files`` (``snapshot.files`` columns, ``path`` among them) lie inside the
    partition predicate ``where`` (all when None), and the predicate's SQL."""
    predicate = parse_predicate(where, list(snapshot.partition_columns), schema_columns=snapshot.schema.field_names) \
        if where is not None else None
    typed = snapshot.partition_values_typed() if predicate is not None else None
    return selection_mask(files, typed, predicate), (predicate.sql() if predicate else None)


def plan_purge(
    snapshot: Snapshot,
    *,
    where: str | None = None,
    max_deleted_rows_ratio: float = REORG_DELETED_ROWS_RATIO,
    dropped_column_paths: Collection[str] = frozenset(),
) -> PurgePlan:
    """Plan the purge of ``snapshot`` (a ``delta_core.log.snapshot.Snapshot``).
    ``dropped_column_paths``: log paths of files found to hold dropped columns."""
    ratio = check_deleted_rows_ratio(max_deleted_rows_ratio)
    files, predicate = select_files(snapshot, where, (*PURGE_COLUMNS, *ratio_columns(snapshot)))
    by_dv = over_deleted_rows_ratio(files, ratio)
    by_column = pc.is_in(files.column("path"), value_set=pa.array(sorted(dropped_column_paths), pa.string()))
    chosen = files.filter(pc.or_(by_dv, by_column))
    deleted = pc.sum(pc.struct_field(files.filter(by_dv).column("deletion_vector"), "cardinality")).as_py()
    return PurgePlan(
        read_version=snapshot.version,
        predicate=predicate,
        max_deleted_rows_ratio=ratio,
        groups=single_file_groups(chosen, partition_key_names(snapshot)),
        files_considered=files.num_rows,
        files_with_deletion_vectors=_count(by_dv),
        files_with_dropped_columns=_count(by_column),
        deleted_rows=int(deleted or 0),
    )


def single_file_groups(files: pa.Table, key_names: Sequence[str]) -> tuple[FileGroup, ...]:
    """One group per row of ``files``, ordered by partition (a null value last) then path."""
    keys = partition_key_columns(files, key_names)
    order = sort_order(keys, files.column("path"))
    values = list(zip(*(take_rows(k, order).to_pylist() for k in keys))) if keys else [()] * files.num_rows
    return tuple(groups_of(FileGroup, group_file_list(files), order, np.arange(files.num_rows + 1),
                           [tuple(zip(key_names, v)) for v in values]))


def _count(mask: pa.Array | pa.ChunkedArray) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
