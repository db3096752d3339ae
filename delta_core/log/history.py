"""Commit history and timestamps (PROTOCOL.md "Commit Provenance Information" and
"In-Commit Timestamps").

A commit's timestamp is its ``commitInfo.inCommitTimestamp`` for versions written while
in-commit timestamps are enabled (from ``delta.inCommitTimestampEnablementVersion`` on), and
otherwise the commit file's modification time, made strictly increasing across versions as
Delta does (clock skew between writers must not make time go backwards). The snapshot "as of"
a timestamp is the latest version committed at or before it.

Only the commit files a question needs are read: ``history(limit)`` reads ``limit`` files,
the timestamp search reads O(log n) of them for in-commit timestamps and none otherwise.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

from delta_core.errors import CorruptLogError, TimestampAfterLatestCommitError, VersionNotFoundError
from delta_core.log.log_path import LogFileKind, LogPath, commit_key
from delta_core.log.log_segment import list_log
from delta_core.model.clock import iso_time
from delta_core.model.table_properties import TableProperties
from delta_core.storage.base import Storage

ICT_ENABLEMENT_VERSION = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP = "delta.inCommitTimestampEnablementTimestamp"


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One entry of ``DeltaTable.history``: the version, its timestamp (epoch ms) and the raw
    ``commitInfo`` object (empty when the commit has none)."""

    version: int
    timestamp: int
    commit_info: Mapping[str, Any] = field(default_factory=dict)


def to_epoch_ms(value: int | float | dt.datetime | dt.date | str) -> int:
    """Epoch milliseconds from ms, a datetime (naive = UTC), a date or an ISO-8601 string."""
    if isinstance(value, bool):
        raise TypeError("a timestamp cannot be a bool")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, dt.date):
        return int(dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp() * 1000)
    raise TypeError(f"cannot use {value!r} as a timestamp")


# Bytes of a commit read first when looking for its ``commitInfo``: writers put it on the first
# line, so a commit of millions of ``add`` lines is not read whole for it.
COMMIT_INFO_PREFIX = 64 * 1024


def read_commit_info(storage: Storage, version: int) -> dict[str, Any]:
    """The ``commitInfo`` object of commit ``version`` (``{}`` if it has none).

    Reads lines until it meets ``commitInfo`` (writers put it first), without building the
    other actions: the first ``COMMIT_INFO_PREFIX`` bytes, and the whole file only when they end
    before it.
    """
    key = commit_key(version)
    try:
        with storage.open_input(key) as fh:
            head = fh.read(COMMIT_INFO_PREFIX + 1)
        whole = len(head) <= COMMIT_INFO_PREFIX
        lines = head.splitlines() if whole else head[:head.rfind(b"\n") + 1].splitlines()
        found = _commit_info_in(lines, storage.uri(key), version)
        if found is None and not whole:
            found = _commit_info_in(storage.read(key).splitlines(), storage.uri(key), version)
    except FileNotFoundError:
        raise VersionNotFoundError(
            f"commit {version} of {storage.root} does not exist (never written, or removed by log "
            "cleanup)", path=storage.root, version=version,
        ) from None
    return found or {}


def _commit_info_in(lines: Sequence[bytes], source: str, version: int) -> dict[str, Any] | None:
    """The first ``commitInfo`` object among ``lines``; None if none holds one."""
    for lineno, line in enumerate(lines, 1):
        if b'"commitInfo"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise CorruptLogError(
                f"line {lineno} of {source} is not valid JSON ({exc}); restore the commit "
                "from a backup", path=source, version=version,
            ) from exc
        if isinstance(obj, dict) and isinstance(obj.get("commitInfo"), dict):
            return cast(dict[str, Any], obj["commitInfo"])  # checked to be a dict just above
    return None


def _ict(info: Mapping[str, Any]) -> int | None:
    value = info.get("inCommitTimestamp")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def monotonic_times(commits: Sequence[LogPath]) -> list[int]:
    """File modification times made strictly increasing in version order."""
    out: list[int] = []
    for c in commits:
        t = c.modification_time
        if out and t <= out[-1]:
            t = out[-1] + 1
        out.append(t)
    return out


def ict_start_version(configuration: Mapping[str, str]) -> int | None:
    """The first version whose commit time is its ``inCommitTimestamp``: the enablement version,
    0 when the table had them from its creation, ``None`` when they are not enabled now."""
    if not TableProperties(configuration).in_commit_timestamps:
        return None
    raw = configuration.get(ICT_ENABLEMENT_VERSION)
    return int(raw) if raw is not None else 0


