"""The options of each maintenance operation, as frozen records.

One record per entry of ``delta_core.maintenance.operations``: it is the entry's config type.
The Dagster code location builds them from ``tables.yaml`` (``resources/config_models.py``
converts into these), puts the values given at launch in, and passes the fields to the
operation; the fields carry the operation's own keyword names. ``None`` means "use the table's own property" (``delta.targetFileSize``,
``delta.deletedFileRetentionDuration``; PROTOCOL.md "Table Properties" lists neither, they are
Delta Spark's, which we follow).
"""

from __future__ import annotations

from dataclasses import dataclass

ZORDER_CURVES = ("zorder", "hilbert")  # here, not in ``curves`` (numpy), so the CLI loads light
# Delta Spark's spark.databricks.delta.optimize.maxDeletedRowsRatio (``compaction_plan``)
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05


@dataclass(frozen=True, slots=True)
class CompactOptions:
    """``compact``: bin-pack small files (``delta_core.maintenance.spark.compaction.compact``)."""

    target_size: int | None = None  # bytes; None: delta.targetFileSize, else 128 MiB
    where: str | None = None  # partition predicate
    min_file_size: int | None = None  # bytes; None: 3/4 of the target
    # files whose deletion vectors delete more than this share of their rows are rewritten too
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO


@dataclass(frozen=True, slots=True)
class ZOrderOptions:
    """``zorder``: cluster files along a space-filling curve (``...spark.zorder.zorder``)."""

    columns: tuple[str, ...] = ()
    curve: str = "zorder"  # one of ZORDER_CURVES
    where: str | None = None
    target_size: int | None = None


@dataclass(frozen=True, slots=True)
class VacuumOptions:
    """``vacuum``: delete unreferenced files older than the retention (``...spark.vacuum.vacuum``)."""

    retention_hours: float | None = None  # None: delta.deletedFileRetentionDuration
    dry_run: bool = False
    force: bool = False  # allow a retention shorter than the table's
    mode: str = "full"  # "lite": delete what the log removed since the last vacuum, list nothing
    inventory: str | None = None  # plan from this storage inventory instead of listing (vacuum_inventory)


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    """``checkpoint``: write a checkpoint at the latest version (``write.checkpoint_write``)."""

    cleanup_log: bool = False  # then run ``cleanup_log`` too, as Delta Spark does after a checkpoint
    sidecar_threshold: int | None = None  # v2Checkpoint tables: file actions above which sidecars are written


@dataclass(frozen=True, slots=True)
class CleanupLogOptions:
    """``cleanup_log``: delete expired log files (``delta_core.write.log_cleanup.cleanup_log``)."""

    dry_run: bool = False
    ignore_log_cleanup_disabled: bool = False  # only on a person's explicit request


@dataclass(frozen=True, slots=True)
class ManifestOptions:
    """``manifest``: write symlink manifests (``delta_core.maintenance.manifest``)."""

    incremental: bool = False


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """``cluster``: liquid clustering (``...spark.cluster.cluster``); ``columns``, when given and
    different from the table's, are set first (``cluster_by``)."""

    columns: tuple[str, ...] = ()  # () : keep the table's clustering columns
    full: bool = False  # recluster every file (OPTIMIZE FULL)
    target_size: int | None = None


@dataclass(frozen=True, slots=True)
class CompactLogOptions:
    """``compact_log``: write a log compaction file (``delta_core.write.log_compaction.compact_log``)."""

    start_version: int | None = None  # None: right after the newest checkpoint
    end_version: int | None = None  # None: the latest version
    min_commits: int = 2  # write nothing when the range holds fewer commits


@dataclass(frozen=True, slots=True)
class PurgeOptions:
    """``purge``: rewrite files with deletion vectors or dropped columns (``...spark.purge.purge``)."""

    where: str | None = None  # partition predicate
    # Rewrite a file with a deletion vector only when more than this share of its rows is deleted;
    # 0.0 (Delta Spark's REORG ... APPLY (PURGE)): every file with at least one deleted row.
    max_deleted_rows_ratio: float = 0.0


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """``analyze``: ANALYZE TABLE ... COMPUTE DELTA STATISTICS (``...spark.analyze.analyze``):
    recompute the stats of live files whose stats do not cover the table's stats columns."""

    where: str | None = None  # partition predicate
    # Recompute every selected file's stats, covered or not, as Delta Spark's recompute does
    # (e.g. to tighten wide bounds left by deletion vectors).
    full: bool = False
