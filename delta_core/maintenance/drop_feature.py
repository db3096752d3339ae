"""``drop_feature``: ``ALTER TABLE ... DROP FEATURE f [TRUNCATE HISTORY]`` as Delta Spark runs it
(delta-io/delta ``AlterTableDropFeatureDeltaCommand``, ``PreDowngradeTableFeatureCommand``);
PROTOCOL.md "Table Features", protocol_rfcs/checkpoint-protection.md.

What may be dropped and the protocol, properties and invariants are ``drop_feature_plan``'s. Every
commit goes through ``Transaction`` (protocol gate, conflict rules, in-commit timestamps):

1. refuse, before anything is written, a feature not dropped here or not on the table;
2. pre-downgrade: the commits that remove the feature's traces (``PRE_DOWNGRADE`` per feature);
3. a reader-writer feature without ``truncate_history`` (fast drop): three empty commits, each
   checkpointed (barrier checkpoints); with ``truncate_history``: one such commit, then the wait
   (a run that removed traces stops there) and a log cleanup at 24 hours, then a check that the
   retained history holds no trace;
4. the invariants on the latest snapshot (``validateDropInvariants``): a violation (a concurrent
   writer brought the feature back) stops the run with ``DropFeatureIncompleteError`` naming
   every commit that landed; no protocol commit;
5. the protocol commit (operation ``DROP FEATURE``): the feature out of the protocol, normalized;
   a fast drop adds ``checkpointProtection`` and ``delta.requireCheckpointProtectionBeforeVersion``
   = this commit's version, then checkpoints it. It reads the whole table: a concurrent commit
   makes it re-check the invariants on the new version and try again.

``after_step(step, version)`` is called after each commit of steps 2-3 lands (progress; tests run
a concurrent writer there).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.errors import CommitConflictError, CommitRetriesExhaustedError, ConfigError
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.log_path import LogFileKind
from delta_core.log.log_segment import list_log
from delta_core.maintenance.drop_feature_errors import DropFeatureHistoryError, DropFeatureIncompleteError
from delta_core.maintenance.drop_feature_plan import (
    action_uses_feature,
    check_droppable,
    drop_invariant_violations,
    files_with_deletion_vectors,
    metadata_at_drop,
    properties_to_unset,
    protocol_without,
    with_configuration,
    without_type_changes,
)
from delta_core.maintenance.droppable_features import (
    BARRIER_CHECKPOINTS,
    CHECKPOINT_PROTECTION,
    DROP_FEATURE_OPERATION,
    TRUNCATE_HISTORY_RETENTION_HOURS,
    DroppableFeature,
)
from delta_core.maintenance.dropped_columns import footer_schemas
from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.model.actions import Action, Remove
from delta_core.model.clock import iso_time
from delta_core.model.delta_operations import SET_TBLPROPERTIES
from delta_core.model.schema import schema_to_arrow
from delta_core.model.table_features import check_write_supported, reader_features, writer_features
from delta_core.model.table_properties import REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION
from delta_core.model.type_widening import TYPE_WIDENING_FEATURES
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.commit_outcome import RetryPolicy
from delta_core.write.data_writer import table_schema
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.operation_records import SetPropertiesParameters
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.rewrite_commit import RewriteTally
    from delta_core.maintenance.rewrite_metrics import RewriteMetrics
    from delta_core.maintenance.runs import SparkFactory

log = logging.getLogger(__name__)

# Delta Spark's DeltaOperations names for the commits DROP FEATURE makes.
UNSET_TBLPROPERTIES = "UNSET TBLPROPERTIES"
EMPTY_COMMIT = "Empty Commit"
DV_TOMBSTONES = "Deletion Vector Tombstones"
PROTOCOL_COMMIT_ATTEMPTS = 3  # the protocol commit re-checks the invariants after each lost race

StepHook = Callable[[str, int], None]


@dataclass(frozen=True, slots=True)
class Fields:
    """``commitInfo`` operation parameters or metrics given as Delta's ``{key: value}``."""

    values: Mapping[str, Any]

    def to_commit_info(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True, slots=True, kw_only=True)
