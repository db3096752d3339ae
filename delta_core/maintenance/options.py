"""The options of each maintenance operation, as frozen records whose fields describe themselves.

One record per entry of ``delta_core.maintenance.operations``: it is the entry's config type.
``delta_core.config`` reads them from ``tables.yaml``; the Dagster code location puts the values
given at launch in, and passes the fields to the
operation; the fields carry the operation's own keyword names. Each field is declared with
``option_fields.option``: its kind, help and bounds, from which the command line, the tables.yaml
readers and the Dagster configs are built (``option_fields``). ``None`` means "use the table's own property" (``delta.targetFileSize``,
``delta.deletedFileRetentionDuration``; PROTOCOL.md "Table Properties" lists neither, they are
Delta Spark's, which we follow).
"""

from __future__ import annotations

from dataclasses import dataclass

from delta_core.maintenance.droppable_features import truncate_history_help
from delta_core.maintenance.option_fields import Kind, option

ZORDER_CURVES = ("zorder", "hilbert")
# model.clustering.MAX_CLUSTERING_COLUMNS (Delta Spark's limit), which imports pyarrow: the command
# line loads this module light (tests/core_types/test_option_fields.py holds the two equal).
MAX_CLUSTERING_COLUMNS = 4  # here, not in ``curves`` (numpy), so the CLI loads light
# Delta Spark's spark.databricks.delta.optimize.maxDeletedRowsRatio (``compaction_plan``)
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05
# Iceberg's rewrite_data_files min-input-files: in a compaction automation starts, a bin of fewer
# files waits for more, unless they merge into a file that is no longer small (``compaction_plan``).
DEFAULT_MIN_INPUT_FILES = 5
# A compaction a person starts merges any two small files, as Delta's OPTIMIZE does.
EXPLICIT_MIN_INPUT_FILES = 2
# How a compaction chooses the bins it rewrites (``bin_packing.keep_bins``): every bin of small files,
# as OPTIMIZE (a run a person starts), or automation's waiting rules (a run automation starts).
BIN_PACK, AUTOMATED = "bin-pack", "automated"
SELECTIONS = (BIN_PACK, AUTOMATED)


# One commit per ~8 GiB of input by default: progress survives failures (``file_groups.batch_groups``).
DEFAULT_BATCH_BYTES = 8 * 1024**3
REWRITE_ORDERS = ("smallest", "benefit")
DEFAULT_MAX_BATCH_RETRIES = 2


@dataclass(frozen=True, slots=True)
class RewriteBounds:
    """What bounds one run of a rewrite (compact, zorder, cluster, purge), and how it orders and
    retries its work; the four rewrites' option records extend it, and the rewrite driver
    (``spark.driver``, with ``run_bounds``) applies it. A run leaves what does not fit to the next
    run and reports it (``RewriteMetrics.groups_left`` ...)."""

    batch_size: int | None = option(
        None, kind=Kind.SIZE,
        help="input bytes per commit: each batch of file groups commits on its own (default 8 GiB)")
    max_bytes: int | None = option(
        None, kind=Kind.SIZE,
        help="rewrite at most this many input bytes per run; the rest is left for the next run (the first "
             "file group always runs, however large)")
    max_files: int | None = option(
        None, kind=Kind.COUNT, minimum=1,
        help="rewrite at most this many input files per run; the rest is left for the next run (the first "
             "file group always runs, however large)")
    max_duration: float | None = option(
        None, kind=Kind.MINUTES,
        help="start no new batch after this many minutes (a number, or an interval like '2 hours'); the "
             "batch running then finishes")
    order: str = option(
        "smallest", kind=Kind.CHOICE, choices=REWRITE_ORDERS,
        help="which partitions go first: smallest (fewest input bytes) or benefit (most input files per byte "
             "rewritten, so the most files removed per byte)")
    max_batch_retries: int = option(
        DEFAULT_MAX_BATCH_RETRIES, kind=Kind.COUNT, minimum=0,
        help="a batch that loses to a concurrent commit is re-planned on the new table version (each group "
             "narrowed to its inputs still live) and retried this many times")
    quiet_minutes: float | None = option(
        None, kind=Kind.MINUTES,
        help="skip partitions (unpartitioned tables: files) written within this many minutes, as writers may "
             "still be busy there")


DEFAULT_BOUNDS = RewriteBounds()  # the bounds of a rewrite run given none (the four rewrites share it)


_WHERE = "partition predicate, e.g. \"date >= '2024-01-01' AND region = 'eu'\""
_TARGET = "target file size: bytes, 128MB or 64MiB (default delta.targetFileSize, else 128 MiB)"


