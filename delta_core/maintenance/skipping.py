"""How well min/max statistics let point queries skip files (the z-order effect, measured).

PROTOCOL.md "Per-file Statistics": a file must be read for ``col = v`` unless its
``[minValues, maxValues]`` excludes ``v``; a file without statistics is always read. Probe
values are spread evenly between the column's smallest minimum and largest maximum (numeric
columns) or over its distinct file minimums (others). Pure and columnar: only the bounds of the
probed columns are parsed from the snapshot's statistics (``column_bounds``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.column_bounds import column_bounds
from delta_core.model.arrow_values import float_array, int_array, numbers_of
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

DEFAULT_PROBES = 32


def probe_values(snapshot: Snapshot, columns: Sequence[str], *, probes: int = DEFAULT_PROBES,
                 bounds: pa.Table | None = None) -> dict[str, pa.Array]:
    """Up to ``probes`` evenly spread values per column (columns without stats are left out);
    ``bounds``: ``column_bounds`` of ``columns``, when the caller has them already."""
    stats = column_bounds(snapshot, [(c,) for c in columns]) if bounds is None else bounds
    out: dict[str, pa.Array] = {}
    for col in columns:
        name = MIN_PREFIX + col
        if name not in stats.column_names:
            continue
        lo = stats.column(name)
        hi_name = MAX_PREFIX + col
        if (pa.types.is_integer(lo.type) or pa.types.is_floating(lo.type)) and hi_name in stats.column_names:
            first, last = pc.min(lo).as_py(), pc.max(stats.column(hi_name)).as_py()
            if first is None or last is None:
                continue
            step = (last - first) / probes
            values = [first + step * (i + 0.5) for i in range(probes)]
            out[col] = float_array(values).cast(lo.type, safe=False)  # no pa.array: its pandas probe costs seconds
            continue
        distinct = pc.unique(lo.drop_null()).sort() if stats.num_rows else pa.array([])
        if len(distinct) == 0:
            continue
        step = max(1, len(distinct) // probes)
        out[col] = distinct.take(int_array(range(0, len(distinct), step)))
    return out


def skipped_shares(snapshot: Snapshot, probes: Mapping[str, pa.Array], *,
                   bounds: pa.Table | None = None) -> dict[str, list[float]]:
    """Per column with min/max stats, the share of live files that ``col = v`` skips, per probe
    ``v`` (``bounds``: as ``probe_values`` takes them)."""
    stats = column_bounds(snapshot, [(c,) for c in probes]) if bounds is None else bounds
    n = stats.num_rows
    out: dict[str, list[float]] = {}
    for col, values in probes.items():
        lo_name, hi_name = MIN_PREFIX + col, MAX_PREFIX + col
        if n == 0 or lo_name not in stats.column_names or hi_name not in stats.column_names:
            continue
        lo, hi = stats.column(lo_name), stats.column(hi_name)
        skipped = _skipped_counts(lo, hi, values)
        if skipped is not None:
            out[col] = [s / n for s in skipped]
            continue
        shares = out[col] = []
        for value in values:
            v = value.cast(lo.type) if value.type != lo.type else value
            must_read = pc.fill_null(pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v)), True)
            read = pc.sum(pc.cast(must_read, pa.int64())).as_py() or 0
            shares.append(1.0 - read / n)
    return out


def _skipped_counts(lo: pa.ChunkedArray, hi: pa.ChunkedArray, values: pa.Array) -> list[int] | None:
    """The files ``col = v`` skips for each of ``values``: those whose minimum is above ``v``
    plus those whose maximum is below it, counted from each bound's place among the sorted probes
    (a binary search in a few dozen values per file, no sort of the files' bounds). None (count
    file by file) unless the bounds are numbers, none NaN and each file's minimum at most its
    maximum: then the two sets are disjoint."""
    if lo.type != hi.type or not (pa.types.is_integer(lo.type) or pa.types.is_floating(lo.type)):
        return None
    valid = pc.and_(pc.is_valid(lo), pc.is_valid(hi))
    lows, highs = numbers_of(lo.filter(valid)), numbers_of(hi.filter(valid))
    if pa.types.is_floating(lo.type) and (np.isnan(lows).any() or np.isnan(highs).any()):
        return None
    if not (lows <= highs).all():
        return None
    probes = numbers_of(values.cast(lo.type) if values.type != lo.type else values)
    order = np.argsort(probes, kind="stable")
    ranked = probes[order]
    slots = len(probes) + 1
    # a minimum above the j-th smallest probe has more than j probes below it; a maximum below
    # it has at most j probes at or below it
    below_min = np.bincount(np.searchsorted(ranked, lows, side="left"), minlength=slots)
    up_to_max = np.bincount(np.searchsorted(ranked, highs, side="right"), minlength=slots)
    skipped = len(lows) - np.cumsum(below_min)[:-1] + np.cumsum(up_to_max)[:-1]
    counts = np.empty(len(probes), dtype=np.int64)
    counts[order] = skipped
    result: list[int] = counts.tolist()
    return result


def skipped_file_ratio(snapshot: Snapshot, probes: Mapping[str, pa.Array], *,
                       bounds: pa.Table | None = None) -> float | None:
    """Mean share of live files a point query on a probe value skips (over probes and columns,
    rounded to 4 places); None without stats (``bounds``: as ``probe_values`` takes them)."""
    shares = [s for per_column in skipped_shares(snapshot, probes, bounds=bounds).values() for s in per_column]
    return round(sum(shares) / len(shares), 4) if shares else None
