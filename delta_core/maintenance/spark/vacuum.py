"""Vacuum: delete the files under a table root that no version inside the retention needs.

``vacuum`` reads the latest snapshot, lists the table root in parallel (one listing per
top-level directory on a bounded thread pool; hidden top-level directories such as
``_delta_log`` are never listed), plans with ``vacuum_plan.plan_vacuum`` (pure) batch by batch
as the listing comes (only the deletion candidates are kept, never the whole listing) and
deletes in parallel — on a thread pool, or as Spark tasks when a session is given. Like Delta it records a
``VACUUM START`` commit (``operationParameters``: ``retentionCheckEnabled``,
``specifiedRetentionMillis``, ``defaultRetentionMillis``; ``operationMetrics``:
``numFilesToDelete``, ``sizeOfDataToDelete``) before deleting and a ``VACUUM END`` commit
(``status``; ``numDeletedFiles``, ``numVacuumedDirectories``, and ours: ``sizeOfDeletedData``,
``numMissingFiles``, ``numFailedDeletes``) after, counting what was deleted; a delete that fails
does not stop the others, and ``VACUUM END`` is committed with status ``FAILED`` and the counts
(then ``VacuumIncompleteError``). A dry run lists only.
With a Spark session the top-level directories are listed and planned by Spark tasks, and the
deletes are Spark tasks too: the driver splits the referenced keys' fingerprints by top-level
directory (``key_fingerprints.by_top_directory``), gives each directory's task its own share with
the plan's other inputs (``vacuum_plan.VacuumRules``), and each task lists its directory and
plans it batch by batch with the driver's planning step (``vacuum_plan.plan_batch``), returning
only its deletion candidates and counts. The driver lists and plans the root's own files itself
and holds the fingerprints, the candidates and the counts, never the listing; the plan is the
one a local listing gives (``plan_on_spark``).

Retention comes from ``delta.deletedFileRetentionDuration`` (default 7 days); a shorter one is
refused with ``RetentionTooShortError`` unless ``force=True``. Time comes from ``clock``
(default: the table's clock) so tests and schedules decide what "old" means. The write protocol is checked
first (PROTOCOL.md "VACUUM Protocol Check"). All IO goes through the ``Storage`` contract (the
local store's fast listing and directory removal live inside it).

With ``inventory`` (Delta's ``VACUUM ... USING INVENTORY``) the listing comes from a storage
inventory instead (``inventory_source``: Delta's own shape or an S3 Inventory report), its rows
made one file each and planned by the same rules (``vacuum_inventory_plan``).

``mode="lite"`` (Delta Spark's ``VACUUM LITE``) lists nothing: the candidates are the files the
commits since the last vacuum name (``vacuum_lite``), planned by the same rules, and a
completed run records how far it got in ``_delta_log/_last_vacuum_info``.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, fields
from itertools import chain, groupby
from queue import Empty, Queue
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import (
    ConfigError,
    DeltaError,
    RetentionTooShortError,
    UnplaceablePathError,
    VacuumIncompleteError,
)
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.log_path import LOG_DIR
from delta_core.maintenance.inventory_source import open_inventory
from delta_core.maintenance.key_fingerprints import KeySet, by_top_directory
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.vacuum_inventory import InventoryRead, InventorySkips
from delta_core.maintenance.vacuum_inventory_plan import plan_inventory
from delta_core.maintenance.vacuum_lite import lite_candidates, lite_range, write_last_vacuum_version
from delta_core.maintenance.vacuum_plan import (
    CANDIDATES_SCHEMA,
    LISTING_SCHEMA,
    BatchPlan,
    PlanCounts,
    VacuumPlan,
    VacuumRules,
    assemble_plan,
    empty_dir_candidates,
    is_hidden,
    log_paths_to_keys,
    plan_batch,
    plan_vacuum,
)
from delta_core.model import progress
from delta_core.model.arrow_values import chunks_of, empty_table, false_array, int_array, int_scalar, string_array
from delta_core.model.clock import Clock
from delta_core.model.delta_operations import VACUUM_END, VACUUM_START
from delta_core.model.durations import format_duration
from delta_core.model.path_identity import TableRoot, Where
from delta_core.model.sizes import format_size
from delta_core.model.table_features import check_write_supported
from delta_core.storage.base import DeleteOutcome, FileInfo, Storage
from delta_core.write.operation_records import (
    VacuumEndMetrics,
    VacuumEndParameters,
    VacuumStartMetrics,
    VacuumStartParameters,
)
from delta_core.write.transaction import Transaction

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable


log = logging.getLogger(__name__)

__all__ = ["DeleteChunkTask", "VacuumMetrics", "VacuumPlan", "plan_vacuum", "referenced_keys", "vacuum"]

DEFAULT_THREADS = 16
DELETE_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class VacuumMetrics(MetricsRecord):
    version: int | None  # VACUUM END commit (None in a dry run)
    start_version: int | None  # VACUUM START commit
    read_version: int
    dry_run: bool
    retention_hours: float
    retention_check_enabled: bool
    files_listed: int
    num_files_to_delete: int
    bytes_to_delete: int  # their total size: what a dry run would free
    young_kept: int  # unreferenced, but younger than the retention: kept
    num_deleted_files: int
    num_vacuumed_directories: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    ignored_log_paths: int  # paths in the log outside the root (warned about, never touched)
    paths: tuple[str, ...]  # dry run: what would be deleted (absolute URIs)
    duration_seconds: float
    mode: str = "full"  # "full" lists the table; "lite" reads the log since the last vacuum
    lite_versions: tuple[int, int] | None = None  # lite: the commits read (inclusive)
    bytes_deleted: int = 0  # the size of the files this run deleted (VACUUM END's sizeOfDeletedData)
    num_missing_files: int = 0  # planned, but already gone when deleted (VACUUM END's numMissingFiles)
    inventory_shape: str | None = None  # "delta" (path, length, isDir, modificationTime) or "s3-inventory"
    inventory_age_hours: float | None = None  # how long before this run the inventory was taken
    inventory_skipped_directories: int = 0  # inventory rows naming a directory (flag, "/" or a prefix of keys)
    inventory_skipped_duplicates: int = 0  # rows of a key listed before (its newest row counts)
    inventory_skipped_outside_root: int = 0  # S3 Inventory rows of the bucket outside the table root
    inventory_skipped_not_latest: int = 0  # S3 Inventory rows of noncurrent versions
    inventory_skipped_delete_markers: int = 0  # S3 Inventory rows of delete markers

    def outcome(self) -> str:
        if self.dry_run:
            return (f"dry run: would delete {self.num_files_to_delete} of {self.files_listed} listed files "
                    f"({format_size(self.bytes_to_delete)})")
        return f"deleted {self.num_deleted_files} of {self.files_listed} listed files" + (
            "" if self.version is None else f", committed version {self.version}")

    def details(self) -> list[str]:
        retention = format_duration(dt.timedelta(hours=self.retention_hours))
        lines = [f"{self.young_kept} unreferenced files younger than the retention ({retention}) kept"
                 + ("" if self.retention_check_enabled else "; retention check overridden"),
                 f"mode {self.mode}" + ("" if self.lite_versions is None else
                                       f" (commits {self.lite_versions[0]}..{self.lite_versions[1]} read)")]
        if self.num_missing_files:
            lines.append(f"{self.num_missing_files} planned files were already gone")
        if self.inventory_shape is not None:
            skipped = {"directories": self.inventory_skipped_directories,
                       "duplicates": self.inventory_skipped_duplicates,
                       "outside the root": self.inventory_skipped_outside_root,
                       "noncurrent versions": self.inventory_skipped_not_latest,
                       "delete markers": self.inventory_skipped_delete_markers}
            lines.append(f"from a {self.inventory_shape} inventory taken {self.inventory_age_hours} hours ago; rows "
                         "skipped: " + (", ".join(f"{n} {why}" for why, n in skipped.items() if n) or "none"))
        return lines


@dataclass(frozen=True, slots=True)
class DeleteChunkTask:
    """One chunk of ``keys`` (relative to the root of ``storage``) for a Spark task to delete."""

    storage: Storage
    keys: tuple[str, ...]
    sizes: tuple[int, ...] = ()  # of each key, in its order (none: bytes not counted)


def _keys(paths: pa.Array | pa.ChunkedArray, root: TableRoot, ignored: list[str], uncertain: list[str]) -> list[pa.Array]:
    """The keys of ``paths`` as Arrow arrays, chunk by chunk (a chunk of plain relative paths is
    its own keys, not copied; null and empty paths have none)."""
    out: list[pa.Array] = []
    for chunk in chunks_of(paths):
        keys, unplaced = log_paths_to_keys(chunk, root)
        for p in unplaced:
            # Certainly outside: not ours to keep. Uncertain: possibly a live file of ours under
            # another spelling of the root.
            (uncertain if root.place(p).where is Where.UNCERTAIN else ignored).append(p)
        out.append(keys.drop_null().cast(pa.string()) if keys.null_count else keys.cast(pa.string()))
    return out


def _dv_keys(dv: pa.ChunkedArray, root: TableRoot, ignored: list[str], uncertain: list[str]) -> list[pa.Array]:
    valid = dv.filter(pc.is_valid(dv)) if dv.null_count else dv
    if len(valid) == 0:
        return []
    kinds = pc.struct_field(valid, "storageType").to_pylist()
    refs = pc.struct_field(valid, "pathOrInlineDv").to_pylist()
    return _keys(string_array([dv_relative_path(k, r) for k, r in zip(kinds, refs)]), root, ignored, uncertain)


def referenced_keys(snapshot: Snapshot, cutoff_ms: int, root: str, ignored: list[str], *,
                    uncertain: list[str] | None = None) -> pa.ChunkedArray:
    """Keys of live files, their DV files, and files of tombstones newer than ``cutoff_ms``:
    Arrow string chunks, the live files' path chunks themselves where they are plain relative
    paths (no Python string per file, and no copy of the paths: at 10M files a set of str
    would hold gigabytes). A key may occur more than once. Paths certainly outside the root go
    to ``ignored``; paths that cannot be placed with certainty (``path_identity.Where.UNCERTAIN``)
    go to ``uncertain`` (the caller refuses)."""
    files = snapshot.file_columns("path", "deletion_vector")
    tomb = snapshot.tombstones
    recent = tomb.filter(pc.fill_null(pc.greater(tomb.column("deletion_timestamp"), int_scalar(cutoff_ms)),
                                      false_array(1)[0]))
    table_root = TableRoot.of(root)
    unsure = uncertain if uncertain is not None else []
    parts = [*_keys(files.column("path"), table_root, ignored, unsure),
             *_dv_keys(files.column("deletion_vector"), table_root, ignored, unsure),
             *_keys(recent.column("path"), table_root, ignored, unsure),
             *_dv_keys(recent.column("deletion_vector"), table_root, ignored, unsure)]
    return pa.chunked_array(parts, pa.string())


def top_level_directories(storage: Storage, partition_columns: Sequence[str]) -> list[str]:
    """The top-level directories a vacuum lists: not ``_delta_log``, nor hidden (except
    partition directories)."""
    return [d for d in storage.list_directories("")
            if d != LOG_DIR and not is_hidden(f"{d}/file", partition_columns)]


def list_table_files(storage: Storage, partition_columns: Sequence[str], *,
                     threads: int = DEFAULT_THREADS) -> Iterator[pa.RecordBatch]:
    """Every file under the root as ``LISTING_SCHEMA`` batches, yielded as they are listed: the
    root's own files, then each top-level directory (``top_level_directories``) listed
    recursively on a thread pool. Hidden files below those directories are listed too (the
    plan skips them). The batches come in no set order."""
    wanted = top_level_directories(storage, partition_columns)
    with progress.stage("vacuum: listing", total_items=None) as listing:
        listed = 0
        for batch in chain(_listing_batches(storage.list_from("")), _list_in_parallel(storage, wanted, threads)):
            listing.advance(items=batch.num_rows, nbytes=_total_size(batch))
            listed += batch.num_rows
            if listed // LISTING_LOG_EVERY != (listed - batch.num_rows) // LISTING_LOG_EVERY:
                log.debug("vacuum listing: %d files so far", listed)
            yield batch


LISTING_BATCH = 10_000
LISTING_LOG_EVERY = 1_000_000
_QUEUED_BATCHES = 64  # listing batches waiting for the planner: the listing threads wait beyond


@dataclass(frozen=True, slots=True)
class _Listed:
    """The mark a listing thread leaves when its directory is done (or failed)."""

    index: int


def _list_in_parallel(storage: Storage, directories: Sequence[str], threads: int) -> Iterator[pa.RecordBatch]:
    """The files below each of ``directories`` (each listed recursively on a thread of its own,
    at most ``threads`` at once) as listing batches, in the order they are listed. At most
    ``_QUEUED_BATCHES`` batches wait to be consumed, so a listing of millions of files is never
    held whole; a directory whose listing failed raises its error here."""
    queue: Queue[pa.RecordBatch | _Listed] = Queue(maxsize=_QUEUED_BATCHES)
    stopped = threading.Event()

    def list_one(index: int, directory: str) -> None:
        try:
            for batch in _listing_batches(storage.list_recursive(directory)):
                if stopped.is_set():
                    return
                queue.put(batch)
        finally:
            queue.put(_Listed(index))

    pool = ThreadPoolExecutor(max_workers=max(1, threads))
    futures = [pool.submit(list_one, i, d) for i, d in enumerate(directories)]
    try:
        left = len(futures)
        while left:
            item = queue.get()
            if isinstance(item, _Listed):
                left -= 1
                futures[item.index].result()  # a failed listing raises here
            else:
                yield item
    finally:
        # Stopped early (an error, or the consumer gone): the threads still listing drop their
        # next batch; take what they are putting until every one has finished.
        stopped.set()
        pool.shutdown(wait=False, cancel_futures=True)
        while not all(f.done() for f in futures):
            with suppress(Empty):
                queue.get(timeout=0.05)


def _listing(infos: Sequence[FileInfo]) -> pa.Table:
    # Built from buffers: pa.array would import pandas (its pandas probe) in every vacuum.
    return pa.Table.from_arrays([
        string_array([i.key for i in infos]),
        int_array([i.size for i in infos]),
        int_array([i.modification_time for i in infos]),
    ], schema=LISTING_SCHEMA)


def _listing_batches(infos: Iterable[FileInfo]) -> Iterator[pa.RecordBatch]:
    """``infos`` as record batches of the listing schema, ``LISTING_BATCH`` files at a time."""
    batch: list[FileInfo] = []
    for info in infos:
        batch.append(info)
        if len(batch) == LISTING_BATCH:
            yield from _listing(batch).to_batches()
            batch = []
    yield from _listing(batch).to_batches()


def _total_size(listed: pa.RecordBatch) -> int:
    return int(pc.sum(listed.column("size")).as_py() or 0)


@dataclass(frozen=True, slots=True)
class PlanDirectoryTask:
    """One top-level ``directory`` of ``storage`` for a Spark task to list recursively and plan:
    ``known`` holds the fingerprints of the referenced keys below it (and no others), ``rules``
    the plan's other inputs."""

    storage: Storage
    directory: str
    known: KeySet
    rules: VacuumRules


