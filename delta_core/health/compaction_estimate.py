"""What a compaction would do, counted without building its plan (the file counts only).

``maintenance.compaction_plan`` decides which files a compaction packs: per partition, the
files below ``min_file_size`` or over ``max_deleted_rows_ratio`` sorted by size, packed greedily
into bins of at most ``target_size`` bytes, single-file bins dropped unless they hold a file over
the ratio. Its planner builds one object per candidate
file, which takes ~20 s on a table of a million small files; health only needs how many files
go in and how many come out. This module applies the same rule to the same inputs
(``resolve_sizes``, ``partition_key_columns``, the physical partition keys) vectorised: a bin
starting at sorted file ``i`` holds every following file while the running total stays within
the target, which ``searchsorted`` over the cumulative sizes finds in one step per bin.
``tests/health/test_compaction_estimate.py`` holds it equal to the planner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.compaction_plan import over_deleted_rows_ratio, partition_key_columns, resolve_sizes
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO
from delta_core.model.arrow_values import false_array, int_scalar, numbers_of
from delta_core.model.table_properties import TARGET_FILE_SIZE
from delta_core.write.data_writer import table_schema

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class CompactionEstimate:
    target_size: int
    min_file_size: int
    input_files: int  # files the compaction would rewrite
    output_files: int  # files it would write instead (one per bin)


def estimate_compaction(
    snapshot: Snapshot, *, target_size: int | None = None, min_file_size: int | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
) -> CompactionEstimate:
    """The file counts of ``plan_compaction(snapshot, target_size=..., min_file_size=...,
    max_deleted_rows_ratio=...)``."""
    table_target = snapshot.properties.target_file_size if snapshot.properties.raw(TARGET_FILE_SIZE) is not None \
        else None
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target)
    files = snapshot.file_columns("path", "size", "partition_values", "deletion_vector", "num_records")
    due = over_deleted_rows_ratio(files, max_deleted_rows_ratio)
    candidates = pc.or_(pc.less(files.column("size"), int_scalar(minimum)), due)
    schema = table_schema(snapshot.metadata)  # partitionValues are keyed by physical names
    key_names = [f.physical_name if (f := schema.get(c)) else c for c in snapshot.partition_columns]
    keys = {f"p{i}": k.filter(candidates) for i, k in enumerate(partition_key_columns(files, key_names))}
    # The planner breaks ties of equal size by path. Only a file over the deleted-rows ratio
    # ("due") makes the order of equal sizes change the counts, so without one the paths are
    # neither copied nor sorted (most of the cost at millions of files).
    by_path = bool(pc.any(due).as_py())
    work = pa.table({**keys, "size": files.column("size").filter(candidates), "due": due.filter(candidates),
                     **({"path": files.column("path").filter(candidates)} if by_path else {})})
    if work.num_rows == 0:
        return CompactionEstimate(target, minimum, 0, 0)
    work = work.sort_by([(k, "ascending") for k in keys] + [("size", "ascending")]
                        + ([("path", "ascending")] if by_path else []))
    sizes = numbers_of(pc.fill_null(work.column("size"), int_scalar(0))).astype(np.int64)
    # files over the deleted-rows ratio so far: a bin holding one is rewritten even alone
    due_before = np.concatenate([[0], np.cumsum(numbers_of(pc.fill_null(work.column("due"), false_array(1)[0])))])
    # A partition starts where any key differs from the row before (null equals null, as in
    # the planner's tuple comparison).
    starts = np.zeros(len(sizes), dtype=bool)
    starts[0] = True
    for k in keys:
        starts[1:] |= _differs_from_previous(work.column(k))
    bounds = [*np.flatnonzero(starts).tolist(), len(sizes)]
    cumulative = np.cumsum(sizes)
    inputs = outputs = 0
    for a, b in zip(bounds, bounds[1:]):
        i = a
        while i < b:
            before = int(cumulative[i - 1]) if i else 0
            j = max(i + 1, i + int(np.searchsorted(cumulative[i:b], before + target, side="right")))
            if j - i > 1 or due_before[j] > due_before[i]:
                inputs += j - i
                outputs += 1
            i = j  # a file over the target (due) still makes a bin of its own
    return CompactionEstimate(target, minimum, inputs, outputs)


def _differs_from_previous(column: pa.ChunkedArray) -> np.ndarray:
    """For rows 1.., whether the value differs from the row before (null equals null, as in
    the planner's tuple comparison)."""
    flat = column.combine_chunks()
    after, before = flat.slice(1), flat.slice(0, max(0, len(flat) - 1))
    differs = pc.or_(pc.fill_null(pc.not_equal(after, before), false_array(1)[0]),
                     pc.xor(pc.is_null(after), pc.is_null(before)))
    return numbers_of(differs)
