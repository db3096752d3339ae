"""Stats coverage (``maintenance.stats_coverage``) and record counts of a snapshot's files
(PROTOCOL.md "Per-file Statistics", "Checkpoints"), reusing what an earlier evaluation found for
the rows of the same checkpoint, kept in the health cache (``cache.CheckpointCoverage``).

A live file read from a checkpoint keeps its checkpoint row (stats and deletion vector) until a
commit removes it, and a later version keeps a subset of those rows, so a row's coverage and
``numRecords``, once computed, hold for every version after that checkpoint. The stats of the
files the commits since added are parsed as before. Rows never judged (an older version kept
more of them) make the evaluation compute every file's coverage again and add them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.health.cache import CheckpointCoverage, CheckpointKey, HealthCache
from delta_core.maintenance.stats_coverage import StatsCoverage, required_stats_columns, snapshot_coverage
from delta_core.model.arrow_values import int_array_of, int_scalar, mask_array, numbers_of

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


def _key(snapshot: Snapshot) -> CheckpointKey:
    return CheckpointKey.of(snapshot.storage.root, snapshot.log_segment, required_stats_columns(snapshot.metadata))


def _ordinals(snapshot: Snapshot) -> np.ndarray | None:
    rows = snapshot.checkpoint_rows()
    return numbers_of(rows).astype(np.int64) if rows is not None and len(rows) else None


def reused_coverage(snapshot: Snapshot, cache: HealthCache | None) -> StatsCoverage | None:
    """The coverage of ``snapshot``'s files with the checkpoint rows' part from ``cache`` (whose
    record counts the snapshot then counts with); None when the cache does not hold every one
    of those rows."""
    ordinals = _ordinals(snapshot) if cache is not None else None
    if cache is None or ordinals is None:
        return None
    found = cache.load_coverage(_key(snapshot))
    if found is None or len(found.known) <= int(ordinals.max()) or not bool(found.known[ordinals].all()):
        return None
    if found.records is not None and found.counted is not None:
        counted = int_array_of(found.records)
        try:
            snapshot.reuse_checkpoint_num_records(pa.chunked_array(
                [pc.if_else(mask_array(found.counted), counted, pa.nulls(len(counted), pa.int64()))]))
        except ValueError:
            pass  # counts of another length: the snapshot reads its own
    after = snapshot_coverage(snapshot, after_checkpoint=True)
    head = mask_array(found.covered[ordinals])
    return StatsCoverage(after.columns, pa.chunked_array([head, *after.covered.chunks], pa.bool_()))


def keep_coverage(snapshot: Snapshot, cache: HealthCache | None, coverage: StatsCoverage) -> None:
    """Store the checkpoint rows' part of ``coverage`` (``snapshot``'s files' coverage) in
    ``cache``, merged with what it holds, with the rows' record counts when they were read."""
    ordinals = _ordinals(snapshot) if cache is not None else None
    if cache is None or ordinals is None:
        return
    key = _key(snapshot)
    found = cache.load_coverage(key)
    counted = snapshot.checkpoint_num_records()
    size = max(int(ordinals.max()) + 1, len(found.known) if found is not None else 0,
               len(counted) if counted is not None else 0)
    known, covered = np.zeros(size, dtype=bool), np.zeros(size, dtype=bool)
    if found is not None:
        known[:len(found.known)], covered[:len(found.covered)] = found.known, found.covered
    known[ordinals] = True
    covered[ordinals] = numbers_of(coverage.covered.slice(0, len(ordinals)))
    records = has_records = None
    if counted is not None and len(counted) == size:
        records = numbers_of(pc.fill_null(counted, int_scalar(0))).astype(np.int64)
        has_records = numbers_of(pc.is_valid(counted))
    elif found is not None and found.records is not None and len(found.records) == size:
        records, has_records = found.records, found.counted
    cache.store_coverage(key, CheckpointCoverage(known, covered, records, has_records))
