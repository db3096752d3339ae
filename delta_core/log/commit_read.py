"""Reading commit files in bulk for replay (PROTOCOL.md "Delta Log Entries").

``add``/``remove`` bodies go straight into Arrow columns instead of becoming one record object
per file, and every file action gets a global ``order`` (commit, then line) so replay can pick
the newest action per key with vectorised sorts. The few non-file actions become records.

Two decoders, one result. Commits of 64 KiB or more go through Arrow's JSON reader (C++,
multi-threaded), the whole file at once (``commit_json``). Whatever that reader cannot decode
exactly (odd types, several objects on a line, unknown shapes, invalid UTF-8) makes it give
up, and the commit is decoded line by line with ``json.loads`` (``iter_log_lines``), which is
also the only source of errors: every ``CorruptLogError`` names the file and line as before.
Commit files are fetched concurrently: on object stores the latency, not parsing, dominates.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from delta_core.errors import CorruptLogError, LogGapError
from delta_core.log.commit_json import CommitColumns, decode_commit
from delta_core.log.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA, table_from_json
from delta_core.log.log_path import LogPath
from delta_core.model.actions import (
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    Txn,
    action_from_json,
    iter_log_lines,
)
from delta_core.model.arrow_values import empty_table, int_array
from delta_core.storage.base import Storage

_MAX_PARALLEL_READS = 8
_COLUMNAR_DECODE = threading.Lock()
# Below this size the per-line decoder is faster than setting up Arrow's reader (~1 ms).
COLUMNAR_MIN_BYTES = 64 * 1024
# Actions that never take part in snapshot replay (PROTOCOL.md "Action Reconciliation":
# v2-checkpoint-only actions are not allowed in commits; cdc is for change readers only).
_IGNORED = frozenset({"cdc", "checkpointMetadata", "sidecar"})


@dataclass(slots=True)
class ParsedCommit:
    """One commit: its file actions and its other actions.

    File actions are either ``columns`` (the columnar decoder's Arrow tables with line numbers)
    or, from the per-line decoder, JSON bodies in line order (``adds``/``removes`` with
    ``add_lines``/``remove_lines``), converted to Arrow in ``build_batch``.
    """

    version: int
    modification_time: int
    adds: list[dict[str, Any]] = field(default_factory=list)
    removes: list[dict[str, Any]] = field(default_factory=list)
    add_lines: list[int] = field(default_factory=list)
    remove_lines: list[int] = field(default_factory=list)
    columns: CommitColumns | None = None
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: list[Txn] = field(default_factory=list)
    domain_metadata: list[DomainMetadata] = field(default_factory=list)
    commit_info: CommitInfo | None = None
    num_lines: int = 0

    @property
    def columnar(self) -> bool:
        """Whether the columnar decoder read this commit."""
        return self.columns is not None


def parse_commit(
    data: bytes, *, version: int, source: str, modification_time: int = 0, columnar: bool | None = None,
) -> ParsedCommit:
    """Parse one commit file; malformed content raises ``CorruptLogError`` naming the line.

    ``columnar`` forces (``True``) or disables (``False``) the columnar decoder; by default it
    runs for commits of ``COLUMNAR_MIN_BYTES`` or more. Either way the result is the same.
    """
    if columnar is None:
        columnar = len(data) >= COLUMNAR_MIN_BYTES
    if columnar:
        decoded = decode_commit(data)
        if decoded is not None:
            out = ParsedCommit(version=version, modification_time=modification_time,
                               columns=decoded.columns, num_lines=decoded.num_lines)
            try:
                for lineno, key, body in decoded.other_actions:
                    _add_action(out, key, body, lineno, source=source, version=version)
            except CorruptLogError:
                pass  # let the per-line decoder raise it, with its exact message
            else:
                return out
    return _parse_lines(data, version=version, source=source, modification_time=modification_time)


def _parse_lines(data: bytes, *, version: int, source: str, modification_time: int) -> ParsedCommit:
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
        _add_action(out, key, body, lineno, source=source, version=version)
    out.num_lines = lineno
    return out


def _add_action(out: ParsedCommit, key: str, body: Any, lineno: int, *, source: str, version: int) -> None:
    """Record one non-file action of a commit."""
    if key in _IGNORED:
        return
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


def _read_commit(storage: Storage, f: LogPath) -> ParsedCommit:
    try:
        data = storage.read(f.key)
    except FileNotFoundError:
        raise LogGapError(
            f"commit {f.version} ({storage.uri(f.key)}) disappeared while reading; retry (a log "
            "cleanup may have removed it)", path=storage.uri(f.key), version=f.version,
        ) from None
    if len(data) < COLUMNAR_MIN_BYTES:
        return parse_commit(data, version=f.version, source=storage.uri(f.key), modification_time=f.modification_time)
    # Arrow's reader already uses every core: decoding big commits one at a time is faster
    # than side by side, and their tables then build up one by one (lower peak memory).
    with _COLUMNAR_DECODE:
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
        return bool(self.adds.num_rows > 0 or self.removes.num_rows > 0)


def build_batch(commits: Sequence[ParsedCommit], *, source: str) -> CommitBatch:
    """Columnar file actions of ``commits`` with their global order."""
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    add_order: list[pa.Array] = []
    remove_order: list[pa.Array] = []
    pending: list[tuple[ParsedCommit, int]] = []  # per-line commits, converted together

    def flush() -> None:
        if not pending:
            return
        group = [c for c, _ in pending]
        try:
            adds.append(table_from_json([b for c in group for b in c.adds], tombstones=False, source=source))
            removes.append(table_from_json([b for c in group for b in c.removes], tombstones=True, source=source))
        except CorruptLogError:
            _raise_for_culprit(group, source)
            raise
        add_order.append(int_array(base + n for c, base in pending for n in c.add_lines))
        remove_order.append(int_array(base + n for c, base in pending for n in c.remove_lines))
        pending.clear()

    base = 0
    for c in commits:
        if c.columns is None:
            pending.append((c, base))
        else:
            flush()
            adds.append(c.columns.adds)
            removes.append(c.columns.removes)
            add_order.append(c.columns.add_lines_from(base))
            remove_order.append(c.columns.remove_lines_from(base))
        base += c.num_lines + 1
    flush()
    return CommitBatch(
        commits=tuple(commits),
        adds=pa.concat_tables(adds) if adds else empty_table(FILES_SCHEMA),
        removes=pa.concat_tables(removes) if removes else empty_table(TOMBSTONES_SCHEMA),
        add_order=pa.concat_arrays(add_order) if add_order else int_array([]),
        remove_order=pa.concat_arrays(remove_order) if remove_order else int_array([]),
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