# What a planning task returns: its deletion candidates (counts null), then one row of its
# counts (key and size null).
PLAN_RESULT_SCHEMA = "key string, size long, listed long, hidden long, referenced long, young long"
_COUNTS = tuple(f.name for f in fields(PlanCounts))
_RESULT_NAMES = ["key", "size", *_COUNTS]


def _plan_directory(task: PlanDirectoryTask) -> Iterator[pa.RecordBatch]:
    """Spark task: list one directory and plan it batch by batch (``vacuum_plan.plan_batch``, as
    the driver plans a local listing), yielding only the deletion candidates, then the counts."""
    counts = PlanCounts()
    for batch in _listing_batches(task.storage.list_recursive(task.directory)):
        part = plan_batch(batch, task.known, task.rules)
        counts += part.counts
        if part.candidates.num_rows:
            n = part.candidates.num_rows
            yield pa.record_batch([part.candidates.column("key"), part.candidates.column("size"),
                                   *(pa.nulls(n, pa.int64()) for _ in _COUNTS)], names=_RESULT_NAMES)
    yield pa.record_batch([pa.nulls(1, pa.string()), pa.nulls(1, pa.int64()),
                           *(int_array([getattr(counts, c)]) for c in _COUNTS)], names=_RESULT_NAMES)


