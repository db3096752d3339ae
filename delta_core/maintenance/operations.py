"""The registry of maintenance operations: one entry, one name, per operation.

Each entry holds what every front end needs to know about an operation, so none of them
spells an operation's name itself. ``name`` is the one identifier: the tables.yaml section,
the asset and the job suffix; the ``delta-core`` subcommand is derived from it
(``delta_core.cli.operations.command_name``: ``_`` written ``-``).
An entry holds its options record (``options_type``: the command line's flags, the tables.yaml
keys and the Dagster ``Config``), its run function (``run``, from ``runs``), the record it
returns (``metrics_type``: a ``report.Report``), which health checks a run repairs (``repairs``,
names of ``delta_core.health.check_names``) and whether it rewrites data files.
``delta_operations`` are the ``commitInfo.operation`` values it commits (PROTOCOL.md "Commit
Provenance Information"; spellings in ``delta_core.model.delta_operations``).

Adding an operation means one entry here, its options record and its run function; the command
line, tables.yaml, the Dagster asset, its jobs and health's remedies follow from the entry. The
order of ``OPERATIONS`` is the order a full maintenance run does them: rewrite first, then delete
what the rewrites left, then checkpoint the result.

This module imports no operation: ``runs`` defers its imports and ``metrics_type`` is a dotted
name resolved on demand, so building the command line does not load pyarrow or Spark.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from delta_core.maintenance import options, runs
from delta_core.maintenance.droppable_features import DROP_FEATURE_OPERATION
from delta_core.model.delta_operations import CLUSTER_BY, COMPUTE_STATS, OPTIMIZE, REORG, VACUUM_END, VACUUM_START
from delta_core.model.delta_operations import RESTORE as RESTORE_OPERATION

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.report import Report
    from delta_core.maintenance.runs import SparkFactory

# (table, options record, Spark factory called only for work that needs Spark) -> its report
RunFunction = Callable[["DeltaTable", Any, "SparkFactory | None"], "Report"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One maintenance operation, as every front end names and configures it."""

    name: str  # the one name: tables.yaml section, asset name, job suffix; snake_case
    options_type: type[Any]  # its options record, a class of ``options``: its config type
    # Run it on a table with an ``options_type`` record: returns a ``metrics_type`` record.
    run: RunFunction
    metrics_type_path: str  # "module:Class" of the record it returns (a ``report.Report``)
    delta_operations: tuple[str, ...]  # commitInfo.operation values it commits; () if none
    summary: str  # one line: CLI help, asset and job descriptions
    title: str  # what a person calls a run of it: UI headings ("Compaction of events")
    description: str  # CLI ``--help`` description
    uses_spark: bool  # needs a SparkSession to run
    # The command line's --spark-master: "always" passes a Spark factory (the operation starts it
    # only for work that needs it), "on_request" only when --spark-master is given, "none": no flag.
    cli_spark: Literal["always", "on_request", "none"] = "none"
    # The code location's use of its tables.yaml section: whether a table without the section has
    # the operation on, whether the section takes a ``cron`` (a schedule), and the cron by default.
    on_by_default: bool = False
    scheduled: bool = False
    default_cron: str | None = None
    # The operation whose tables.yaml section configures this one (cleanup_log: checkpoint's
    # ``cleanup_log``); None: its own section, named ``name``.
    configured_in: str | None = None
    rewrites_data: bool = False  # rewrites data files (its cost counts against the fleet's byte budget)
    # The health checks a run repairs (``delta_core.health.check_names``, a layer above: named
    # here, held to that module by a test).
    repairs: tuple[str, ...] = ()

    def metrics_type(self) -> type:
        """The class of the record the operation returns (imported now, not at registry load)."""
        module, _, qualname = self.metrics_type_path.partition(":")
        found: type = getattr(importlib.import_module(module), qualname)
        return found


