"""Committing recomputed stats: the same files re-added in place (PROTOCOL.md "Add File and Remove
File", "Action Reconciliation"; Delta Spark's ``COMPUTE STATS``).

A batch's commit holds one ``add`` per analyzed file: the live ``add`` as it was (path, deletion
vector, partition values, size, modification time, tags, ``baseRowId``,
``defaultRowCommitVersion``, clustering provider) with the new ``stats`` and ``dataChange=false``,
and no ``remove`` — reconciliation keeps the newest ``add`` of a ``(path, deletion vector)``. It
goes through ``Transaction`` (the protocol gate, conflict checks, ``.crc``, row tracking, in-commit
timestamps) after ``rewrite_proof.verify_restats``.

Every analyzed file is declared read, so a concurrent commit that removed one of them (a delete, a
new deletion vector, a compaction) is a ``ConcurrentDeleteReadError``: re-adding its old ``add``
would bring the removed file back. Then, and on any other retryable conflict, the table is re-read
and the commit retried, a bounded number of times, with only the files whose live ``add`` is still
the one analyzed but for its stats (``still_live``: their new stats are still true); the others are
left for the next run.
A metadata or protocol change abandons the batch: the columns the stats must cover may have
changed. Not detected: a concurrent commit that re-adds one of the files in place (another
analyze, a tag update) without removing it; the later commit's ``add`` then wins.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from delta_core.errors import CommitConflictError, MetadataChangedError, ProtocolChangedError
from delta_core.log.file_actions import iter_adds
from delta_core.model.actions import Add
from delta_core.model.delta_operations import COMPUTE_STATS
from delta_core.write.operation_records import ComputeStatsParameters
from delta_core.write.rewrite_proof import verify_restats
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5


@dataclass(frozen=True, slots=True)
class StatsCommit:
    """What one batch committed: ``version`` None when nothing was."""

    version: int | None
    files: int  # adds committed with new stats
    dropped: int  # analyzed files found changed meanwhile (left out, or the batch was abandoned anyway)
    attempts: int
    reason: str | None = None  # why nothing was committed


def commit_stats(
    table: DeltaTable,
    snapshot: Snapshot,
    old: Sequence[Add],
    new: Sequence[Add],
    *,
    parameters: ComputeStatsParameters,
    max_conflict_retries: int = MAX_CONFLICT_RETRIES,
) -> StatsCommit:
    """Commit ``new`` (the ``old`` live adds of ``snapshot`` with recomputed stats, aligned) under
    the module docstring's rules."""
    pairs = list(zip(old, new))
    current = snapshot
    attempts = 0
    while True:
        attempts += 1
        pairs = _unchanged(current, pairs)
        dropped = len(old) - len(pairs)
        if not pairs:
            return StatsCommit(None, 0, dropped, attempts, "every analyzed file changed meanwhile")
        before, after = [p[0] for p in pairs], [p[1] for p in pairs]
        verify_restats(before, after, table=table.uri, version=current.version)
        txn = Transaction(table, read_snapshot=current, operation=COMPUTE_STATS, operation_parameters=parameters)
        txn.mark_files_read(a.path for a in before)
        txn.add_actions(after)
        try:
            result = txn.commit()
        except (MetadataChangedError, ProtocolChangedError) as exc:
            log.info("table=%s attempt=%d stats batch abandoned: %s", table.uri, attempts, exc.kind)
            return StatsCommit(None, 0, dropped, attempts, exc.kind)
        except CommitConflictError as exc:
            if attempts > max_conflict_retries:
                return StatsCommit(None, 0, dropped, attempts, f"{exc.kind} after {attempts} attempts")
            log.info("table=%s attempt=%d conflict (%s); re-reading and retrying with the unchanged files",
                     table.uri, attempts, exc.kind)
            current = table.snapshot()
            continue
        return StatsCommit(result.version, len(after), dropped, attempts)


def still_live(snapshot: Snapshot, adds: Sequence[Add]) -> list[Add]:
    """The ``adds`` that are still live in ``snapshot`` as they were: same ``(path, deletion
    vector)`` and every field alike but ``stats`` and ``dataChange`` (a checkpoint may spell the
    stats differently; new stats for the same rows are still true)."""
    current = {(a.path, a.dv_unique_id): _identity(a) for a in iter_adds(snapshot.files_of(a.path for a in adds))}
    return [a for a in adds if current.get((a.path, a.dv_unique_id)) == _identity(a)]


def _identity(add: Add) -> Add:
    return replace(add, stats=None, data_change=False)


def _unchanged(snapshot: Snapshot, pairs: list[tuple[Add, Add]]) -> list[tuple[Add, Add]]:
    keep = {id(a) for a in still_live(snapshot, [p[0] for p in pairs])}
    return [p for p in pairs if id(p[0]) in keep]