@dataclass(frozen=True, slots=True)
class CompactOptions(RewriteBounds):
    """``compact``: bin-pack small files (``delta_core.maintenance.spark.compaction.compact``)."""

    target_size: int | None = option(None, kind=Kind.SIZE, help=_TARGET)
    where: str | None = option(None, kind=Kind.PREDICATE, help=_WHERE)
    min_file_size: int | None = option(None, kind=Kind.SIZE,
                                       help="only files smaller than this are packed (default 3/4 of the target)")
    max_deleted_rows_ratio: float = option(
        DEFAULT_MAX_DELETED_ROWS_RATIO, kind=Kind.RATIO,
        help="also rewrite files whose deletion vectors delete more than this share of their rows, even alone "
             "(as Delta Spark's OPTIMIZE)")
    min_input_files: int | None = option(
        None, kind=Kind.COUNT, minimum=2,
        help="merge small files only when at least this many go into one file (Iceberg's min-input-files; "
             "automated selection counts only fragments); fewer files are merged only into a file of at least "
             "the minimum size, or for their deleted rows; unset, a run started by hand merges any two (as "
             "OPTIMIZE) and one started by automation waits for the advisor policy's min_input_files (5)")
    selection: str | None = option(
        None, kind=Kind.CHOICE, choices=SELECTIONS, in_policy=False,
        help="which bins are rewritten: bin-pack (every bin of two small files or more, as OPTIMIZE) or "
             "automated (fragments first; a merged file waits until about as much new data has come); unset, "
             "a run started by hand bin-packs and one started by automation uses automated selection")
    full: bool = option(False, kind=Kind.FLAG, in_policy=False,
                        help="clustered tables: recluster every file, not only the unclustered ones (OPTIMIZE FULL)")
    dry_run: bool = option(False, kind=Kind.FLAG, in_policy=False,
                           help="plan only: report the batches, files and bytes a run would rewrite; start no Spark, "
                                "commit nothing")


@dataclass(frozen=True, slots=True)
class ZOrderOptions(RewriteBounds):
    """``zorder``: cluster files along a space-filling curve (``...spark.zorder.zorder``)."""

    columns: tuple[str, ...] = option((), kind=Kind.COLUMNS, required=True, help="the data columns to cluster on")
    curve: str = option("zorder", kind=Kind.CHOICE, choices=ZORDER_CURVES, help="the space-filling curve to sort along")
    where: str | None = option(None, kind=Kind.PREDICATE, help=_WHERE)
    target_size: int | None = option(None, kind=Kind.SIZE, help=_TARGET)
    dry_run: bool = option(False, kind=Kind.FLAG, in_policy=False,
                           help="plan only: report the batches, files and bytes a run would rewrite; start no Spark, "
                                "commit nothing")


@dataclass(frozen=True, slots=True)
class VacuumOptions:
    """``vacuum``: delete unreferenced files older than the retention (``...spark.vacuum.vacuum``)."""

    dry_run: bool = option(False, kind=Kind.FLAG, help="count and list what would be deleted, with its bytes; "
                                                       "delete nothing")
    force: bool = option(False, kind=Kind.FLAG, policy_key="allow_short_retention",
                         help="allow a retention shorter than the table's: files that readers of recent versions "
                              "or running writers still need may be deleted")
    retention_hours: float | None = option(
        None, kind=Kind.HOURS, minimum=0, floor="deleted_file_retention", floor_override="force",
        help="keep unreferenced files younger than this: hours or an interval like '7 days' "
             "(default delta.deletedFileRetentionDuration, 7 days)")
    mode: str = option("full", kind=Kind.CHOICE, choices=("full", "lite"), shortcuts=(("--lite", "lite"),),
                       help="full lists the table; lite deletes what the log removed since the last vacuum "
                            "without listing (Delta's VACUUM LITE)")
    inventory: str | None = option(
        None, kind=Kind.TEXT,
        help="plan from this storage inventory instead of listing (Delta's VACUUM ... USING INVENTORY): a Delta "
             "table or Parquet/CSV files with path, length, isDir, modificationTime, or an S3 Inventory report "
             "(its manifest.json or destination prefix), read with the table's storage options")
    delete_on_spark: bool = option(False, kind=Kind.FLAG, in_policy=False,
                                   help="list and delete as Spark tasks instead of threads")


@dataclass(frozen=True, slots=True)
class CheckpointOptions:
    """``checkpoint``: write a checkpoint at the latest version once one is due, as writers do
    every ``delta.checkpointInterval`` commits (``runs.run_checkpoint``, ``write.checkpoint_write``);
    ``force`` or a ``version`` writes one now."""

    version: int | None = option(None, kind=Kind.COUNT, minimum=0, in_policy=False,
                                 help="checkpoint this version now, due or not (default: the latest, once due)")
    force: bool = option(False, kind=Kind.FLAG, in_policy=False,
                         help="write a checkpoint even when fewer commits than the interval follow the last one")
    interval: int | None = option(
        None, kind=Kind.COUNT, minimum=1,
        help="a checkpoint is due once this many commits follow the last one (default delta.checkpointInterval)")
    cleanup_log: bool = option(False, kind=Kind.FLAG,
                               help="then delete expired log files too, as Delta Spark does after a checkpoint")
    sidecar_threshold: int | None = option(
        None, kind=Kind.COUNT, minimum=1,
        help="v2Checkpoint tables with more file actions than this get a UUID-named checkpoint with sidecars, "
             "written by Spark tasks (default 100000)")


