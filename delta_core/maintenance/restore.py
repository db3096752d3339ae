"""``restore``: bring a table back to an earlier version in one commit, as Delta's ``RESTORE TABLE
... TO VERSION AS OF`` / ``TIMESTAMP AS OF`` (delta-io/delta ``RestoreTableCommand``).

What the commit holds is planned by ``restore_plan`` (its docstring gives each rule: files keyed by
``(path, dv id)``, metadata, in-commit timestamps, protocol, domains). This module resolves the
version, refuses what Delta Spark refuses, and commits through ``Transaction``, so the protocol
gate, Delta's conflict rules, row-id assignment, in-commit timestamps and the ``.crc`` apply:

1. the write gate on the latest snapshot;
2. the version: ``version``, or the latest committed at or before ``timestamp`` (``DeltaTable``'s
   time travel, in-commit timestamps included); the latest version itself is a no-op that commits
   nothing (Delta Spark raises there; nothing is wrong with asking), and so is a version whose
   state the table already has;
3. a version committed before ``delta.deletedFileRetentionDuration`` is refused
   (``RestoreBeyondRetentionError``), as Delta Spark's restore does
   (``enforceTimeTravelWithinDeletedFileRetention``): the files it re-adds are tombstones older
   than the retention, which a concurrent vacuum may delete after the checks below;
4. the staged commit is validated (gate on the restored protocol and metadata, append-only,
   partition values, ...) before any file is looked at;
5. every data file and deletion vector file to re-add must exist, else
   ``RestoreFilesMissingError`` names them (Delta Spark's ``checkSnapshotFilesAvailability``;
   its ``ignoreMissingFiles`` escape is not offered);
6. one commit, operation ``RESTORE``, Delta's ``version``/``timestamp`` parameters and RESTORE
   metrics. It declares the whole table read: a concurrent commit that adds or removes files
   conflicts (the restored table would not be the version asked for), as it does with Delta
   Spark's ``commitLarge``.

Nothing is written before step 6. Data files are never written or deleted.
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from delta_core.errors import (
    ConfigError,
    PathEscapesTableError,
    RestoreBeyondRetentionError,
    RestoreFilesMissingError,
    VersionNotFoundError,
)
from delta_core.log.deletion_vectors import dv_file_key
from delta_core.log.history import to_epoch_ms
from delta_core.maintenance.metrics import OperationMetrics, Stopwatch
from delta_core.maintenance.restore_plan import RestorePlan, plan_restore
from delta_core.maintenance.vacuum_plan import log_paths_to_keys
from delta_core.model.actions import Add
from delta_core.model.delta_operations import RESTORE
from delta_core.model.path_identity import TableRoot
from delta_core.model.sizes import format_size
from delta_core.model.table_features import check_write_supported
from delta_core.write.operation_records import RestoreParameters
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

MAX_NAMED_MISSING = 100  # Delta Spark names at most this many missing files


@dataclass(frozen=True, slots=True, kw_only=True)
class RestoreMetrics(OperationMetrics):
    """What ``restore`` committed: ``version`` (None: nothing to change), the version read and
    the one restored, the files and bytes re-added and removed, the table after it, and whether
    the target's metadata came back and the protocol gained features."""

    read_version: int
    restored_version: int
    timestamp: str | None  # as asked, when restoring by timestamp
    num_files_after: int
    bytes_after: int
    metadata_restored: bool
    protocol_upgraded: bool

    def outcome(self) -> str:
        if self.version is None:
            return f"version {self.read_version} already matches version {self.restored_version}: nothing to commit"
        return f"restored version {self.restored_version}, committed version {self.version}"

    def details(self) -> list[str]:
        return [f"{self.num_files_after} live files ({format_size(self.bytes_after)}) after the restore"
                + ("; metadata restored" if self.metadata_restored else "")
                + ("; protocol upgraded" if self.protocol_upgraded else "")]


def restore(table: DeltaTable, *, version: int | None = None, timestamp: str | None = None,
            threads: int = 16) -> RestoreMetrics:
    """Restore ``table`` to ``version`` or to the version current at ``timestamp`` (ISO-8601;
    naive means UTC); exactly one of them. ``threads`` check in parallel that the files to re-add
    exist. See the module docstring for the steps and what is refused."""
    watch = Stopwatch()
    current = table.snapshot()
    check_write_supported(current.protocol, current.metadata, path=table.uri, version=current.version)
    target_version = _target_version(table, current, version=version, timestamp=timestamp)
    target = current if target_version == current.version else table.snapshot(target_version)
    plan = plan_restore(current, target)

    def metrics(committed: int | None) -> RestoreMetrics:
        return RestoreMetrics(
            version=committed, read_version=plan.read_version, restored_version=plan.target_version,
            timestamp=timestamp, num_removed_files=plan.num_removed_files, num_added_files=plan.num_added_files,
            removed_bytes=plan.removed_bytes, added_bytes=plan.added_bytes, num_files_after=plan.files_after,
            bytes_after=plan.bytes_after, metadata_restored=plan.metadata is not None,
            protocol_upgraded=plan.protocol is not None, duration_seconds=watch.seconds())

    if plan.changes_nothing:
        return metrics(None)
    _check_within_retention(table, current, target)
    adds = plan.adds()
    txn = _staged(table, current, plan, adds, RestoreParameters(version, timestamp))
    txn.validate()
    _check_files_exist(table, adds, target_version=target.version, threads=threads)
    return metrics(txn.commit().version)