COMPACT = Operation(
    name="compact", options_type=options.CompactOptions, run=runs.run_compact,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:CompactionMetrics",
    delta_operations=(OPTIMIZE,),
    summary=f"bin-pack small files ({OPTIMIZE})",
    description="Pack each partition's small files into files near the target size.",
    uses_spark=True,
    title="Compaction",
    cli_spark="always",
    on_by_default=True, scheduled=True, default_cron="0 2 * * *",  # daily 02:00
    rewrites_data=True, repairs=("small_files",),
)
ZORDER = Operation(
    name="zorder", options_type=options.ZOrderOptions, run=runs.run_zorder,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:ZOrderMetrics",
    delta_operations=(OPTIMIZE,),
    summary="cluster data along a Z-order or Hilbert curve",
    description="Rewrite partitions clustered on the given columns.",
    uses_spark=True,
    title="Z-order",
    cli_spark="always",
    scheduled=True,
    rewrites_data=True, repairs=("data_skipping",),
)
VACUUM = Operation(
    name="vacuum", options_type=options.VacuumOptions, run=runs.run_vacuum,
    metrics_type_path="delta_core.maintenance.spark.vacuum:VacuumMetrics",
    delta_operations=(VACUUM_START, VACUUM_END),
    summary="delete files no longer referenced",
    description="Delete unreferenced files older than the retention.",
    uses_spark=False,
    title="Vacuum",
    cli_spark="always",
    on_by_default=True, scheduled=True, default_cron="0 3 * * 0",  # weekly, Sunday 03:00
    repairs=("vacuum_due",),
)
CHECKPOINT = Operation(
    name="checkpoint", options_type=options.CheckpointOptions, run=runs.run_checkpoint,
    metrics_type_path="delta_core.maintenance.runs:CheckpointRun",
    delta_operations=(),  # a checkpoint is not a commit
    summary="write a checkpoint and _last_checkpoint once one is due",
    description="Write a checkpoint of the table's latest version once delta.checkpointInterval commits follow "
                "the last one; --force: now, --version: of that version.",
    uses_spark=False,
    title="Checkpoint",
    cli_spark="on_request",
    on_by_default=True,
    repairs=("checkpoint_due",),
)
CLEANUP_LOG = Operation(
    name="cleanup_log", run=runs.run_cleanup_log,
    configured_in="checkpoint",  # tables.yaml: checkpoint.cleanup_log, run after each checkpoint
    options_type=options.CleanupLogOptions,
    metrics_type_path="delta_core.write.log_cleanup:LogCleanupResult",
    delta_operations=(),  # deletes log files; commits nothing
    summary="delete log files older than delta.logRetentionDuration",
    description="Delete commits and checkpoints that the newest checkpoint inside "
                "the retention window makes unnecessary.",
    uses_spark=False,
    title="Log cleanup",
    repairs=("log_length",),
)
MANIFEST = Operation(
    name="manifest", options_type=options.ManifestOptions, run=runs.run_manifest,
    metrics_type_path="delta_core.maintenance.manifest:ManifestMetrics",
    delta_operations=(),  # files beside the log; commits nothing
    summary="write symlink manifests for Hive/Presto/Athena",
    description="Write _symlink_format_manifest/ for the latest version.",
    uses_spark=False,
    title="Manifest",
)
CLUSTER = Operation(
    name="cluster", options_type=options.ClusterOptions, run=runs.run_cluster,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:ClusterMetrics",
    delta_operations=(CLUSTER_BY, OPTIMIZE),  # CLUSTER BY only when the configured columns differ
    summary="liquid clustering on the table's clustering columns (OPTIMIZE)",
    description="Cluster the table's unclustered files on its clustering columns along a Hilbert "
                "curve (--full: every file); with --columns, set those columns first.",
    uses_spark=True,
    title="Clustering",
    cli_spark="always",
    scheduled=True,
    rewrites_data=True, repairs=("data_skipping",),
)

COMPACT_LOG = Operation(
    name="compact_log", options_type=options.CompactLogOptions, run=runs.run_compact_log,
    metrics_type_path="delta_core.write.log_compaction:LogCompactionResult",
    delta_operations=(),  # a log compaction file is not a commit
    summary="write a log compaction file (x.y.compacted.json)",
    description="Write the reconciled actions of commits x..y (default: those after the newest "
                "checkpoint) as x.y.compacted.json, which readers load instead of those commits.",
    uses_spark=False,
    title="Log compaction",
    repairs=("log_length",),
)