def plan_on_spark(storage: Storage, spark: Any, *, referenced: pa.Array | pa.ChunkedArray,
                  rules: VacuumRules) -> VacuumPlan:
    """The vacuum plan of the listing of ``storage``'s root, planned where it is listed: the
    driver lists and plans the root's own files against the root-level referenced keys; each
    top-level directory is a Spark task (``spark``: a session, or a factory called only when
    there is a directory) given the fingerprints of the referenced keys below it
    (``key_fingerprints.by_top_directory``), which returns only its candidates and counts. The
    driver holds the fingerprints, the candidates and the counts, never the listing; the plan
    equals ``plan_vacuum``'s over the same listing."""
    keys = by_top_directory(referenced)
    root = [plan_batch(b, keys.root, rules) for b in _listing_batches(storage.list_from(""))]
    # The directories with the most referenced files first (the likely largest): tasks are
    # dealt round-robin, so the long ones start early.
    tasks = sorted((PlanDirectoryTask(storage, d, keys.of(d), rules)
                    for d in top_level_directories(storage, rules.partition_columns)), key=lambda t: -len(t.known))
    if not tasks:
        return assemble_plan(root, rules)
    from delta_core.maintenance.spark.tasks import collect_arrow, payload_frame, resolve_spark

    frame = payload_frame(resolve_spark(spark), tasks, _plan_directory, PLAN_RESULT_SCHEMA)
    del tasks, keys  # pickled into the frame
    result = collect_arrow(frame, description=f"vacuum listing and plan of {storage.root}")
    listed = pc.is_valid(result.column("key"))
    totals = result.filter(pc.invert(listed))
    counts = PlanCounts(**{c: int(pc.sum(totals.column(c)).as_py() or 0) for c in _COUNTS})
    candidates = result.filter(listed).select(["key", "size"]).cast(CANDIDATES_SCHEMA)
    return assemble_plan([*root, BatchPlan(candidates, counts)], rules)


