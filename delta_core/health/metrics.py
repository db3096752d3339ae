"""What the log says about a table's upkeep (PROTOCOL.md "Add File and Remove File",
"Per-file Statistics", "Deletion Vectors", "Checkpoints").

Everything is computed from the snapshot's columnar file state: sizes, ``numRecords``, deletion
vector cardinalities, tombstones, the log segment's commit files (sizes from the listing that
built it), the compaction plan (``maintenance.compaction_plan``: what a compaction would
pick, counted by ``compaction_estimate``), the files an automated purge would pick (``purge_estimate``) and the stats each file logs (``maintenance.stats_coverage``:
whether they cover the columns the table indexes). No data file is read or listed. Two figures need more and are only computed when asked:
manifest staleness (one read of the manifest state file) and the log files a log cleanup would
delete (a listing of ``_delta_log`` from its start).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.health.compaction_estimate import estimate_compaction
from delta_core.health.overlap import column_quality
from delta_core.health.policy import HealthPolicy
from delta_core.health.purge_estimate import estimate_purge
from delta_core.maintenance.stats_coverage import StatsCoverage, snapshot_coverage
from delta_core.model.arrow_values import int_array, int_scalar, numbers_of, numbers_or_zero
from delta_core.write.checkpoint_cadence import versions_since_checkpoint

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.model.table_properties import TableProperties

# Size histogram edges as fractions of the target size: tiny, small, half-full, nearly full,
# on target, oversized. The compaction threshold (``min_file_size``) is reported beside it.
HISTOGRAM_FRACTIONS = (1 / 64, 1 / 16, 1 / 4, 3 / 4, 2)


@dataclass(frozen=True, slots=True)
class SizeBucket:
    """Files with ``lower <= size < upper`` (``upper`` None: no bound)."""

    lower: int
    upper: int | None
    files: int
    bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class HealthMetrics:
    """One snapshot's health figures. Ratios are shares in [0, 1]; None: not known/asked."""

    version: int
    num_files: int
    num_partitions: int  # distinct partition values among the live files (1 unpartitioned)
    total_bytes: int
    target_file_size: int
    min_file_size: int  # smaller files are "small" (compaction's threshold)
    size_histogram: tuple[SizeBucket, ...]
    small_files: int
    small_file_bytes: int
    small_file_ratio: float
    compactable_files: int  # files a compaction would rewrite (deletion-vector files aside)
    compaction_output_files: int  # the files it would write instead
    compactable_bytes: int  # the bytes of the files a compaction would rewrite
    num_records: int  # over files with numRecords; deletion vectors not subtracted
    deleted_rows: int  # sum of deletion vector cardinalities
    files_with_deletion_vectors: int
    deletion_vector_file_bytes: int  # bytes of the files with deletion vectors (what a purge rewrites at most)
    deleted_rows_ratio: float
    files_without_stats: int
    files_without_stats_ratio: float
    stats_columns: tuple[str, ...]  # the columns every file's stats should cover (the table's indexed leaves)
    stats_covered_files: int  # live files whose stats cover them (``maintenance.stats_coverage``)
    stats_coverage: float  # their share (1.0 without files)
    checkpoint_version: int | None
    checkpoint_interval: int
    versions_since_checkpoint: int
    log_bytes_since_checkpoint: int
    num_tombstones: int
    tombstone_bytes: int
    reclaimable_tombstones: int  # older than delta.deletedFileRetentionDuration
    reclaimable_bytes: int
    columns: tuple[str, ...]  # clustering / Z-order columns measured
    skip_ratio: float | None
    overlap_depth: float | None
    # what a clustering run's own plan predicts (``layout_estimate``; only under the floor)
    predicted_skip_ratio: float | None = None
    skip_unreachable: str | None = None  # why no run reaches the floor (None: one does, or not judged)
    last_optimize_version: int | None = None
    last_optimize_timestamp: int | None = None
    manifest_version: int | None = None  # version the manifests were generated for (if asked)
    manifest_versions_behind: int | None = None
    expired_log_files: int | None = None  # what a log cleanup would delete now (if asked)
    # of the files a compaction rewrites and writes (``compaction_estimate``), those under min_file_size
    compaction_small_inputs: int = 0
    compaction_small_outputs: int = 0
    # what an automated purge rewrites (``purge_estimate``: files over ``HealthPolicy.purge_file_ratio``)
    purgeable_files: int = 0
    purgeable_bytes: int = 0
    purgeable_deleted_rows: int = 0  # the deleted rows it drops

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> HealthMetrics:
        """The metrics ``to_dict`` gave; ``TypeError`` when ``obj`` is not such a dict (a field
        missing, unknown or of another type)."""
        fields = dict(obj)
        fields["size_histogram"] = tuple(SizeBucket(**b) for b in fields["size_histogram"])
        fields["stats_columns"] = tuple(fields["stats_columns"])
        fields["columns"] = tuple(fields["columns"])
        made = cls(**fields)
        for f in dataclasses.fields(cls):
            if not _of_type(getattr(made, f.name), str(f.type)):
                raise TypeError(f"{f.name} is not {f.type}: {getattr(made, f.name)!r}")
        for b in made.size_histogram:
            if not all(_of_type(getattr(b, f.name), str(f.type)) for f in dataclasses.fields(SizeBucket)):
                raise TypeError(f"size bucket {b!r} is not one")
        return made


