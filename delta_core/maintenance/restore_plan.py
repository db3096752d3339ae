"""Restore planning (pure): what ``RESTORE TABLE ... TO VERSION AS OF`` commits, decided from the
table's latest snapshot and the snapshot of the version to restore, as Delta Spark's
``RestoreTableCommand`` decides it (delta-io/delta ``commands/RestoreTableCommand.scala``).

- **Files.** A logical file is keyed as PROTOCOL.md "Action Reconciliation" keys it:
  ``(path, deletionVector.uniqueId)``, the path in its canonical form
  (``delta_core.model.path_identity``; ``f``, ``/t/f`` and ``file:/t/f`` under root ``/t`` are one
  file). The target's live files whose key is not live now are re-added exactly as the target
  holds them (stats, tags, partition values, deletion vector, ``baseRowId`` and
  ``defaultRowCommitVersion``, clustering provider) with ``dataChange=true``; the live files whose
  key the target lacks are removed (``dataChange=true``, extended file metadata). A file whose
  deletion vector changed is both: the old ``(path, dv)`` removed, the target's re-added.
- **Metadata.** The target's ``metaData`` comes back (schema, partitioning, properties), as Delta
  Spark's ``txn.updateMetadata(snapshotToRestore.metadata)`` does, with one adjustment for
  in-commit timestamps (below). Delta Spark writes the action even when it is unchanged; here it
  is staged only when it differs from the current one: an identical ``metaData`` changes nothing
  for readers, but would make every concurrent writer fail with a metadata conflict.
- **In-commit timestamps.** When the target and the table now both enable them, the current
  ``delta.inCommitTimestampEnablementVersion/Timestamp`` are kept (or left out when the table has
  none): they describe which commits of the log carry an ``inCommitTimestamp``, a fact about the
  log as it is, not about the version restored (Delta Spark keeps the current ones when the target
  has none, ``InCommitTimestampUtils``; where both have them and ICT was turned off and on again
  in between, the target's would point at commits without one, so the current ones win here too).
  When the target enables them and the table now does not, the commit turns them on and the
  transaction records this commit as the enablement (``feature_enablement.stamp_ict_enablement``),
  as Delta Spark does; when the target does not, the restored metadata turns them off.
- **Protocol.** Never downgraded: the committed protocol is the current one extended by every
  feature the target's supports (Delta Spark's ``sourceProtocol.merge(targetProtocol)`` without
  its ``restore.protocolDowngradeAllowed`` escape), staged only when that adds something.
- **Domains.** Delta Spark copies no domain from the target (its copy list is empty): the
  ``delta.rowTracking`` high-water mark and every other domain stay as they are now, so restored
  files keep their ``baseRowId`` (below the mark: ids are never handed out twice) and files the
  target holds without one get fresh ids above it when the transaction commits. The one
  exception is ``delta.clustering``: when the table has that domain now, the target's clustering
  columns are written to it (none when the target was not clustered), staged only when they
  differ.
- **Metrics**, Delta Spark's: ``numRestoredFiles``/``restoredFilesSize`` (re-added),
  ``numRemovedFiles``/``removedFilesSize``, and the target's ``numOfFilesAfterRestore`` /
  ``tableSizeAfterRestore``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.log.file_actions import KEY_COLUMNS, file_keys, iter_adds
from delta_core.log.history import ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION
from delta_core.model.actions import Add, DomainMetadata, Metadata, Protocol, Remove
from delta_core.model.arrow_values import one_array
from delta_core.model.clustering import (
    CLUSTERING_DOMAIN,
    ClusteringColumn,
    clustering_columns,
    clustering_domain,
    is_clustered_table,
)
from delta_core.model.path_identity import TableRoot, canonical_paths
from delta_core.model.table_features import reader_features, writer_features
from delta_core.model.table_properties import TableProperties
from delta_core.write.feature_enablement import upgrade_protocol
from delta_core.write.operation_records import RestoreTableMetrics

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

_ICT_ENABLEMENT = (ICT_ENABLEMENT_VERSION, ICT_ENABLEMENT_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class RestorePlan:
    """One restore commit: file rows (``file_actions.FILES_SCHEMA``) to re-add and to remove, and
    the ``metaData``, ``protocol`` and domains to stage (``None``/empty: unchanged)."""

    read_version: int
    target_version: int
    restored: pa.Table  # the target's live files not live now
    removed: pa.Table  # the live files the target does not hold
    files_after: int  # the target's live files and bytes
    bytes_after: int
    metadata: Metadata | None = None
    protocol: Protocol | None = None
    domains: tuple[DomainMetadata, ...] = ()

    @property
    def num_added_files(self) -> int:
        return int(self.restored.num_rows)

    @property
    def added_bytes(self) -> int:
        return _total_size(self.restored)

    @property
    def num_removed_files(self) -> int:
        return int(self.removed.num_rows)

    @property
    def removed_bytes(self) -> int:
        return _total_size(self.removed)

    @property
    def changes_nothing(self) -> bool:
        """True when the table already is the target (e.g. only commits without effect since)."""
        return not (self.restored.num_rows or self.removed.num_rows or self.metadata is not None
                    or self.protocol is not None or self.domains)

    def adds(self) -> list[Add]:
        """The re-added files' ``add`` actions as the target holds them, with ``dataChange=true``."""
        return [replace(a, data_change=True) for a in iter_adds(self.restored)]

    def removes(self, deletion_timestamp: int) -> list[Remove]:
        """The ``remove`` actions of the files the target does not hold (``dataChange=true``)."""
        return [a.to_remove(deletion_timestamp) for a in iter_adds(self.removed)]

    def operation_metrics(self) -> RestoreTableMetrics:
        return RestoreTableMetrics(
            table_size_after_restore=self.bytes_after, num_of_files_after_restore=self.files_after,
            num_removed_files=self.num_removed_files, num_restored_files=self.num_added_files,
            removed_files_size=self.removed_bytes, restored_files_size=self.added_bytes)