@dataclass(frozen=True, slots=True)
class DeleteCounts:
    """What deleting a plan's files did: files and bytes deleted, files already gone, deletes
    that failed (with the first failure's key and reason)."""

    deleted: int = 0
    deleted_bytes: int = 0
    missing: int = 0
    failed: int = 0
    first_failure: str = ""

    def __add__(self, other: DeleteCounts) -> DeleteCounts:
        return DeleteCounts(self.deleted + other.deleted, self.deleted_bytes + other.deleted_bytes,
                            self.missing + other.missing, self.failed + other.failed,
                            self.first_failure or other.first_failure)

    def as_row(self) -> list[str]:  # a Spark task's result
        return [str(self.deleted), str(self.deleted_bytes), str(self.missing), str(self.failed), self.first_failure]

    @classmethod
    def of_row(cls, row: Sequence[str]) -> DeleteCounts:
        return cls(int(row[0]), int(row[1]), int(row[2]), int(row[3]), row[4])


def _delete_chunk(task: DeleteChunkTask) -> list[str]:
    """Spark task (or thread): delete one chunk of keys; returns its ``DeleteCounts`` as a row."""
    try:
        outcome = task.storage.delete_each(list(task.keys))
    except DeltaError as exc:  # refused as a whole (no write access): every key still there
        outcome = DeleteOutcome(failed=tuple((k, f"{type(exc).__name__}: {exc}") for k in task.keys))
    size = dict(zip(task.keys, task.sizes, strict=False))
    first = f"{outcome.failed[0][0]}: {outcome.failed[0][1]}" if outcome.failed else ""
    return DeleteCounts(len(outcome.deleted), sum(size.get(k, 0) for k in outcome.deleted), len(outcome.missing),
                        len(outcome.failed), first).as_row()


