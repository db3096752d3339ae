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

import re
import threading
from array import array
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptLogError, LogGapError
from delta_core.log.commit_json import BLOCK_SIZE, CommitColumns, decode_commit
from delta_core.log.commit_stats import CommitStats, StatsPiece, split_stats
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
    parse_log_line,
)
from delta_core.model.arrow_values import empty_table, int_array, int_scalar
from delta_core.storage.base import Storage

_MAX_PARALLEL_READS = 8
_COLUMNAR_DECODE = threading.Lock()
# Below this size the per-line decoder is faster than setting up Arrow's reader (~1 ms).
COLUMNAR_MIN_BYTES = 64 * 1024
# Commits this big are fetched only when the decoder is free (one in memory at a time).
_BIG_COMMIT_BYTES = 64 << 20
# Actions that never take part in snapshot replay (PROTOCOL.md "Action Reconciliation":
# v2-checkpoint-only actions are not allowed in commits). cdc is for change readers only: its
# bodies are kept as they are (``ParsedCommit.cdc``) for vacuum lite, never decoded here.
_IGNORED = frozenset({"checkpointMetadata", "sidecar"})


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
    cdc: list[tuple[int, Any]] = field(default_factory=list)  # (line number, body) of cdc actions
    num_lines: int = 0
    raw: bytes | None = None  # the file, kept by the per-line decoder for ``build_batch``
    # Numbers of the file-action lines of ``raw`` not decoded yet: see ``read_commits``.
    deferred: list[int] = field(default_factory=list)
    source: str = ""

    @property
    def has_file_actions(self) -> bool:
        return bool(self.adds or self.removes or self.deferred or (
            self.columns is not None and (self.columns.adds.num_rows or self.columns.removes.num_rows)))

    def decode_deferred(self) -> None:
        """Decode the deferred file-action lines into ``adds``/``removes`` (in line order),
        raising the error the per-line decoder raises for a bad one."""
        if not self.deferred:
            return
        where = f"{self.source} (version {self.version})"
        bodies: dict[int, tuple[str, Any]] = {}
        assert self.raw is not None  # kept by the per-line decoder, which defers
        lines = self.raw.splitlines()
        for lineno in self.deferred:
            bodies[lineno] = parse_log_line(lines[lineno - 1], lineno, where=where, source=where, version=self.version,
                                            remedy=_REMEDY)
            key, body = bodies[lineno]
            if not isinstance(body, dict):
                raise CorruptLogError(f"line {lineno} of {self.source}: {key} is not an object",
                                      path=self.source, version=self.version)
        self.deferred = []
        merged = sorted([*((n, "add", b) for n, b in zip(self.add_lines, self.adds)),
                         *((n, "remove", b) for n, b in zip(self.remove_lines, self.removes)),
                         *((n, k, b) for n, (k, b) in bodies.items())], key=lambda x: x[0])
        self.adds, self.removes, self.add_lines, self.remove_lines = [], [], [], []
        for n, key, body in merged:  # only add and remove lines are ever deferred
            (self.adds if key == "add" else self.removes).append(body)
            (self.add_lines if key == "add" else self.remove_lines).append(n)

    @property
    def columnar(self) -> bool:
        """Whether the columnar decoder read this commit."""
        return self.columns is not None

    def release_file_actions(self) -> None:
        """Forget the file actions (columns, bodies, raw bytes) once a ``CommitBatch`` holds
        them: replay can then free each commit's rows as it selects from them, and a snapshot
        keeping its last commit (for its ``commitInfo``) keeps none of its files."""
        self.columns, self.raw = None, None
        self.adds, self.removes, self.add_lines, self.remove_lines, self.deferred = [], [], [], [], []


def parse_commit(
    data: bytes, *, version: int, source: str, modification_time: int = 0, columnar: bool | None = None,
    defer_file_lines: bool = False,
) -> ParsedCommit:
    """Parse one commit file; malformed content raises ``CorruptLogError`` naming the line.

    ``columnar`` forces (``True``) or disables (``False``) the columnar decoder; by default it
    runs for commits of ``COLUMNAR_MIN_BYTES`` or more. Either way the result is the same.
    ``defer_file_lines`` leaves the per-line decoder's ``add``/``remove`` lines undecoded for
    ``build_batch`` (which decodes them all at once): their errors are raised there.
    """
    if columnar is None:
        columnar = len(data) >= COLUMNAR_MIN_BYTES
    if columnar:
        decoded = decode_commit(data)
        if decoded is not None:
            out = ParsedCommit(version=version, modification_time=modification_time,
                               columns=decoded.columns,
                               num_lines=decoded.num_lines)
            try:
                for lineno, key, body in decoded.other_actions:
                    _add_action(out, key, body, lineno, source=source, version=version)
            except CorruptLogError:
                pass  # let the per-line decoder raise it, with its exact message
            else:
                return out
    return _parse_lines(data, version=version, source=source, modification_time=modification_time,
                        defer_file_lines=defer_file_lines)


