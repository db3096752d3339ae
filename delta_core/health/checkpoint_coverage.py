"""Stats coverage of a snapshot's files (``maintenance.stats_coverage``; PROTOCOL.md "Per-file
Statistics", "Checkpoints") reusing what an earlier evaluation found for the rows of the same
checkpoint, kept in the health cache (``cache.CheckpointCoverage``).

A live file read from a checkpoint keeps its checkpoint row (stats and deletion vector) until a
commit removes it, and a later version keeps a subset of those rows, so a row's coverage,
once computed, holds for every version after that checkpoint. The stats of the files the
commits since added are parsed as before. Rows never judged (an older version kept more of them)
make the evaluation compute every file's coverage again and add them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from delta_core.health.cache import CheckpointCoverage, CheckpointKey, HealthCache
from delta_core.maintenance.stats_coverage import StatsCoverage, required_stats_columns, snapshot_coverage
from delta_core.model.arrow_values import numbers_of

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


def cached_coverage(snapshot: Snapshot, cache: HealthCache | None) -> StatsCoverage:
    """``snapshot_coverage(snapshot)``, the checkpoint rows' part from ``cache`` when it holds
    all of them (and stored there when it does not)."""
    rows = snapshot.checkpoint_rows() if cache is not None else None
    if cache is None or rows is None or not len(rows):
        return snapshot_coverage(snapshot)
    columns = required_stats_columns(snapshot.metadata)
    key = CheckpointKey.of(snapshot.storage.root, snapshot.log_segment, columns)
    ordinals = numbers_of(rows).astype(np.int64)
    found = cache.load_coverage(key)
    if found is not None and len(found.known) > int(ordinals.max()) and bool(found.known[ordinals].all()):
        after = snapshot_coverage(snapshot, after_checkpoint=True)
        head = pa.array(found.covered[ordinals], pa.bool_())
        return StatsCoverage(columns, pa.chunked_array([head, *after.covered.chunks], pa.bool_()))
    whole = snapshot_coverage(snapshot)
    size = max(int(ordinals.max()) + 1, len(found.known) if found is not None else 0)
    known, covered = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    if found is not None:
        known[:len(found.known)], covered[:len(found.covered)] = found.known, found.covered
    known[ordinals] = True
    covered[ordinals] = numbers_of(whole.covered.slice(0, len(ordinals)))
    cache.store_coverage(key, CheckpointCoverage(known, covered))
    return whole
