"""Z-order planning (pure): which partitions are rewritten, on which columns, into how many files.

Z-order rewrites *every* file of the selected partitions (clustering is about all rows, not
just small files), so the plan is the list of partitions with their files, the validated
clustering columns and the number of output files (input bytes / target size, at least one per
partition). Columns are checked as Delta does: they must exist, must not be partition columns
(every file of a partition has one value there already) and must have min/max statistics
(``delta.dataSkippingNumIndexedCols`` / ``delta.dataSkippingStatsColumns``), otherwise
clustering on them could never skip a file. Only top-level primitive, orderable columns work.
Files with deletion vectors are rewritten like the others: the rewrite drops their deleted rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from delta_core.errors import ConfigError
from delta_core.maintenance.bin_packing import (
    lexical_order,
    partition_codes,
    partition_key_columns,
    partition_key_names,
)
from delta_core.maintenance.compaction_plan import kept_rows, resolve_sizes, selection_mask, table_target_size
from delta_core.maintenance.curves import bits_per_column
from delta_core.maintenance.file_groups import FileGroup, batch_groups, group_file_list, groups_of
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.options import ZORDER_CURVES as CURVES
from delta_core.maintenance.predicate import parse_predicate
from delta_core.model.arrow_values import take_rows
from delta_core.model.schema import PrimitiveType, StructType, schema_to_arrow
from delta_core.model.stats_collect import indexed_leaves
from delta_core.model.variant import is_variant, not_comparable_reason
from delta_core.write.operation_records import OptimizeParameters

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

_ORDERABLE = {"string", "long", "integer", "short", "byte", "float", "double", "decimal", "boolean",
              "date", "timestamp", "timestamp_ntz"}


@dataclass(frozen=True, slots=True, eq=False)
class PartitionFiles(FileGroup):
    """All selected files of one partition, clustered together into one or more files."""


@dataclass(frozen=True, slots=True)
class ZOrderPlan:
    read_version: int | None
    columns: tuple[str, ...]
    curve: str
    target_size: int
    predicate: str | None
    partitions: tuple[PartitionFiles, ...]
    files_considered: int
    bits_per_column: int

    @property
    def num_input_files(self) -> int:
        return sum(p.num_files for p in self.partitions)

    @property
    def input_bytes(self) -> int:
        return sum(p.total_size for p in self.partitions)

    @property
    def is_empty(self) -> bool:
        return not self.partitions

    def output_files(self, partitions: Sequence[FileGroup] | None = None) -> int:
        parts = self.partitions if partitions is None else partitions
        total = sum(p.total_size for p in parts)
        return max(len(parts), math.ceil(total / self.target_size)) if parts else 0

    @property
    def groups(self) -> tuple[PartitionFiles, ...]:
        return self.partitions

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> list[tuple[PartitionFiles, ...]]:
        """Consecutive groups of partitions of at most ``max_bytes`` input (at least one each)."""
        return batch_groups(self.partitions, max_bytes)

    def operation_parameters(self) -> OptimizeParameters:
        return OptimizeParameters(predicate=self.predicate, z_order_by=tuple(self.columns), curve=self.curve)


def validate_columns(
    schema: StructType,
    columns: Sequence[str],
    *,
    partition_columns: Sequence[str],
    num_indexed_cols: int,
    stats_columns: Sequence[str] | None,
    operation: str = "Z-order",
) -> tuple[str, ...]:
    """Canonical names of the clustering ``columns``, or ``ConfigError`` saying what is wrong
    (``operation`` names the command in the messages)."""
    if not columns:
        raise ConfigError("Z-order needs at least one column (--columns a,b)")
    bits_per_column(len(columns))
    parts_lower = {c.lower() for c in partition_columns}
    data_fields = [f for f in schema.fields if f.name.lower() not in parts_lower]
    with_stats = indexed_leaves(schema_to_arrow(StructType(tuple(data_fields))),
                                num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
    out: list[str] = []
    for name in columns:
        name = name.strip()
        if name.lower() in parts_lower:
            raise ConfigError(
                f"{name!r} is a partition column; Z-order clusters data *within* partitions, so use "
                "data columns (partition columns are already one value per file)"
            )
        field = schema.get(name, case_sensitive=False)
        if field is None:
            raise ConfigError(f"column {name!r} is not in the table schema ({', '.join(schema.field_names)})")
        if is_variant(field.type):
            raise ConfigError(f"cannot {operation}: {not_comparable_reason(field.name)}; choose another column")
        if not isinstance(field.type, PrimitiveType) or field.type.name not in _ORDERABLE:
            raise ConfigError(f"cannot {operation} on {field.name!r} of type {field.type}: only primitive, "
                              "orderable columns (numbers, strings, dates, timestamps, booleans) work")
        if (field.name,) not in with_stats:
            raise ConfigError(
                f"column {field.name!r} has no statistics (see delta.dataSkippingNumIndexedCols / "
                f"delta.dataSkippingStatsColumns), so {operation} on it cannot help data skipping; "
                "collect stats for it first"
            )
        if field.name in out:
            raise ConfigError(f"column {field.name!r} is listed twice")
        out.append(field.name)
    return tuple(out)


def group_partitions(files: pa.Table, key_names: Sequence[str]) -> list[PartitionFiles]:
    """All files grouped by partition (in the order partition values sort; a partition's files in
    the snapshot's order, which the rewrite does not depend on), one ``PartitionFiles`` per
    partition over row numbers of ``files``."""
    n = files.num_rows
    if n == 0:
        return []
    keys = partition_key_columns(files, key_names)
    codes = partition_codes(keys, n)
    order = lexical_order(codes)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(codes[order]) != 0]))
    values = list(zip(*(take_rows(k, order[starts]).to_pylist() for k in keys))) if keys else [()]
    return groups_of(PartitionFiles, group_file_list(files), order, np.append(starts, n),
                     [tuple(zip(key_names, v)) for v in values])


def plan_zorder(
    snapshot: Snapshot,
    columns: Sequence[str],
    *,
    curve: str = "zorder",
    where: str | None = None,
    target_size: int | None = None,
) -> ZOrderPlan:
    """Plan a Z-order (or Hilbert) rewrite of ``snapshot``. Pure."""
    if curve not in CURVES:
        raise ConfigError(f"unknown curve {curve!r}; choose one of {', '.join(CURVES)}")
    partition_columns = list(snapshot.partition_columns)
    props = snapshot.properties
    cols = validate_columns(snapshot.schema, columns, partition_columns=partition_columns,
                            num_indexed_cols=props.num_indexed_cols, stats_columns=props.stats_columns)
    target, _ = resolve_sizes(target_size, None, table_target=table_target_size(snapshot))
    predicate = parse_predicate(where, partition_columns,
                                schema_columns=snapshot.schema.field_names) if where is not None else None
    files = snapshot.file_columns("path", "partition_values", "size")
    mask = selection_mask(files, snapshot.partition_values_typed() if predicate is not None else None, predicate)
    selected = kept_rows(files, mask)
    return ZOrderPlan(
        read_version=snapshot.version,
        columns=cols,
        curve=curve,
        target_size=target,
        predicate=predicate.sql() if predicate is not None else None,
        partitions=tuple(group_partitions(selected, partition_key_names(snapshot))),
        files_considered=selected.num_rows,
        bits_per_column=bits_per_column(len(cols)),
    )
