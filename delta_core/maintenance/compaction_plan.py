"""Compaction planning (pure): which small files are packed together, partition by partition.

Bin packing as Delta's OPTIMIZE does it: within each partition, the files smaller than
``min_file_size`` are sorted by size and packed greedily into bins of at most ``target_size``
bytes (a file larger than the target opens its own bin); bins holding a single file are
dropped, because rewriting one file changes nothing. So a partition that is already compact
yields no bin, and a second run right after a compaction plans nothing.

Deleted rows (PROTOCOL.md "Deletion Vectors"): as in Delta Spark's OPTIMIZE
(``spark.databricks.delta.optimize.maxDeletedRowsRatio``), a file is also a candidate, whatever
its size, when its deletion vector deletes more than ``max_deleted_rows_ratio`` (default
``DEFAULT_MAX_DELETED_ROWS_RATIO``, 0.05) of its rows (``cardinality / numRecords``), or when it
has a vector but no ``numRecords`` (the ratio is unknown; the rewritten file gets stats). Unlike
Delta Spark, such a file is rewritten even alone in its bin: otherwise a lone large file full of
deleted rows would never be cleaned. The rewrite drops the deleted rows and the new file has no
vector.

Defaults: ``target_size`` is ``delta.targetFileSize`` when the table sets it, else
``DEFAULT_TARGET_FILE_SIZE`` (128 MiB, ``delta_core.model.table_properties``); ``min_file_size`` is
``target_size * DEFAULT_MIN_FILE_FRACTION`` (3/4): a file that already has three quarters of the
target size is left alone, which also keeps the output of one run from being re-packed by the
next when Parquet compresses the merged data better than the parts.

The planner works on the snapshot's Arrow file list and only loops in Python over the candidate
files. ``batches()`` groups bins into commits so progress survives a failure.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO
from delta_core.maintenance.predicate import Expr, evaluate, parse_predicate
from delta_core.model.arrow_values import false_array, float_scalar, int_scalar, numbers_of, string_scalar, true_array
from delta_core.model.table_properties import DEFAULT_TARGET_FILE_SIZE
from delta_core.write.data_writer import table_schema
from delta_core.write.operation_records import OptimizeParameters

DEFAULT_MIN_FILE_FRACTION = 0.75
DEFAULT_BATCH_BYTES = 8 * 1024**3  # one commit per ~8 GiB of input: progress survives failures


@dataclass(frozen=True, slots=True)
class FileRef:
    """One input file: ``path`` exactly as in the log (still URI-encoded)."""

    path: str
    size: int
    num_records: int | None = None


@dataclass(frozen=True, slots=True)
class FileGroup:
    """Files of one partition (``partition_values`` as serialised in the log) rewritten together."""

    partition_values: tuple[tuple[str, str | None], ...]
    files: tuple[FileRef, ...]

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def partition_dict(self) -> dict[str, str | None]:
        return dict(self.partition_values)

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]


@dataclass(frozen=True, slots=True)
class Bin(FileGroup):
    """Files of one partition to be rewritten together into one file."""


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    read_version: int | None
    target_size: int
    min_file_size: int
    predicate: str | None
    bins: tuple[Bin, ...]
    files_considered: int
    partitions_considered: int
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO
    partitions_compacted: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions_compacted", len({b.partition_values for b in self.bins}))

    @property
    def num_input_files(self) -> int:
        return sum(len(b.files) for b in self.bins)

    @property
    def input_bytes(self) -> int:
        return sum(b.total_size for b in self.bins)

    @property
    def is_empty(self) -> bool:
        return not self.bins

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> list[tuple[Bin, ...]]:
        """Consecutive groups of bins of at most ``max_bytes`` input (at least one bin each)."""
        return batch_bins(self.bins, max_bytes)

    def operation_parameters(self) -> OptimizeParameters:
        return OptimizeParameters(predicate=self.predicate)


G = TypeVar("G", bound=FileGroup)


def batch_bins(bins: Sequence[G], max_bytes: int) -> list[tuple[G, ...]]:
    """Consecutive groups of at most ``max_bytes`` input (at least one group each)."""
    if max_bytes <= 0:
        raise ConfigError(f"batch size must be positive, got {max_bytes}")
    out: list[tuple[G, ...]] = []
    current: list[G] = []
    size = 0
    for b in bins:
        if current and size + b.total_size > max_bytes:
            out.append(tuple(current))
            current, size = [], 0
        current.append(b)
        size += b.total_size
    if current:
        out.append(tuple(current))
    return out


def resolve_sizes(
    target_size: int | None,
    min_file_size: int | None,
    *,
    table_target: int | None = None,
) -> tuple[int, int]:
    """``(target_size, min_file_size)`` from the arguments, the table, then the defaults."""
    target = target_size if target_size is not None else (table_target or DEFAULT_TARGET_FILE_SIZE)
    if target <= 0:
        raise ConfigError(f"target file size must be positive, got {target}")
    minimum = min_file_size if min_file_size is not None else max(1, int(target * DEFAULT_MIN_FILE_FRACTION))
    if minimum <= 0:
        raise ConfigError(f"minimum file size must be positive, got {minimum}")
    if minimum > target:
        raise ConfigError(f"minimum file size {minimum} exceeds the target size {target}")
    return target, minimum


def partition_key_columns(files: pa.Table, partition_columns: Sequence[str]) -> list[pa.ChunkedArray]:
    """One string column per partition column, looked up in the ``partition_values`` map."""
    pv = files.column("partition_values")
    out = []
    for col in partition_columns:
        if files.num_rows == 0:
            out.append(pa.chunked_array([], pa.string()))
        else:
            out.append(pa.chunked_array([_value_of(chunk, col) for chunk in pv.chunks], pa.string()))
    return out


def _value_of(maps: pa.MapArray, key: str) -> pa.Array:
    """``map_lookup(maps, key, "first")``, without the lookup when every map holds ``key``
    exactly once (the usual shape: each file names each partition column once)."""
    if maps.null_count == 0 and len(maps):
        offsets = maps.offsets  # of this slice, into the whole children
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        keys, items = maps.keys.slice(first, last - first), maps.items.slice(first, last - first)
        hit = pc.fill_null(pc.equal(keys, string_scalar(key)), false_array(1)[0])
        sizes = np.diff(numbers_of(offsets))
        rows = np.repeat(np.arange(len(maps)), sizes)[numbers_of(hit)]  # the map of each hit
        if len(rows) == len(maps) and bool((rows == np.arange(len(maps))).all()):
            return items.filter(hit)
    return pc.map_lookup(maps, string_scalar(key), "first")


def selection_mask(files: pa.Table, typed_partitions: pa.Table | None, predicate: Expr | None) -> pa.Array:
    """Rows of ``files`` whose partition satisfies ``predicate`` (all rows when it is None).

    ``typed_partitions`` is ``Snapshot.partition_values_typed()``: one row per file, aligned by
    ``path``; it is re-ordered to match ``files`` when its order differs.
    """
    if predicate is None:
        return true_array(files.num_rows)
    if typed_partitions is None:
        raise ConfigError("a partition predicate needs the typed partition values of the snapshot")
    if typed_partitions.num_rows != files.num_rows:
        raise ConfigError("typed partition values do not match the file list")
    if not typed_partitions.column("path").equals(files.column("path")):
        order = pc.index_in(files.column("path"), value_set=typed_partitions.column("path"))
        typed_partitions = typed_partitions.take(order)
    return evaluate(predicate, typed_partitions)


def check_deleted_rows_ratio(ratio: float) -> float:
    """``ratio`` if it is a share between 0 and 1, else ``ConfigError``."""
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(f"max deleted rows ratio must be between 0 and 1, got {ratio}")
    return ratio


def over_deleted_rows_ratio(files: pa.Table, ratio: float) -> pa.Array | pa.ChunkedArray:
    """Rows of ``files`` (``Snapshot.files`` columns) whose deletion vector deletes more than
    ``ratio`` of their ``num_records``, or that have a vector and no ``num_records``."""
    if "deletion_vector" not in files.column_names or files.num_rows == 0:
        return false_array(files.num_rows)
    dv = files.column("deletion_vector")
    has_dv = pc.is_valid(dv)
    deleted = pc.cast(pc.struct_field(dv, "cardinality"), pa.float64())
    records = (pc.cast(files.column("num_records"), pa.float64()) if "num_records" in files.column_names
               else pa.nulls(files.num_rows, pa.float64()))
    # 0 records with deleted rows divides to +inf: over any ratio, as it should be.
    over = pc.greater(pc.divide(deleted, records), float_scalar(ratio))
    unknown = pc.is_null(records)
    # Kleene: true OR null is true
    return pc.fill_null(pc.and_kleene(has_dv, pc.or_kleene(unknown, over)), false_array(1)[0])


def pack_files(
    files: pa.Table,
    *,
    partition_columns: Sequence[str],
    target_size: int,
    min_file_size: int,
    selected: pa.Array | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
) -> tuple[list[Bin], int, int]:
    """Bins over the Arrow file list; returns ``(bins, files_considered, partitions_considered)``.

    ``files`` needs ``path``, ``partition_values`` and ``size`` (``num_records`` and
    ``deletion_vector`` are used when present).
    """
    if selected is not None:
        files = files.filter(selected)
    keys = partition_key_columns(files, partition_columns)
    files_considered = files.num_rows
    partitions_considered = (
        pa.table({f"p{i}": k for i, k in enumerate(keys)}).group_by([f"p{i}" for i in range(len(keys))])
        .aggregate([]).num_rows if keys and files.num_rows else (1 if files.num_rows else 0)
    )
    deleted_rows = over_deleted_rows_ratio(files, max_deleted_rows_ratio)
    chosen = pc.or_(pc.less(files.column("size"), int_scalar(min_file_size)), deleted_rows)
    candidates = files.filter(chosen)
    key_cols = [k.filter(chosen) for k in keys]
    columns: dict[str, Any] = {f"p{i}": k for i, k in enumerate(key_cols)}
    columns["path"] = candidates.column("path")
    columns["deleted_rows"] = deleted_rows.filter(chosen)
    columns["size"] = candidates.column("size")
    if "num_records" in candidates.column_names:
        columns["num_records"] = candidates.column("num_records")
    else:
        columns["num_records"] = pa.nulls(candidates.num_rows, pa.int64())
    work = pa.table(columns)
    sort_keys = [(f"p{i}", "ascending") for i in range(len(key_cols))] + [("size", "ascending"), ("path", "ascending")]
    work = work.sort_by(sort_keys)
    return list(_greedy(work, partition_columns, target_size)), files_considered, partitions_considered


def _greedy(work: pa.Table, partition_columns: Sequence[str], target_size: int) -> Iterator[Bin]:
    key_lists = [work.column(f"p{i}").to_pylist() for i in range(len(partition_columns))]
    paths = work.column("path").to_pylist()
    sizes = work.column("size").to_pylist()
    records = work.column("num_records").to_pylist()
    deleted_rows = work.column("deleted_rows").to_pylist()
    current_key: tuple[Any, ...] | None = None
    current: list[FileRef] = []
    current_size = 0
    current_due = False  # the bin holds a file over the deleted-rows ratio: rewrite it even alone

    def flush() -> Iterator[Bin]:
        if (len(current) > 1 or current_due) and current_key is not None:
            yield Bin(tuple(zip(partition_columns, current_key)), tuple(current))

    for i, path in enumerate(paths):
        key = tuple(k[i] for k in key_lists)
        size = sizes[i]
        if key != current_key or (current and current_size + size > target_size):
            yield from flush()
            current_key, current, current_size, current_due = key, [], 0, False
        current.append(FileRef(path, size, records[i]))
        current_size += size
        current_due = current_due or bool(deleted_rows[i])
    yield from flush()


def plan_compaction(
    snapshot: Any,
    *,
    target_size: int | None = None,
    min_file_size: int | None = None,
    where: str | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
) -> CompactionPlan:
    """Plan the compaction of ``snapshot`` (a ``delta_core.log.snapshot.Snapshot``). Pure: no IO
    beyond what the snapshot already holds."""
    check_deleted_rows_ratio(max_deleted_rows_ratio)
    partition_columns = list(snapshot.partition_columns)
    table_target = None
    if snapshot.properties.raw("delta.targetFileSize") is not None:
        table_target = snapshot.properties.target_file_size
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target)
    predicate = parse_predicate(where, partition_columns,
                                schema_columns=snapshot.schema.field_names) if where is not None else None
    # Only the columns the packing reads: no stats are read or kept for the plan.
    files = snapshot.file_columns("path", "partition_values", "size", "num_records", "deletion_vector")
    typed = snapshot.partition_values_typed() if predicate is not None else None
    mask = selection_mask(files, typed, predicate)
    # partitionValues are keyed by physical names under column mapping.
    schema = table_schema(snapshot.metadata)  # mode none: leftover physical names do not count
    key_names = [f.physical_name if (f := schema.get(c)) else c for c in partition_columns]
    bins, considered, partitions = pack_files(
        files, partition_columns=key_names, target_size=target, min_file_size=minimum,
        selected=mask, max_deleted_rows_ratio=max_deleted_rows_ratio,
    )
    return CompactionPlan(
        read_version=snapshot.version,
        target_size=target,
        min_file_size=minimum,
        predicate=predicate.sql() if predicate is not None else None,
        bins=tuple(bins),
        files_considered=considered,
        partitions_considered=partitions,
        max_deleted_rows_ratio=max_deleted_rows_ratio,
    )