@dataclass(frozen=True, slots=True)
class CleanupLogOptions:
    """``cleanup_log``: delete expired log files (``delta_core.write.log_cleanup.cleanup_log``)."""

    dry_run: bool = option(False, kind=Kind.FLAG, help="list what would be deleted; delete nothing")
    ignore_log_cleanup_disabled: bool = option(
        False, kind=Kind.FLAG, in_policy=False,
        help="delete even when the table's owner set delta.enableExpiredLogCleanup=false")


@dataclass(frozen=True, slots=True)
class ManifestOptions:
    """``manifest``: write symlink manifests (``delta_core.maintenance.manifest``)."""

    incremental: bool = option(False, kind=Kind.FLAG,
                               help="rewrite only the partitions changed since the last generated version")


@dataclass(frozen=True, slots=True)
class ClusterOptions(RewriteBounds):
    """``cluster``: liquid clustering (``...spark.cluster.cluster``); ``columns``, when given and
    different from the table's, are set first (``cluster_by``)."""

    columns: tuple[str, ...] = option((), kind=Kind.COLUMNS, maximum=MAX_CLUSTERING_COLUMNS,
                                      help="make these the clustering columns first (as cluster-by); "
                                           "default: the table's own")
    full: bool = option(False, kind=Kind.FLAG, help="recluster every file, not only new data (OPTIMIZE FULL)")
    target_size: int | None = option(None, kind=Kind.SIZE, help=_TARGET)
    dry_run: bool = option(False, kind=Kind.FLAG, in_policy=False,
                           help="plan only: report the batches, files and bytes a run would rewrite; start no Spark, "
                                "commit nothing")


@dataclass(frozen=True, slots=True)
class CompactLogOptions:
    """``compact_log``: write a log compaction file (``delta_core.write.log_compaction.compact_log``)."""

    start_version: int | None = option(None, kind=Kind.COUNT, minimum=0, flag="--from", in_policy=False,
                                       help="first commit to compact (default: right after the newest checkpoint)")
    end_version: int | None = option(None, kind=Kind.COUNT, minimum=0, flag="--to", in_policy=False,
                                     help="last commit to compact (default: the latest version)")
    min_commits: int = option(2, kind=Kind.COUNT, minimum=2,
                              help="write nothing when the range holds fewer commits")


@dataclass(frozen=True, slots=True)
class PurgeOptions(RewriteBounds):
    """``purge``: rewrite files with deletion vectors or dropped columns (``...spark.purge.purge``)."""

    where: str | None = option(None, kind=Kind.PREDICATE, help=_WHERE)
    max_deleted_rows_ratio: float | None = option(
        None, kind=Kind.RATIO,
        help="only rewrite files with more than this share of rows deleted; unset, a run started by hand "
             "rewrites every file with a deleted row (as REORG ... APPLY (PURGE)) and one started by automation "
             "(schedule, automation condition, advisor) those over the advisor's purge_deleted_rows_ratio")
    dry_run: bool = option(False, kind=Kind.FLAG, in_policy=False,
                           help="plan only: report the batches, files and bytes a run would rewrite; start no Spark, "
                                "commit nothing")


@dataclass(frozen=True, slots=True)
class RestoreOptions:
    """``restore``: bring the table back to an earlier version, as Delta's ``RESTORE TABLE ... TO
    VERSION AS OF`` / ``TIMESTAMP AS OF`` (``delta_core.maintenance.restore.restore``). Exactly one
    of the two is given; ``restore`` refuses neither or both with a ``ConfigError``. A one-off: no
    tables.yaml keys."""

    version: int | None = option(None, kind=Kind.COUNT, minimum=0, in_policy=False,
                                 help="the version to restore (RESTORE TABLE ... TO VERSION AS OF)")
    timestamp: str | None = option(
        None, kind=Kind.TEXT, in_policy=False,
        help="restore the latest version committed at or before this ISO-8601 time (naive: UTC)")


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    """``analyze``: ANALYZE TABLE ... COMPUTE DELTA STATISTICS (``...spark.analyze.analyze``):
    recompute the stats of live files whose stats do not cover the table's stats columns."""

    where: str | None = option(None, kind=Kind.PREDICATE, help=_WHERE)
    full: bool = option(False, kind=Kind.FLAG,
                        help="recompute every selected file's stats, covered or not, as Delta Spark's recompute "
                             "does (e.g. to tighten wide bounds left by deletion vectors)")


@dataclass(frozen=True, slots=True)
class DropFeatureOptions:
    """``drop_feature``: ALTER TABLE ... DROP FEATURE [TRUNCATE HISTORY]
    (``delta_core.maintenance.drop_feature.drop_feature``). A one-off: no tables.yaml keys; the
    feature is given on the command line or at launch."""

    feature: str | None = option(None, kind=Kind.TEXT, flag="FEATURE", in_policy=False,
                                 help="the table feature to drop, e.g. deletionVectors")
    truncate_history: bool = option(
        False, kind=Kind.FLAG, in_policy=False,
        help="the history-truncation path instead of a fast drop (Delta's TRUNCATE HISTORY); per feature: "
             + truncate_history_help())
