"""Analyze planning (pure): which live files ``ANALYZE TABLE ... COMPUTE DELTA STATISTICS`` reads,
and which of their columns.

PROTOCOL.md "Per-file Statistics": data skipping needs every file's ``numRecords`` and, for the
columns the table indexes (``delta.dataSkippingStatsColumns``, else the first
``delta.dataSkippingNumIndexedCols`` leaves), ``nullCount`` and ``minValues``/``maxValues``. Files
written without them (stats turned off, another writer, columns indexed after the file was
written) are what analyze is for: the plan selects the live files inside the partition predicate
whose stats do not cover those columns (``stats_coverage``), or with ``full`` every selected
file, as Delta Spark's ``StatisticsCollection.recompute`` does. The tasks read the top-level
columns holding the indexed leaves (at least one column: a file is read to count its rows).

A table whose selected files are all covered yields an empty plan: nothing is read or committed.
The plan keeps each chosen file's path and size only (coverage is judged a slice of the stats
at a time, a few slices at once: ``stats_coverage.snapshot_coverage``); ``batches()`` splits them
into commits so progress survives a failure on a large table: zero-copy slices, whose ``add``
actions the run reads from the snapshot only when it reaches each commit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.maintenance.compaction_plan import kept_rows
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.purge_plan import selection
from delta_core.maintenance.stats_coverage import (
    snapshot_coverage,
)
from delta_core.model.arrow_values import mask_array, numbers_of
from delta_core.write.data_writer import data_fields
from delta_core.write.operation_records import ComputeStatsParameters
from delta_core.write.void_columns import is_void

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

# An add with stats is about 1 KB of commit JSON: a commit per 100,000 files stays near 100 MB.
MAX_BATCH_FILES = 100_000


@dataclass(frozen=True, slots=True)
class AnalyzePlan:
    read_version: int
    predicate: str | None  # SQL of the partition predicate, None for the whole table
    full: bool
    columns: tuple[str, ...]  # the indexed leaf columns (logical dotted names) the new stats cover
    read_columns: tuple[str, ...]  # top-level logical columns the tasks read
    files: pa.Table  # ``path`` and ``size`` of the files to analyze, by path
    files_considered: int  # live files inside the predicate
    files_covered: int  # of those, the ones whose stats already cover ``columns``

    @property
    def num_files(self) -> int:
        return int(self.files.num_rows)

    @property
    def input_bytes(self) -> int:
        return int(pc.sum(self.files.column("size")).as_py() or 0) if self.num_files else 0

    @property
    def is_empty(self) -> bool:
        return self.num_files == 0

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES, *,
                max_files: int = MAX_BATCH_FILES) -> list[pa.Table]:
        """The files (slices of ``files``) in consecutive commits: a commit ends where the files
        so far reach a multiple of ``max_bytes`` (so it holds at most ``max_bytes`` plus its last
        file) or ``max_files`` files."""
        if max_bytes <= 0 or max_files <= 0:
            raise ConfigError(f"batch limits must be positive, got {max_bytes} bytes and {max_files} files")
        if self.is_empty:
            return []
        sizes = numbers_of(self.files.column("size").combine_chunks()).astype(np.int64)
        offsets = np.cumsum(sizes) - sizes  # bytes before each file
        by_bytes, by_count = offsets // max_bytes, np.arange(len(sizes)) // max_files
        ends = np.flatnonzero((np.diff(by_bytes) > 0) | (np.diff(by_count) > 0)) + 1
        bounds = [0, *ends.tolist(), len(sizes)]
        return [self.files.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:])]

    def operation_parameters(self) -> ComputeStatsParameters:
        return ComputeStatsParameters(predicate=self.predicate)


def plan_analyze(snapshot: Snapshot, *, where: str | None = None, full: bool = False) -> AnalyzePlan:
    """Plan the analyze of ``snapshot`` (module doc)."""
    files = snapshot.file_columns("path", "size")
    mask, predicate = selection(snapshot, where, files)
    selected = numbers_of(mask).astype(bool)
    with ThreadPoolExecutor(1, thread_name_prefix="analyze-sort") as pool:
        # full takes every selected file whatever its coverage: sorted while the stats parse
        every = pool.submit(_by_path, kept_rows(files, mask_array(selected))) if full else None
        coverage = snapshot_coverage(snapshot)
        covered = selected & numbers_of(coverage.covered).astype(bool)
        chosen = every.result() if every is not None \
            else _by_path(kept_rows(files, mask_array(selected & ~covered)))  # no copy of all
    return AnalyzePlan(
        read_version=snapshot.version,
        predicate=predicate,
        full=full,
        columns=tuple(c.name for c in coverage.columns),
        read_columns=_read_columns(snapshot, tuple(c.logical[0] for c in coverage.columns)),
        files=chosen,
        files_considered=int(selected.sum()),
        files_covered=int(covered.sum()),
    )


def _by_path(files: pa.Table) -> pa.Table:
    """``files`` in path order (the plan's order: its commits are consecutive slices)."""
    return files.take(pc.sort_indices(files.column("path"))) if files.num_rows else files


def _read_columns(snapshot: Snapshot, tops: tuple[str, ...]) -> tuple[str, ...]:
    """The distinct top-level columns of ``tops`` in schema order, or the first stored column
    when there are none (numRecords alone still needs the file's rows counted)."""
    if tops:
        return tuple(dict.fromkeys(tops))
    stored = [f.name for f in data_fields(snapshot.metadata) if not is_void(f.type)]
    return tuple(stored[:1])
