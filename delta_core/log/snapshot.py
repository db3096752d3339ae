"""A table snapshot: the reconciled state at one version (PROTOCOL.md "Delta Table
Specification", "Action Reconciliation", "Reader Version Requirements").

Loading runs in the order the conformance rules fix: build the log segment (``not_a_table``,
``log_gap``, ``version_not_found``), then the protocol (``missing_protocol``, then the reader
gate ``unsupported_protocol``), then the metadata (``missing_metadata``, then
``metadata_validation``: an unusable schema is ``corrupt_log``); only then are file
actions read from the checkpoint and reconciled with the commits. Files are an Arrow table
(``file_actions.FILES_SCHEMA``); typed records are produced on demand.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptLogError, MissingMetadataError, MissingProtocolError, VersionNotFoundError
from delta_core.log.checkpoint_read import read_checkpoint_files, read_checkpoint_state
from delta_core.log.commit_read import ParsedCommit, build_batch, parse_commit, read_commits
from delta_core.log.file_actions import FILES_SCHEMA, iter_adds, iter_removes
from delta_core.log.history import read_commit_info
from delta_core.log.log_path import LogFileKind, commit_key
from delta_core.log.log_segment import LogSegment, build_log_segment, list_log
from delta_core.log.replay import ReplayState, base_state, live_txns, reconcile, reconciliation_defect
from delta_core.log.version_checksum import warn_on_mismatch
from delta_core.model import table_features
from delta_core.model.actions import Add, CommitInfo, DomainMetadata, Metadata, Protocol, Remove, Txn
from delta_core.model.arrow_values import string_array
from delta_core.model.clock import Clock, system_clock
from delta_core.model.metadata_validation import validate_metadata
from delta_core.model.partition_values import typed_partition_values
from delta_core.model.schema import StructType, schema_to_arrow
from delta_core.model.stats import parse_stats
from delta_core.model.table_properties import TableProperties
from delta_core.storage.base import Storage

log = logging.getLogger(__name__)


class Snapshot:
    """The table at ``version``. Immutable; ``update()`` returns a newer snapshot."""

    def __init__(
        self,
        storage: Storage,
        log_segment: LogSegment,
        state: ReplayState,
        *,
        last_commit: ParsedCommit | None = None,
        clock: Clock = system_clock,
    ):
        self._storage = storage
        self._segment = log_segment
        self._state = state
        self._last_commit = last_commit
        self._clock = clock
        self._schema: StructType | None = None
        self._timestamp: int | None = None

    # --- identity -----------------------------------------------------------------------

    @property
    def storage(self) -> Storage:
        return self._storage

    @property
    def log_segment(self) -> LogSegment:
        return self._segment

    @property
    def version(self) -> int:
        return self._segment.version

    @property
    def timestamp(self) -> int:
        """Commit time of this version in epoch ms: ``inCommitTimestamp`` when in-commit
        timestamps are enabled, else the commit file's modification time."""
        if self._timestamp is None:
            self._timestamp = self._commit_timestamp()
        return self._timestamp

    def _commit_timestamp(self) -> int:
        if self.properties.in_commit_timestamps:
            info = self.commit_info
            if info is None:  # the segment ends at a checkpoint: read just that commit's info
                try:
                    info = CommitInfo(read_commit_info(self._storage, self.version))
                except VersionNotFoundError:
                    info = None
            if info is not None and info.in_commit_timestamp is not None:
                return info.in_commit_timestamp
        last = self._segment.last_commit
        if last is not None and last.version == self.version and last.modification_time:
            return last.modification_time
        try:
            return self._storage.head(commit_key(self.version)).modification_time
        except FileNotFoundError:
            # A checkpoint-only version: the checkpoint was written after the commit.
            return self._segment.checkpoint_files[0].modification_time

    @property
    def commit_info(self) -> CommitInfo | None:
        """``commitInfo`` of the commit at this version, when that commit was read."""
        c = self._last_commit
        return c.commit_info if c is not None and c.version == self.version else None

    # --- protocol and metadata ----------------------------------------------------------

    @property
    def protocol(self) -> Protocol:
        assert self._state.protocol is not None  # guaranteed by load_snapshot
        return self._state.protocol

    @property
    def metadata(self) -> Metadata:
        assert self._state.metadata is not None  # guaranteed by load_snapshot
        return self._state.metadata

    @property
    def schema(self) -> StructType:
        if self._schema is None:
            self._schema = StructType.from_json(self.metadata.schema_string)
        return self._schema

    @property
    def arrow_schema(self) -> pa.Schema:
        """The table schema with logical column names."""
        return schema_to_arrow(self.schema)

    @property
    def partition_columns(self) -> list[str]:
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> dict[str, str]:
        return dict(self.metadata.configuration)

    @property
    def properties(self) -> TableProperties:
        return TableProperties(self.metadata.configuration)

    @property
    def column_mapping_mode(self) -> str:
        return table_features.column_mapping_mode(self.protocol, self.metadata.configuration)

    # --- files --------------------------------------------------------------------------

    @property
    def files(self) -> pa.Table:
        """Live files, one row per ``add`` (columns: ``file_actions.FILES_SCHEMA``). Statistics
        of checkpoint rows are read on first use; ``file_columns`` reads only what it names."""
        return self._state.files

    def file_columns(self, *names: str) -> pa.Table:
        """Columns ``names`` of ``files``, reading checkpoint statistics only if ``stats`` (or,
        without ``stats_parsed``, ``num_records``) is among them."""
        return self._state.file_columns(names)

    def files_of(self, paths: Iterable[str], columns: Sequence[str] = FILES_SCHEMA.names) -> pa.Table:
        """Rows of ``files`` (``columns`` of them) whose ``path`` (as in the log) is one of
        ``paths``, in ``files`` order. Statistics and tags are read only if named, and for these
        rows only: a rewrite's inputs among millions of files, where ``files`` reads every file's.
        Repeated lookups go through the state's path index (``ReplayState.rows_of``)."""
        return self._state.files_at(self._state.rows_of(string_array(sorted(set(paths)))), columns)

    @property
    def file_paths(self) -> list[str]:
        """``add.path`` of each live file, exactly as written (still URI-encoded)."""
        paths: list[str] = self._state.rows["path"].to_pylist()
        return paths

    @property
    def num_files(self) -> int:
        return int(self._state.rows.num_rows)

    @property
    def num_records(self) -> int | None:
        """Sum of ``numRecords`` over live files; ``None`` if any file lacks it. Deletion
        vectors are not subtracted."""
        col = self._state.num_records
        if col.null_count:
            return None
        total = pc.sum(col).as_py()
        return int(total or 0)

    @property
    def size_in_bytes(self) -> int:
        return int(pc.sum(self._state.rows["size"]).as_py() or 0)

    def add_actions(self) -> Iterator[Add]:
        return iter_adds(self._state.files)

    @property
    def tombstones(self) -> pa.Table:
        """Reconciled ``remove`` rows (``file_actions.TOMBSTONES_SCHEMA``), no expiry applied."""
        return self._state.tombstones

    def remove_actions(self) -> Iterator[Remove]:
        return iter_removes(self._state.tombstones)

    def partition_values_typed(self) -> pa.Table:
        """``path`` plus one typed column per partition column (logical names)."""
        return typed_partition_values(
            self._state.rows["partition_values"], self.schema, self.partition_columns,
            physical_keys=self.column_mapping_mode != "none", paths=self._state.rows["path"],
        )

    def iter_stats(self, *, after_checkpoint: bool = False,
                   count_records: bool = False) -> Iterator[pa.Array | pa.ChunkedArray]:
        """``stats`` of the live files in ``files`` order, a piece at a time: checkpoint stats
        are read batch by batch, never held whole (``ReplayState.iter_stats``); with
        ``after_checkpoint``, only those of the files after the ``checkpoint_rows`` ones; with
        ``count_records``, ``num_records`` is counted from the same read."""
        return self._state.iter_stats(after_checkpoint=after_checkpoint, count_records=count_records)

    def iter_stats_with_struct(self, typ: pa.StructType) -> Iterator[tuple[pa.Array | pa.ChunkedArray,
                                                                          pa.Array | None]]:
        """``iter_stats()``'s pieces, each with its files' ``stats_parsed`` typed ``typ`` where the
        checkpoint they were loaded from holds it (else None: ``ReplayState.iter_stats_with_struct``)."""
        return self._state.iter_stats_with_struct(typ)

    def checkpoint_rows(self) -> pa.ChunkedArray | None:
        """Checkpoint ``add`` row ordinals of the first live files (``ReplayState.checkpoint_rows``)."""
        return self._state.checkpoint_rows()

    def checkpoint_num_records(self) -> pa.ChunkedArray | None:
        """``numRecords`` of the checkpoint's rows as read (``ReplayState.checkpoint_num_records``)."""
        return self._state.checkpoint_num_records()

    def reuse_checkpoint_num_records(self, counted: pa.ChunkedArray) -> None:
        """Count the checkpoint's rows with ``counted`` (``ReplayState.reuse_checkpoint_num_records``)."""
        self._state.reuse_checkpoint_num_records(counted)

    def iter_tags(self) -> Iterator[pa.Array | pa.ChunkedArray]:
        """``tags`` of the live files in ``files`` order, a piece at a time (checkpoint rows' tags
        are read batch by batch, commit rows' unpacked commit by commit: ``ReplayState.iter_tags``)."""
        return self._state.iter_tags()

    def file_stats(self) -> pa.Table:
        """``path``, ``num_records`` and typed ``min.<col>``/``max.<col>``/``null_count.<col>``."""
        files = self._state.files
        stats = parse_stats(
            files["stats"], self.schema, partition_columns=self.partition_columns,
            physical=self.column_mapping_mode != "none",
        )
        return stats.add_column(0, "path", files["path"])

    # --- other state --------------------------------------------------------------------

    @property
    def txns(self) -> dict[str, Txn]:
        """Latest ``txn`` per appId. Entries older than ``delta.setTransactionRetentionDuration``
        (by ``lastUpdated``) are left out when the table sets that property."""
        return live_txns(self._state.txns, retention=self.properties.set_transaction_retention,
                         now_ms=self._clock())

    @property
    def all_txns(self) -> dict[str, Txn]:
        """Latest ``txn`` per appId, no expiry (what the log holds)."""
        return dict(self._state.txns)

    @property
    def domain_metadata(self) -> dict[str, DomainMetadata]:
        return dict(self._state.domain_metadata)

    @property
    def replay_state(self) -> ReplayState:
        return self._state

    # --- refresh ------------------------------------------------------------------------

    def update(self) -> Snapshot:
        """The latest snapshot, reading only commits after this version (``self`` if none)."""
        newer = list_log(self._storage, start_version=self.version + 1)
        commits = [f for f in newer if f.kind is LogFileKind.COMMIT]
        checkpoints = [f for f in newer if f.is_checkpoint]
        contiguous = [c.version for c in commits] == list(range(self.version + 1, self.version + 1 + len(commits)))
        if not commits and not checkpoints:
            return self
        newest_checkpoint = max((f.version for f in checkpoints), default=-1)
        if not contiguous or not commits or newest_checkpoint > commits[-1].version:
            # The log moved in a way a delta cannot follow (gap, checkpoint-only version):
            # load from scratch, which raises the precise error if the log is broken.
            return load_snapshot(self._storage, clock=self._clock)
        parsed = read_commits(self._storage, commits, defer_file_lines=True, pack_stats=True)
        segment = LogSegment(
            version=commits[-1].version,
            checkpoint_version=self._segment.checkpoint_version,
            checkpoint_files=self._segment.checkpoint_files,
            commit_files=self._segment.commit_files + tuple(commits),
            table_root=self._segment.table_root,
            compactions=self._segment.compactions,
        )
        state = _apply(self._storage, segment, self._state, parsed)
        return Snapshot(self._storage, segment, state, last_commit=parsed[-1], clock=self._clock)

    def __repr__(self) -> str:
        return f"Snapshot({self._storage.root!r}, version={self.version}, files={self.num_files})"


