"""Clustering quality on chosen columns, from min/max statistics only (PROTOCOL.md "Per-file
Statistics"; the Z-order / liquid clustering effect, measured without reading data).

Two figures per column:
- the *skip ratio*: the mean share of live files a point query ``col = v`` skips, over probe
  values spread across the column's range (``delta_core.maintenance.skipping``);
- the *average overlap depth*: the mean, over files with both bounds, of how many files'
  ``[min, max]`` ranges intersect that file's range, itself included. 1.0 means disjoint ranges
  (perfectly clustered); N means every one of N files overlaps every other.

Files without statistics on a column take no part in its overlap depth (a reader reads them
anyway, which the skip ratio already counts). The clustering columns of a liquid-clustered table
come from its ``delta.clustering`` domain (physical names, mapped back to logical ones).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.skipping import probe_values, skipped_file_ratio
from delta_core.model.schema import to_logical_path
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

CLUSTERING_DOMAIN = "delta.clustering"


def clustering_columns(snapshot: Snapshot) -> tuple[str, ...]:
    """Logical dotted names of the table's liquid clustering columns; () when it has none.

    The domain's configuration is ``{"clusteringColumns": [["physical", "path"], ...]}``.
    """
    domain = snapshot.domain_metadata.get(CLUSTERING_DOMAIN)
    if domain is None or domain.removed:
        return ()
    try:
        paths = json.loads(domain.configuration).get("clusteringColumns") or []
    except (ValueError, AttributeError):
        return ()  # unreadable: health reports no clustering rather than failing the read
    out = []
    for path in paths:
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            continue
        try:
            logical = to_logical_path(snapshot.schema, path) if snapshot.column_mapping_mode != "none" else path
        except KeyError:
            continue  # a column since dropped: nothing to measure
        out.append(".".join(logical))
    return tuple(out)


def _comparable(column: pa.ChunkedArray) -> np.ndarray:
    """Bounds as a NumPy array that sorts like the values (temporal types as integers)."""
    t = column.type
    if pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t):
        column = column.cast(pa.int64()) if not pa.types.is_date32(t) else column.cast(pa.int32())
    elif pa.types.is_decimal(t):
        column = column.cast(pa.float64())
    return np.asarray(column.to_numpy(zero_copy_only=False))


def overlap_depth(lo: pa.ChunkedArray, hi: pa.ChunkedArray) -> float | None:
    """Average overlap depth of the ranges ``[lo[i], hi[i]]`` (rows with a null bound skipped)."""
    both = pc.and_(pc.is_valid(lo), pc.is_valid(hi))
    lo, hi = lo.filter(both), hi.filter(both)
    n = len(lo)
    if n == 0:
        return None
    mins, maxs = _comparable(lo), _comparable(hi)
    sorted_min, sorted_max = np.sort(mins), np.sort(maxs)
    # Files j that miss file i: max_j < min_i, or min_j > max_i (never both for a valid range).
    ends_before = np.searchsorted(sorted_max, mins, side="left")
    starts_after = n - np.searchsorted(sorted_min, maxs, side="right")
    depth = n - ends_before - starts_after
    return round(float(depth.mean()), 4)


def column_quality(snapshot: Snapshot, columns: Sequence[str]) -> tuple[float | None, float | None]:
    """``(skip_ratio, overlap_depth)`` over ``columns`` (each averaged over the columns with
    stats); ``(None, None)`` when none of them has min/max statistics."""
    if not columns:
        return None, None
    skip = skipped_file_ratio(snapshot, probe_values(snapshot, columns))
    stats = snapshot.file_stats()
    depths = []
    for col in columns:
        lo_name, hi_name = MIN_PREFIX + col, MAX_PREFIX + col
        if lo_name in stats.column_names and hi_name in stats.column_names:
            d = overlap_depth(stats.column(lo_name), stats.column(hi_name))
            if d is not None:
                depths.append(d)
    return skip, (round(sum(depths) / len(depths), 4) if depths else None)
