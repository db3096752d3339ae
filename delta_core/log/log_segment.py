"""The log segment: which log files make up a snapshot (PROTOCOL.md "Checkpoints",
"Delta Log Entries", "Last Checkpoint File").

A snapshot at version ``v`` is the newest *complete* checkpoint with version ``<= v`` (classic
single file, multi-part with every part present, or a UUID-named V2 checkpoint) plus the
commits ``checkpoint + 1 .. v``, every one of which must exist; without a checkpoint it is
commits ``0 .. v``. Commits older than the checkpoint may be missing. Log compaction files
(``x.y.compacted.json``, PROTOCOL.md "Log Compaction Files") inside that commit range replace
the commits they cover when the snapshot is read (``replay_files``): one read instead of
``y - x + 1``; the commits must still exist, so a compaction never hides a gap.

Listing starts at the ``_last_checkpoint`` hint, never at the beginning of the log, when the
hint is usable; a hint that turns out wrong (no complete checkpoint at or after it, or nothing
listed from it) falls back to one full listing. This module only decides *which* files; reading
them is ``checkpoint_read`` and ``replay``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from delta_core.errors import LogGapError, NotADeltaTableError, VersionNotFoundError
from delta_core.log.last_checkpoint import LastCheckpoint, read_last_checkpoint
from delta_core.log.log_path import LOG_DIR, LogFileKind, LogPath, parse_log_name, version_prefix
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)

_UNSET = object()


@dataclass(frozen=True, slots=True)
class LogSegment:
    """The files to read for one snapshot.

    Invariants (checked on construction):
    - ``checkpoint_files`` is empty (``checkpoint_version is None``) or all share
      ``checkpoint_version``; a multi-part checkpoint lists every part ``1..n`` in order;
    - ``commit_files`` are contiguous, ascending, start right after the checkpoint (or at 0)
      and end at ``version``; with a checkpoint at ``version`` there are none;
    - ``compactions`` are log compaction files inside that commit range, ascending and
      non-overlapping.
    """

    version: int
    checkpoint_version: int | None
    checkpoint_files: tuple[LogPath, ...]
    commit_files: tuple[LogPath, ...]
    table_root: str = ""
    checksum_file: LogPath | None = None  # the listed ``<version>.crc``, if any (optional)
    compactions: tuple[LogPath, ...] = ()

    def __post_init__(self) -> None:
        where = self.table_root or None
        if self.checkpoint_version is None:
            if self.checkpoint_files:
                raise LogGapError("checkpoint files given without a checkpoint version", path=where)
            first = 0
        else:
            if not self.checkpoint_files:
                raise LogGapError(f"checkpoint {self.checkpoint_version} has no files", path=where)
            if any(f.version != self.checkpoint_version or not f.is_checkpoint for f in self.checkpoint_files):
                raise LogGapError("checkpoint files of different versions in one segment", path=where)
            kinds = {f.kind for f in self.checkpoint_files}
            if len(kinds) != 1 or (kinds != {LogFileKind.MULTIPART_CHECKPOINT} and len(self.checkpoint_files) != 1):
                raise LogGapError("a segment uses exactly one checkpoint", path=where)
            if kinds == {LogFileKind.MULTIPART_CHECKPOINT}:
                n = self.checkpoint_files[0].num_parts
                if [f.part for f in self.checkpoint_files] != list(range(1, (n or 0) + 1)):
                    raise LogGapError(
                        f"multi-part checkpoint {self.checkpoint_version} is incomplete",
                        path=where, version=self.checkpoint_version,
                    )
            if self.checkpoint_version > self.version:
                raise LogGapError("checkpoint is newer than the segment version", path=where)
            first = self.checkpoint_version + 1
        expected = list(range(first, self.version + 1))
        got = [c.version for c in self.commit_files]
        if got != expected or any(c.kind is not LogFileKind.COMMIT for c in self.commit_files):
            missing = sorted(set(expected) - set(got))
            raise LogGapError(
                f"commit {missing[0] if missing else '?'} needed for version {self.version} is missing "
                f"from {where or 'the log'}; restore it or read a version covered by a checkpoint",
                path=where, version=missing[0] if missing else self.version,
            )
        after = expected[0] if expected else self.version + 1
        for c in self.compactions:
            if c.kind is not LogFileKind.COMPACTED_COMMITS or c.end_version is None \
                    or c.version < after or c.end_version > self.version:
                raise LogGapError(f"log compaction {c.name} is not inside commits {after}..{self.version}",
                                  path=where, version=c.version)
            after = c.end_version + 1

    @property
    def files(self) -> tuple[LogPath, ...]:
        return self.checkpoint_files + self.commit_files

    @property
    def replay_files(self) -> tuple[LogPath, ...]:
        """The files to replay after the checkpoint: ``commit_files`` with the ranges of
        ``compactions`` each read as its one compaction file."""
        if not self.compactions:
            return self.commit_files
        out: list[LogPath] = []
        pending = list(self.compactions)
        skip_to = -1
        for c in self.commit_files:
            if c.version <= skip_to:
                continue
            if pending and pending[0].version == c.version:
                compaction = pending.pop(0)
                out.append(compaction)
                skip_to = compaction.end_version or c.version
                continue
            out.append(c)
        return tuple(out)

    @property
    def last_commit(self) -> LogPath | None:
        return self.commit_files[-1] if self.commit_files else None


# --- listing -----------------------------------------------------------------------------


def list_log(storage: Storage, *, start_version: int = 0, end_version: int | None = None,
             with_checksums: bool = False) -> list[LogPath]:
    """Log files with version in ``[start_version, end_version]``, sorted by name.

    Hidden files, ``.crc`` (unless ``with_checksums``), sub-directories and unknown names are
    skipped. Listing stops at the first name past ``end_version`` so time travel need not read
    the rest of the directory.
    """
    start = version_prefix(start_version) if start_version > 0 else ""
    out: list[LogPath] = []
    for info in storage.list_from(LOG_DIR, start):
        lp = parse_log_name(info.name, size=info.size, modification_time=info.modification_time)
        if lp is None or (lp.kind is LogFileKind.CRC and not with_checksums) or lp.version < start_version:
            continue
        if end_version is not None and lp.version > end_version:
            break
        out.append(lp)
    return out


@dataclass(frozen=True, slots=True)
class _Checkpoint:
    version: int
    files: tuple[LogPath, ...]


def complete_checkpoints(files: Iterable[LogPath]) -> list[_Checkpoint]:
    """Complete checkpoints among ``files``, oldest first; at most one per version.

    A multi-part checkpoint counts only when all its parts are there (it is not written
    atomically). When several complete checkpoints share a version any of them is valid; we
    prefer a classic single file, then V2, then multi-part, for the fewest reads.
    """
    singles: dict[int, LogPath] = {}
    v2: dict[int, LogPath] = {}
    parts: dict[tuple[int, int], dict[int, LogPath]] = {}
    for f in files:
        if f.kind is LogFileKind.CHECKPOINT:
            singles.setdefault(f.version, f)
        elif f.kind is LogFileKind.V2_CHECKPOINT:
            # Prefer the parquet form only for determinism; both are complete by name.
            if f.version not in v2 or f.name < v2[f.version].name:
                v2[f.version] = f
        elif f.kind is LogFileKind.MULTIPART_CHECKPOINT:
            parts.setdefault((f.version, f.num_parts or 0), {})[f.part or 0] = f
    chosen: dict[int, _Checkpoint] = {}
    for (version, n), found in parts.items():
        if len(found) == n and version not in chosen:
            chosen[version] = _Checkpoint(version, tuple(found[i] for i in range(1, n + 1)))
    for version, f in v2.items():
        chosen[version] = _Checkpoint(version, (f,))
    for version, f in singles.items():
        chosen[version] = _Checkpoint(version, (f,))
    return [chosen[v] for v in sorted(chosen)]


def _segment_from_listing(
    listed: list[LogPath], version: int | None, table_root: str, *, older_than_listing: bool,
) -> LogSegment:
    files = [f for f in listed if f.kind is not LogFileKind.CRC]
    checksums = {f.version: f for f in listed if f.kind is LogFileKind.CRC}
    commits = {f.version: f for f in files if f.kind is LogFileKind.COMMIT}
    checkpoints = complete_checkpoints(files)
    latest = max([*commits, *(c.version for c in checkpoints)], default=None)
    if latest is None:
        raise NotADeltaTableError(
            f"{table_root} has a _delta_log but no commit or checkpoint in it; it is not a Delta "
            "table (create one, or point at the table root)", path=table_root,
        )
    target = latest if version is None else version
    if target > latest:
        raise VersionNotFoundError(
            f"version {target} does not exist in {table_root}: the latest version is {latest}",
            path=table_root, version=target,
        )
    usable = [c for c in checkpoints if c.version <= target]
    cp = usable[-1] if usable else None
    first = cp.version + 1 if cp else 0
    needed = range(first, target + 1)
    missing = [v for v in needed if v not in commits]
    if missing:
        if cp is None and older_than_listing:
            raise VersionNotFoundError(
                f"version {target} of {table_root} cannot be reconstructed: commit {missing[0]} "
                "is gone and no checkpoint covers it (it was probably removed by log cleanup)",
                path=table_root, version=target,
            )
        raise LogGapError(
            f"commit {missing[0]} of {table_root} is missing and no checkpoint covers it, so "
            f"version {target} cannot be read; restore {version_prefix(missing[0])}.json from a "
            "backup, or read a version after a complete checkpoint",
            path=table_root, version=missing[0],
        )
    return LogSegment(
        version=target,
        checkpoint_version=cp.version if cp else None,
        checkpoint_files=cp.files if cp else (),
        commit_files=tuple(commits[v] for v in needed),
        table_root=table_root,
        checksum_file=checksums.get(target),
        compactions=_useful_compactions(files, first, target),
    )


def _useful_compactions(files: Iterable[LogPath], first: int, last: int) -> tuple[LogPath, ...]:
    """Compaction files to read instead of commits ``first..last``: from each version, the
    one reaching furthest (each replaces at least two commits), not overlapping."""
    furthest: dict[int, LogPath] = {}
    for f in files:
        if f.kind is LogFileKind.COMPACTED_COMMITS and f.end_version is not None \
                and first <= f.version and f.end_version <= last:
            best = furthest.get(f.version)
            if best is None or (best.end_version or 0) < f.end_version:
                furthest[f.version] = f
    chosen: list[LogPath] = []
    after = first
    for start in sorted(furthest):
        if start >= after:
            chosen.append(furthest[start])
            after = (furthest[start].end_version or start) + 1
    return tuple(chosen)


def _no_log(storage: Storage) -> NotADeltaTableError:
    return NotADeltaTableError(
        f"{storage.root} is not a Delta table: there is no {LOG_DIR}/ with a commit or checkpoint "
        "(check the path, or create the table first)", path=storage.root,
    )


def build_log_segment(
    storage: Storage,
    *,
    version: int | None = None,
    hint: LastCheckpoint | None | object = _UNSET,
) -> LogSegment:
    """The segment for ``version`` (latest when ``None``).

    Raises ``NotADeltaTableError`` (no log), ``VersionNotFoundError`` (beyond the latest, or
    negative), ``LogGapError`` (a needed commit is missing).
    """
    if version is not None and version < 0:
        raise VersionNotFoundError(f"version {version} is negative", path=storage.root, version=version)
    if hint is _UNSET:
        hint = read_last_checkpoint(storage)
    root = storage.root
    if isinstance(hint, LastCheckpoint) and (version is None or hint.version <= version):
        files = list_log(storage, start_version=hint.version, end_version=version, with_checksums=True)
        # Usable only if a complete checkpoint at or after the hint (and not after the
        # target: the listing stops there) covers everything before it.
        if complete_checkpoints(files):
            return _segment_from_listing(files, version, root, older_than_listing=False)
        log.warning(
            "%s/_last_checkpoint points at version %d but no complete checkpoint is there; "
            "listing the whole log", root, hint.version,
        )
    files = list_log(storage, end_version=version, with_checksums=True)
    if not any(f.kind is not LogFileKind.CRC for f in files):
        if version is not None and list_log(storage):
            raise VersionNotFoundError(
                f"version {version} is older than anything the log of {root} keeps",
                path=root, version=version,
            )
        raise _no_log(storage)
    # With time travel, a log whose oldest commits were cleaned up is not a gap in the table.
    earliest = min(f.version for f in files if f.kind is not LogFileKind.CRC)
    return _segment_from_listing(files, version, root, older_than_listing=earliest > 0 and version is not None)


def list_from_hint(storage: Storage) -> list[LogPath]:
    """Log files from the ``_last_checkpoint`` hint on (the whole log when the hint is
    absent or lists nothing): enough to find the latest version and newest checkpoint."""
    hint = read_last_checkpoint(storage)
    if hint is not None:
        files = list_log(storage, start_version=hint.version)
        if any(c.version >= hint.version for c in complete_checkpoints(files)):
            return files
    return list_log(storage)


def latest_version(storage: Storage) -> int:
    """The highest version with a commit or a complete checkpoint."""
    files = list_from_hint(storage)
    versions = [f.version for f in files if f.kind is LogFileKind.COMMIT]
    versions += [c.version for c in complete_checkpoints(files)]
    if not versions:
        raise _no_log(storage)
    return max(versions)


def latest_checkpoint_version(storage: Storage) -> int | None:
    """Version of the newest complete checkpoint, or ``None`` if the log has none."""
    checkpoints = complete_checkpoints(list_from_hint(storage))
    return checkpoints[-1].version if checkpoints else None