def delete_files(storage: Storage, keys: Sequence[str], *, threads: int = DEFAULT_THREADS, spark: Any = None,
                 table_uri: str = "", sizes: Sequence[int] | None = None) -> DeleteCounts:
    """Delete ``keys`` in parallel chunks (threads, or Spark tasks: ``spark`` is a session or a
    factory called only when there is something to delete); a failed delete does not stop the
    others. Logs progress, and reports it (``delta_core.model.progress``) in files and, given
    each key's size in ``sizes``, bytes; returns what was deleted, missing and failed."""
    chunks = [DeleteChunkTask(storage, tuple(keys[i:i + DELETE_CHUNK]),
                              tuple(sizes[i:i + DELETE_CHUNK]) if sizes is not None else ())
              for i in range(0, len(keys), DELETE_CHUNK)]
    total = DeleteCounts()
    if not chunks:
        return total
    with progress.stage("vacuum: deleting", total_items=len(keys),
                        total_bytes=sum(sizes) if sizes is not None else None) as deleting:
        if spark is not None:
            from delta_core.maintenance.spark.tasks import resolve_spark, run_tasks

            results = run_tasks(resolve_spark(spark), _delete_chunk, chunks, description=f"vacuum delete of {table_uri}")
            for row in results:
                total += DeleteCounts.of_row(row)
            deleting.advance(items=total.deleted, nbytes=total.deleted_bytes)
            return total
        with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
            for row in pool.map(_delete_chunk, chunks):
                done = DeleteCounts.of_row(row)
                total += done
                deleting.advance(items=done.deleted, nbytes=done.deleted_bytes)
                if len(chunks) > 1:
                    log.info("table=%s vacuum: deleted %d/%d files", table_uri, total.deleted, len(keys))
        return total


