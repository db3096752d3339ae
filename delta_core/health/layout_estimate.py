"""The skip ratio a Z-order or clustering run would leave, predicted from its own plan (pure but
for the log; no data file is read).

The run's plan, unbounded by ``max_bytes``/``max_files``, says which files stay and into how
many files each group is rewritten. A group of ``n`` output files clustered on ``k`` columns cuts
each column into about ``n ** (1/k)`` slabs, so a point query on a value inside the group's
range (its input files' min/max, PROTOCOL.md "Per-file Statistics") reads ``n ** (1 - 1/k)`` of
its files and one outside reads none; files the plan keeps are judged on their own statistics.
The probes are health's (``skipping.probe_values``), so the prediction and the measured ratio
compare like for like.

A run that rewrites nothing, or whose plan cannot be built, cannot reach the target: the
estimate says why (``skip_target``: so does one whose prediction neither reaches the floor nor
rises by ``MIN_SKIP_RISE``). Estimates are kept per table version (and columns) in this process, so a
version's checks, advice and automation ticks plan once; other processes read the prediction
from the health cache (``health.cache``: it is one of the version's metrics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError, CorruptLogError
from delta_core.health.version_cache import VersionCache, snapshot_key
from delta_core.maintenance.cluster_plan import plan_clustering
from delta_core.maintenance.skipping import probe_values
from delta_core.maintenance.zorder_plan import ZOrderPlan, plan_zorder
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

# The least rise of the skip ratio a run short of the floor must promise to be advised.
MIN_SKIP_RISE = 0.05


@dataclass(frozen=True, slots=True)
class LayoutEstimate:
    """The skip ratio the planned layout would give (None: not predicted) and, when the run
    would not change the layout, why (``unreachable``)."""

    skip_ratio: float | None
    files_rewritten: int
    unreachable: str | None = None


_cache: VersionCache[LayoutEstimate] = VersionCache()


def estimate_layout(snapshot: Snapshot, columns: Sequence[str], *, clustered: bool,
                    target_size: int | None = None) -> LayoutEstimate:
    """The estimate for ``snapshot`` clustered on ``columns`` (``clustered``: by the table's
    liquid clustering, else by Z-order into files of ``target_size``, None: the table's),
    computed once per table version."""
    key = snapshot_key(snapshot, tuple(columns), clustered, target_size)
    return _cache.get(key, lambda: _estimate(snapshot, columns, clustered=clustered, target_size=target_size))


def _estimate(snapshot: Snapshot, columns: Sequence[str], *, clustered: bool,
              target_size: int | None) -> LayoutEstimate:
    operation = "clustering" if clustered else "Z-order"
    try:
        plan = plan_clustering(snapshot).rewrite if clustered \
            else plan_zorder(snapshot, columns, target_size=target_size)
    except (ConfigError, CorruptLogError) as refused:
        return LayoutEstimate(None, 0, f"{operation} cannot run on this table: {refused}")
    if plan.is_empty:
        return LayoutEstimate(None, 0, f"{operation} would rewrite nothing: every file is already clustered on "
                                       f"{', '.join(plan.columns)} and unchanged since")
    return LayoutEstimate(predicted_skip_ratio(snapshot, plan), plan.num_input_files)


def predicted_skip_ratio(snapshot: Snapshot, plan: ZOrderPlan) -> float | None:
    """The mean share of files a point query skips after ``plan`` runs (the module docstring's
    model), over health's probes on the plan's columns; None without statistics."""
    stats = snapshot.file_stats()
    groups = [pc.is_in(stats.column("path"), value_set=pa.array(g.paths, pa.string())) for g in plan.partitions]
    rewritten = pc.is_in(stats.column("path"), value_set=pa.array([p for g in plan.partitions for p in g.paths],
                                                                   pa.string()))
    kept = pc.invert(rewritten)
    outputs = [plan.output_files([g]) for g in plan.partitions]
    total = int(pc.sum(pc.cast(kept, pa.int64())).as_py() or 0) + sum(outputs)
    k = len(plan.columns)
    shares: list[float] = []
    for col, values in probe_values(snapshot, plan.columns).items():
        lo_name, hi_name = MIN_PREFIX + col, MAX_PREFIX + col
        if lo_name not in stats.column_names or hi_name not in stats.column_names or total == 0:
            continue
        lo, hi = stats.column(lo_name), stats.column(hi_name)
        kept_lo, kept_hi = lo.filter(kept), hi.filter(kept)
        ranges = []
        for in_group, n in zip(groups, outputs):
            g_lo, g_hi = lo.filter(in_group), hi.filter(in_group)
            bounded = g_lo.null_count == 0 and g_hi.null_count == 0
            ranges.append((pc.min(g_lo) if bounded else None, pc.max(g_hi) if bounded else None, n))
        for value in values:
            v = value.cast(lo.type) if value.type != lo.type else value
            must = pc.fill_null(pc.and_(pc.less_equal(kept_lo, v), pc.greater_equal(kept_hi, v)), True)
            read = float(pc.sum(pc.cast(must, pa.int64())).as_py() or 0)
            for g_min, g_max, n in ranges:
                if g_min is None or g_max is None or (g_min.as_py() <= v.as_py() <= g_max.as_py()):
                    read += n ** (1.0 - 1.0 / k)
            shares.append(1.0 - min(read, total) / total)
    return round(sum(shares) / len(shares), 4) if shares else None


def skip_target(estimate: LayoutEstimate, skip_ratio: float, floor: float) -> str | None:
    """Why the run cannot bring ``skip_ratio`` up to ``floor`` or by ``MIN_SKIP_RISE`` (None: it can)."""
    if estimate.unreachable is not None:
        return estimate.unreachable
    predicted = estimate.skip_ratio
    if predicted is None:
        return "the clustering columns have no statistics to predict the layout from"
    if predicted >= floor and predicted > skip_ratio:
        return None
    if predicted - skip_ratio >= MIN_SKIP_RISE:
        return None
    return (f"the planned layout of this data would skip {predicted:.0%} (now {skip_ratio:.0%}, floor {floor:.0%}): "
            f"a rise under {MIN_SKIP_RISE:.0%}, too few files or partitions to skip more")