PURGE = Operation(
    name="purge", options_type=options.PurgeOptions, run=runs.run_purge,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:PurgeMetrics",
    delta_operations=(REORG,),
    summary=f"rewrite files with deletion vectors or dropped columns ({REORG} ... APPLY (PURGE))",
    description="Rewrite every file whose deletion vector deletes rows, and under column mapping every "
                "file that still holds a dropped column, so the deleted data is gone from storage "
                "once vacuum removes the old files.",
    uses_spark=True,
    title="Purge",
    cli_spark="always",
    scheduled=True,
    rewrites_data=True, repairs=("deleted_rows",),
)

ANALYZE = Operation(
    name="analyze", options_type=options.AnalyzeOptions, run=runs.run_analyze,
    metrics_type_path="delta_core.maintenance.spark.analyze:AnalyzeMetrics",
    delta_operations=(COMPUTE_STATS,),
    summary="compute missing file statistics (ANALYZE TABLE ... COMPUTE DELTA STATISTICS)",
    description="Recompute the stats of live files whose stats do not cover the columns the table indexes and "
                "re-add those files with the new stats (dataChange=false); --full: every selected file.",
    uses_spark=True,
    title="Analyze",
    cli_spark="always",
    scheduled=True,
    repairs=("stats_coverage",),
)

RESTORE = Operation(
    name="restore", options_type=options.RestoreOptions, run=runs.run_restore,
    metrics_type_path="delta_core.maintenance.restore:RestoreMetrics",
    delta_operations=(RESTORE_OPERATION,),
    summary="restore the table to an earlier version (RESTORE TABLE ... TO VERSION/TIMESTAMP AS OF)",
    description="Re-add the files of the given version that are no longer live and remove the others, in one "
                "commit; refused, naming them, when files it needs were vacuumed. Give --version or --timestamp.",
    uses_spark=False,
    title="Restore",
)

DROP_FEATURE = Operation(
    name="drop_feature", options_type=options.DropFeatureOptions, run=runs.run_drop_feature,
    metrics_type_path="delta_core.maintenance.drop_feature:DropFeatureMetrics",
    delta_operations=(DROP_FEATURE_OPERATION,),  # and the pre-downgrade commits (drop_feature's module doc)
    summary="drop a table feature and downgrade the protocol (ALTER TABLE ... DROP FEATURE)",
    description="Remove the feature's traces (deletionVectors: disable, purge; v2Checkpoint: classic "
                "checkpoints; typeWidening: rewrite old-type files, drop delta.typeChanges; inCommitTimestamp: "
                "turn off), then commit the protocol without it. Reader-writer features are dropped fast, "
                "behind three checkpoints, adding checkpointProtection; --truncate-history truncates the "
                "history instead (and is how checkpointProtection itself is dropped).",
    uses_spark=True,
    title="Drop feature",
    cli_spark="always",
)

# The operations of a full maintenance run, in its order (restore is a one-off, launched by hand).
# Analyze follows the rewrites (their new files have stats already) and precedes vacuum.
OPERATIONS: tuple[Operation, ...] = (COMPACT, ZORDER, CLUSTER, PURGE, ANALYZE, VACUUM, CHECKPOINT, CLEANUP_LOG,
                                     MANIFEST, COMPACT_LOG)
# One-offs: launched by hand with their options (a version to restore), never part of a full run.
ONE_OFFS: tuple[Operation, ...] = (RESTORE, DROP_FEATURE)
REGISTRY: tuple[Operation, ...] = (*OPERATIONS, *ONE_OFFS)  # every entry
BY_NAME: dict[str, Operation] = {op.name: op for op in REGISTRY}


def operation(name: str) -> Operation:
    """The entry called ``name``; ``KeyError`` naming the known ones otherwise."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"no maintenance operation {name!r}; known: {', '.join(BY_NAME)}") from None