def _target_version(table: DeltaTable, current: Snapshot, *, version: int | None, timestamp: str | None) -> int:
    """The version to restore: ``version`` as given, or the one current at ``timestamp``."""
    if (version is None) == (timestamp is None):
        raise ConfigError("restore needs exactly one of a version or a timestamp (ISO-8601, e.g. "
                          "2024-05-01T12:00:00Z) to restore to", path=table.uri)
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise ConfigError(f"version {version!r} is not a table version (an integer from 0); "
                              "`delta-core history TABLE` lists them", path=table.uri)
        if version > current.version:
            raise VersionNotFoundError(
                f"version {version} of {table.uri} does not exist: the latest is {current.version}; restore "
                "to an earlier version (`delta-core history TABLE` lists them)", path=table.uri, version=version)
        return version
    assert timestamp is not None
    try:
        when = to_epoch_ms(timestamp)
    except (TypeError, ValueError):
        raise ConfigError(f"timestamp {timestamp!r} is not an ISO-8601 date or time; write it as "
                          "2024-05-01 or 2024-05-01T12:00:00Z (no zone means UTC)", path=table.uri) from None
    return table.version_at(when)


def _check_within_retention(table: DeltaTable, current: Snapshot, target: Snapshot) -> None:
    """Delta Spark's time-travel bound for restores: the target no older than the retention."""
    retention = current.properties.deleted_file_retention
    cutoff = table.clock() - int(retention.total_seconds() * 1000)
    if target.timestamp >= cutoff:
        return
    hours = retention.total_seconds() / 3600
    committed = dt.datetime.fromtimestamp(target.timestamp / 1000, dt.UTC).isoformat(timespec="seconds")
    raise RestoreBeyondRetentionError(
        f"version {target.version} of {table.uri} was committed at {committed}, longer ago than the "
        f"table's delta.deletedFileRetentionDuration ({hours:g} h): vacuum may delete the files it "
        "needs while the restore commits. Restore a version from within the retention, or raise the "
        "retention first (delta-core set-properties TABLE delta.deletedFileRetentionDuration='interval "
        "30 days') so that vacuum keeps them", path=table.uri, version=target.version)


def _staged(table: DeltaTable, current: Snapshot, plan: RestorePlan, adds: list[Add],
            parameters: RestoreParameters) -> Transaction:
    """The restore transaction with every action of ``plan`` staged (``adds``: its re-added
    files), not yet validated."""
    txn = Transaction(table, read_snapshot=current, operation=RESTORE, operation_parameters=parameters)
    txn.read_whole_table()  # the outcome is the whole table: any concurrent file change conflicts
    for action in (plan.protocol, plan.metadata):
        if action is not None:
            txn.add_action(action)
    txn.add_actions(plan.domains)
    txn.add_actions(adds)
    txn.add_actions(plan.removes(table.clock()))
    txn.set_operation_metrics(plan.operation_metrics())
    return txn


def _check_files_exist(table: DeltaTable, adds: list[Add], *, target_version: int, threads: int) -> None:
    """Raise ``RestoreFilesMissingError`` naming the data and deletion vector files of ``adds``
    that storage no longer has."""
    root = TableRoot.of(table.storage.root)
    keys, unplaced = log_paths_to_keys(pa.array([a.path for a in adds], pa.string()), root)
    if unplaced:
        raise PathEscapesTableError(
            f"restore cannot check that {unplaced[0]!r} still exists: it is not certainly inside the table "
            f"root {table.uri} ({len(unplaced)} such file(s)); restore this table with the engine that "
            "wrote those paths", path=table.uri)
    wanted: dict[str, str] = {}  # storage key -> the name a person reads
    for add, key in zip(adds, keys.to_pylist()):
        wanted[key] = add.path
        dv_key = dv_file_key(add.deletion_vector, root) if add.deletion_vector is not None else None
        if dv_key is not None:
            wanted.setdefault(dv_key, f"{dv_key} (deletion vector of {add.path})")
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        present = list(pool.map(table.storage.exists, wanted))
    missing = [name for name, ok in zip(wanted.values(), present) if not ok]
    if not missing:
        return
    shown = ", ".join(missing[:10]) + (f" and {len(missing) - 10} more" if len(missing) > 10 else "")
    raise RestoreFilesMissingError(
        f"cannot restore {table.uri} to version {target_version}: {len(missing)} file(s) it needs are gone "
        f"from storage (vacuumed, or deleted outside the log): {shown}. Nothing was written; restore a later "
        "version whose files still exist, or put these files back and retry",
        missing=tuple(missing[:MAX_NAMED_MISSING]), path=table.uri, version=target_version)