def _of_type(value: Any, annotation: str) -> bool:
    """Whether ``value`` (read back from JSON) is of the record field type ``annotation``:
    ``int``, ``float``, ``str``, ``SizeBucket``, ``None``, unions of them, or a tuple of them."""
    if annotation.startswith("tuple["):
        item = annotation[len("tuple["):-len(", ...]")]
        return isinstance(value, tuple) and all(_of_type(v, item) for v in value)
    kinds = {"int": (int,), "float": (int, float), "str": (str,), "SizeBucket": (SizeBucket,)}
    return any(value is None if kind == "None" else isinstance(value, kinds.get(kind, ())) and not isinstance(value, bool)
               for kind in (a.strip() for a in annotation.split("|")))


@dataclass(frozen=True, slots=True)
class TombstoneCurve:
    """Tombstones by deletion time, so any clock reads what vacuum would reclaim without the
    tombstones themselves: ``timestamps`` are their distinct ``deletionTimestamp`` values (a
    missing one counts as 0), ascending; ``files``/``bytes`` count the tombstones at or before
    each (cumulative)."""

    timestamps: tuple[int, ...]
    files: tuple[int, ...]
    bytes: tuple[int, ...]

    @classmethod
    def of(cls, tombstones: pa.Table) -> TombstoneCurve:
        if not tombstones.num_rows:
            return cls((), (), ())
        zero = int_scalar(0)
        times = numbers_or_zero(pc.fill_null(tombstones.column("deletion_timestamp"), zero))
        sizes = numbers_or_zero(pc.fill_null(tombstones.column("size"), zero))
        distinct, which = np.unique(times, return_inverse=True)
        files = np.cumsum(np.bincount(which, minlength=len(distinct)))
        total = np.cumsum(np.bincount(which, weights=sizes, minlength=len(distinct)))
        return cls(tuple(int(t) for t in distinct), tuple(int(f) for f in files), tuple(int(b) for b in total))

    def expired(self, cutoff_ms: int) -> tuple[int, int]:
        """``(files, bytes)`` of the tombstones deleted before ``cutoff_ms``."""
        at = int(np.searchsorted(np.asarray(self.timestamps, dtype=np.int64), cutoff_ms, side="left"))
        return (self.files[at - 1], self.bytes[at - 1]) if at else (0, 0)


def size_histogram(sizes: np.ndarray, target: int) -> tuple[SizeBucket, ...]:
    """File counts and bytes per size bucket (edges: ``HISTOGRAM_FRACTIONS`` of ``target``)."""
    edges = [0] + [max(1, int(target * f)) for f in HISTOGRAM_FRACTIONS]
    which = np.searchsorted(np.asarray(edges[1:]), sizes, side="right")
    counts = np.bincount(which, minlength=len(edges))
    totals = np.bincount(which, weights=sizes, minlength=len(edges)) if len(sizes) else np.zeros(len(edges))
    uppers: list[int | None] = [*edges[1:], None]
    return tuple(SizeBucket(lower, upper, int(c), int(b))
                 for lower, upper, c, b in zip(edges, uppers, counts, totals))