class DropFeatureMetrics(OperationMetrics):
    """What ``drop_feature`` did: ``version`` of the protocol commit, every commit before it
    (``steps``: step name and version), the checkpoints it wrote, the protocol before and after.
    The files removed and added are the data files the pre-downgrade rewrote (purge, old types)
    and their output."""

    version: int  # the protocol commit: a drop always commits
    feature: str
    truncate_history: bool
    read_version: int
    steps: tuple[tuple[str, int], ...]
    checkpoints: tuple[int, ...]
    protocol_before: dict[str, Any]
    protocol_after: dict[str, Any]
    protected_before_version: int | None  # delta.requireCheckpointProtectionBeforeVersion set (fast drop)

    def outcome(self) -> str:
        return f"dropped {self.feature}, committed version {self.version}"

    def details(self) -> list[str]:
        before, after = (f"({p.get('minReaderVersion')}, {p.get('minWriterVersion')})"
                         for p in (self.protocol_before, self.protocol_after))
        lines = [f"protocol {before} -> {after}"]
        if self.steps:
            lines.append("pre-downgrade commits: " + ", ".join(f"{name} (version {v})" for name, v in self.steps))
        if self.checkpoints:
            lines.append("checkpoints written at versions " + ", ".join(map(str, self.checkpoints)))
        if self.protected_before_version is not None:
            lines.append(f"delta.requireCheckpointProtectionBeforeVersion = {self.protected_before_version}")
        return lines


@dataclass
class _Run:
    """The commits of one drop so far, and the hook to tell of each."""

    table: DeltaTable
    feature: DroppableFeature
    after_step: StepHook | None
    steps: list[tuple[str, int]] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)
    num_removed_files: int = 0  # the rewrites' files and bytes
    num_added_files: int = 0
    removed_bytes: int = 0
    added_bytes: int = 0

    def rewrote(self, tally: RewriteMetrics | RewriteTally) -> None:
        """Count a rewrite's files and bytes."""
        self.num_removed_files += tally.num_removed_files
        self.num_added_files += tally.num_added_files
        self.removed_bytes += tally.removed_bytes
        self.added_bytes += tally.added_bytes

    def landed(self, step: str, version: int) -> None:
        self.steps.append((step, version))
        log.info("table=%s version=%d drop %s: %s", self.table.uri, version, self.feature.name, step)
        if self.after_step is not None:
            self.after_step(step, version)

    def commit(self, step: str, operation: str, actions: list[Action], parameters: Mapping[str, Any]) -> int:
        txn = Transaction(self.table, operation=operation, operation_parameters=Fields(parameters))
        txn.add_actions(actions)
        version = txn.commit().version
        self.landed(step, version)
        return version

    def set_properties(self, step: str) -> None:
        """The feature's property changes (``properties_to_unset``), committed as Delta Spark does:
        SET TBLPROPERTIES for the checkpoint policy, else UNSET TBLPROPERTIES naming every key changed
        (in-commit timestamps: ``delta.enableInCommitTimestamps=false`` among them)."""
        metadata = self.table.snapshot().metadata
        changes = properties_to_unset(self.feature.name, metadata)
        if not changes:
            return
        unset = [k for k, v in changes.items() if v is None]
        kept = {k: v for k, v in changes.items() if v is not None}
        new = with_configuration(metadata, unset=unset, set=kept)
        if unset or self.feature.name == "inCommitTimestamp":
            self.commit(step, UNSET_TBLPROPERTIES, [new], {"properties": json.dumps(sorted(changes)), "ifExists": True})
        else:
            self.commit(step, SET_TBLPROPERTIES, [new], SetPropertiesParameters(kept).to_commit_info())

    def empty_commit_and_checkpoint(self) -> None:
        """Delta Spark's ``createEmptyCommitAndCheckpoint``: the checkpoint holds no commit that
        still used the feature."""
        version = self.commit("empty commit", EMPTY_COMMIT, [], {})
        write_checkpoint(self.table, version=version)
        self.checkpoints.append(version)

    def incomplete(self, why: str) -> DropFeatureIncompleteError:
        return DropFeatureIncompleteError(
            f"cannot drop {self.feature.name} from {self.table.uri}: {why}. The protocol was not changed; "
            f"{_landed_text(self.steps)}. Find what brought the feature back, then run drop-feature again",
            landed=tuple(self.steps), path=self.table.uri)


