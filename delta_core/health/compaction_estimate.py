"""What a compaction would do, counted without building its plan (file counts and bytes only).

The same selection and packing as the planner (``maintenance.compaction_plan.pack_candidates``
over ``maintenance.bin_packing.pack`` and ``keep_bins``, vectorised), stopping before the bins
become ``Bin`` records; health only needs how many files (and bytes) go in and how many come out,
how many of each are small (under the minimum file size: a bin whose files sum below it writes a
file that is still small), and how many partitions the files lie in, which bounds how well
clustering within partitions can skip. Paths are sorted only when the counts depend on them (a
file over the deleted-rows ratio among the candidates), which is most of the cost at millions of
files. ``tests/health/test_compaction_estimate.py`` holds it equal to the planner. Estimates are
kept per table version (``version_cache``), so a version's checks, advice and ticks pack once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from delta_core.health.version_cache import VersionCache, snapshot_key
from delta_core.maintenance.bin_packing import partition_key_columns, partition_key_names
from delta_core.maintenance.compaction_plan import pack_candidates, resolve_sizes, table_target_size, zcube_files
from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO, DEFAULT_MIN_INPUT_FILES

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
    small_inputs: int = 0  # of the input files, those under ``min_file_size``
    small_outputs: int = 0  # of the output files, those still under it (their bin's bytes are)

    @property
    def small_files_removed(self) -> int:
        """How many fewer small files the table has after the run."""
        return self.small_inputs - self.small_outputs


_cache: VersionCache[CompactionEstimate] = VersionCache()


def estimate_compaction(
    snapshot: Snapshot, *, target_size: int | None = None, min_file_size: int | None = None,
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO, min_input_files: int = DEFAULT_MIN_INPUT_FILES,
) -> CompactionEstimate:
    """The file counts of ``plan_compaction(snapshot, target_size=..., min_file_size=...,
    max_deleted_rows_ratio=..., min_input_files=...)``, once per table version."""
    key = snapshot_key(snapshot, target_size, min_file_size, max_deleted_rows_ratio, min_input_files)
    return _cache.get(key, lambda: _estimate(snapshot, target_size, min_file_size, max_deleted_rows_ratio,
                                             min_input_files))


def _estimate(snapshot: Snapshot, target_size: int | None, min_file_size: int | None,
              max_deleted_rows_ratio: float, min_input_files: int) -> CompactionEstimate:
    target, minimum = resolve_sizes(target_size, min_file_size, table_target=table_target_size(snapshot))
    files = snapshot.file_columns("path", "size", "partition_values", "deletion_vector", "num_records")
    names = partition_key_names(snapshot)
    keys = partition_key_columns(files, names)
    found = pack_candidates(files, keys, target_size=target, min_file_size=minimum,
                            max_deleted_rows_ratio=max_deleted_rows_ratio, min_input_files=min_input_files,
                            exact=False, zcubes=zcube_files(snapshot))
    packing = found.packing
    if not packing.num_files:
        return CompactionEstimate(target, minimum, 0, 0, 0, found.partitions)
    rewritten = found.sizes[packing.rows]
    outputs = np.add.reduceat(rewritten, packing.bounds[:-1])  # ``packing.bin_totals``, the sizes taken once
    return CompactionEstimate(target, minimum, packing.num_files, packing.num_bins, int(rewritten.sum()),
                              found.partitions, small_inputs=int((rewritten < minimum).sum()),
                              small_outputs=int((outputs < minimum).sum()))