def _gate(storage: Storage, segment: LogSegment, protocol: Protocol | None, metadata: Metadata | None) -> None:
    root = storage.root
    if protocol is None:
        raise MissingProtocolError(
            f"version {segment.version} of {root} has no protocol action (the checkpoint or first "
            "commit lacks it); the log is corrupt: restore it from a backup",
            path=root, version=segment.version,
        )
    table_features.check_read_supported(protocol, path=root, version=segment.version)
    if metadata is None:
        raise MissingMetadataError(
            f"version {segment.version} of {root} has no metaData action (the checkpoint or first "
            "commit lacks it); the log is corrupt: restore it from a backup",
            path=root, version=segment.version,
        )
    # One validation for every command: a metadata no reader can use is corrupt everywhere.
    validate_metadata(metadata, path=root, version=segment.version)


def _apply(storage: Storage, segment: LogSegment, base: ReplayState, parsed: list[ParsedCommit]) -> ReplayState:
    protocol, metadata = base.protocol, base.metadata
    for c in parsed:
        protocol = c.protocol or protocol
        metadata = c.metadata or metadata
    _gate(storage, segment, protocol, metadata)
    # The stats go packed (``commit_stats``): replay and most steps never read them.
    batch = build_batch(parsed, source=storage.root, pack_stats=True)
    for c in parsed:  # the batch holds their file actions now: let replay free them as it goes
        c.release_file_actions()
    return reconcile(base, batch, table_root=storage.root, consume=True)