def _landed_text(steps: list[tuple[str, int]]) -> str:
    if not steps:
        return "no commit landed"
    return "commits that landed: " + ", ".join(f"{v} ({s})" for s, v in steps)


def drop_feature(table: DeltaTable, feature: str, *, truncate_history: bool = False,
                 spark: SparkFactory | None = None, after_step: StepHook | None = None) -> DropFeatureMetrics:
    """Drop ``feature`` from ``table``'s protocol; see the module docstring for the steps.
    ``spark``: a factory of a SparkSession, called only when files must be rewritten (deletion
    vectors to purge, files holding types from before a type change)."""
    watch = Stopwatch()
    start = table.snapshot()
    check_write_supported(start.protocol, start.metadata, path=table.uri, version=start.version)
    spec = check_droppable(start.protocol, feature, truncate_history=truncate_history, path=table.uri,
                           version=start.version)
    stale = _files_with_old_types(table, start) if feature in TYPE_WIDENING_FEATURES else []
    if spark is None and (stale or (feature == "deletionVectors" and files_with_deletion_vectors(start))):
        raise ConfigError(f"dropping {feature} from {table.uri} rewrites data files, which runs on Spark: pass "
                          "a Spark factory (the command line does)", path=table.uri, version=start.version)
    run = _Run(table, spec, after_step)
    PRE_DOWNGRADE[feature](run, spark, stale)
    protected = spec.history_protection and not truncate_history
    if protected:
        for _ in range(BARRIER_CHECKPOINTS):
            run.empty_commit_and_checkpoint()
    elif spec.history_protection:
        _truncate_history(run, start.version)
    version, protocol_after, protected_version = _protocol_commit(run, truncate_history, protected=protected)
    if protected:
        write_checkpoint(table, version=version)  # the protected checkpoint at the drop
        run.checkpoints.append(version)
    return DropFeatureMetrics(
        feature=feature, truncate_history=truncate_history, version=version, read_version=start.version,
        steps=tuple(run.steps), checkpoints=tuple(run.checkpoints),
        num_removed_files=run.num_removed_files, num_added_files=run.num_added_files,
        removed_bytes=run.removed_bytes, added_bytes=run.added_bytes,
        protocol_before=_protocol_dict(start.protocol), protocol_after=protocol_after,
        protected_before_version=protected_version, duration_seconds=watch.seconds())


def _protocol_dict(protocol: Any) -> dict[str, Any]:
    return {"minReaderVersion": protocol.min_reader_version, "minWriterVersion": protocol.min_writer_version,
            "readerFeatures": sorted(reader_features(protocol)) if protocol.min_reader_version >= 3 else None,
            "writerFeatures": sorted(writer_features(protocol)) if protocol.min_writer_version >= 7 else None}


def _protocol_commit(run: _Run, truncate_history: bool, *, protected: bool) -> tuple[int, dict[str, Any], int | None]:
    """Step 4-5: the invariants, then the protocol commit; returns its version, the protocol it
    wrote and the protected version it set (fast drop)."""
    name = run.feature.name
    for attempt in range(1, PROTOCOL_COMMIT_ATTEMPTS + 1):
        snapshot = run.table.snapshot()
        violations = drop_invariant_violations(name, snapshot, checkpoint_is_v2=_checkpoint_is_v2(snapshot))
        if violations:
            raise run.incomplete("; ".join(violations))
        txn = Transaction(run.table, read_snapshot=snapshot, operation=DROP_FEATURE_OPERATION, protocol_downgrade=True,
                          operation_parameters=Fields({"featureName": name, "truncateHistory": truncate_history}))
        txn.read_whole_table()  # any concurrent change re-runs the invariants on the new version
        protocol = protocol_without(snapshot.protocol, name, add_checkpoint_protection=protected)
        txn.add_action(protocol)
        protected_version = snapshot.version + 1 if protected else None
        metadata = metadata_at_drop(snapshot.metadata, protected_version=protected_version)
        if metadata is not None:
            txn.add_action(metadata)
        try:
            return txn.commit(retry=RetryPolicy(max_attempts=1)).version, _protocol_dict(protocol), protected_version
        except (CommitConflictError, CommitRetriesExhaustedError) as exc:
            log.info("table=%s drop %s: protocol commit attempt %d lost to a concurrent commit (%s); re-checking",
                     run.table.uri, name, attempt, exc.kind)
    raise run.incomplete(f"the protocol commit lost to concurrent commits {PROTOCOL_COMMIT_ATTEMPTS} times")