def _sum(column: pa.ChunkedArray | pa.Array) -> int:
    return int(pc.sum(column).as_py() or 0)


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def expiry_cutoff(properties: TableProperties, now_ms: int) -> int:
    """Tombstones deleted before this time (ms) are past ``delta.deletedFileRetentionDuration``."""
    return int(now_ms - int(properties.deleted_file_retention.total_seconds() * 1000))


def compute_metrics(
    snapshot: Snapshot,
    *,
    policy: HealthPolicy,
    now_ms: int,
    columns: Sequence[str] = (),
    coverage: StatsCoverage | None = None,
) -> HealthMetrics:
    """The log-only metrics of ``snapshot``; ``now_ms`` decides which tombstones have expired.
    ``coverage``: the files' stats coverage when already known (else computed here)."""
    # Coverage first: its read of the stats counts the files' records too (num_records below).
    coverage = coverage if coverage is not None else snapshot_coverage(snapshot, count_records=True)
    files = snapshot.file_columns("size", "deletion_vector", "num_records")
    n = files.num_rows
    sizes = numbers_or_zero(files.column("size"))
    estimate = estimate_compaction(snapshot, target_size=policy.target_file_size, min_file_size=policy.min_file_size,
                                   min_input_files=policy.min_input_files)
    purge = estimate_purge(files, policy.purge_file_ratio)
    target, minimum = estimate.target_size, estimate.min_file_size
    small = sizes < minimum

    dv = files.column("deletion_vector")
    has_dv = pc.is_valid(dv)
    cardinality = pc.struct_field(dv, "cardinality") if n else int_array([])
    records = files.column("num_records")
    # Deleted rows only count against files whose row count is known (the ratio's denominator).
    known = pc.is_valid(records)
    zero = int_scalar(0)
    deleted = _sum(pc.if_else(known, pc.fill_null(cardinality, zero), zero)) if n else 0
    total_records = _sum(records)

    segment = snapshot.log_segment
    interval = snapshot.properties.checkpoint_interval if policy.checkpoint_interval is None \
        else policy.checkpoint_interval

    tombstones = snapshot.tombstones
    reclaimable, reclaimable_bytes = TombstoneCurve.of(tombstones).expired(expiry_cutoff(snapshot.properties, now_ms))

    skip, depth = column_quality(snapshot, columns)
    missing_stats = int(records.null_count)
    return HealthMetrics(
        version=snapshot.version,
        num_files=n,
        num_partitions=estimate.partitions,
        total_bytes=int(sizes.sum()),
        target_file_size=target,
        min_file_size=minimum,
        size_histogram=size_histogram(sizes, target),
        small_files=int(small.sum()),
        small_file_bytes=int(sizes[small].sum()),
        small_file_ratio=_ratio(int(small.sum()), n),
        compactable_files=estimate.input_files,
        compaction_output_files=estimate.output_files,
        compactable_bytes=estimate.input_bytes,
        num_records=total_records,
        deleted_rows=deleted,
        files_with_deletion_vectors=_sum(pc.cast(has_dv, pa.int64())) if n else 0,
        deletion_vector_file_bytes=int(sizes[numbers_of(has_dv)].sum()) if n else 0,
        deleted_rows_ratio=_ratio(deleted, total_records),
        files_without_stats=missing_stats,
        files_without_stats_ratio=_ratio(missing_stats, n),
        stats_columns=tuple(c.name for c in coverage.columns),
        stats_covered_files=coverage.num_covered,
        stats_coverage=coverage.ratio,
        checkpoint_version=segment.checkpoint_version,
        checkpoint_interval=interval,
        versions_since_checkpoint=versions_since_checkpoint(segment.version, segment.checkpoint_version),
        log_bytes_since_checkpoint=sum(c.size for c in segment.commit_files),
        num_tombstones=tombstones.num_rows,
        tombstone_bytes=_sum(tombstones.column("size")),
        reclaimable_tombstones=reclaimable,
        reclaimable_bytes=reclaimable_bytes,
        columns=tuple(columns),
        skip_ratio=skip,
        overlap_depth=depth,
        compaction_small_inputs=estimate.small_inputs,
        compaction_small_outputs=estimate.small_outputs,
        purgeable_files=purge.files,
        purgeable_bytes=purge.bytes,
        purgeable_deleted_rows=purge.deleted_rows,
    )