def load_snapshot(
    storage: Storage,
    *,
    version: int | None = None,
    segment: LogSegment | None = None,
    clock: Clock = system_clock,
) -> Snapshot:
    """Read the snapshot at ``version`` (latest when ``None``), or of a prepared ``segment``."""
    if segment is None:
        segment = build_log_segment(storage, version=version)
    parsed = _read_replay_files(storage, segment)
    if segment.checkpoint_files:
        cp = read_checkpoint_state(storage, segment.checkpoint_files)
        protocol, metadata = cp.protocol, cp.metadata
        for c in parsed:
            protocol = c.protocol or protocol
            metadata = c.metadata or metadata
        # Gate before touching the (possibly huge) file actions of the checkpoint.
        _gate(storage, segment, protocol, metadata)
        found = read_checkpoint_files(storage, segment.checkpoint_files, cp)
        base = base_state(protocol=cp.protocol, metadata=cp.metadata, files=found.adds, tombstones=found.removes,
                          txns=cp.txns, domain_metadata=cp.domain_metadata, checkpoint_stats=found.stats)
    else:
        base = ReplayState.empty()
    state = _apply(storage, segment, base, parsed)
    snapshot = Snapshot(storage, segment, state, last_commit=parsed[-1] if parsed else None, clock=clock)
    if segment.checksum_file is not None:
        # The listing saw a .crc for this version: one small read checks the replay against
        # it (a warning only: a wrong .crc must not make the table unreadable).
        warn_on_mismatch(snapshot)
    return snapshot


