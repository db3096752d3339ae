"""What a compaction would do, counted without building its plan (the file counts only).

``maintenance.compaction_plan`` decides which files a compaction packs: per partition, the
files below ``min_file_size`` sorted by size, packed greedily into bins of at most
``target_size`` bytes, single-file bins dropped. Its planner builds one object per candidate
file, which takes ~20 s on a table of a million small files; health only needs how many files
go in and how many come out. This module applies the same rule to the same inputs
(``resolve_sizes``, ``partition_key_columns``, the physical partition keys) vectorised: a bin
starting at sorted file ``i`` holds every following file while the running total stays within
the target, which ``searchsorted`` over the cumulative sizes finds in one step per bin.
``tests/health/test_compaction_estimate.py`` holds it equal to the planner.

Files with deletion vectors are left out: rewriting them is purge's business (and the planner
of this version refuses them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.compaction_plan import partition_key_columns, resolve_sizes
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
) -> CompactionEstimate:
    """The file counts of ``plan_compaction(snapshot, target_size=..., min_file_size=...)``."""
    table_target = snapshot.properties.target_file_size if snapshot.properties.raw(TARGET_FILE_SIZE) is not None \
        else None
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target)
    files = snapshot.files
    candidates = pc.and_(pc.less(files.column("size"), pa.scalar(minimum, pa.int64())),
                         pc.is_null(files.column("deletion_vector")))
    schema = table_schema(snapshot.metadata)  # partitionValues are keyed by physical names
    key_names = [f.physical_name if (f := schema.get(c)) else c for c in snapshot.partition_columns]
    keys = {f"p{i}": k.filter(candidates) for i, k in enumerate(partition_key_columns(files, key_names))}
    work = pa.table({**keys, "size": files.column("size").filter(candidates)})
    if work.num_rows < 2:
        return CompactionEstimate(target, minimum, 0, 0)
    work = work.sort_by([(k, "ascending") for k in keys] + [("size", "ascending")])
    sizes = work.column("size").to_numpy().astype(np.int64)
    # A partition starts where any key differs from the row before (null equals null, as in
    # the planner's tuple comparison).
    starts = np.zeros(len(sizes), dtype=bool)
    starts[0] = True
    for k in keys:
        values = np.asarray(work.column(k).to_numpy(zero_copy_only=False), dtype=object)
        starts[1:] |= values[1:] != values[:-1]
    bounds = [*np.flatnonzero(starts).tolist(), len(sizes)]
    cumulative = np.cumsum(sizes)
    inputs = outputs = 0
    for a, b in zip(bounds, bounds[1:]):
        i = a
        while b - i > 1:
            before = int(cumulative[i - 1]) if i else 0
            j = i + int(np.searchsorted(cumulative[i:b], before + target, side="right"))
            if j - i > 1:
                inputs += j - i
                outputs += 1
            i = j  # j > i: a candidate is smaller than the target, so it fits its own bin
    return CompactionEstimate(target, minimum, inputs, outputs)
