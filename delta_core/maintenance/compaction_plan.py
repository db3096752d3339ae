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

Which bins are rewritten (``bin_packing.keep_bins``) depends on the ``selection``. Both rewrite a
bin whose files reach ``min_file_size`` (major: a file that is no longer small, however few went
in) and a bin with a file over the deleted-rows ratio. ``BIN_PACK`` (OPTIMIZE's, what a run a
person starts uses) also rewrites every other bin of at least ``min_input_files`` small files (two
when a person gives no count). ``AUTOMATED`` (the plan's default, what a run automation starts
uses, and what the health advice predicts) waits, so that a byte is rewritten about twice on its
way to the target and not once per run: of the other bins it rewrites only those of at least
``min_input_files`` (default ``DEFAULT_MIN_INPUT_FILES``, 5, Iceberg's ``min-input-files``)
fragments, files under ``target_size * FRAGMENT_FRACTION`` (1/8, Amoro's fragment ratio), and
only those fragments (minor; a fragment larger than the smaller ones together, give or take
``MERGED_FRAGMENT_SLACK``, waits, so merged fragments are not rewritten for a little new data).
Other bins wait for more files. Files at or above ``min_file_size`` are never candidates (unless
over the ratio), so they are only rewritten for their deleted rows.

Defaults: ``target_size`` is ``delta.targetFileSize`` when the table sets it, else
``DEFAULT_TARGET_FILE_SIZE`` (128 MiB, ``delta_core.model.table_properties``); ``min_file_size`` is
``target_size * DEFAULT_MIN_FILE_FRACTION`` (3/4): a file that already has three quarters of the
target size is left alone, which also keeps the output of one run from being re-packed by the
next when Parquet compresses the merged data better than the parts.

Files of a Z-order ZCube (``ZCUBE_ID`` tag, no ``clusteringProvider``) are left to Z-order,
which merges small cubes itself: bin-packing them would drop their layout and their tags, and the
next Z-order would rewrite them again (``zcube_files``). Deleted rows still make them candidates.

The packing itself is ``bin_packing.pack`` (vectorised, shared with the health model's estimate):
no Python object is made per file, only one ``Bin`` per bin holding its row numbers in the
candidates' file list (``file_groups``).
``batches()`` groups bins into commits so progress survives a failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.maintenance.bin_packing import (
    Packing,
    keep_bins,
    pack,
    partition_codes,
    partition_key_columns,
    partition_key_names,
    sort_keys,
    sort_keys_of,
)
from delta_core.maintenance.file_groups import FileGroup, batch_groups, group_file_list, groups_of
from delta_core.maintenance.options import (
    AUTOMATED,
    DEFAULT_BATCH_BYTES,
    DEFAULT_MAX_DELETED_ROWS_RATIO,
    DEFAULT_MIN_INPUT_FILES,
    SELECTIONS,
)
from delta_core.maintenance.predicate import Expr, evaluate, parse_predicate
from delta_core.maintenance.tag_codes import tag_codes
from delta_core.model.arrow_values import (
    false_array,
    float_scalar,
    numbers_of,
    numbers_or_zero,
    take_rows,
    true_array,
)
from delta_core.model.clustering import ZCUBE_ID_TAG
from delta_core.model.table_properties import DEFAULT_TARGET_FILE_SIZE, TARGET_FILE_SIZE
from delta_core.write.operation_records import OptimizeParameters

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

DEFAULT_MIN_FILE_FRACTION = 0.75
# Files under this share of the target are fragments, merged as soon as enough of them are
# (Amoro's self-optimizing.fragment-ratio, 8).
FRAGMENT_FRACTION = 1 / 8


@dataclass(frozen=True, slots=True, eq=False)
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
    min_input_files: int = DEFAULT_MIN_INPUT_FILES
    selection: str = AUTOMATED
    partitions_compacted: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions_compacted", len({b.partition_values for b in self.bins}))

    @property
    def num_input_files(self) -> int:
        return sum(b.num_files for b in self.bins)

    @property
    def input_bytes(self) -> int:
        return sum(b.total_size for b in self.bins)

    @property
    def is_empty(self) -> bool:
        return not self.bins

    @property
    def groups(self) -> tuple[Bin, ...]:
        return self.bins

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> list[tuple[Bin, ...]]:
        """Consecutive groups of bins of at most ``max_bytes`` input (at least one bin each)."""
        return batch_groups(self.bins, max_bytes)

    def operation_parameters(self) -> OptimizeParameters:
        return OptimizeParameters(predicate=self.predicate)


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


def table_target_size(snapshot: Snapshot) -> int | None:
    """``delta.targetFileSize`` when the table sets it (``None``: the default applies)."""
    return snapshot.properties.target_file_size if snapshot.properties.raw(TARGET_FILE_SIZE) is not None else None


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


def check_min_input_files(count: int) -> int:
    """``count`` if a bin may need that many files (at least 2: one file alone is never merged),
    else ``ConfigError``."""
    if count < 2:
        raise ConfigError(f"min input files must be at least 2 (one file alone merges with nothing), got {count}")
    return count


def check_selection(selection: str) -> str:
    """``selection`` if it names one (``SELECTIONS``), else ``ConfigError``."""
    if selection not in SELECTIONS:
        raise ConfigError(f"compaction selection must be one of {', '.join(SELECTIONS)}, got {selection!r}")
    return selection


def fragment_size(target_size: int, min_file_size: int) -> int:
    """Files under this many bytes are fragments (``FRAGMENT_FRACTION`` of the target, at most
    the minimum file size)."""
    return min(max(1, int(target_size * FRAGMENT_FRACTION)), min_file_size)


def check_deleted_rows_ratio(ratio: float) -> float:
    """``ratio`` if it is a share between 0 and 1, else ``ConfigError``."""
    if not 0.0 <= ratio <= 1.0:
        raise ConfigError(f"max deleted rows ratio must be between 0 and 1, got {ratio}")
    return ratio


def over_deleted_rows_ratio(files: pa.Table, ratio: float) -> pa.Array | pa.ChunkedArray:
    """Rows of ``files`` (``Snapshot.files`` columns) whose deletion vector deletes more than
    ``ratio`` of their ``num_records``, or that have a vector and no ``num_records``."""
    if "deletion_vector" not in files.column_names or files.column("deletion_vector").null_count == files.num_rows:
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


def ratio_columns(snapshot: Snapshot) -> tuple[str, ...]:
    """The columns ``over_deleted_rows_ratio`` reads: ``deletion_vector``, and ``num_records``
    only when some file has a vector (a snapshot loaded from a checkpoint reads the count from
    the checkpoint's JSON statistics: seconds per million files, for nothing when no file has one)."""
    vectors = snapshot.file_columns("deletion_vector").column("deletion_vector")
    return ("deletion_vector",) if vectors.null_count == len(vectors) else ("deletion_vector", "num_records")


@dataclass(frozen=True, slots=True)
class Candidates:
    """The files a compaction may pack (below the minimum size, or ``due``: over the deleted-rows
    ratio) and how ``bin_packing.pack`` packs them: ``packing``'s rows are rows of ``files``."""

    files: pa.Table  # ``GROUP_COLUMNS`` of every file given (no copy), candidates or not
    keys: list[pa.ChunkedArray]  # their partition values, one column per partition column
    packing: Packing
    partitions: int  # distinct partitions among ``files`` (1 unpartitioned, 0 without files)
    sizes: np.ndarray  # int64 size of every file given (0 where null), aligned with ``files``


def pack_candidates(
    files: pa.Table,
    keys: Sequence[pa.ChunkedArray],
    *,
    target_size: int,
    min_file_size: int,
    max_deleted_rows_ratio: float,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    selection: str = AUTOMATED,
    exact: bool = True,
    zcubes: np.ndarray | None = None,
) -> Candidates:
    """Select and pack the candidates among ``files`` (``Snapshot.files`` columns: ``path``,
    ``size``; ``num_records`` and ``deletion_vector`` when present) whose partition values are
    ``keys`` (``partition_key_columns``). Only integer columns are filtered: the candidates'
    paths are not copied (their ranks are, when ties need them).

    ``exact`` breaks ties of equal size by path, as the plan's bins need; without it the paths
    are sorted only when that can change the counts (a due file among the candidates).
    ``zcubes`` marks the files of Z-order cubes (``zcube_files``): only due ones are candidates.
    The bins kept are those ``keep_bins`` keeps (``min_input_files``, ``selection``; the module docstring)."""
    n = files.num_rows
    due_column = over_deleted_rows_ratio(files, max_deleted_rows_ratio)
    sizes = numbers_or_zero(files.column("size"))
    due = numbers_of(due_column).astype(bool, copy=False) if n else np.zeros(0, bool)
    small = sizes < min_file_size
    if zcubes is not None:
        small &= ~zcubes
    chosen = np.flatnonzero(small | due)
    every = len(chosen) == n  # the usual case at scale: then nothing is filtered, not even integers
    ties = None
    if exact or due[chosen].any():
        paths = files.column("path")
        ties = sort_keys(paths) if every else sort_keys_of(paths, chosen)
    codes = partition_codes(keys, n)
    chosen_sizes, chosen_due = (sizes, due) if every else (sizes[chosen], due[chosen])
    packing = pack(codes if every else codes[chosen], chosen_sizes, chosen_due, target_size=target_size, ties=ties)
    packing = keep_bins(packing, chosen_sizes, chosen_due, min_file_size=min_file_size,
                        fragment_size=fragment_size(target_size, min_file_size), min_input_files=min_input_files,
                        automated=selection == AUTOMATED)
    rows = packing.rows if every else chosen[packing.rows]
    return Candidates(group_file_list(files), list(keys), Packing(rows, packing.bounds),
                      int(codes.max()) + 1 if n else 0, sizes)


T = TypeVar("T", pa.Table, pa.ChunkedArray, pa.Array)


def kept_rows(rows: T, mask: pa.Array | pa.ChunkedArray) -> T:
    """``rows`` filtered by ``mask``, or ``rows`` themselves when it keeps every row (a filter
    copies every column: at 10M files, gigabytes of paths for nothing)."""
    return rows if mask.null_count == 0 and pc.all(mask).as_py() else rows.filter(mask)


def zcube_files(snapshot: Snapshot) -> np.ndarray:
    """Per live file (``files`` order), whether it belongs to a Z-order ZCube: a ``ZCUBE_ID``
    tag and no ``clusteringProvider`` (liquid files are clustering's)."""
    (cubes, _), = tag_codes(snapshot.iter_tags(), (ZCUBE_ID_TAG,), snapshot.num_files)
    in_cube: np.ndarray = cubes >= 0
    if in_cube.any():
        in_cube &= ~numbers_of(pc.is_valid(snapshot.file_columns("clustering_provider")
                                           .column("clustering_provider"))).astype(bool)
    return in_cube


def pack_files(
    files: pa.Table,
    *,
    partition_columns: Sequence[str],
    target_size: int,
    min_file_size: int,
    selected: pa.Array | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    selection: str = AUTOMATED,
    zcubes: np.ndarray | None = None,
) -> tuple[list[Bin], int, int]:
    """Bins over the Arrow file list; returns ``(bins, files_considered, partitions_considered)``
    (``selected``: the rows of ``files`` to consider; ``partition_columns``: the keys of their
    ``partition_values``, physical names under column mapping)."""
    if selected is not None:
        if zcubes is not None and files.num_rows != 0 and not pc.all(selected).as_py():
            zcubes = zcubes[numbers_of(pc.indices_nonzero(pc.fill_null(selected, False)))]
        files = kept_rows(files, selected)
    keys = partition_key_columns(files, partition_columns)
    found = pack_candidates(files, keys, target_size=target_size, min_file_size=min_file_size,
                            max_deleted_rows_ratio=max_deleted_rows_ratio, min_input_files=min_input_files,
                            selection=selection, zcubes=zcubes)
    packing = found.packing
    values = list(zip(*(take_rows(k, packing.first_rows()).to_pylist() for k in found.keys))) if found.keys \
        else [()] * packing.num_bins
    bins = groups_of(Bin, found.files, packing.rows, packing.bounds,
                     [tuple(zip(partition_columns, v)) for v in values])
    return bins, files.num_rows, found.partitions


def plan_compaction(
    snapshot: Snapshot,
    *,
    target_size: int | None = None,
    min_file_size: int | None = None,
    where: str | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
    min_input_files: int = DEFAULT_MIN_INPUT_FILES,
    selection: str = AUTOMATED,
) -> CompactionPlan:
    """Plan the compaction of ``snapshot`` (a ``delta_core.log.snapshot.Snapshot``) with the bins
    ``selection`` keeps (the module docstring). Pure: no IO beyond what the snapshot already holds."""
    check_deleted_rows_ratio(max_deleted_rows_ratio)
    check_min_input_files(min_input_files)
    check_selection(selection)
    partition_columns = list(snapshot.partition_columns)
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target_size(snapshot))
    predicate = parse_predicate(where, partition_columns,
                                schema_columns=snapshot.schema.field_names) if where is not None else None
    # Only the columns the packing reads: no stats are read or kept for the plan.
    files = snapshot.file_columns("path", "partition_values", "size", *ratio_columns(snapshot))
    typed = snapshot.partition_values_typed() if predicate is not None else None
    mask = selection_mask(files, typed, predicate)
    bins, considered, partitions = pack_files(
        files, partition_columns=partition_key_names(snapshot), target_size=target, min_file_size=minimum,
        selected=mask, max_deleted_rows_ratio=max_deleted_rows_ratio, min_input_files=min_input_files,
        selection=selection, zcubes=zcube_files(snapshot),
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
        min_input_files=min_input_files,
        selection=selection,
    )