def _checkpoint_is_v2(snapshot: Snapshot) -> bool:
    """Whether the snapshot's state is read from a V2-spec checkpoint (UUID-named, or classic
    holding ``checkpointMetadata``)."""
    files = snapshot.log_segment.checkpoint_files
    if any(f.kind is LogFileKind.V2_CHECKPOINT for f in files):
        return True
    storage = snapshot.storage
    for f in files:
        with storage.open_input(f.key) as fh:
            if "checkpointMetadata" in pq.ParquetFile(fh).schema_arrow.names:
                return True
    return False


# --- pre-downgrade, per feature ------------------------------------------------------------------


def _deletion_vectors(run: _Run, spark: SparkFactory | None, stale: list[str]) -> None:
    """Delta Spark's ``DeletionVectorsPreDowngradeCommand``: unset ``delta.enableDeletionVectors``,
    purge (REORG ... APPLY (PURGE)), then tombstone the DV files of removed files still within the
    retention, so a vacuum that knows no deletion vectors keeps them while old versions need them."""
    run.set_properties("disable deletion vectors")
    if files_with_deletion_vectors(run.table.snapshot()):
        from delta_core.maintenance.spark.purge import purge

        assert spark is not None  # checked before the first step
        metrics = purge(run.table, spark)
        run.rewrote(metrics)
        for version in metrics.versions:
            run.landed("purge", version)
    tombstones = _dv_tombstones(run.table.snapshot(), run.table.clock())
    if tombstones:
        run.commit("deletion vector tombstones", DV_TOMBSTONES, list(tombstones), {})


def _dv_tombstones(snapshot: Snapshot, now_ms: int) -> list[Remove]:
    """A ``remove`` (``dataChange=false``) per DV file that a tombstone within the retention
    references and no tombstone names yet (Delta Spark's ``generateDVTombstones``)."""
    cutoff = now_ms - int(snapshot.properties.deleted_file_retention.total_seconds() * 1000)
    removes = list(snapshot.remove_actions())
    named = {r.path for r in removes}
    paths: set[str] = set()
    for r in removes:
        dv = r.deletion_vector
        if dv is None or dv.storage_type != "u" or (r.deletion_timestamp or 0) < cutoff:
            continue
        path = dv_relative_path("u", dv.path_or_inline_dv)
        if path is not None and path not in named:
            paths.add(path)
    return [Remove(path=p, deletion_timestamp=now_ms, data_change=False) for p in sorted(paths)]


def _type_widening(run: _Run, spark: SparkFactory | None, stale: list[str]) -> None:
    """Delta Spark's ``TypeWideningPreDowngradeCommand``: unset ``delta.enableTypeWidening``,
    rewrite the files holding a type from before a change (REORG), then remove ``delta.typeChanges``
    from the schema (operation ``DROP FEATURE`` with the columns, as Delta Spark's
    ``UpdateColumnMetadata``)."""
    run.set_properties("disable type widening")
    if stale:
        from delta_core.maintenance.bin_packing import partition_key_names
        from delta_core.maintenance.options import RewriteBounds
        from delta_core.maintenance.purge_plan import PurgePlan, single_file_groups
        from delta_core.maintenance.spark.bin_rewrite import BinRewrite
        from delta_core.maintenance.spark.driver import Rewrite, run_rewrite
        from delta_core.model.delta_operations import REORG

        assert spark is not None  # checked before the first step
        snapshot = run.table.snapshot()
        files = snapshot.files_of(stale)
        plan = PurgePlan(read_version=snapshot.version, predicate=None, max_deleted_rows_ratio=0.0,
                         groups=single_file_groups(files, partition_key_names(snapshot)),
                         files_considered=files.num_rows, files_with_deletion_vectors=0, files_with_dropped_columns=0,
                         deleted_rows=0)
        done = run_rewrite(run.table, spark, snapshot, Rewrite(plan, BinRewrite(), "rewrite widened types",
                                                               operation=REORG),
                           bounds=RewriteBounds(), watch=Stopwatch())
        run.rewrote(done.tally)
        for version in done.tally.versions:
            run.landed("rewrite files of old types", version)
        left = _files_with_old_types(run.table, run.table.snapshot())
        if left:
            raise run.incomplete(f"{len(left)} file(s) still hold types from before a type change, e.g. {left[0]}")
    metadata = run.table.snapshot().metadata
    cleaned, columns = without_type_changes(metadata)
    if columns:
        run.commit("remove delta.typeChanges", DROP_FEATURE_OPERATION, [cleaned],
                   {"columns": json.dumps([{"name": c} for c in columns])})


