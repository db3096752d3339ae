"""What a compaction would do, counted without building its plan (file counts and bytes only).

The same selection and packing as the planner (``maintenance.compaction_plan.pack_candidates``
over ``maintenance.bin_packing.pack``, vectorised), stopping before the bins become ``Bin``
records; health only needs how many files (and bytes) go in and how many come out (and how many
partitions the files lie in, which bounds how well clustering within partitions can skip). Paths are sorted only
when the counts depend on them (a file over the deleted-rows ratio among the candidates), which
is most of the cost at millions of files. ``tests/health/test_compaction_estimate.py`` holds it
equal to the planner.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from delta_core.maintenance.bin_packing import partition_key_columns, partition_key_names
from delta_core.maintenance.compaction_plan import pack_candidates, resolve_sizes, table_target_size, zcube_files
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO
from delta_core.model.arrow_values import numbers_or_zero

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


@dataclass(frozen=True, slots=True)
class CompactionEstimate:
    target_size: int
    min_file_size: int
    input_files: int  # files the compaction would rewrite
    output_files: int  # files it would write instead (one per bin)
    input_bytes: int  # bytes of the files it would rewrite
    partitions: int  # distinct partition values among the live files (1 unpartitioned, 0 without files)


def estimate_compaction(
    snapshot: Snapshot, *, target_size: int | None = None, min_file_size: int | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO,
) -> CompactionEstimate:
    """The file counts of ``plan_compaction(snapshot, target_size=..., min_file_size=...,
    max_deleted_rows_ratio=...)``."""
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target_size(snapshot))
    files = snapshot.file_columns("path", "size", "partition_values", "deletion_vector", "num_records")
    names = partition_key_names(snapshot)
    keys = partition_key_columns(files, names)
    found = pack_candidates(files, keys, target_size=target, min_file_size=minimum,
                            max_deleted_rows_ratio=max_deleted_rows_ratio, exact=False,
                            zcubes=zcube_files(snapshot))
    packing = found.packing
    input_bytes = int(numbers_or_zero(found.files.column("size"))[packing.rows].sum()) if packing.num_files else 0
    return CompactionEstimate(target, minimum, packing.num_files, packing.num_bins, input_bytes, found.partitions)