_REMEDY = "restore it from a backup or from the writer's output"
# A line whose first key is add or remove (what the deferred path leaves undecoded).
_FILE_LINE = re.compile(rb'\s*\{\s*"(?:add|remove)"\s*:')


def _parse_lines(data: bytes, *, version: int, source: str, modification_time: int,
                 defer_file_lines: bool = False) -> ParsedCommit:
    out = ParsedCommit(version=version, modification_time=modification_time, raw=data, source=source)
    if defer_file_lines:
        return _parse_deferring(out, data)
    lineno = 0
    for lineno, key, body in iter_log_lines(
        data, source=f"{source} (version {version})", version=version, remedy=_REMEDY,
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


def _parse_deferring(out: ParsedCommit, data: bytes) -> ParsedCommit:
    """``_parse_lines`` with file-action lines left undecoded (their numbers in ``out.deferred``)."""
    where = f"{out.source} (version {out.version})"
    lineno = 0
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        if _FILE_LINE.match(line):
            out.deferred.append(lineno)
            continue
        key, body = parse_log_line(line, lineno, where=where, source=where, version=out.version, remedy=_REMEDY)
        if key == "add" or key == "remove":  # spelled oddly (e.g. an escaped key)
            out.deferred.append(lineno)
            continue
        _add_action(out, key, body, lineno, source=out.source, version=out.version)
    out.num_lines = lineno
    return out


def _add_action(out: ParsedCommit, key: str, body: Any, lineno: int, *, source: str, version: int) -> None:
    """Record one non-file action of a commit."""
    if key in _IGNORED:
        return
    if key == "cdc":
        out.cdc.append((lineno, body))
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


def _read_commit(storage: Storage, f: LogPath, defer_file_lines: bool = False, pack_stats: bool = False) -> ParsedCommit:
    if f.size >= _BIG_COMMIT_BYTES:
        # Fetched while the decoder is busy, a few such files would sit in memory side by side.
        with _COLUMNAR_DECODE:
            data = _fetch(storage, f)
            parsed = parse_commit(data, version=f.version, source=storage.uri(f.key),
                                  modification_time=f.modification_time)
            del data
    else:
        parsed = _parse_fetched(storage, f, _fetch(storage, f), defer_file_lines)
    if pack_stats and parsed.columns is not None:  # compressing runs beside the next commit's decoding
        parsed.columns = parsed.columns.packed()
    return parsed


def _fetch(storage: Storage, f: LogPath) -> bytes:
    try:
        return storage.read(f.key)
    except FileNotFoundError:
        raise LogGapError(
            f"commit {f.version} ({storage.uri(f.key)}) disappeared while reading; retry (a log "
            "cleanup may have removed it)", path=storage.uri(f.key), version=f.version,
        ) from None


def _parse_fetched(storage: Storage, f: LogPath, data: bytes, defer_file_lines: bool) -> ParsedCommit:
    if len(data) < COLUMNAR_MIN_BYTES:
        return parse_commit(data, version=f.version, source=storage.uri(f.key), modification_time=f.modification_time,
                            defer_file_lines=defer_file_lines)
    if len(data) < BLOCK_SIZE:
        # One block: Arrow's reader decodes it on one core, so such commits are decoded side
        # by side (1M adds in 1,000 commits of 0.4 MB: 13-16 s one at a time, 8.5 s so).
        return parse_commit(data, version=f.version, source=storage.uri(f.key), modification_time=f.modification_time)
    # Arrow's reader decodes the blocks of a bigger commit on every core: decoding those one at a
    # time is faster than side by side, and their tables then build up one by one (lower peak memory).
    with _COLUMNAR_DECODE:
        return parse_commit(data, version=f.version, source=storage.uri(f.key), modification_time=f.modification_time)


def read_commits(storage: Storage, files: Sequence[LogPath], *, defer_file_lines: bool = False,
                 pack_stats: bool = False) -> list[ParsedCommit]:
    """Parse ``files`` (ascending versions), fetching them concurrently. ``defer_file_lines``: see
    ``parse_commit`` (for callers that pass the commits to ``build_batch``). ``pack_stats``: the
    columnar decoder's add ``stats`` are packed (``CommitColumns.packed``) as each commit is
    parsed, so the strings of all commits never exist together."""
    if len(files) <= 1:
        return [_read_commit(storage, f, defer_file_lines, pack_stats) for f in files]
    with ThreadPoolExecutor(max_workers=min(_MAX_PARALLEL_READS, len(files))) as pool:
        return list(pool.map(lambda f: _read_commit(storage, f, defer_file_lines, pack_stats), files))


@dataclass(slots=True)
class CommitBatch:
    """A contiguous run of parsed commits in columnar form, ready for reconciliation.

    ``add_order``/``remove_order`` give each file action's position in the log (higher is
    newer); the other actions are kept in log order. With ``add_stats``, the adds' ``stats``
    are packed there (row ``i`` of ``adds`` is ordinal ``i``) and null in ``adds``.
    ``hand_over_adds`` gives the adds away (the one mutation: see there).
    """

    commits: tuple[ParsedCommit, ...]
    adds: pa.Table
    removes: pa.Table
    add_order: pa.Array
    remove_order: pa.Array
    add_stats: CommitStats | None = None

    @property
    def versions(self) -> list[int]:
        return [c.version for c in self.commits]

    def hand_over_adds(self) -> pa.Table:
        """The adds, which the batch then no longer holds (``adds`` becomes empty): replay of a
        whole log selects the winning rows commit chunk by commit chunk and frees each chunk as
        it goes, which it can only do when nothing else holds them."""
        adds, self.adds = self.adds, empty_table(FILES_SCHEMA)
        return adds

    @property
    def has_file_actions(self) -> bool:
        return bool(self.adds.num_rows > 0 or self.removes.num_rows > 0)

    def packed(self) -> CommitBatch:
        """This batch with the add ``stats`` packed (``add_stats``), as ``build_batch`` packs them."""
        if self.add_stats is not None:
            return self
        adds, stats = split_stats(self.adds)
        return CommitBatch(self.commits, adds, self.removes, self.add_order, self.remove_order,
                           CommitStats((stats,) if stats.num_rows else ()))


def build_batch(commits: Sequence[ParsedCommit], *, source: str, pack_stats: bool = False) -> CommitBatch:
    """Columnar file actions of ``commits`` with their global order; the add ``stats`` packed
    (``CommitBatch.add_stats``) with ``pack_stats`` or when a commit came packed
    (``parse_commit``)."""
    pack = pack_stats or any(c.columns is not None and c.columns.add_stats is not None for c in commits)
    adds: list[pa.Table] = []
    pieces: list[StatsPiece] = []
    removes: list[pa.Table] = []
    add_order: list[pa.Array] = []
    remove_order: list[pa.Array] = []
    pending: list[tuple[ParsedCommit, int]] = []  # per-line commits, converted together

    def append_adds(table: pa.Table, stats: StatsPiece | None) -> None:
        if pack and stats is None and table.num_rows:
            table, stats = split_stats(table)
        adds.append(table)
        if stats is not None and stats.num_rows:
            pieces.append(stats)

    def flush() -> None:
        if not pending:
            return
        together = _decode_together(pending)
        if together is not None:
            append_adds(together.adds, None)
            removes.append(together.removes)
            add_order.append(together.add_lines)
            remove_order.append(together.remove_lines)
            pending.clear()
            return
        group = [c for c, _ in pending]
        for c in group:
            c.decode_deferred()
        try:
            added = table_from_json([b for c in group for b in c.adds], tombstones=False, source=source)
            removes.append(table_from_json([b for c in group for b in c.removes], tombstones=True, source=source))
        except CorruptLogError:
            _raise_for_culprit(group, source)
            raise
        append_adds(added, None)
        add_order.append(int_array(base + n for c, base in pending for n in c.add_lines))
        remove_order.append(int_array(base + n for c, base in pending for n in c.remove_lines))
        pending.clear()

    base = 0
    for c in commits:
        if c.columns is None:
            pending.append((c, base))
        else:
            flush()
            append_adds(c.columns.adds, c.columns.add_stats)
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
        add_stats=CommitStats(tuple(pieces)) if pack else None,
    )


