"""Committing a rewrite batch (compaction, Z-order): remove the inputs, add the outputs.

One batch = one OPTIMIZE commit with ``dataChange=false`` on every action. The transaction
marks every input file as read, so a concurrent commit that removed one of them raises
``ConcurrentDeleteReadError`` (the batch is abandoned cleanly: its new files are deleted and
nothing is committed), while a concurrent blind append never conflicts (a commit that changes
no data is checked at SnapshotIsolation). For other conflicts the table is re-read and the
commit retried on the new snapshot only while every input file (same path, same deletion
vector) is still live, a bounded number of times.

Output files are deleted only when the batch surely did not land (an ambiguous storage error
leaves them, as orphans are harmless and vacuum removes them).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.actions import Add, DeletionVectorDescriptor, Remove
from delta_core.errors import (
    CommitConflictError,
    DeltaError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    MetadataChangedError,
    ProtocolChangedError,
    StorageError,
)
from delta_core.partition_values import url_decode_path
from delta_core.transaction import Transaction

log = logging.getLogger(__name__)

OPTIMIZE = "OPTIMIZE"
MAX_CONFLICT_RETRIES = 5
_ABORTING = (ConcurrentDeleteReadError, ConcurrentDeleteDeleteError, MetadataChangedError, ProtocolChangedError)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    version: int | None  # None: not committed
    status: str  # "committed" | "aborted"
    reason: str | None = None
    attempts: int = 0


def live_subset(snapshot: Any, paths: Sequence[str]) -> pa.Table:
    """Rows of ``snapshot.files`` for ``paths`` (those still live)."""
    files = snapshot.files
    mask = pc.is_in(files.column("path"), value_set=pa.array(list(paths), pa.string()))
    return files.filter(mask)


def all_live(snapshot: Any, paths: Sequence[str], dv_ids: Mapping[str, str | None] | None = None) -> bool:
    """Every input is still live (and, when given, with the same deletion vector)."""
    live = live_subset(snapshot, paths)
    if live.num_rows != len(set(paths)):
        return False
    if dv_ids is None or "deletion_vector" not in live.column_names:
        return True
    for row in live.select(["path", "deletion_vector"]).to_pylist():
        if _dv_id(row["deletion_vector"]) != dv_ids.get(row["path"]):
            return False
    return True


def _dv_id(d: Mapping[str, Any] | None) -> str | None:
    return _dv(d).unique_id if d else None


def _dv(d: Mapping[str, Any] | None) -> DeletionVectorDescriptor | None:
    if not d:
        return None
    return DeletionVectorDescriptor(
        storage_type=d["storageType"], path_or_inline_dv=d["pathOrInlineDv"],
        size_in_bytes=int(d["sizeInBytes"]), cardinality=int(d["cardinality"]),
        offset=None if d.get("offset") is None else int(d["offset"]),
    )


def removes_for(snapshot: Any, paths: Sequence[str], *, deletion_timestamp: int) -> list[Remove]:
    """``remove`` actions (``dataChange=false``, extended metadata) for live ``paths``."""
    rows = live_subset(snapshot, paths).to_pylist()
    out = []
    for r in rows:
        out.append(Remove(
            path=r["path"],
            deletion_timestamp=deletion_timestamp,
            data_change=False,
            extended_file_metadata=True,
            partition_values=_as_dict(r.get("partition_values")),
            size=r.get("size"),
            stats=r.get("stats"),
            tags=_as_dict(r.get("tags")) or None,
            deletion_vector=_dv(r.get("deletion_vector")),
            base_row_id=r.get("base_row_id"),
            default_row_commit_version=r.get("default_row_commit_version"),
        ))
    return out


def _as_dict(value: Any) -> dict[str, Any]:
    # Arrow maps come back from to_pylist() as lists of (key, value) pairs.
    return {} if value is None else dict(value)


def commit_rewrite(
    table: Any,
    snapshot: Any,
    *,
    input_paths: Sequence[str],
    adds: Sequence[Add],
    operation_parameters: Mapping[str, Any],
    operation_metrics: Mapping[str, Any],
    max_conflict_retries: int = MAX_CONFLICT_RETRIES,
) -> BatchOutcome:
    """Commit one rewrite batch; see the module docstring for the conflict rules."""
    dv_ids = {r["path"]: _dv_id(r.get("deletion_vector"))
              for r in live_subset(snapshot, input_paths).select(
                  [c for c in ("path", "deletion_vector") if c in snapshot.files.column_names]).to_pylist()}
    attempts = 0
    current = snapshot
    while True:
        attempts += 1
        if not all_live(current, input_paths, dv_ids):
            _discard(table, adds)
            return BatchOutcome(None, "aborted", "an input file is no longer live", attempts)
        txn = Transaction(table, read_snapshot=current, operation=OPTIMIZE,
                          operation_parameters=operation_parameters)
        txn.mark_files_read(input_paths)
        txn.add_actions(removes_for(current, input_paths, deletion_timestamp=int(time.time() * 1000)))
        txn.add_actions(adds)
        txn.set_operation_metrics(operation_metrics)
        try:
            result = txn.commit()
        except _ABORTING as exc:
            _discard(table, adds)
            log.info("table=%s attempt=%d rewrite batch abandoned: %s", table.uri, attempts, exc.kind)
            return BatchOutcome(None, "aborted", exc.kind, attempts)
        except CommitConflictError as exc:
            if attempts > max_conflict_retries:
                _discard(table, adds)
                return BatchOutcome(None, "aborted", f"{exc.kind} after {attempts} attempts", attempts)
            log.info("table=%s attempt=%d conflict (%s); re-reading and retrying", table.uri, attempts, exc.kind)
            current = table.snapshot()
            continue
        except DeltaError as exc:
            if not getattr(exc, "commit_may_have_landed", False):
                _discard(table, adds)
            raise
        return BatchOutcome(result.version, "committed", None, attempts)


def _discard(table: Any, adds: Sequence[Add]) -> None:
    keys = [url_decode_path(a.path) for a in adds]
    try:
        table.storage.delete_many(keys)
    except (OSError, StorageError) as exc:
        log.warning("table=%s could not delete %d uncommitted file(s): %s (vacuum will)", table.uri, len(keys), exc)


def file_size_metrics(adds: Sequence[Add]) -> dict[str, int]:
    """Delta's OPTIMIZE size metrics of the files added."""
    sizes = sorted(a.size for a in adds)
    if not sizes:
        return {}

    def pct(p: float) -> int:
        return sizes[min(len(sizes) - 1, int(p * len(sizes)))]

    return {"minFileSize": sizes[0], "maxFileSize": sizes[-1], "p25FileSize": pct(0.25),
            "p50FileSize": pct(0.5), "p75FileSize": pct(0.75)}
