"""The registry of maintenance operations: one entry, one name, per operation.

Each entry holds what every front end needs to know about an operation, so none of them
spells an operation's name itself: the ``delta-core`` command line builds its commands from
``cli_command``/``summary``/``description``, the ``tables.yaml`` models use ``policy_key``
and convert into ``options_type``, and the Dagster code location maps each ``name`` to its
asset factory (a test asserts every entry has one). ``delta_operations`` are the
``commitInfo.operation`` values the operation commits (PROTOCOL.md "Commit Provenance
Information"; spellings in ``delta_core.model.delta_operations``).

Adding an operation means one entry here, its options record (``options``: fields described with
``option_fields.option``, from which the command line, tables.yaml and the Dagster configs are
built) and its ``run_<name>`` in ``runs``. The order of ``OPERATIONS`` is the
order a full maintenance run does them: rewrite first, then delete what the rewrites left,
then checkpoint the result.

This module imports no operation: ``metrics_type`` is a dotted name resolved on demand, so
building the command line does not load pyarrow or Spark.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from delta_core.maintenance.droppable_features import DROP_FEATURE_OPERATION
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
    VacuumOptions,
    ZOrderOptions,
)
from delta_core.model.delta_operations import CLUSTER_BY, COMPUTE_STATS, OPTIMIZE, REORG, VACUUM_END, VACUUM_START
from delta_core.model.delta_operations import RESTORE as RESTORE_OPERATION

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.runs import Report, SparkFactory

OptionsType = type[CompactOptions] | type[ZOrderOptions] | type[VacuumOptions] | \
    type[CheckpointOptions] | type[CleanupLogOptions] | type[ManifestOptions] | type[ClusterOptions] | \
    type[CompactLogOptions] | type[PurgeOptions] | type[RestoreOptions] | type[AnalyzeOptions] | \
    type[DropFeatureOptions]


@dataclass(frozen=True, slots=True)
class Operation:
    """One maintenance operation, as every front end names and configures it."""

    name: str  # the one name: tables.yaml section, asset name, job suffix; snake_case
    options_type: OptionsType  # its config type
    metrics_type_path: str  # "module:Class" of the record it returns
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

    @property
    def cli_command(self) -> str:
        """The ``delta-core`` subcommand: ``name`` with ``_`` written ``-``."""
        return self.name.replace("_", "-")

    @property
    def policy_key(self) -> str | None:
        """Its section in tables.yaml (``name``); None when configured inside another's."""
        return None if self.configured_in else self.name

    def run(self, table: DeltaTable, options: Any, spark: SparkFactory | None) -> Report:
        """Run the operation on ``table`` with ``options`` (its ``options_type``): the
        ``delta_core.maintenance.runs`` function of the same name; ``spark`` is a factory called
        only when there is work for Spark."""
        from delta_core.maintenance import runs

        runner: Callable[[DeltaTable, Any, SparkFactory | None], Report] = getattr(runs, f"run_{self.name}")
        return runner(table, options, spark)

    def metrics_type(self) -> type:
        """The class of the record the operation returns (imported now, not at registry load)."""
        module, _, qualname = self.metrics_type_path.partition(":")
        found: type = getattr(importlib.import_module(module), qualname)
        return found