def _files_with_old_types(table: DeltaTable, snapshot: Snapshot) -> list[str]:
    """Live files whose Parquet footer holds a column at another type than the table's (Delta
    Spark's ``ReorgTableHelper.fileHasDifferentTypes``: atomic types compared)."""
    wanted = schema_to_arrow(table_schema(snapshot.metadata), physical=True)
    paths = snapshot.file_paths
    schemas = footer_schemas(table.storage, paths)
    return [p for p, s in zip(paths, schemas) if _differs(pa.struct(list(s)), pa.struct(list(wanted)))]


def _differs(stored: pa.DataType, table: pa.DataType) -> bool:
    if pa.types.is_struct(stored) and pa.types.is_struct(table):
        have = {stored.field(i).name: stored.field(i).type for i in range(stored.num_fields)}
        return any(_differs(have[f.name], f.type) for f in table if f.name in have)
    if pa.types.is_map(stored) and pa.types.is_map(table):
        return _differs(stored.key_type, table.key_type) or _differs(stored.item_type, table.item_type)
    if (pa.types.is_list(stored) or pa.types.is_large_list(stored)) and \
            (pa.types.is_list(table) or pa.types.is_large_list(table)):
        return _differs(stored.value_type, table.value_type)
    return bool(_plain(stored) != _plain(table))


