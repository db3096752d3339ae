"""Running a registry operation from its options record (``Operation.run``).

One function per operation, each taking the table, the operation's options record and a Spark
factory (called only when the operation has work that needs Spark), and returning the record the
operation reports (``report.Report``). Each registry entry holds its function; the command line
and the Dagster assets call it through the entry, so a command is its options record and nothing
else. Every import is deferred: the registry is loaded to build the command line, which must not
load pyarrow or Spark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, cast

from delta_core.errors import ConfigError
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import (
    AnalyzeOptions,
    CheckpointOptions,
    CleanupLogOptions,
    ClusterOptions,
    CompactLogOptions,
    CompactOptions,
    DropFeatureOptions,
    ManifestOptions,
    PurgeOptions,
    RestoreOptions,
    RewriteBounds,
    VacuumOptions,
    ZOrderOptions,
)
from delta_core.maintenance.report import Report

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable
    from delta_core.write.checkpoint_write import CheckpointResult
    from delta_core.write.log_cleanup import LogCleanupResult

SparkFactory = Callable[[], Any]


def _needs(spark: SparkFactory | None) -> SparkFactory:
    """The Spark factory of an operation that rewrites data on Spark (callers always pass one)."""
    if spark is None:
        raise TypeError("this operation rewrites data on Spark: pass a factory of a SparkSession")
    return spark


def _own(options: RewriteBounds) -> dict[str, Any]:
    """A rewrite's options without the ``RewriteBounds`` fields, which it takes as ``bounds=options``."""
    shared = {f.name for f in fields(RewriteBounds)}
    return {k: v for k, v in asdict(options).items() if k not in shared}