COMPACT = Operation(
    name="compact", options_type=CompactOptions,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:CompactionMetrics",
    delta_operations=(OPTIMIZE,),
    summary=f"bin-pack small files ({OPTIMIZE})",
    description="Pack each partition's small files into files near the target size.",
    uses_spark=True,
    title="Compaction",
    cli_spark="always",
    on_by_default=True, scheduled=True, default_cron="0 2 * * *",  # daily 02:00
)
ZORDER = Operation(
    name="zorder", options_type=ZOrderOptions,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:ZOrderMetrics",
    delta_operations=(OPTIMIZE,),
    summary="cluster data along a Z-order or Hilbert curve",
    description="Rewrite partitions clustered on the given columns.",
    uses_spark=True,
    title="Z-order",
    cli_spark="always",
    scheduled=True,
)
VACUUM = Operation(
    name="vacuum", options_type=VacuumOptions,
    metrics_type_path="delta_core.maintenance.spark.vacuum:VacuumMetrics",
    delta_operations=(VACUUM_START, VACUUM_END),
    summary="delete files no longer referenced",
    description="Delete unreferenced files older than the retention.",
    uses_spark=False,
    title="Vacuum",
    cli_spark="always",
    on_by_default=True, scheduled=True, default_cron="0 3 * * 0",  # weekly, Sunday 03:00
)
CHECKPOINT = Operation(
    name="checkpoint", options_type=CheckpointOptions,
    metrics_type_path="delta_core.write.checkpoint_write:CheckpointResult",
    delta_operations=(),  # a checkpoint is not a commit
    summary="write a checkpoint and _last_checkpoint",
    description="Write a checkpoint of the table (latest version by default).",
    uses_spark=False,
    title="Checkpoint",
    cli_spark="on_request",
    on_by_default=True,
)
CLEANUP_LOG = Operation(
    name="cleanup_log",
    configured_in="checkpoint",  # tables.yaml: checkpoint.cleanup_log, run after each checkpoint
    options_type=CleanupLogOptions,
    metrics_type_path="delta_core.write.log_cleanup:LogCleanupResult",
    delta_operations=(),  # deletes log files; commits nothing
    summary="delete log files older than delta.logRetentionDuration",
    description="Delete commits and checkpoints that the newest checkpoint inside "
                "the retention window makes unnecessary.",
    uses_spark=False,
    title="Log cleanup",
)
MANIFEST = Operation(
    name="manifest", options_type=ManifestOptions,
    metrics_type_path="delta_core.maintenance.manifest:ManifestMetrics",
    delta_operations=(),  # files beside the log; commits nothing
    summary="write symlink manifests for Hive/Presto/Athena",
    description="Write _symlink_format_manifest/ for the latest version.",
    uses_spark=False,
    title="Manifest",
)
CLUSTER = Operation(
    name="cluster", options_type=ClusterOptions,
    metrics_type_path="delta_core.maintenance.rewrite_metrics:ClusterMetrics",
    delta_operations=(CLUSTER_BY, OPTIMIZE),  # CLUSTER BY only when the configured columns differ
    summary="liquid clustering on the table's clustering columns (OPTIMIZE)",
    description="Cluster the table's unclustered files on its clustering columns along a Hilbert "
                "curve (--full: every file); with --columns, set those columns first.",
    uses_spark=True,
    title="Clustering",
    cli_spark="always",
    scheduled=True,
)

COMPACT_LOG = Operation(
    name="compact_log", options_type=CompactLogOptions,
    metrics_type_path="delta_core.write.log_compaction:LogCompactionResult",
    delta_operations=(),  # a log compaction file is not a commit
    summary="write a log compaction file (x.y.compacted.json)",
    description="Write the reconciled actions of commits x..y (default: those after the newest "
                "checkpoint) as x.y.compacted.json, which readers load instead of those commits.",
    uses_spark=False,
    title="Log compaction",
)

PURGE = Operation(
    name="purge", options_type=PurgeOptions,
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
)

ANALYZE = Operation(
    name="analyze", options_type=AnalyzeOptions,
    metrics_type_path="delta_core.maintenance.spark.analyze:AnalyzeMetrics",
    delta_operations=(COMPUTE_STATS,),
    summary="compute missing file statistics (ANALYZE TABLE ... COMPUTE DELTA STATISTICS)",
    description="Recompute the stats of live files whose stats do not cover the columns the table indexes and "
                "re-add those files with the new stats (dataChange=false); --full: every selected file.",
    uses_spark=True,
    title="Analyze",
    cli_spark="always",
    scheduled=True,
)

RESTORE = Operation(
    name="restore", options_type=RestoreOptions,
    metrics_type_path="delta_core.maintenance.restore:RestoreMetrics",
    delta_operations=(RESTORE_OPERATION,),
    summary="restore the table to an earlier version (RESTORE TABLE ... TO VERSION/TIMESTAMP AS OF)",
    description="Re-add the files of the given version that are no longer live and remove the others, in one "
                "commit; refused, naming them, when files it needs were vacuumed. Give --version or --timestamp.",
    uses_spark=False,
    title="Restore",
)

DROP_FEATURE = Operation(
    name="drop_feature", options_type=DropFeatureOptions,
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
