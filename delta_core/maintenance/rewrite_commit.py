"""Committing a rewrite batch (compaction, Z-order, purge): remove the inputs, add the outputs.

The maintenance policy over ``delta_core.write.table_writes.commit_rewrite``, which makes one batch one
OPTIMIZE commit with ``dataChange=false`` on every action. That commit
marks every input file as read, so a concurrent commit that removed one of them raises
``ConcurrentDeleteReadError`` (the batch is abandoned cleanly: its new files are deleted and
nothing is committed; ``run_rewrite_batches`` then re-plans it on the new snapshot and retries it,
a bounded number of times), while a concurrent blind append never conflicts (a commit that changes
no data is checked at SnapshotIsolation). For other conflicts the table is re-read and the
commit retried on the new snapshot only while every input file (same path, same deletion
vector) is still live, a bounded number of times.

A batch also looks for such a commit before it writes, so that it writes nothing it could only
abandon: just before its tasks start (``run_rewrite_batches`` re-reads the table and narrows
each group to its inputs still live, ``file_groups.keep_files``), between a curve rewrite's
sample and its write (``ensure_inputs_live``), and in a curve rewrite's writer tasks before each
file (``InputWatch``); a task that failed on a batch whose inputs a writer removed (or vacuum
then deleted) is taken as that conflict, not as a missing file.

Before each attempt the rewrite is proven to keep the data (``delta_core.write.rewrite_proof``: rows,
null counts and value ranges per column, from the inputs' stats or the ``InputSummary`` a task
returned for inputs without usable stats); a failed proof deletes the outputs, commits nothing and
raises ``RewriteVerificationError``.

Output files are deleted only when the batch surely did not land (``CommitStateUnknownError``
leaves them, as orphans are harmless and vacuum removes them). A batch that fails before its
commit (an input file missing from storage, a failed Spark task) deletes every file it may have
written: the driver picks their keys before any task writes, so nothing is left for vacuum.

Deletion vectors (PROTOCOL.md "Deletion Vectors"): each batch's tasks read every input with
the vector it has in the snapshot the batch commits against (``deletion_vectors``), so deleted
rows never reappear and the new files have none; the ``remove`` of each input carries that exact
descriptor. An input whose vector changes between the rewrite and the commit is no longer the
same logical file (``all_live`` compares ``(path, deletionVector)``): the batch is abandoned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import (
    CommitConflictError,
    CommitStateUnknownError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    DeltaError,
    MetadataChangedError,
    MissingDataFileError,
    ProtocolChangedError,
    StorageError,
)
from delta_core.log.file_actions import KEY_COLUMNS, file_keys, iter_adds
from delta_core.maintenance.file_groups import FileGroup, group_paths, keep_where
from delta_core.maintenance.options import DEFAULT_MAX_BATCH_RETRIES
from delta_core.maintenance.run_bounds import Leftover
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.model import progress
from delta_core.model.actions import Add, DeletionVectorDescriptor, Remove
from delta_core.model.arrow_values import numbers_of
from delta_core.model.delta_operations import OPTIMIZE
from delta_core.model.partition_values import url_decode_path
from delta_core.write.commit_info import CommitInfoFields
from delta_core.write.operation_records import OptimizeMetrics, OptimizeParameters, OptimizeScan, ReorgParameters
from delta_core.write.rewrite_proof import InputSummary
from delta_core.write.table_writes import commit_rewrite as commit_rewrite_once

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable
    from delta_core.storage.base import Storage

log = logging.getLogger(__name__)
G = TypeVar("G", bound=FileGroup)

MAX_CONFLICT_RETRIES = 5
# Conflicts that abandon a batch: its inputs changed, so its rewrite is stale. Only the first two
# are worth a re-planned retry (``run_rewrite_batches``): after a metadata or protocol change the
# plan itself (schema, clustering, features) may no longer hold.
_REPLANNABLE = (ConcurrentDeleteReadError, ConcurrentDeleteDeleteError)
_ABORTING = (*_REPLANNABLE, MetadataChangedError, ProtocolChangedError)


@dataclass(frozen=True, slots=True)
class BatchOutcome:
    version: int | None  # None: not committed
    status: str  # "committed" | "aborted"
    reason: str | None = None
    attempts: int = 0
    replannable: bool = False  # aborted because inputs changed: re-planning on the new snapshot may commit


@dataclass(frozen=True, slots=True)
class RewriteOutput:
    """What a batch's rewrite tasks produced: the new files, and summaries of the rows they read
    from inputs whose own stats cannot stand in the proof."""

    adds: tuple[Add, ...]
    input_summaries: tuple[InputSummary, ...] = ()
    # commitInfo tags, e.g. row_tracking.preserved_tags when the rows kept their stable ids
    tags: Mapping[str, str] = field(default_factory=dict)


def deletion_vectors(snapshot: Snapshot, paths: Sequence[str] | pa.ChunkedArray) -> dict[str, DeletionVectorDescriptor]:
    """The deletion vector of each of ``paths`` that has one in ``snapshot`` (path as in the log),
    read from the files' ``path`` and ``deletion_vector`` columns only: no statistics, and no
    lookup at all when no file has a vector."""
    files = snapshot.file_columns("path", "deletion_vector")
    if files.column("deletion_vector").null_count == files.num_rows:
        return {}  # the common table without vectors: no pass over its millions of rows
    files = files.filter(pc.is_valid(files.column("deletion_vector")))
    wanted = paths if isinstance(paths, pa.ChunkedArray) else pa.array(list(paths), pa.string())
    files = files.filter(pc.is_in(files.column("path"), value_set=wanted))
    return {path: DeletionVectorDescriptor(storage_type=d["storageType"], path_or_inline_dv=d["pathOrInlineDv"],
                                           size_in_bytes=d["sizeInBytes"], cardinality=d["cardinality"],
                                           offset=d["offset"])
            for path, d in zip(files.column("path").to_pylist(), files.column("deletion_vector").to_pylist())}


def all_live(snapshot: Snapshot, paths: Sequence[str], keys: Collection[str] | None = None) -> bool:
    """Every input is still live (and, given the inputs' ``file_keys``, with the same deletion vector)."""
    live = snapshot.files_of(paths, KEY_COLUMNS)
    if live.num_rows != len(set(paths)):
        return False
    return keys is None or set(file_keys(live).to_pylist()) == set(keys)


def ensure_inputs_live(table: DeltaTable, snapshot: Snapshot, paths: Sequence[str], *, label: str) -> None:
    """Between a batch's read and its write (a curve rewrite samples its inputs first): raise
    ``ConcurrentDeleteReadError`` when an input read in ``snapshot`` is no longer live in the
    table's latest version, or has another deletion vector. Such a batch could only lose its
    commit, so it writes nothing and ``run_rewrite_batches`` re-plans it."""
    if table.latest_version() == snapshot.version:
        return
    keys = file_keys(snapshot.files_of(paths, KEY_COLUMNS)).to_pylist()
    if not all_live(table.snapshot(), paths, keys):
        raise ConcurrentDeleteReadError(
            f"{label}: an input read at version {snapshot.version} was removed or changed by a concurrent commit "
            "before the batch wrote; nothing was written and the batch is re-planned", path=table.uri,
            version=snapshot.version)


@dataclass(slots=True)
class InputWatch:
    """Shipped to the Spark tasks that write a batch's files (a curve rewrite's writers run after
    its inputs were read again and shuffled): ``check()``, called before each file is written,
    reads the commits after ``version`` it has not read yet and raises
    ``ConcurrentDeleteReadError`` once one removed an input (a writer's DELETE, UPDATE or MERGE
    rewrote it, or gave it a new deletion vector). The task fails before writing a file the
    batch could only abandon; the driver tells the failure from others (``_rewrite_batch``) and
    re-plans the batch. The watch only saves work: a log it cannot read (a commit that log
    cleanup deleted between listing and reading) ends the watch for the task, and the batch's
    commit, which checks its inputs against every winning commit, still guards the table."""

    storage: Storage
    version: int
    paths: frozenset[str]  # the inputs, as paths in the log
    blind: bool = False  # the log could not be read: no more checks in this task

    def check(self) -> None:
        from delta_core.log.table import DeltaTable

        if self.blind:
            return
        try:
            changes = list(DeltaTable(storage=self.storage).changes_since(self.version))
        except (OSError, DeltaError) as unreadable:
            log.info("rewrite input watch of %s stops after version %d: %s", self.storage.root, self.version,
                     unreadable)
            self.blind = True
            return
        for version, actions in changes:
            if any(isinstance(a, Remove) and a.path in self.paths for a in actions):
                raise ConcurrentDeleteReadError(
                    f"commit {version} removed an input of this rewrite batch; its files are not written",
                    path=self.storage.root, version=version)
            self.version = version


def commit_rewrite(
    table: DeltaTable,
    snapshot: Snapshot,
    *,
    input_paths: Sequence[str],
    adds: Sequence[Add],
    operation_parameters: CommitInfoFields,
    operation_metrics: CommitInfoFields,
    max_conflict_retries: int = MAX_CONFLICT_RETRIES,
    input_summaries: Sequence[InputSummary] = (),
    tags: Mapping[str, str] | None = None,
    operation: str = OPTIMIZE,
) -> BatchOutcome:
    """Commit one rewrite batch (``write.commit_rewrite``) under the module docstring's rules."""
    keys = set(file_keys(snapshot.files_of(input_paths, KEY_COLUMNS)).to_pylist())
    attempts = 0
    current = snapshot
    while True:
        attempts += 1
        if not all_live(current, input_paths, keys):
            _discard(table, adds)
            return BatchOutcome(None, "aborted", "an input file is no longer live", attempts, replannable=True)
        try:
            result = commit_rewrite_once(
                table, removed=list(iter_adds(current.files_of(input_paths))), added=adds,
                operation=operation, operation_parameters=operation_parameters, read_snapshot=current,
                metrics=operation_metrics, discard_on_failure=False, input_summaries=input_summaries,
                tags=tags)
        except _ABORTING as exc:
            _discard(table, adds)
            log.info("table=%s attempt=%d rewrite batch abandoned: %s", table.uri, attempts, exc.kind)
            return BatchOutcome(None, "aborted", exc.kind, attempts, replannable=isinstance(exc, _REPLANNABLE))
        except CommitConflictError as exc:
            if attempts > max_conflict_retries:
                _discard(table, adds)
                return BatchOutcome(None, "aborted", f"{exc.kind} after {attempts} attempts", attempts)
            log.info("table=%s attempt=%d conflict (%s); re-reading and retrying", table.uri, attempts, exc.kind)
            current = table.snapshot()
            continue
        except DeltaError as exc:
            if not isinstance(exc, CommitStateUnknownError):
                _discard(table, adds)
            raise
        return BatchOutcome(result.version, "committed", None, attempts)


@dataclass(frozen=True, slots=True)
class RewriteTally:
    """What a sequence of rewrite batches committed, retried and abandoned, and what it left."""

    versions: tuple[int, ...]
    batches_aborted: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    num_deletion_vectors_removed: int = 0
    batches_retried: int = 0  # batches re-planned and retried at least once after losing a conflict
    abandoned_reasons: tuple[str, ...] = ()  # one per batch aborted: "batch 2/3: ConcurrentDeleteRead"
    left: Leftover = Leftover()  # batches not started once ``keep_going`` said stop


@dataclass(slots=True)
class _Totals:
    """``run_rewrite_batches``'s running sums."""

    versions: list[int] = field(default_factory=list)
    removed_files: int = 0
    added_files: int = 0
    removed_bytes: int = 0
    added_bytes: int = 0
    dvs_removed: int = 0
    retried: int = 0
    reasons: list[str] = field(default_factory=list)
    left: Leftover = Leftover()

    def tally(self) -> RewriteTally:
        return RewriteTally(tuple(self.versions), len(self.reasons), self.removed_files, self.added_files,
                            self.removed_bytes, self.added_bytes, self.dvs_removed, self.retried,
                            tuple(self.reasons), self.left)


def run_rewrite_batches(
    table: DeltaTable,
    snapshot: Snapshot,
    batches: Sequence[Sequence[G]],
    *,
    rewrite: Callable[[Snapshot, Sequence[G], str, list[str]], RewriteOutput],
    operation_parameters: OptimizeParameters | ReorgParameters,
    scan: OptimizeScan | None,
    label: str,
    operation: str = OPTIMIZE,
    max_batch_retries: int = DEFAULT_MAX_BATCH_RETRIES,
    keep_going: Callable[[], bool] | None = None,
) -> RewriteTally:
    """Rewrite and commit ``batches`` of file groups, each batch on its own.

    Every batch re-reads the table just before its tasks write (batch 1 too, when a commit landed
    since ``snapshot``, the plan's) and narrows each group to its inputs still live (``_live_groups``), so
    progress committed by earlier batches survives a later failure and no batch rewrites a file
    someone else removed.
    ``rewrite(snapshot, groups, batch_label, outputs)`` (which applies each input's deletion
    vector in ``snapshot``, ``deletion_vectors``) appends to ``outputs`` the key of every
    file it may write before any is written, writes them and returns their ``add`` actions
    (``RewriteOutput``); if it fails, those files are deleted and an input missing from storage is
    named (``MissingDataFileError``). Each batch is then proven and committed by ``commit_rewrite``
    as ``operation`` (``OPTIMIZE``, or ``REORG`` for purge) with Delta's OPTIMIZE metrics
    (``OptimizeMetrics``, with ``scan`` in each batch's), which REORG shares.

    A batch abandoned because its inputs changed under it (an input no longer live or with a new
    deletion vector, ``ConcurrentDeleteRead``/``ConcurrentDeleteDelete``) is re-planned on the
    table's new snapshot and retried, up to ``max_batch_retries`` times. Re-planning, as before
    every batch, narrows each group to its inputs still live (a group left with fewer than two
    is dropped; an input that only gained a deletion vector stays and is read with it); other
    batches are not touched. A metadata or protocol change abandons the batch for good.
    ``keep_going``, asked before every batch after the first, stops the run (``max_duration``): the
    batches not started are the tally's ``left``.
    """
    totals = _Totals()
    stopped = False
    latest = snapshot  # advanced by the commits after it only (``Snapshot.update``), not re-read whole
    # progress by batch (files and bytes planned), for rewrites that take minutes
    reported = progress.tracked(label, batches, items_of=lambda b: sum(g.num_files for g in b),
                                bytes_of=lambda b: sum(g.total_size for g in b))
    for index, planned in enumerate(reported, 1):
        batch_label = f"{label} batch {index}/{len(batches)} of {table.uri}"
        if stopped or (index > 1 and keep_going is not None and not keep_going()):
            if not stopped:
                log.info("table=%s %s: max duration reached, %d batch(es) left for the next run", table.uri,
                         batch_label, len(batches) - index + 1)
            stopped = True
            totals.left += Leftover.of(planned, "max_duration")
            continue
        batch: Sequence[G] = planned
        for attempt in range(max_batch_retries + 1):
            # Catch up with the table just before writing, the first batch too (starting Spark
            # takes seconds after planning): a group whose input a writer removed meanwhile would
            # only lose its commit, so it is dropped before any task writes.
            current = latest = latest.update()
            batch = _live_groups(table, current, batch, batch_label)
            if not batch:
                if attempt:
                    totals.reasons.append(f"batch {index}/{len(batches)}: every input changed")
                break
            outcome = _rewrite_and_commit(table, current, batch, batch_label, rewrite=rewrite, scan=scan,
                                          operation_parameters=operation_parameters, operation=operation,
                                          totals=totals)
            if outcome.version is not None:
                break
            if outcome.replannable and attempt < max_batch_retries:
                if attempt == 0:
                    totals.retried += 1
                log.info("table=%s %s lost a conflict (%s): re-planning on the new snapshot, retry %d of %d",
                         table.uri, batch_label, outcome.reason, attempt + 1, max_batch_retries)
                continue
            totals.reasons.append(f"batch {index}/{len(batches)}: {outcome.reason}")
            log.warning("table=%s %s not committed: %s", table.uri, batch_label, outcome.reason)
            break
    return totals.tally()


def _live_groups(table: DeltaTable, current: Snapshot, batch: Sequence[G], batch_label: str) -> tuple[G, ...]:
    """``batch`` re-planned on ``current``: each group keeps its inputs still live there (each read
    with the deletion vector it has in ``current``); a group that lost inputs goes on with the rest
    while it holds two or more (``file_groups.keep_files``), else it is dropped. The files a
    writer added meanwhile are not taken in: they are the next run's."""
    paths = group_paths(batch)
    live = numbers_of(pc.is_in(paths, value_set=current.files_of(paths.to_pylist(), ["path"]).column("path")))
    if live.all():
        return tuple(batch)
    out = keep_where(batch, live.astype(bool))
    unchanged = {id(g) for g in batch}
    narrowed = sum(id(g) not in unchanged for g in out)
    if narrowed or len(out) < len(batch):
        log.info("table=%s %s: inputs changed: %d group(s) dropped, %d narrowed to their live files", table.uri,
                 batch_label, len(batch) - len(out), narrowed)
    return tuple(out)


def _rewrite_and_commit(
    table: DeltaTable, current: Snapshot, batch: Sequence[G], batch_label: str, *,
    rewrite: Callable[[Snapshot, Sequence[G], str, list[str]], RewriteOutput],
    operation_parameters: OptimizeParameters | ReorgParameters, scan: OptimizeScan | None, operation: str,
    totals: _Totals,
) -> BatchOutcome:
    """Rewrite ``batch`` on ``current`` and commit it; a commit is added to ``totals``."""
    inputs = group_paths(batch).to_pylist()
    try:
        output = _rewrite_batch(table, current, batch, batch_label, rewrite=rewrite, inputs=inputs)
    except _REPLANNABLE as exc:  # ensure_inputs_live: an input changed before any task wrote
        log.info("table=%s %s stopped before writing: %s", table.uri, batch_label, exc.kind)
        return BatchOutcome(None, "aborted", exc.kind, replannable=True)
    adds = list(output.adds)
    in_bytes = sum(g.total_size for g in batch)
    out_bytes = sum(a.size for a in adds)
    with_dv = len(deletion_vectors(current, inputs))
    metrics = OptimizeMetrics(num_removed_files=len(inputs), num_added_files=len(adds),
                              num_removed_bytes=in_bytes, num_added_bytes=out_bytes,
                              added_file_sizes=tuple(a.size for a in adds), scan=scan,
                              num_deletion_vectors_removed=with_dv)
    outcome = commit_rewrite(table, current, input_paths=inputs, adds=adds,
                             operation_parameters=operation_parameters, operation_metrics=metrics,
                             input_summaries=output.input_summaries, tags=output.tags, operation=operation)
    if outcome.version is not None:
        totals.versions.append(outcome.version)
        totals.removed_files += len(inputs)
        totals.added_files += len(adds)
        totals.removed_bytes += in_bytes
        totals.added_bytes += out_bytes
        totals.dvs_removed += with_dv
        log.info("table=%s version=%d %s committed: %d -> %d files", table.uri, outcome.version, batch_label,
                 len(inputs), len(adds))
    return outcome


def _rewrite_batch(
    table: DeltaTable, snapshot: Snapshot, batch: Sequence[G], label: str, *,
    rewrite: Callable[[Snapshot, Sequence[G], str, list[str]], RewriteOutput], inputs: Sequence[str],
) -> RewriteOutput:
    """``rewrite`` one batch; if it fails, delete every file it may have written before raising."""
    outputs: list[str] = []
    written = False
    try:
        output = rewrite(snapshot, batch, label, outputs)
        written = True
        return output
    except _REPLANNABLE:
        raise  # inputs changed under the batch (ensure_inputs_live), none is missing from storage
    except DeltaError as exc:
        # A task's own error arrives as Spark's text. A task that stopped because an input was
        # removed (``InputWatch``), or could not read one a writer removed and vacuum deleted,
        # failed on a stale batch: that is a conflict, re-planned. Else say which input is gone.
        ensure_inputs_live(table, snapshot, inputs, label=label)
        missing = _missing_inputs(table, inputs)
        if missing:
            raise MissingDataFileError(
                f"{label} failed: {len(missing)} input file(s) referenced by version {snapshot.version} are "
                f"missing from storage, e.g. {table.storage.uri(missing[0])} (deleted outside the Delta log?). "
                "Nothing was committed and the batch's new files were deleted. Restore the file, or remove "
                "it from the table (Delta Spark: FSCK REPAIR TABLE), then re-run",
                path=table.storage.uri(missing[0]), version=snapshot.version,
            ) from exc
        raise
    finally:
        if not written:
            _delete_uncommitted(table, outputs)


def _missing_inputs(table: DeltaTable, inputs: Sequence[str]) -> list[str]:
    """Keys of the ``inputs`` (log paths) that storage does not hold; asked only after a failure."""
    missing = []
    for path in inputs:
        key = log_path_to_key(path, table.storage.root)
        try:
            if not table.storage.exists(key):
                missing.append(key)
        except (OSError, StorageError) as exc:
            log.warning("table=%s cannot tell whether input %s exists: %s", table.uri, key, exc)
    return missing


def _discard(table: DeltaTable, adds: Sequence[Add]) -> None:
    _delete_uncommitted(table, [url_decode_path(a.path) for a in adds])


def _delete_uncommitted(table: DeltaTable, keys: list[str]) -> None:
    if not keys:
        return
    try:
        table.storage.delete_many(keys)
    except (OSError, StorageError) as exc:
        log.warning("table=%s could not delete %d uncommitted file(s): %s (vacuum will)", table.uri, len(keys), exc)