def _read_replay_files(storage: Storage, segment: LogSegment) -> list[ParsedCommit]:
    """The commits after the checkpoint, compaction files standing in for the commits they cover
    (fewer reads, same state). Compactions are optional: one that cannot be read, or whose
    actions are not reconciled (``replay.reconciliation_defect``: replaying it would revive
    removed files), costs only the reads it would have saved, so the commits are read instead."""
    if not segment.compactions:
        return read_commits(storage, segment.commit_files, defer_file_lines=True, pack_stats=True)
    try:
        parsed = read_commits(storage, segment.replay_files, pack_stats=True)
        for f, commit in zip(segment.replay_files, parsed):
            if f.kind is LogFileKind.COMPACTED_COMMITS:
                defect = reconciliation_defect(build_batch([commit], source=storage.uri(f.key)),
                                               table_root=storage.root)
                if defect is not None:
                    raise CorruptLogError(f"{storage.uri(f.key)} is not reconciled: {defect}",
                                          path=storage.uri(f.key), version=f.version)
        return parsed
    except CorruptLogError as exc:
        log.warning("%s: a log compaction file is unusable (%s); reading the commits it covers instead",
                    storage.root, exc)
        return read_commits(storage, segment.commit_files, pack_stats=True)


def load_protocol_metadata(
    storage: Storage, *, version: int | None = None, segment: LogSegment | None = None,
) -> tuple[Protocol, Metadata]:
    """Protocol and metadata at ``version`` without replaying file actions: commits are read
    newest first until both are found, then the checkpoint's non-file columns if needed."""
    if segment is None:
        segment = build_log_segment(storage, version=version)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    for f in reversed(segment.commit_files):
        c = parse_commit(storage.read(f.key), version=f.version, source=storage.uri(f.key))
        protocol = protocol or c.protocol
        metadata = metadata or c.metadata
        if protocol is not None and metadata is not None:
            break
    if (protocol is None or metadata is None) and segment.checkpoint_files:
        cp = read_checkpoint_state(storage, segment.checkpoint_files)
        protocol = protocol or cp.protocol
        metadata = metadata or cp.metadata
    _gate(storage, segment, protocol, metadata)
    assert protocol is not None and metadata is not None
    return protocol, metadata