def remove_empty_directories(storage: Storage, deleted: Sequence[str], *, threads: int = DEFAULT_THREADS) -> int:
    """Remove the now-empty parent directories of ``deleted`` keys, deepest first (object stores
    have no directories: nothing to do there). One depth at a time, in parallel within it: a
    directory is tried only after all its sub-directories were (a local ``rmdir`` of a directory
    that just lost many entries takes milliseconds)."""
    removed = 0
    with ThreadPoolExecutor(max_workers=max(1, threads)) as pool:
        for _depth, same_depth in groupby(empty_dir_candidates(deleted), key=lambda d: d.count("/")):
            removed += sum(pool.map(storage.remove_dir_if_empty, list(same_depth)))
    return removed


def vacuum(
    table: DeltaTable,
    *,
    retention_hours: float | None = None,
    dry_run: bool = False,
    force: bool = False,
    spark: Any = None,
    clock: Clock | None = None,
    threads: int = DEFAULT_THREADS,
    mode: Literal["full", "lite"] = "full",
    inventory: str | None = None,
    inventory_storage_options: dict[str, Any] | None = None,
) -> VacuumMetrics:
    """Vacuum ``table``; see the module docstring. ``inventory`` (a URI, read with
    ``inventory_storage_options``) replaces the listing (``vacuum_inventory``)."""
    watch = Stopwatch()
    if mode not in ("full", "lite"):
        raise ConfigError(f"vacuum mode must be 'full' or 'lite', got {mode!r}", path=table.uri)
    if inventory is not None and mode == "lite":
        raise ConfigError("vacuum lite lists nothing and reads no inventory: use an inventory with the full mode",
                          path=table.uri)
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, path=table.uri, version=snapshot.version)
    table_retention = snapshot.properties.deleted_file_retention
    if retention_hours is not None and retention_hours < 0:
        raise ConfigError(f"retention must not be negative, got {format_duration(dt.timedelta(hours=retention_hours))}",
                          path=table.uri)
    retention = table_retention if retention_hours is None else dt.timedelta(hours=retention_hours)
    if retention < table_retention and not force:
        raise RetentionTooShortError(
            f"a retention of {format_duration(retention)} is shorter than the table's "
            f"delta.deletedFileRetentionDuration ({format_duration(table_retention)}); files still needed by "
            "readers of recent versions or by running writers could be deleted. Use a longer retention, or, "
            "if nothing reads or writes older versions, force it (--force on the command line, "
            "allow_short_retention: true in tables.yaml)",
            path=table.uri, version=snapshot.version,
        )
    now_ms = (clock or table.clock)()
    cutoff = now_ms - int(retention.total_seconds() * 1000)
    storage = table.storage
    ignored: list[str] = []
    uncertain: list[str] = []
    referenced = referenced_keys(snapshot, cutoff, storage.root, ignored, uncertain=uncertain)
    if uncertain:
        # Delta Spark fails the same way: a file we cannot place might be one we would delete.
        raise UnplaceablePathError(
            f"vacuum of {table.uri} refused, nothing deleted: {len(uncertain)} live or in-retention "
            f"path(s) in the log cannot be placed inside or outside the table root with certainty, "
            f"e.g. {uncertain[0]!r} (another scheme or bucket that may alias this store, or a '..' "
            "segment). Open the table by the root those paths use, or rewrite the files so that the "
            "log names them relative to the root", path=uncertain[0], version=snapshot.version)
    for p in ignored[:10]:
        log.warning("table=%s vacuum ignores %r from the log: it is outside the table root", table.uri, p)
    lite = None
    source: InventoryRead | None = None
    listed: Iterable[pa.RecordBatch] | pa.Table | None
    if mode == "lite":
        span = lite_range(storage, cutoff_ms=cutoff, latest_version=snapshot.version,
                          configuration=snapshot.metadata.configuration,
                          ict_enabled=snapshot.properties.in_commit_timestamps)
        lite = None if span is None else lite_candidates(storage, *span, TableRoot.of(storage.root))
        for p in (lite.skipped_paths if lite else ())[:10]:
            log.warning("table=%s vacuum lite leaves %r alone: it is not certainly a file of the table", table.uri, p)
        listed = lite.listed if lite else empty_table(LISTING_SCHEMA)
    elif inventory is not None:
        source = open_inventory(inventory, inventory_storage_options, table_root=storage.root)
        listed = None  # planned by plan_inventory
    elif spark is None:  # batches as the listing goes: planned as they come, never held whole
        listed = list_table_files(storage, snapshot.partition_columns, threads=threads)
    else:  # each directory listed and planned by a Spark task: the listing never reaches the driver
        listed = None
    if source is not None:
        plan = plan_inventory(source.listing(storage.root), referenced=referenced, rules=VacuumRules.of(
            snapshot.partition_columns, now_ms=now_ms, retention=retention), skips=source.skips, source=source.uri)
        log.info("table=%s vacuum from a %s inventory taken %s hours ago; rows skipped: %s", table.uri, source.shape,
                 source.age_hours(now_ms), source.skips)
    elif listed is None:
        plan = plan_on_spark(storage, spark, referenced=referenced, rules=VacuumRules.of(
            snapshot.partition_columns, now_ms=now_ms, retention=retention))
    else:
        plan = plan_vacuum(listed, referenced=referenced, partition_columns=snapshot.partition_columns,
                           now_ms=now_ms, retention=retention, named_by_log=lite.cdc_keys if lite else ())
    log.info("table=%s version=%d vacuum: %d files listed, %d to delete (%d bytes), %d young kept",
             table.uri, snapshot.version, plan.files_listed, plan.num_files_to_delete, plan.bytes_to_delete,
             plan.young_kept)
    retention_ms = int(retention.total_seconds() * 1000)
    default_ms = int(table_retention.total_seconds() * 1000)
    versions = (lite.start, lite.end) if lite else None
    if dry_run:
        return _metrics(snapshot, plan, retention, None, None, True, not force, DeleteCounts(), 0, ignored,
                        tuple(storage.uri(k) for k in plan.to_delete), watch, mode, versions, source)
    params = VacuumStartParameters(retention_check_enabled=not force, default_retention_millis=default_ms,
                                   specified_retention_millis=retention_ms if retention_hours is not None else None)
    start = _commit(table, snapshot, VACUUM_START, params,
                    VacuumStartMetrics(num_files_to_delete=plan.num_files_to_delete,
                                       size_of_data_to_delete=plan.bytes_to_delete))
    done, dirs, status = DeleteCounts(), 0, "FAILED"
    try:  # VACUUM END whatever happens once VACUUM START is in (Delta Spark's VacuumCommand too)
        done = delete_files(storage, plan.to_delete, threads=threads, spark=spark, table_uri=table.uri,
                            sizes=plan.sizes)
        dirs = remove_empty_directories(storage, plan.to_delete, threads=threads)
        status = "FAILED" if done.failed else "COMPLETED"
    finally:
        end = _commit(table, snapshot, VACUUM_END, VacuumEndParameters(status=status),
                      VacuumEndMetrics(num_deleted_files=done.deleted, num_vacuumed_directories=dirs,
                                       size_of_deleted_data=done.deleted_bytes, num_missing_files=done.missing,
                                       num_failed_deletes=done.failed))
    if done.failed:
        raise VacuumIncompleteError(
            f"vacuum of {table.uri}: {done.failed} of {plan.num_files_to_delete} deletes failed (first: "
            f"{done.first_failure}); {done.deleted} files ({done.deleted_bytes} bytes) deleted, {done.missing} "
            f"already gone. VACUUM END (version {end}) records status FAILED with these counts; fix the cause "
            "and run the vacuum again", path=table.uri, version=end)
    if lite:
        # Only after every candidate is gone: a failed run must be read again by the next one.
        write_last_vacuum_version(storage, lite.end)
    log.info("table=%s vacuum done: %d files deleted (%d bytes), %d already gone, %d directories removed "
             "(versions %s..%s)", table.uri, done.deleted, done.deleted_bytes, done.missing, dirs, start, end)
    return _metrics(snapshot, plan, retention, start, end, False, not force, done, dirs, ignored, (), watch,
                    mode, versions, source)


