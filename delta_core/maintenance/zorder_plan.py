"""Z-order planning (pure): which files are rewritten, on which columns, into how many files.

Z-order is incremental, as Databricks documents it, and works per ZCube: each run's output in a
partition forms a new ZCube, its files tagged ``ZCUBE_ID`` (the cube) and ``ZCUBE_ZORDER_BY``
(the columns; ``delta_core.model.clustering``), as Delta Spark tags them. In each selected
partition a run takes

- every file not Z-ordered on these columns (no ZCube tags naming exactly them: new data, or
  data Z-ordered on other columns), together with the files of the partition's *small* cubes
  (less than ``min_cube_size`` bytes, by default the target file size), which merge into the
  new cube;
- with no such file, the small cubes only when there are at least two of them (they merge);
- otherwise nothing: data already Z-ordered on the same columns with no change since is left
  alone, so a second run on unchanged data commits nothing.

A file with a deletion vector stays in its cube (purge rewrites it). The plan is the list of
partitions with the files taken, the validated clustering columns and the number of output files
(input bytes / target size, at least one per partition). Columns are checked as Delta does: they must exist, must not be partition columns
(every file of a partition has one value there already) and must have min/max statistics
(``delta.dataSkippingNumIndexedCols`` / ``delta.dataSkippingStatsColumns``), otherwise
clustering on them could never skip a file. Only top-level primitive, orderable columns work.
A file rewritten drops its deleted rows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.maintenance.bin_packing import (
    lexical_order,
    partition_codes,
    partition_key_columns,
    partition_key_names,
)
from delta_core.maintenance.compaction_plan import kept_rows, resolve_sizes, selection_mask, table_target_size
from delta_core.maintenance.curves import bits_per_column
from delta_core.maintenance.file_groups import FileGroup, batch_groups, group_file_list, groups_of, groups_of_rows
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.options import ZORDER_CURVES as CURVES
from delta_core.maintenance.predicate import parse_predicate
from delta_core.maintenance.tag_codes import tag_codes
from delta_core.model.arrow_values import numbers_of, numbers_or_zero, take_rows
from delta_core.model.clustering import (
    ZCUBE_ID_TAG,
    ZCUBE_ZORDER_BY_TAG,
    FileClustering,
    file_clustering,
    resolve_columns,
    zorder_by_tag,
)
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
    # ``ZCUBE_ZORDER_BY`` of the new files, each partition's output one new ZCube (None: untagged)
    zcube_zorder_by: str | None = None
    files_kept: int = 0  # selected files left alone: Z-ordered on these columns already

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
    min_cube_size: int | None = None,
) -> ZOrderPlan:
    """Plan an incremental Z-order (or Hilbert) rewrite of ``snapshot`` (``min_cube_size``: a
    ZCube below it merges with new data; default the target size). Pure."""
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
    (cubes, _), (zorder_by, values) = tag_codes(snapshot.iter_tags(), (ZCUBE_ID_TAG, ZCUBE_ZORDER_BY_TAG),
                                                files.num_rows)
    zcube_columns = resolve_columns(snapshot.schema, cols)
    current_value = np.array([file_clustering(None, {ZCUBE_ID_TAG: "", ZCUBE_ZORDER_BY_TAG: v}, zcube_columns)
                              == FileClustering.CURRENT_COLUMNS for v in values] + [False])
    current = (cubes >= 0) & current_value[zorder_by]  # code -1 reads the trailing False
    if selected is not files:
        kept = numbers_of(pc.indices_nonzero(pc.fill_null(mask, False)))
        cubes, current = cubes[kept], current[kept]
    sizes = numbers_or_zero(selected.column("size"))
    min_cube = target if min_cube_size is None else min_cube_size
    chosen = [(p.partition_values, _incremental(p.rows, cubes, current, sizes, min_cube))
              for p in group_partitions(selected, partition_key_names(snapshot))]
    chosen = [(values, rows) for values, rows in chosen if len(rows)]
    taken = tuple(groups_of_rows(PartitionFiles, group_file_list(selected), [rows for _, rows in chosen],
                                 [values for values, _ in chosen]))
    return ZOrderPlan(
        read_version=snapshot.version,
        columns=cols,
        curve=curve,
        target_size=target,
        predicate=predicate.sql() if predicate is not None else None,
        partitions=taken,
        files_considered=selected.num_rows,
        bits_per_column=bits_per_column(len(cols)),
        zcube_zorder_by=zorder_by_tag(zcube_columns),
        files_kept=selected.num_rows - sum(g.num_files for g in taken),
    )


def _incremental(rows: np.ndarray, cubes: np.ndarray, current: np.ndarray, sizes: np.ndarray,
                 min_cube_size: int) -> np.ndarray:
    """The files of a partition (its ``rows`` of the plan's file list) one incremental run takes
    (the module docstring's rule); ``cubes`` (``ZCUBE_ID`` codes), ``current`` (Z-ordered on the
    plan's columns) and ``sizes`` are per row of the plan's file list."""
    old = current[rows]
    _, cube_of, cube_files = np.unique(cubes[rows][old], return_inverse=True, return_counts=True)
    cube_bytes = np.bincount(cube_of.reshape(-1), weights=sizes[rows][old], minlength=len(cube_files))
    small = cube_bytes < min_cube_size
    take = ~old
    if take.any() or small.sum() >= 2:
        take[np.flatnonzero(old)[small[cube_of.reshape(-1)]]] = True
    chosen: np.ndarray = rows[take]
    return chosen
