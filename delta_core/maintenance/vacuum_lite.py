"""Vacuum lite: the deletion candidates named by the log, without listing the table.

Delta Spark's ``VACUUM ... LITE`` (``VacuumCommand.getFilesFromDeltaLog``): instead of listing
every file under the root, read the commits whose files may have expired since the last vacuum
and take what they name — the ``remove`` actions' files and their deletion-vector files
(PROTOCOL.md "Add File and Remove File", "Deletion Vectors") and the ``cdc`` files of those
commits (PROTOCOL.md "Add CDC File"). The usual plan (``vacuum_plan.plan_vacuum``) then keeps
whatever the current snapshot or an in-retention tombstone still references (a file re-added
after its remove is live again and stays) and whatever was removed after the cutoff.

State lives where Delta Spark keeps it, so either engine picks up where the other stopped:
``_delta_log/_last_vacuum_info``, the JSON object
``{"latestCommitVersionOutsideOfRetentionWindow": N}`` — N is the newest commit committed at or
before the retention cutoff when a lite vacuum last completed. The next lite run reads commits
``N+1 ..`` the newest commit at or before its own cutoff. Without the file it reads from commit
0, so it needs the log to start there; when log cleanup has dropped commits it would need, it
refuses (``VacuumLiteUnavailableError``) and names full mode, as Delta Spark does
(``DELTA_CANNOT_VACUUM_LITE``). Delta Spark also refuses when the mark is exactly the commit
before the earliest one left; every commit the run needs is still there then, so we proceed.
Like Delta Spark, an unreadable state file counts as absent, which can only make a run read
more commits or refuse. A full vacuum leaves the file as it is (Delta Spark's writes ``{}``,
which disables lite runs once the log is cleaned up; we read that as absent too).

A remove carries its ``deletionTimestamp`` as the file's age (Delta Spark does the same); a cdc
file has none and counts as old. Paths go through ``vacuum_plan.log_path_to_key`` (every
spelling of the root is one key); one that is outside the root, or cannot be placed with
certainty, is never deleted. Nothing under ``_delta_log`` is a candidate.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import (
    CorruptLogError,
    DeletionVectorError,
    VacuumLiteUnavailableError,
    VersionNotFoundError,
)
from delta_core.log.commit_read import build_batch, read_commits
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.history import version_at_timestamp
from delta_core.log.log_path import LOG_DIR, LogFileKind, commit_key
from delta_core.log.log_segment import list_log
from delta_core.maintenance.vacuum_plan import LISTING_SCHEMA, log_paths_to_keys
from delta_core.model.actions import AddCDCFile, action_from_json
from delta_core.model.arrow_values import false_array, int_array, int_scalar, string_array
from delta_core.model.path_identity import TableRoot
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)

LAST_VACUUM_INFO = f"{LOG_DIR}/_last_vacuum_info"
LAST_VACUUM_FIELD = "latestCommitVersionOutsideOfRetentionWindow"


@dataclass(frozen=True, slots=True)
class LiteCandidates:
    """What the commits ``start..end`` (inclusive) name: ``listed`` has the columns
    ``plan_vacuum`` takes (``key``, ``size``, ``modification_time``); ``cdc_keys`` are the cdc
    files among them (under ``_change_data``, which the hidden-path rule would otherwise keep)."""

    start: int
    end: int
    listed: pa.Table
    cdc_keys: frozenset[str]
    skipped_paths: tuple[str, ...]  # outside the root or not placeable: never deleted


def read_last_vacuum_version(storage: Storage) -> int | None:
    """``latestCommitVersionOutsideOfRetentionWindow`` of ``_delta_log/_last_vacuum_info``, or
    ``None`` when the file is missing, unreadable or holds no version (Delta Spark's reading)."""
    try:
        data = storage.read(LAST_VACUUM_INFO)
    except FileNotFoundError:
        return None
    try:
        value = json.loads(data.decode("utf-8")).get(LAST_VACUUM_FIELD)
    except (UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        log.warning("%s is not a JSON object; vacuum lite treats it as absent", storage.uri(LAST_VACUUM_INFO))
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def write_last_vacuum_version(storage: Storage, version: int) -> None:
    """Record ``version`` as the newest commit vacuumed, byte for byte as Delta Spark writes it
    (compact JSON, one line); never moves the mark backwards."""
    previous = read_last_vacuum_version(storage)
    if previous is not None and previous >= version:
        return
    storage.write(LAST_VACUUM_INFO, (json.dumps({LAST_VACUUM_FIELD: version}, separators=(",", ":")) + "\n")
                  .encode("utf-8"))


def lite_range(storage: Storage, *, cutoff_ms: int, latest_version: int, configuration: Mapping[str, str],
               ict_enabled: bool) -> tuple[int, int] | None:
    """The commits (inclusive range) a lite vacuum must read, ``None`` when there are none.

    Raises ``VacuumLiteUnavailableError`` when the log no longer holds all of them.
    """
    try:
        end = version_at_timestamp(storage, cutoff_ms, configuration=configuration, ict_enabled=ict_enabled)
    except VersionNotFoundError:
        return None  # no commit is older than the cutoff yet: nothing can have expired
    # A commit newer than the snapshot may re-add a file: its state was not checked, so not read.
    end = min(end, latest_version)
    commits = [f.version for f in list_log(storage, end_version=end) if f.kind is LogFileKind.COMMIT]
    earliest = commits[0] if commits else end + 1
    last = read_last_vacuum_version(storage)
    start = 0 if last is None else last + 1
    if start < earliest:
        why = ("there is no _delta_log/_last_vacuum_info saying where the last vacuum stopped"
               if last is None else f"the last vacuum stopped at commit {last}")
        raise VacuumLiteUnavailableError(
            f"vacuum lite of {storage.root} refused, nothing deleted: {why}, and log cleanup has "
            f"removed commits before {earliest}, which may name files to delete. Run a full vacuum "
            "(delta-core vacuum without --lite, or vacuum: {mode: full}): it lists the table, and a "
            "later lite run continues from it", path=storage.root, version=earliest)
    if start > end:  # everything up to the cutoff was vacuumed already
        return None
    missing = sorted(set(range(start, end + 1)) - set(commits))
    if missing:
        raise VacuumLiteUnavailableError(
            f"vacuum lite of {storage.root} refused, nothing deleted: commit {missing[0]} is missing "
            f"from the log, so the files it removed cannot be known. Run a full vacuum (delta-core "
            "vacuum without --lite, or vacuum: {mode: full}), which lists the table",
            path=storage.root, version=missing[0])
    return start, end


def lite_candidates(storage: Storage, start: int, end: int, root: TableRoot) -> LiteCandidates:
    """Read commits ``start..end`` and collect the files their removes and cdc actions name.

    The commits go through the replay reader (``commit_read``: fetched concurrently, file
    actions decoded into Arrow columns, the same errors for a bad line), and plain relative
    paths become keys as Arrow columns: a commit removing a hundred thousand files costs no
    Python object per action."""
    files = [f for f in list_log(storage, start_version=start, end_version=end) if f.kind is LogFileKind.COMMIT]
    commits = read_commits(storage, files, defer_file_lines=True)
    removes = build_batch(commits, source=storage.uri(LOG_DIR)).removes
    zero = int_scalar(0)
    ages = pc.fill_null(removes.column("deletion_timestamp"), zero).combine_chunks()
    skipped: list[str] = []
    parts = [_keyed(removes.column("path"), pc.fill_null(removes.column("size"), zero), ages, root, skipped)]
    dv = removes.column("deletion_vector").combine_chunks()
    with_dv = pc.is_valid(dv)
    if pc.any(with_dv).as_py():
        vectors = dv.filter(with_dv)
        dv_paths = [_dv_path(kind, ref) for kind, ref in zip(pc.struct_field(vectors, "storageType").to_pylist(),
                                                              pc.struct_field(vectors, "pathOrInlineDv").to_pylist())]
        sizes = pc.fill_null(pc.struct_field(vectors, "sizeInBytes").cast(pa.int64()), zero)
        parts.append(_keyed(string_array(dv_paths), sizes, ages.filter(with_dv), root, skipped))
    cdc_actions = [_cdc_action(body, lineno, storage.uri(commit_key(c.version)), c.version)
                   for c in commits for lineno, body in c.cdc]
    cdc = _keyed(string_array([a.path for a in cdc_actions]), int_array(a.size for a in cdc_actions),
                 int_array(0 for _ in cdc_actions), root, skipped)  # a cdc file has no age: it counts as old
    parts.append(cdc)
    # The same file named twice: its newest removal decides its age, as in Delta Spark.
    named = pa.concat_tables(parts).group_by("key").aggregate([("size", "max"), ("modification_time", "max")])
    return LiteCandidates(
        start=start, end=end,
        listed=pa.table([named.column("key"), named.column("size_max"), named.column("modification_time_max")],
                        schema=LISTING_SCHEMA),
        cdc_keys=frozenset(cdc.column("key").to_pylist()), skipped_paths=tuple(skipped),
    )


def _keyed(paths: pa.ChunkedArray | pa.Array, sizes: pa.ChunkedArray | pa.Array, ages: pa.ChunkedArray | pa.Array,
           root: TableRoot, skipped: list[str]) -> pa.Table:
    """``LISTING_SCHEMA`` rows (the age as ``modification_time``) for the paths a log names
    that are certainly files of the table: a plain relative path is its own key, any other
    goes through ``log_path_to_key`` (``log_paths_to_keys``). Paths outside the root, not
    certainly inside it, or under ``_delta_log`` go to ``skipped`` (never deleted); null and
    empty paths (undecodable vectors) are dropped."""
    paths = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    keys, unplaced = log_paths_to_keys(paths, root)
    skipped.extend(unplaced)
    in_log = pc.fill_null(pc.or_(pc.equal(keys, LOG_DIR), pc.starts_with(keys, f"{LOG_DIR}/")), false_array(1)[0])
    skipped.extend(paths.filter(in_log).to_pylist())
    keep = pc.and_(pc.is_valid(keys), pc.invert(in_log))
    return pa.table([keys, sizes, ages], schema=LISTING_SCHEMA).filter(keep)


def _cdc_action(body: Any, lineno: int, source: str, version: int) -> AddCDCFile:
    try:
        action = action_from_json({"cdc": body})
    except CorruptLogError as exc:
        raise CorruptLogError(f"{source}: line {lineno}: {exc}", path=source, version=version) from exc
    assert isinstance(action, AddCDCFile)
    return action


def _dv_path(storage_type: str | None, path_or_inline_dv: str | None) -> str | None:
    if storage_type is None or path_or_inline_dv is None:
        return None
    try:
        return dv_relative_path(storage_type, path_or_inline_dv)
    except (DeletionVectorError, ValueError):
        return None  # a descriptor we cannot decode names no file we could safely delete
