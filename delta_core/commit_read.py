"""Reading commit files in bulk for replay (PROTOCOL.md "Delta Log Entries").

Each commit line is parsed once with the C JSON decoder; ``add``/``remove`` bodies go straight
into Arrow columns (``file_actions.table_from_json``) instead of becoming one record object
per file, and every file action gets a global ``order`` (commit, then line) so replay can pick
the newest action per key with vectorised sorts. The few non-file actions become records.
Commit files are fetched concurrently: on object stores the latency, not parsing, dominates.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa

from delta_core.actions import (
    CommitInfo, DomainMetadata, Metadata, Protocol, Txn, action_from_json, iter_log_lines,
)
from delta_core.errors import CorruptLogError, LogGapError
from delta_core.file_actions import table_from_json
from delta_core.log_path import LogPath
from delta_core.storage.base import Storage

_MAX_PARALLEL_READS = 8
# Actions that never take part in snapshot replay (PROTOCOL.md "Action Reconciliation":
# v2-checkpoint-only actions are not allowed in commits; cdc is for change readers only).
_IGNORED = frozenset({"cdc", "checkpointMetadata", "sidecar"})


@dataclass(slots=True)
class ParsedCommit:
    """One commit: file-action bodies in line order plus its other actions."""

    version: int
    modification_time: int
    adds: list[dict[str, Any]] = field(default_factory=list)
    removes: list[dict[str, Any]] = field(default_factory=list)
    add_lines: list[int] = field(default_factory=list)
    remove_lines: list[int] = field(default_factory=list)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: list[Txn] = field(default_factory=list)
    domain_metadata: list[DomainMetadata] = field(default_factory=list)
    commit_info: CommitInfo | None = None
    num_lines: int = 0


def parse_commit(data: bytes, *, version: int, source: str, modification_time: int = 0) -> ParsedCommit:
    """Parse one commit file; malformed content raises ``CorruptLogError`` naming the line."""
    out = ParsedCommit(version=version, modification_time=modification_time)
    lineno = 0
    for lineno, key, body in iter_log_lines(
        data, source=f"{source} (version {version})", version=version,
        remedy="restore it from a backup or from the writer's output",
    ):
        if key == "add" or key == "remove":
            if not isinstance(body, dict):
                raise CorruptLogError(f"line {lineno} of {source}: {key} is not an object",
                                      path=source, version=version)
            (out.adds if key == "add" else out.removes).append(body)
            (out.add_lines if key == "add" else out.remove_lines).append(lineno)
            continue
        if key in _IGNORED:
            continue
        try:
            action = action_from_json({key: body})
        except CorruptLogError as exc:
            raise CorruptLogError(f"{source}: line {lineno}: {exc}", path=source, version=version) from exc
        if isinstance(action, Protocol):
            out.protocol = action
        elif isinstance(action, Metadata):
            out.metadata = action
        elif isinstance(action, Txn):
            out.txns.append(action)
        elif isinstance(action, DomainMetadata):
            out.domain_metadata.append(action)
        elif isinstance(action, CommitInfo):
            out.commit_info = action
    out.num_lines = lineno
    return out


def _read_commit(storage: Storage, f: LogPath) -> ParsedCommit:
    try:
        data = storage.read(f.key)
    except FileNotFoundError:
        raise LogGapError(
            f"commit {f.version} ({storage.uri(f.key)}) disappeared while reading; retry (a log "
            "cleanup may have removed it)", path=storage.uri(f.key), version=f.version,
        ) from None
    return parse_commit(data, version=f.version, source=storage.uri(f.key), modification_time=f.modification_time)


def read_commits(storage: Storage, files: Sequence[LogPath]) -> list[ParsedCommit]:
    """Parse ``files`` (ascending versions), fetching them concurrently."""
    if len(files) <= 1:
        return [_read_commit(storage, f) for f in files]
    with ThreadPoolExecutor(max_workers=min(_MAX_PARALLEL_READS, len(files))) as pool:
        return list(pool.map(lambda f: _read_commit(storage, f), files))


@dataclass(frozen=True, slots=True)
class CommitBatch:
    """A contiguous run of parsed commits in columnar form, ready for reconciliation.

    ``add_order``/``remove_order`` give each file action's position in the log (higher is
    newer); the other actions are kept in log order.
    """

    commits: tuple[ParsedCommit, ...]
    adds: pa.Table
    removes: pa.Table
    add_order: pa.Array
    remove_order: pa.Array

    @property
    def versions(self) -> list[int]:
        return [c.version for c in self.commits]

    @property
    def has_file_actions(self) -> bool:
        return self.adds.num_rows > 0 or self.removes.num_rows > 0


def build_batch(commits: Sequence[ParsedCommit], *, source: str) -> CommitBatch:
    """Columnar file actions of ``commits`` with their global order."""
    add_bodies: list[dict] = []
    remove_bodies: list[dict] = []
    add_order: list[int] = []
    remove_order: list[int] = []
    base = 0
    for c in commits:
        add_bodies += c.adds
        remove_bodies += c.removes
        add_order += [base + n for n in c.add_lines]
        remove_order += [base + n for n in c.remove_lines]
        base += c.num_lines + 1
    try:
        adds = table_from_json(add_bodies, tombstones=False, source=source)
        removes = table_from_json(remove_bodies, tombstones=True, source=source)
    except CorruptLogError:
        _raise_for_culprit(commits, source)
        raise
    return CommitBatch(
        commits=tuple(commits), adds=adds, removes=removes,
        add_order=pa.array(add_order, pa.int64()), remove_order=pa.array(remove_order, pa.int64()),
    )


def _raise_for_culprit(commits: Sequence[ParsedCommit], source: str) -> None:
    """Re-convert commit by commit so the error names the commit that holds the bad action
    (the batch conversion only knows the table)."""
    for c in commits:
        where = f"{source} commit {c.version}"
        try:
            table_from_json(c.adds, tombstones=False, source=where)
            table_from_json(c.removes, tombstones=True, source=where)
        except CorruptLogError as exc:
            raise CorruptLogError(
                f"{exc}; restore commit {c.version} from a backup or ask its writer",
                path=source, version=c.version,
            ) from exc