def run_compact(table: DeltaTable, options: CompactOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.compaction import compact

    return compact(table, _needs(spark), **_own(options), bounds=options)


def run_zorder(table: DeltaTable, options: ZOrderOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.zorder import zorder

    if not options.columns:
        raise ConfigError("zorder needs columns: give --columns a,b, or zorder.columns in the table's policy",
                          path=table.uri)
    return zorder(table, _needs(spark), list(options.columns), curve=options.curve, where=options.where,
                  target_size=options.target_size, dry_run=options.dry_run, bounds=options)


def run_cluster(table: DeltaTable, options: ClusterOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.cluster import cluster

    return cluster(table, _needs(spark), columns=list(options.columns) or None, full=options.full,
                   target_size=options.target_size, dry_run=options.dry_run, bounds=options)


def run_purge(table: DeltaTable, options: PurgeOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.purge import purge

    return purge(table, _needs(spark), **_own(options), bounds=options)


def run_vacuum(table: DeltaTable, options: VacuumOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.vacuum import vacuum

    return vacuum(table, retention_hours=options.retention_hours, dry_run=options.dry_run, force=options.force,
                  spark=spark if options.delete_on_spark else None,
                  mode=cast(Literal["full", "lite"], options.mode),  # vacuum refuses any other mode
                  inventory=options.inventory,
                  inventory_storage_options=table.storage.storage_options)  # read as the table is


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointRun:
    """A checkpoint (None: not due, ``skipped_reason`` says why), and the log cleanup after it
    when asked for; ``previous`` is the newest checkpoint before the run."""

    checkpoint: CheckpointResult | None
    previous: int | None
    duration_seconds: float
    cleanup: LogCleanupResult | None = None
    skipped_reason: str | None = None

    @property
    def version(self) -> int | None:
        return None  # a checkpoint is not a commit

    @property
    def num_added_files(self) -> int:
        return 0 if self.checkpoint is None else 1 + self.checkpoint.sidecars

    @property
    def added_bytes(self) -> int:
        return 0 if self.checkpoint is None else self.checkpoint.size_in_bytes

    @property
    def num_removed_files(self) -> int:
        return 0 if self.cleanup is None else self.cleanup.num_removed_files

    @property
    def removed_bytes(self) -> int:
        return 0 if self.cleanup is None else self.cleanup.removed_bytes

    def outcome(self) -> str:
        if self.checkpoint is None:
            return f"no checkpoint written: {self.skipped_reason}"
        c = self.checkpoint
        return (f"checkpoint written at version {c.version} ({c.size} actions"
                + (f", {c.sidecars} sidecar(s)" if c.sidecars else "") + ")")

    def details(self) -> list[str]:
        lines = ["previous checkpoint: " + ("none" if self.previous is None else f"version {self.previous}")]
        if self.cleanup is not None:
            lines.append(f"log cleanup: {self.cleanup.outcome()}")
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The checkpoint's own fields (``checkpoint_version``: the version it checkpoints, as
        ``version`` names a commit everywhere else), why none was written, the log cleanup's."""
        written = self.checkpoint.to_dict() if self.checkpoint is not None else {}
        out: dict[str, Any] = {"checkpoint_written": self.checkpoint is not None,
                               "checkpoint_version": written.pop("version", None),
                               "checkpoint_version_before": self.previous,
                               "checkpoint_skipped_reason": self.skipped_reason, **written,
                               "duration_seconds": self.duration_seconds}
        if self.cleanup is not None:
            out["cleanup_log"] = self.cleanup.to_dict()
        return out


def run_checkpoint(table: DeltaTable, options: CheckpointOptions, spark: SparkFactory | None) -> Report:
    from delta_core.write.checkpoint_write import write_checkpoint
    from delta_core.write.log_cleanup import cleanup_log

    watch = Stopwatch()
    previous = table.last_checkpoint_version()
    skipped = None if options.version is not None or options.force else _not_due(table, previous, options.interval)
    result = None
    if skipped is None:
        # Sidecars of a large v2Checkpoint table are written by Spark tasks when a session is
        # offered (it starts only then), else in this process.
        sidecar_writer = None
        if spark is not None:
            from delta_core.maintenance.spark.checkpoint_sidecars import spark_sidecar_writer

            sidecar_writer = spark_sidecar_writer(spark)
        result = write_checkpoint(table, version=options.version, sidecar_threshold=options.sidecar_threshold,
                                  sidecar_writer=sidecar_writer)
    cleanup = cleanup_log(table) if options.cleanup_log else None
    return CheckpointRun(checkpoint=result, previous=previous, cleanup=cleanup, skipped_reason=skipped,
                         duration_seconds=watch.seconds())


def _not_due(table: DeltaTable, previous: int | None, interval: int | None) -> str | None:
    """Why no checkpoint is due (PROTOCOL.md "Checkpoints": every ``delta.checkpointInterval``
    commits, or ``interval``), None when one is; checked after the write gate, so a refused table
    says so."""
    from delta_core.model.table_features import check_write_supported
    from delta_core.model.table_properties import TableProperties
    from delta_core.write.checkpoint_cadence import checkpoint_due, versions_since_checkpoint

    protocol, metadata = table.protocol_and_metadata()
    check_write_supported(protocol, metadata, path=table.uri)
    since = versions_since_checkpoint(table.latest_version(), previous)
    every = interval or TableProperties(metadata.configuration).checkpoint_interval
    if checkpoint_due(since, every):
        return None
    return (f"{since} commit(s) since the last checkpoint, fewer than the interval {every}"
            f"{'' if interval else ' (delta.checkpointInterval)'}; run with force to write one anyway")


def run_cleanup_log(table: DeltaTable, options: CleanupLogOptions, spark: SparkFactory | None) -> Report:
    from delta_core.write.log_cleanup import cleanup_log

    return cleanup_log(table, **asdict(options))


def run_manifest(table: DeltaTable, options: ManifestOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.manifest import generate_manifests

    return generate_manifests(table, **asdict(options))


def run_compact_log(table: DeltaTable, options: CompactLogOptions, spark: SparkFactory | None) -> Report:
    from delta_core.write.log_compaction import compact_log

    return compact_log(table, **asdict(options))


def run_restore(table: DeltaTable, options: RestoreOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.restore import restore

    return restore(table, version=options.version, timestamp=options.timestamp)


def run_analyze(table: DeltaTable, options: AnalyzeOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.spark.analyze import analyze

    return analyze(table, _needs(spark), **asdict(options))


def run_drop_feature(table: DeltaTable, options: DropFeatureOptions, spark: SparkFactory | None) -> Report:
    from delta_core.maintenance.drop_feature import drop_feature

    if not options.feature:
        raise ConfigError("drop_feature needs the feature to drop: give it after the table (drop-feature TABLE "
                          "deletionVectors), or as `feature` in the run config", path=table.uri)
    return drop_feature(table, options.feature, truncate_history=options.truncate_history, spark=spark)