def history(
    storage: Storage, latest_version: int, *, limit: int | None = None,
    ict_start: Callable[[], int | None] | None = None,
) -> list[CommitRecord]:
    """``commitInfo`` per version, newest first, reading only the ``limit`` newest commits.

    ``ict_start`` gives ``ict_start_version`` of the latest metadata; it is asked only when a
    commit read carries an ``inCommitTimestamp``. Versions from it on report that timestamp,
    earlier ones (and all, when in-commit timestamps are off now) the file time, as the
    protocol's reader recommendations and time travel (``version_at_timestamp``) do.
    """
    if limit is not None and limit <= 0:
        return []
    start = 0 if limit is None else max(0, latest_version - limit + 1)
    commits = [f for f in list_log(storage, start_version=start, end_version=latest_version)
               if f.kind is LogFileKind.COMMIT]
    times = monotonic_times(commits)
    with ThreadPoolExecutor(max_workers=max(1, min(8, len(commits)))) as pool:
        infos = list(pool.map(lambda f: read_commit_info(storage, f.version), commits))
    ict_from = None
    if ict_start is not None and any(_ict(info) is not None for info in infos):
        ict_from = ict_start()
    records = [
        CommitRecord(c.version, ict if ict_from is not None and c.version >= ict_from
                     and (ict := _ict(info)) is not None else t, info)
        for c, t, info in zip(commits, times, infos)
    ]
    records.reverse()
    return records[:limit] if limit is not None else records


def version_at_timestamp(
    storage: Storage, timestamp_ms: int, *, configuration: Mapping[str, str], ict_enabled: bool,
    refuse_after_latest: bool = False,
) -> int:
    """The latest version committed at or before ``timestamp_ms``.

    ``configuration``/``ict_enabled`` come from the latest snapshot: they say from which version
    on commit times are in-commit timestamps. Raises ``VersionNotFoundError`` when the time is
    before the earliest commit the log still has and, with ``refuse_after_latest`` (time travel,
    as Delta Spark does it), ``TimestampAfterLatestCommitError`` when it is after the latest
    commit: a later commit may still land at that time. Cut-offs (vacuum lite) leave it off.
    """
    commits = [f for f in list_log(storage) if f.kind is LogFileKind.COMMIT]
    if not commits:
        raise VersionNotFoundError(f"{storage.root} has no commits to search by time",
                                   path=storage.root)
    ict_from = ict_start_version(configuration) if ict_enabled else None
    file_commits = [c for c in commits if ict_from is None or c.version < ict_from]
    ict_commits = [c for c in commits if ict_from is not None and c.version >= ict_from]

    if refuse_after_latest:
        _refuse_after_latest(storage, timestamp_ms, file_commits, ict_commits)
    if ict_commits:
        first_ict = _ict(read_commit_info(storage, ict_commits[0].version))
        if first_ict is not None and timestamp_ms >= first_ict:
            # Binary search on in-commit timestamps, which writers keep strictly increasing.
            lo, hi = 0, len(ict_commits) - 1
            while lo < hi:
                mid = (lo + hi + 1) // 2
                t = _ict(read_commit_info(storage, ict_commits[mid].version))
                if t is None:
                    raise CorruptLogError(
                        f"commit {ict_commits[mid].version} lacks inCommitTimestamp although the "
                        "table enables in-commit timestamps", path=storage.root,
                        version=ict_commits[mid].version,
                    )
                if t <= timestamp_ms:
                    lo = mid
                else:
                    hi = mid - 1
            return ict_commits[lo].version
    times = monotonic_times(file_commits)
    best: int | None = None
    for c, t in zip(file_commits, times):
        if t > timestamp_ms:
            break
        best = c.version
    if best is None:
        first = times[0] if times else None
        raise VersionNotFoundError(
            f"no version of {storage.root} was committed at or before {iso_time(timestamp_ms)}"
            + (f"; the earliest available commit is at {iso_time(first)}" if first is not None else ""),
            path=storage.root,
        )
    return best


def _refuse_after_latest(storage: Storage, timestamp_ms: int, file_commits: Sequence[LogPath],
                         ict_commits: Sequence[LogPath]) -> None:
    """Raise ``TimestampAfterLatestCommitError`` when ``timestamp_ms`` is after the latest
    commit's timestamp (its in-commit timestamp, or its file time made monotonic)."""
    latest = (ict_commits or file_commits)[-1]
    latest_ms = (_ict(read_commit_info(storage, latest.version)) if ict_commits
                 else monotonic_times(file_commits)[-1])
    if latest_ms is None or timestamp_ms <= latest_ms:
        return
    raise TimestampAfterLatestCommitError(
        f"the provided timestamp ({iso_time(timestamp_ms)}) is after the latest version available to "
        f"{storage.root} (version {latest.version}, committed {iso_time(latest_ms)}): use a timestamp "
        f"at or before {iso_time(latest_ms)}, or no timestamp for the latest version",
        path=storage.root, version=latest.version,
    )
