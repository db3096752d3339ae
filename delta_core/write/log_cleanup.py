"""Log cleanup: delete commits and checkpoints that no reader inside the retention window
needs (PROTOCOL.md "Metadata Cleanup"; retention from ``delta.logRetentionDuration``,
default 30 days).

Rule (the protocol's, stated for time travel):

1. ``cutoff = now - logRetentionDuration``. Versions whose commit timestamp is after the
   cutoff are inside the window, and so is the newest version ``E`` committed at or before
   it (time travel to the cutoff instant resolves to ``E``).
2. Find the newest *complete* checkpoint ``C <= E`` (single file, or every part of a
   multi-part one). Every version ``>= E`` is rebuilt from ``C`` plus the commits after it.
3. Delete commit files, checkpoint files and checksums of versions ``< C`` whose modification
   time is at or before the cutoff, and the log compaction files starting at or before ``C``
   (no reader starting at ``C`` can use them). No commit or checkpoint at or after ``C`` is
   touched, and ``_last_checkpoint`` keeps pointing at a checkpoint that exists.
4. Then delete the sidecars in ``_delta_log/_sidecars/`` that no remaining checkpoint
   references and that are more than a day old as of midnight UTC (``sidecar_cleanup``).

Also deleted: this library's abandoned temporary files in ``_delta_log`` (``.<log file>.<uuid
hex>.tmp``, hidden, so no reader sees them), which a writer killed between writing and
publishing a commit or checkpoint leaves behind (``storage.fsspec_store``, ``atomic_output``),
once they are past the cutoff and more than a day old (``sidecar_cutoff_ms``): no live writer
holds one that long. They can be as large as a checkpoint.

Without such a checkpoint nothing is deleted. Commit timestamps are file modification
times, made strictly increasing as Delta does. Files are deleted oldest first, so a crash
half-way leaves a log that still starts at a checkpoint. The clock is injectable (``now``).

Cleanup is a write: it passes the protocol gate (``check_write_supported``, reader features
included) before listing anything, whatever the retention. A table whose owner set
``delta.enableExpiredLogCleanup=false`` is left alone (``skipped_reason`` says so) unless the
caller passes ``ignore_log_cleanup_disabled=True``. On ``checkpointProtection`` tables the
RFC's rules apply (``delta_core.write.checkpoint_protection``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from delta_core.log.log_path import LOG_DIR, LogFileKind, LogPath, parse_log_name
from delta_core.model.clock import Clock
from delta_core.model.table_features import check_write_supported
from delta_core.model.table_properties import ENABLE_EXPIRED_LOG_CLEANUP, TableProperties
from delta_core.write.checkpoint_protection import protect_checkpoints, protected_before
from delta_core.write.sidecar_cleanup import plan_sidecar_cleanup, sidecar_cutoff_ms

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

# A temporary file of ours beside a log file being published: hidden, named after its target.
_ABANDONED_TEMP = re.compile(r"^\.\d{20}\.[^/]+\.[0-9a-f]{32}\.tmp$")


@dataclass(frozen=True, slots=True)
class LogCleanupResult:
    """What cleanup deleted (or would delete, on a dry run)."""

    checkpoint_version: int | None  # the checkpoint the log now starts from; None: nothing done
    cutoff_ms: int
    deleted: tuple[str, ...] = field(default=())
    dry_run: bool = False
    duration_seconds: float = 0.0
    skipped_reason: str | None = None  # why nothing was deleted although files may have expired
    deleted_bytes: int = 0  # the commits, checkpoints and temporary files among ``deleted`` (sidecars uncounted)

    @property
    def files_deleted(self) -> int:
        return len(self.deleted)

    @property
    def version(self) -> int | None:
        return None  # deleting log files commits nothing

    # The common fields of a report (``delta_core.maintenance.report.Report``).
    @property
    def num_removed_files(self) -> int:
        return 0 if self.dry_run else self.files_deleted

    @property
    def removed_bytes(self) -> int:
        return 0 if self.dry_run else self.deleted_bytes

    num_added_files = added_bytes = 0

    def outcome(self) -> str:
        if self.skipped_reason is not None:
            return f"nothing deleted: {self.skipped_reason}"
        done = f"{'would delete' if self.dry_run else 'deleted'} {self.files_deleted} expired log file(s)"
        return done if self.checkpoint_version is None else \
            f"{done}; the log starts at the checkpoint of version {self.checkpoint_version}"

    def details(self) -> list[str]:
        return []

    def to_dict(self) -> dict[str, Any]:
        return {
            "checkpoint_version": self.checkpoint_version,
            "cutoff": dt.datetime.fromtimestamp(self.cutoff_ms / 1000, dt.UTC).isoformat(),
            "files_deleted": self.files_deleted,
            "deleted": list(self.deleted),
            "dry_run": self.dry_run,
            "duration_seconds": round(self.duration_seconds, 3),
            "skipped_reason": self.skipped_reason,
        }


def _complete_checkpoints(files: list[LogPath]) -> set[int]:
    """Versions with a checkpoint a reader can use (all parts of a multi-part one)."""
    complete: set[int] = set()
    parts: dict[tuple[int, int], set[int]] = {}
    for f in files:
        if f.kind in (LogFileKind.CHECKPOINT, LogFileKind.V2_CHECKPOINT):
            complete.add(f.version)
        elif f.kind is LogFileKind.MULTIPART_CHECKPOINT:
            assert f.num_parts is not None and f.part is not None
            parts.setdefault((f.version, f.num_parts), set()).add(f.part)
    for (version, n), seen in parts.items():
        if len(seen) == n:
            complete.add(version)
    return complete


def plan_log_cleanup(files: list[LogPath], *, cutoff_ms: int) -> tuple[int | None, list[LogPath]]:
    """Pure rule: (checkpoint version kept as the start, files to delete) for a listing."""
    commits = sorted((f for f in files if f.kind is LogFileKind.COMMIT), key=lambda f: f.version)
    timestamps: dict[int, int] = {}
    prev = None
    for c in commits:
        ts = c.modification_time if prev is None else max(c.modification_time, prev + 1)
        timestamps[c.version] = ts
        prev = ts
    expired = [v for v, ts in timestamps.items() if ts <= cutoff_ms]
    if not expired:
        return None, []
    newest_expired = max(expired)
    candidates = [v for v in _complete_checkpoints(files) if v <= newest_expired]
    if not candidates:
        return None, []
    keep_from = max(candidates)
    doomed: list[LogPath] = []
    for f in files:
        if f.kind is LogFileKind.COMPACTED_COMMITS:
            # Step 3: every compaction starting at or before the kept checkpoint goes; readers
            # start after that checkpoint, so none of them can be used any more.
            if f.version <= keep_from:
                doomed.append(f)
            continue
        if f.version >= keep_from:
            continue
        ts = timestamps.get(f.version, f.modification_time) if f.kind is LogFileKind.COMMIT else f.modification_time
        if ts <= cutoff_ms:
            doomed.append(f)
    doomed.sort(key=lambda f: (f.version, f.kind is LogFileKind.COMMIT, f.name))
    return keep_from, doomed


def cleanup_log(
    table: DeltaTable,
    *,
    clock: Clock | None = None,
    dry_run: bool = False,
    retention: dt.timedelta | None = None,
    ignore_log_cleanup_disabled: bool = False,
) -> LogCleanupResult:
    """Delete expired log files of ``table``; "now" is ``clock()`` (default: the table's clock).

    ``ignore_log_cleanup_disabled`` deletes even when the table has
    ``delta.enableExpiredLogCleanup=false``: only for an explicit request by a person.
    """
    started = time.monotonic()
    storage = table.storage
    # The gate comes first, explicit retention or not: deleting log files is a write.
    protocol, metadata = table.protocol_and_metadata()
    check_write_supported(protocol, metadata, path=table.uri)
    props = TableProperties(metadata.configuration)
    if retention is None:
        retention = props.log_retention
    now = (clock or table.clock)()
    cutoff = now - int(retention.total_seconds() * 1000)
    if not props.expired_log_cleanup and not ignore_log_cleanup_disabled:
        reason = (f"{ENABLE_EXPIRED_LOG_CLEANUP}=false: the table's owner turned log cleanup off, so "
                  "nothing was deleted; set the property to true, or pass the explicit override "
                  "(cleanup-log --ignore-log-cleanup-disabled) if you own the table")
        log.info("table=%s log cleanup skipped: %s", table.uri, reason)
        return LogCleanupResult(checkpoint_version=None, cutoff_ms=cutoff, dry_run=dry_run,
                                duration_seconds=time.monotonic() - started, skipped_reason=reason)
    listed: list[LogPath] = []
    abandoned: list[str] = []
    abandoned_bytes = 0
    temp_cutoff = min(cutoff, sidecar_cutoff_ms(now))
    for info in storage.list_from(LOG_DIR, ""):
        lp = parse_log_name(info.name, size=info.size, modification_time=info.modification_time)
        if lp is not None:
            listed.append(lp)
        elif _ABANDONED_TEMP.match(info.name) and info.modification_time <= temp_cutoff:
            abandoned.append(info.key)
            abandoned_bytes += info.size
    keep_from, doomed = plan_log_cleanup(listed, cutoff_ms=cutoff)
    skipped_reason = None
    boundary = protected_before(protocol, metadata)
    if boundary > 0 and keep_from is not None and doomed:
        doomed, skipped_reason = protect_checkpoints(table, doomed, keep_from=keep_from, boundary=boundary)
        if skipped_reason is not None:
            log.info("table=%s log cleanup skipped: %s", table.uri, skipped_reason)
            keep_from = None
    keys = [f.key for f in doomed]
    if keep_from is not None:
        # Steps 4-5 of "Metadata Cleanup": sidecars no remaining checkpoint references, once old
        # enough; planned before anything is deleted, and deleted after the checkpoints.
        gone = set(keys)
        remaining = [f for f in listed if f.is_checkpoint and f.key not in gone]
        keys += plan_sidecar_cleanup(storage, remaining, now_ms=now)
    keys += abandoned
    if keys and not dry_run:
        # In plan order (oldest first; commits before checkpoints under checkpointProtection),
        # in batches: an interruption leaves a log that still starts at a checkpoint.
        for i in range(0, len(keys), 1000):
            storage.delete_many(keys[i:i + 1000])
        log.info("table=%s log cleanup deleted %d file(s) before checkpoint %s", table.uri, len(keys), keep_from)
    return LogCleanupResult(
        checkpoint_version=keep_from, cutoff_ms=cutoff, deleted=tuple(keys), dry_run=dry_run,
        duration_seconds=time.monotonic() - started, skipped_reason=skipped_reason,
        deleted_bytes=sum(f.size or 0 for f in doomed) + abandoned_bytes,
    )