def _commit(table: DeltaTable, snapshot: Snapshot, operation: str, params: VacuumStartParameters | VacuumEndParameters,
            metrics: VacuumStartMetrics | VacuumEndMetrics) -> int:
    # Read from the newest version, brought up from the vacuum's own snapshot by its newer
    # commits only (loading the table again would replay it all).
    txn = Transaction(table, read_snapshot=snapshot.update(), operation=operation, operation_parameters=params)
    txn.set_operation_metrics(metrics)
    return txn.commit().version


def _metrics(snapshot: Snapshot, plan: VacuumPlan, retention: dt.timedelta, start: int | None, end: int | None,
             dry_run: bool, check: bool, done: DeleteCounts, dirs: int, ignored: list[str], paths: tuple[str, ...],
             watch: Stopwatch, mode: str, versions: tuple[int, int] | None,
             source: InventoryRead | None) -> VacuumMetrics:
    skips = source.skips if source is not None else InventorySkips()
    return VacuumMetrics(
        version=end, start_version=start, read_version=snapshot.version, dry_run=dry_run,
        retention_hours=retention.total_seconds() / 3600, retention_check_enabled=check,
        files_listed=plan.files_listed, num_files_to_delete=plan.num_files_to_delete,
        bytes_to_delete=plan.bytes_to_delete, young_kept=plan.young_kept,
        num_deleted_files=done.deleted, num_vacuumed_directories=dirs,
        num_removed_files=done.deleted, num_added_files=0,
        removed_bytes=done.deleted_bytes, added_bytes=0,
        ignored_log_paths=len(ignored), paths=paths, duration_seconds=watch.seconds(),
        mode=mode, lite_versions=versions, bytes_deleted=done.deleted_bytes, num_missing_files=done.missing,
        inventory_shape=source.shape if source is not None else None,
        inventory_age_hours=source.age_hours(plan.cutoff_ms + plan.retention_ms) if source is not None else None,
        inventory_skipped_directories=skips.directories, inventory_skipped_duplicates=skips.duplicates,
        inventory_skipped_outside_root=skips.outside_root, inventory_skipped_not_latest=skips.not_latest,
        inventory_skipped_delete_markers=skips.delete_markers,
    )
