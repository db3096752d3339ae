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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from delta_core.errors import (
    DeletionVectorError,
    PathEscapesTableError,
    VacuumLiteUnavailableError,
    VersionNotFoundError,
)
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.history import version_at_timestamp
from delta_core.log.log_path import LOG_DIR, LogFileKind, commit_key
from delta_core.log.log_segment import list_log
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.model.actions import Action, AddCDCFile, DeletionVectorDescriptor, Remove, parse_actions
from delta_core.model.path_identity import TableRoot
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)

LAST_VACUUM_INFO = f"{LOG_DIR}/_last_vacuum_info"
LAST_VACUUM_FIELD = "latestCommitVersionOutsideOfRetentionWindow"
_READ_THREADS = 8
LISTING_SCHEMA = pa.schema([("key", pa.string()), ("size", pa.int64()), ("modification_time", pa.int64())])


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
    """Read commits ``start..end`` and collect the files their removes and cdc actions name."""
    def read(version: int) -> list[Action]:
        key = commit_key(version)
        return parse_actions(storage.read(key), path=storage.uri(key), version=version)

    found: dict[str, tuple[int, int]] = {}  # key -> (size, age in ms)
    cdc: set[str] = set()
    skipped: list[str] = []

    def take(path: str, size: int, age: int, *, is_cdc: bool = False) -> None:
        try:
            key = log_path_to_key(path, root)
        except PathEscapesTableError:
            skipped.append(path)  # not ours, or not certainly ours: never deleted
            return
        if key == LOG_DIR or key.startswith(f"{LOG_DIR}/"):
            skipped.append(path)
            return
        if is_cdc:
            cdc.add(key)
        # The same file removed twice: its newest removal decides its age, as in Delta Spark.
        old = found.get(key)
        found[key] = (size, age) if old is None else (max(old[0], size), max(old[1], age))

    with ThreadPoolExecutor(max_workers=max(1, min(_READ_THREADS, end - start + 1))) as pool:
        for actions in pool.map(read, range(start, end + 1)):
            for action in actions:
                if isinstance(action, Remove):
                    age = action.deletion_timestamp or 0
                    take(action.path, action.size or 0, age)
                    if action.deletion_vector is not None:
                        dv = _dv_path(action.deletion_vector)
                        if dv is not None:
                            take(dv, action.deletion_vector.size_in_bytes, age)
                elif isinstance(action, AddCDCFile):
                    take(action.path, action.size, 0, is_cdc=True)
    keys = list(found)
    return LiteCandidates(
        start=start, end=end,
        listed=pa.table([keys, [found[k][0] for k in keys], [found[k][1] for k in keys]], schema=LISTING_SCHEMA),
        cdc_keys=frozenset(cdc), skipped_paths=tuple(skipped),
    )


def _dv_path(dv: DeletionVectorDescriptor) -> str | None:
    try:
        return dv_relative_path(dv.storage_type, dv.path_or_inline_dv)
    except (DeletionVectorError, ValueError):
        return None  # a descriptor we cannot decode names no file we could safely delete