def _plain(t: pa.DataType) -> pa.DataType:
    """The type a value is, whatever Arrow layout the reader chose (dictionary, large string)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    return t


def _properties_only(step: str) -> Callable[[_Run, SparkFactory | None, list[str]], None]:
    def pre_downgrade(run: _Run, spark: SparkFactory | None, stale: list[str]) -> None:
        run.set_properties(step)
    return pre_downgrade


def _checkpoint_protection(run: _Run, spark: SparkFactory | None, stale: list[str]) -> None:
    """Delta Spark's ``CheckpointProtectionPreDowngradeCommand`` (only with ``truncate_history``):
    the history before ``delta.requireCheckpointProtectionBeforeVersion`` truncated in one go, by
    a checkpoint after an empty commit and a log cleanup at 24 hours; then the property unset."""
    boundary = int(run.table.snapshot().metadata.configuration.get(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION, 0))
    if _earliest_commit_before(run.table, boundary) is not None:
        run.empty_commit_and_checkpoint()
        cleanup_log(run.table, retention=_TRUNCATE_RETENTION)
        if _earliest_commit_before(run.table, boundary) is not None:
            raise DropFeatureHistoryError(
                f"cannot drop {CHECKPOINT_PROTECTION} from {run.table.uri} yet: the log still holds commits before "
                f"{REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION}={boundary}, younger than "
                f"{TRUNCATE_HISTORY_RETENTION_HOURS} hours. Run drop-feature again with --truncate-history after "
                f"{_possible_at(run.table, boundary)}; {_landed_text(run.steps)}",
                possible_at=_possible_at(run.table, boundary), landed=tuple(run.steps), path=run.table.uri)
    run.set_properties(f"unset {REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION}")


_TRUNCATE_RETENTION = dt.timedelta(hours=TRUNCATE_HISTORY_RETENTION_HOURS)


def _earliest_commit_before(table: DeltaTable, boundary: int) -> int | None:
    """The oldest commit below ``boundary`` the log still holds, or below the oldest checkpoint at
    or after it (Delta Spark's ``historyPriorToCheckpointProtectionVersionIsTruncated``)."""
    if boundary <= 0:
        return None
    listed = list_log(table.storage)
    checkpoints = [f.version for f in listed if f.is_checkpoint]
    commits = [f.version for f in listed if f.kind is LogFileKind.COMMIT and f.version < boundary]
    if commits or not any(v >= boundary for v in checkpoints):
        return min(commits) if commits else 0
    return None


def _possible_at(table: DeltaTable, boundary: int) -> str:
    """When a log cleanup at 24 hours can truncate the history up to ``boundary``: 24 hours after
    the commit of the first checkpoint at or after it."""
    listed = list_log(table.storage)
    at = min((f.version for f in listed if f.is_checkpoint and f.version >= boundary), default=None)
    times = {f.version: f.modification_time for f in listed if f.kind is LogFileKind.COMMIT}
    base = times.get(at, table.clock()) if at is not None else table.clock()
    return iso_time(base + int(_TRUNCATE_RETENTION.total_seconds() * 1000))


def _truncate_history(run: _Run, read_version: int) -> None:
    """Delta Spark's ``executeDropFeatureWithHistoryTruncation`` for a reader-writer feature:
    a run whose pre-downgrade changed the table stops (history holds traces for 24 hours);
    otherwise the log is cleaned up at 24 hours and the retained history checked for traces."""
    name = run.feature.name
    run.empty_commit_and_checkpoint()
    changed = any(step != "empty commit" for step, _ in run.steps)
    if not changed:
        cleanup_log(run.table, retention=_TRUNCATE_RETENTION)
        trace = _history_trace(run.table, name)
        if trace is None:
            return
        why = f"the retained history still uses it ({trace})"
    else:
        why = "this run removed its traces, which the history keeps"
    possible_at = iso_time(run.table.clock() + int(_TRUNCATE_RETENTION.total_seconds() * 1000))
    raise DropFeatureHistoryError(
        f"cannot drop {name} from {run.table.uri} with --truncate-history yet: {why}. Run drop-feature again "
        f"with --truncate-history after {possible_at} ({TRUNCATE_HISTORY_RETENTION_HOURS} hours, so that no "
        f"running transaction still reads that history); {_landed_text(run.steps)}",
        possible_at=possible_at, landed=tuple(run.steps), path=run.table.uri)


def _history_trace(table: DeltaTable, name: str) -> str | None:
    """The first trace of ``name`` in the retained log (Delta Spark's ``historyContainsFeature``):
    the state at the earliest checkpoint (tombstones aside), every commit, and any V2 checkpoint
    file for ``v2Checkpoint``; None when there is none."""
    listed = list_log(table.storage)
    checkpoints = sorted(f.version for f in listed if f.is_checkpoint)
    if name == "v2Checkpoint":
        v2 = [f for f in listed if f.kind is LogFileKind.V2_CHECKPOINT]
        if v2:
            return f"V2 checkpoint {v2[0].name}"
    if checkpoints:
        earliest = table.snapshot(checkpoints[0])
        if name == "deletionVectors" and files_with_deletion_vectors(earliest):
            return f"live files with deletion vectors at checkpoint {checkpoints[0]}"
        if action_uses_feature(name, earliest.metadata) or (
                name == "v2Checkpoint" and _checkpoint_is_v2(earliest)):
            return f"the state at checkpoint {checkpoints[0]}"
    for f in listed:
        if f.kind is not LogFileKind.COMMIT:
            continue
        if any(action_uses_feature(name, a) for a in table.commit_actions(f.version)):
            return f"commit {f.version}"
    return None


def _no_pre_downgrade(run: _Run, spark: SparkFactory | None, stale: list[str]) -> None:
    """``vacuumProtocolCheck`` leaves no trace in the table (Delta Spark's pre-downgrade does nothing)."""


PRE_DOWNGRADE: Mapping[str, Callable[[_Run, SparkFactory | None, list[str]], None]] = {
    "deletionVectors": _deletion_vectors,
    # Delta Spark's V2CheckpointPreDowngradeCommand: the checkpoints that follow are V1-spec classic
    "v2Checkpoint": _properties_only("classic checkpoint policy"),
    "typeWidening": _type_widening,
    "typeWidening-preview": _type_widening,
    "inCommitTimestamp": _properties_only("disable in-commit timestamps"),
    "vacuumProtocolCheck": _no_pre_downgrade,
    CHECKPOINT_PROTECTION: _checkpoint_protection,
}

