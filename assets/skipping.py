"""How well min/max statistics let point queries skip files (the z-order effect, measured).

For each clustering column, probe values are spread evenly between the column's smallest
minimum and largest maximum (numeric columns) or over its distinct file minimums (others); a file must be read for ``col = v`` unless its ``[min, max]`` excludes ``v`` (a file
without statistics is always read). The ratio is the mean share of files skipped, over probes
and columns. Reads only the snapshot's file statistics, columnar.
"""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

DEFAULT_PROBES = 32


def probe_values(snapshot: Any, columns: Sequence[str], *, probes: int = DEFAULT_PROBES) -> dict[str, pa.Array]:
    """Evenly spaced distinct file minimums per column (columns without stats are left out)."""
    stats: pa.Table = snapshot.file_stats()
    out: dict[str, pa.Array] = {}
    for col in columns:
        name = f"min.{col}"
        if name not in stats.column_names:
            continue
        lo = stats.column(name)
        hi_name = f"max.{col}"
        if (pa.types.is_integer(lo.type) or pa.types.is_floating(lo.type)) and hi_name in stats.column_names:
            first, last = pc.min(lo).as_py(), pc.max(stats.column(hi_name)).as_py()
            if first is None or last is None:
                continue
            step = (last - first) / probes
            values = [first + step * (i + 0.5) for i in range(probes)]
            out[col] = pa.array(values, pa.float64()).cast(lo.type, safe=False)
            continue
        distinct = pc.unique(lo.drop_null()).sort() if stats.num_rows else pa.array([])
        if len(distinct) == 0:
            continue
        step = max(1, len(distinct) // probes)
        out[col] = distinct.take(pa.array(range(0, len(distinct), step)))
    return out


def skipped_file_ratio(snapshot: Any, probes: dict[str, pa.Array]) -> float | None:
    """Mean share of live files a point query on a probe value can skip; None without stats."""
    stats: pa.Table = snapshot.file_stats()
    n = stats.num_rows
    ratios: list[float] = []
    for col, values in probes.items():
        lo_name, hi_name = f"min.{col}", f"max.{col}"
        if n == 0 or lo_name not in stats.column_names or hi_name not in stats.column_names:
            continue
        lo, hi = stats.column(lo_name), stats.column(hi_name)
        for value in values:
            v = value.cast(lo.type) if value.type != lo.type else value
            must_read = pc.fill_null(pc.and_(pc.less_equal(lo, v), pc.greater_equal(hi, v)), True)
            read = pc.sum(pc.cast(must_read, pa.int64())).as_py() or 0
            ratios.append(1.0 - read / n)
    return round(sum(ratios) / len(ratios), 4) if ratios else None
