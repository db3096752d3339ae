"""Typed ``operationParameters`` and ``operationMetrics`` of our commits (PROTOCOL.md "Commit
Provenance Information").

The protocol leaves ``commitInfo`` free-form; history tools read the keys Delta Spark writes,
so each record maps its fields to exactly those names in ``to_commit_info()`` (Delta Spark's
``DeltaOperations.CreateTable`` / ``Write`` / ``Delete`` / ``SetTableProperties`` / ``Optimize`` /
``Reorg`` / ``Restore`` / ``ComputeStats`` / ``VacuumStart`` / ``VacuumEnd`` and their metric names). The key order is
the order we have
always written. ``commit_info.build_commit_info`` turns values into
strings; nothing here does IO.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ClusterByParameters",
    "ComputeStatsParameters",
    "CreateTableParameters",
    "DeleteMetrics",
    "DeleteParameters",
    "OptimizeMetrics",
    "OptimizeParameters",
    "OptimizeScan",
    "ReorgParameters",
    "RestoreParameters",
    "RestoreTableMetrics",
    "RewriteMetrics",
    "SetPropertiesParameters",
    "VacuumEndMetrics",
    "VacuumEndParameters",
    "VacuumStartMetrics",
    "VacuumStartParameters",
    "WriteMetrics",
    "WriteParameters",
]


@dataclass(frozen=True, slots=True)
class CreateTableParameters:
    partition_by: tuple[str, ...]
    properties: Mapping[str, str]
    description: str | None = None  # left out of the commit when None

    def to_commit_info(self) -> dict[str, Any]:
        return {"isManaged": "false", "description": self.description, "partitionBy": list(self.partition_by),
                "properties": dict(self.properties)}


@dataclass(frozen=True, slots=True)
class WriteParameters:
    """``WRITE``: ``mode`` is ``Append`` or ``Overwrite``; ``partition_by`` only when known."""

    mode: str
    partition_by: tuple[str, ...] | None = None

    def to_commit_info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode}
        if self.partition_by is not None:
            out["partitionBy"] = list(self.partition_by)
        return out


@dataclass(frozen=True, slots=True)
class WriteMetrics:
    """``WRITE`` metrics; ``num_removed_files`` only for an overwrite."""

    num_files: int
    num_output_rows: int
    num_output_bytes: int
    num_removed_files: int | None = None

    def to_commit_info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"numFiles": self.num_files, "numOutputRows": self.num_output_rows,
                               "numOutputBytes": self.num_output_bytes}
        if self.num_removed_files is not None:
            out["numRemovedFiles"] = self.num_removed_files
        return out


@dataclass(frozen=True, slots=True)
class DeleteParameters:
    predicates: tuple[str, ...] = ()  # whole files removed by path: no predicate

    def to_commit_info(self) -> dict[str, Any]:
        return {"predicate": json.dumps(list(self.predicates))}


@dataclass(frozen=True, slots=True)
class DeleteMetrics:
    num_removed_files: int
    num_deleted_rows: int

    def to_commit_info(self) -> dict[str, Any]:
        return {"numRemovedFiles": self.num_removed_files, "numDeletedRows": self.num_deleted_rows}


@dataclass(frozen=True, slots=True)
class SetPropertiesParameters:
    properties: Mapping[str, Any]

    def to_commit_info(self) -> dict[str, Any]:
        return {"properties": dict(self.properties)}


@dataclass(frozen=True, slots=True)
class RewriteMetrics:
    """A plain ``dataChange=false`` rewrite (``table_writes.commit_rewrite`` without metrics)."""

    num_removed_files: int
    num_added_files: int
    num_removed_bytes: int
    num_added_bytes: int

    def to_commit_info(self) -> dict[str, Any]:
        return {"numRemovedFiles": self.num_removed_files, "numAddedFiles": self.num_added_files,
                "numRemovedBytes": self.num_removed_bytes, "numAddedBytes": self.num_added_bytes}


@dataclass(frozen=True, slots=True)
class OptimizeParameters:
    """``OPTIMIZE`` parameters: the ``predicate`` (SQL, or ``None`` for the whole table), the
    clustering columns (``z_order_by``, empty for bin-packing) and our ``curve`` (Z-order or
    Hilbert; only written when clustering). On a clustered table ``cluster_by`` names its
    clustering columns and ``is_full`` says whether every file was reclustered (OPTIMIZE FULL)."""

    predicate: str | None
    z_order_by: tuple[str, ...] = ()
    curve: str | None = None
    cluster_by: tuple[str, ...] = ()
    is_full: bool = False

    def to_commit_info(self) -> dict[str, Any]:
        # Delta Spark writes the lists as JSON text (json.dumps' default spacing is ours since v1).
        out: dict[str, Any] = {
            "predicate": json.dumps([self.predicate] if self.predicate else []),
            "zOrderBy": json.dumps(list(self.z_order_by)),
            "clusterBy": json.dumps(list(self.cluster_by)),
            "auto": False,
        }
        if self.cluster_by:  # Delta Spark writes isFull for clustered tables only
            out["isFull"] = self.is_full
        if self.curve is not None:
            out["curve"] = self.curve
        return out


@dataclass(frozen=True, slots=True)
class ReorgParameters:
    """``REORG`` parameters (Delta Spark's ``DeltaOperations.Reorg``): the ``predicate`` as
    OPTIMIZE writes it, and ``applyPurge`` (true: ``REORG TABLE ... APPLY (PURGE)``). Its metrics
    are OPTIMIZE's (``OptimizeMetrics``), as in Delta Spark."""

    predicate: str | None
    apply_purge: bool = True

    def to_commit_info(self) -> dict[str, Any]:
        return {"predicate": json.dumps([self.predicate] if self.predicate else []),
                "applyPurge": self.apply_purge}


@dataclass(frozen=True, slots=True)
class ComputeStatsParameters:
    """``COMPUTE STATS`` parameters (Delta Spark's ``DeltaOperations.ComputeStats``, written by
    ``StatisticsCollection.recompute``): the partition ``predicate`` as a JSON list of SQL texts,
    ``["true"]`` for the whole table (Delta Spark's default predicate). It has no metrics."""

    predicate: str | None

    def to_commit_info(self) -> dict[str, Any]:
        return {"predicate": json.dumps([self.predicate or "true"])}


@dataclass(frozen=True, slots=True)
class OptimizeScan:
    """What one OPTIMIZE run looked at; the same for each of its batch commits."""

    total_considered_files: int
    total_files_skipped: int
    preserve_insertion_order: bool


@dataclass(frozen=True, slots=True)
class OptimizeMetrics:
    """``OPTIMIZE`` metrics of one batch commit; the size percentiles are computed from
    ``added_file_sizes`` (omitted when nothing was added, as Delta Spark does)."""

    num_removed_files: int
    num_added_files: int
    num_removed_bytes: int
    num_added_bytes: int
    added_file_sizes: tuple[int, ...] = ()
    scan: OptimizeScan | None = None
    num_batches: int = 1
    num_deletion_vectors_removed: int = 0

    def to_commit_info(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "numRemovedFiles": self.num_removed_files,
            "numAddedFiles": self.num_added_files,
            "numRemovedBytes": self.num_removed_bytes,
            "numAddedBytes": self.num_added_bytes,
        }
        sizes = sorted(self.added_file_sizes)
        if sizes:
            def pct(p: float) -> int:
                return sizes[min(len(sizes) - 1, int(p * len(sizes)))]

            out.update(minFileSize=sizes[0], maxFileSize=sizes[-1], p25FileSize=pct(0.25),
                       p50FileSize=pct(0.5), p75FileSize=pct(0.75))
        out["numBatches"] = self.num_batches
        out["numDeletionVectorsRemoved"] = self.num_deletion_vectors_removed
        if self.scan is not None:
            out["totalConsideredFiles"] = self.scan.total_considered_files
            out["totalFilesSkipped"] = self.scan.total_files_skipped
            out["preserveInsertionOrder"] = self.scan.preserve_insertion_order
        return out


@dataclass(frozen=True, slots=True)
class VacuumStartParameters:
    """``VACUUM START`` parameters; ``specified_retention_millis`` only when the caller gave a
    retention (else the table's ``default_retention_millis`` applies)."""

    retention_check_enabled: bool
    default_retention_millis: int
    specified_retention_millis: int | None = None

    def to_commit_info(self) -> dict[str, Any]:
        out: dict[str, Any] = {"retentionCheckEnabled": self.retention_check_enabled,
                               "defaultRetentionMillis": self.default_retention_millis}
        if self.specified_retention_millis is not None:
            out["specifiedRetentionMillis"] = self.specified_retention_millis
        return out


@dataclass(frozen=True, slots=True)
class VacuumStartMetrics:
    num_files_to_delete: int
    size_of_data_to_delete: int

    def to_commit_info(self) -> dict[str, Any]:
        return {"numFilesToDelete": self.num_files_to_delete, "sizeOfDataToDelete": self.size_of_data_to_delete}


@dataclass(frozen=True, slots=True)
class VacuumEndParameters:
    status: str = "COMPLETED"

    def to_commit_info(self) -> dict[str, Any]:
        return {"status": self.status}


@dataclass(frozen=True, slots=True)
class VacuumEndMetrics:
    """Delta Spark's ``numDeletedFiles`` and ``numVacuumedDirectories``, plus ours: the bytes
    deleted (``sizeOfDeletedData``), files already gone (``numMissingFiles``) and deletes that
    failed (``numFailedDeletes``). ``numDeletedFiles`` counts files this run deleted, only."""

    num_deleted_files: int
    num_vacuumed_directories: int
    size_of_deleted_data: int = 0
    num_missing_files: int = 0
    num_failed_deletes: int = 0

    def to_commit_info(self) -> dict[str, Any]:
        return {"numDeletedFiles": self.num_deleted_files, "numVacuumedDirectories": self.num_vacuumed_directories,
                "sizeOfDeletedData": self.size_of_deleted_data, "numMissingFiles": self.num_missing_files,
                "numFailedDeletes": self.num_failed_deletes}


@dataclass(frozen=True, slots=True)
class ClusterByParameters:
    """``CLUSTER BY`` (ALTER TABLE ... CLUSTER BY): the logical clustering columns before and
    after, each comma-separated as Delta Spark writes them (empty for none)."""

    old_clustering_columns: tuple[str, ...]
    new_clustering_columns: tuple[str, ...]

    def to_commit_info(self) -> dict[str, Any]:
        return {"oldClusteringColumns": ",".join(self.old_clustering_columns),
                "newClusteringColumns": ",".join(self.new_clustering_columns)}


@dataclass(frozen=True, slots=True)
class RestoreParameters:
    """``RESTORE`` parameters (Delta Spark's ``DeltaOperations.Restore``): the ``version`` or the
    ``timestamp`` the caller asked for, whichever was given (the other is left out)."""

    version: int | None = None
    timestamp: str | None = None

    def to_commit_info(self) -> dict[str, Any]:
        return {"version": self.version, "timestamp": self.timestamp}


@dataclass(frozen=True, slots=True)
class RestoreTableMetrics:
    """``RESTORE`` metrics, named as Delta Spark's ``RestoreTableCommand`` writes them: the restored
    version's file count and size, and the files (and bytes) removed and re-added."""

    table_size_after_restore: int
    num_of_files_after_restore: int
    num_removed_files: int
    num_restored_files: int
    removed_files_size: int
    restored_files_size: int

    def to_commit_info(self) -> dict[str, Any]:
        return {"tableSizeAfterRestore": self.table_size_after_restore,
                "numOfFilesAfterRestore": self.num_of_files_after_restore,
                "numRemovedFiles": self.num_removed_files, "numRestoredFiles": self.num_restored_files,
                "removedFilesSize": self.removed_files_size, "restoredFilesSize": self.restored_files_size}