def _decode_together(pending: Sequence[tuple[ParsedCommit, int]]) -> CommitColumns | None:
    """The file actions of small commits decoded as one text by the columnar decoder, their
    line numbers turned into global orders (``base`` + line), or ``None`` if it cannot be done
    exactly (the caller then converts the parsed bodies). One reader pass for a hundred small
    commits costs less than building their columns from Python objects, and builds no Python
    values through pyarrow (whose pandas probe imports pandas)."""
    parts: list[bytes] = []
    order = array("q")
    for c, base in pending:
        if not c.has_file_actions:
            continue
        if c.raw is None or b"\r" in c.raw:  # a lone CR numbers lines differently: let the slow path do it
            return None
        raw = c.raw if c.raw.endswith(b"\n") else c.raw + b"\n"
        parts.append(raw)
        order.extend(range(base + 1, base + raw.count(b"\n") + 1))
    if not parts:
        return CommitColumns(empty_table(FILES_SCHEMA), empty_table(TOMBSTONES_SCHEMA), int_array([]), int_array([]))
    decoded = decode_commit(b"".join(parts))
    if decoded is None:
        return None
    orders = pa.Array.from_buffers(pa.int64(), len(order), [None, pa.py_buffer(order)])
    cols = decoded.columns
    return CommitColumns(cols.adds, cols.removes,
                         orders.take(pc.subtract(cols.add_lines, int_scalar(1))),
                         orders.take(pc.subtract(cols.remove_lines, int_scalar(1))))


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