def plan_restore(current: Snapshot, target: Snapshot) -> RestorePlan:
    """The commit that makes ``current`` (the latest snapshot) hold what ``target`` holds; see the
    module docstring for each rule."""
    files_after, bytes_after = target.num_files, target.size_in_bytes
    if target.version == current.version:
        empty = current.files_of([])
        return RestorePlan(current.version, target.version, empty, empty, files_after, bytes_after)
    root = TableRoot.of(current.storage.root)
    now_keys = _keys(current.file_columns(*KEY_COLUMNS), root)
    then_keys = _keys(target.file_columns(*KEY_COLUMNS), root)
    return RestorePlan(
        read_version=current.version,
        target_version=target.version,
        restored=_files_without(target, then_keys, now_keys, root),
        removed=_files_without(current, now_keys, then_keys, root),
        files_after=files_after,
        bytes_after=bytes_after,
        metadata=restored_metadata(current.metadata, target.metadata),
        protocol=restored_protocol(current.protocol, target.protocol),
        domains=restored_domains(current, target),
    )


def restored_metadata(current: Metadata, target: Metadata) -> Metadata | None:
    """The target's ``metaData`` with the current in-commit timestamp enablement kept when both
    enable them; ``None`` when that is the current ``metaData`` already."""
    conf = dict(target.configuration)
    if _ict_on(conf) and _ict_on(current.configuration):
        for key in _ICT_ENABLEMENT:
            conf.pop(key, None)
            if key in current.configuration:
                conf[key] = current.configuration[key]
    restored = replace(target, configuration=conf)
    return None if restored == current else restored


def restored_protocol(current: Protocol, target: Protocol) -> Protocol | None:
    """The current protocol extended by the target's features (never a downgrade); ``None`` when
    the current one already supports them all."""
    merged = upgrade_protocol(current, set(reader_features(target) | writer_features(target)))
    return None if merged == current else merged


def restored_domains(current: Snapshot, target: Snapshot) -> tuple[DomainMetadata, ...]:
    """The ``delta.clustering`` domain holding the target's clustering columns, when the table has
    that domain now and its columns differ; no other domain changes."""
    now = current.domain_metadata.get(CLUSTERING_DOMAIN)
    if now is None:
        return ()
    columns: tuple[ClusteringColumn, ...] = ()
    if is_clustered_table(target.protocol) and CLUSTERING_DOMAIN in target.domain_metadata:
        columns = clustering_columns(target.domain_metadata, target.schema, path=target.storage.root,
                                     version=target.version)
    wanted = clustering_domain(columns)
    return () if _domain_columns(wanted) == _domain_columns(now) else (wanted,)


def _domain_columns(domain: DomainMetadata) -> object:
    try:
        return json.loads(domain.configuration).get("clusteringColumns")
    except (ValueError, AttributeError):
        return None  # unreadable: differs from what we would write, so it gets rewritten


def _ict_on(configuration: Mapping[str, str]) -> bool:
    return TableProperties(configuration).in_commit_timestamps


def _files_without(snapshot: Snapshot, keys: pa.Array, others: pa.Array, root: TableRoot) -> pa.Table:
    """The rows of ``snapshot.files`` (whose file keys are ``keys``) whose key is not among
    ``others``: the statistics of those files alone are read (``files_of``, by path)."""
    paths = snapshot.file_columns("path")["path"].filter(pc.invert(pc.is_in(keys, value_set=others)))
    rows = snapshot.files_of(paths.to_pylist())
    return rows.filter(pc.invert(pc.is_in(_keys(rows, root), value_set=others)))


def _keys(files: pa.Table, root: TableRoot) -> pa.Array:
    keys = file_keys(files, paths=canonical_paths(files["path"], root))
    return one_array(keys)


def _total_size(files: pa.Table) -> int:
    return int(pc.sum(files["size"]).as_py() or 0)
