"""Optimistic transactions: read a snapshot, stage actions, validate, commit ``N+1.json``
(PROTOCOL.md "Requirements for Writers" > "Creation of New Log Entries", "Append-only Tables",
"Transaction Identifiers", "Commit Provenance Information").

The commit loop:

1. validate the staged actions against the protocol (one metaData/protocol at most, no
   duplicate files, appendOnly, supported writer features, partition values present,
   ``dataChange=false`` rewrites keep the rows) — before anything is written;
2. ``storage.put_if_absent(commit_key(v))`` — the only way a commit file is ever created;
3. on ``FileAlreadyExistsError``: read every commit that won since our read version and run
   ``conflict.check_conflicts`` on each (typed error on a real conflict); if none conflicts,
   back off with jitter and retry on the next free version, bounded by one ``RetryPolicy``
   (attempts, time, backoff);
4. after success, write the version checksum ``<version>.crc`` (``checksum_write``: from the
   read snapshot's state plus the winners checked and the own commit, never a new replay),
   then a checkpoint when the version reaches ``delta.checkpointInterval``.

``commit`` returns a ``CommitResult``: the version, the attempts it took and the winning
commits it checked and found compatible (``ResolvedConflict``; both in ``commit_outcome``).

Every commit carries a ``commitInfo`` with a unique ``txnId``: after a put whose outcome is
unknown (``CommitStateUnknownError`` from the storage, or any other storage error except a
refused access or a file in the way of the log directory) the loop retries the same version, and finding its own ``txnId`` there means
the earlier attempt landed. If that cannot be settled, ``commit`` raises
``CommitStateUnknownError``. Data files this transaction wrote (``track_written_file``) are
deleted only when the commit surely did not land: a conflict, exhausted retries with no
unknown attempt, refused access, or validation failure.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from delta_core.errors import (
    AccessDeniedError,
    AppendOnlyViolationError,
    AtomicWriteUnsupportedError,
    BlockedPathError,
    CommitConflictError,
    CommitRetriesExhaustedError,
    CommitStateUnknownError,
    DeltaError,
    FileAlreadyExistsError,
    InvalidTransactionError,
    LogGapError,
    NotADeltaTableError,
    PartitionValueError,
    StorageError,
)
from delta_core.log.commit_read import parse_commit
from delta_core.log.commit_summary import CommitSummary
from delta_core.log.log_path import LOG_DIR, LogFileKind, commit_key, parse_log_name, version_prefix
from delta_core.log.replay import ReplayState
from delta_core.model.actions import (
    Action,
    Add,
    AddCDCFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    Remove,
    Txn,
    encode_actions,
    parse_actions,
)
from delta_core.model.partition_values import url_decode_path
from delta_core.model.table_features import check_write_supported
from delta_core.model.table_properties import TableProperties
from delta_core.storage.base import Storage
from delta_core.write.checksum_write import checksum_after_commit, write_version_checksum
from delta_core.write.commit_info import CommitInfoFields, build_commit_info, commit_info_fields
from delta_core.write.commit_outcome import CommitResult, ResolvedConflict, RetryPolicy
from delta_core.write.conflict import (
    ISOLATION_LEVELS,
    SERIALIZABLE,
    PartitionPredicate,
    TransactionReadInfo,
    check_conflicts,
)
from delta_core.write.constraints import check_new_rows_allowed
from delta_core.write.data_writer import table_schema
from delta_core.write.feature_enablement import stamp_ict_enablement
from delta_core.write.row_tracking import NO_ROW_IDS, assign_row_ids, assigns_row_ids, high_water_mark

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)


class Transaction:
    """One optimistic transaction on ``table``; see the module docstring."""

    def __init__(
        self,
        table: DeltaTable,
        *,
        read_snapshot: Snapshot | None = None,
        operation: str,
        operation_parameters: CommitInfoFields | None = None,
        isolation_level: str = SERIALIZABLE,
        new_table: bool = False,
        protocol_downgrade: bool = False,
    ):
        if isolation_level not in ISOLATION_LEVELS:
            raise InvalidTransactionError(
                f"isolation level {isolation_level!r} is not one of {', '.join(ISOLATION_LEVELS)}")
        self.table = table
        self.operation = operation
        self.operation_parameters = commit_info_fields(operation_parameters)
        self.isolation_level = isolation_level
        # Only DROP FEATURE (``maintenance.drop_feature``) may lower the protocol's versions.
        self._protocol_downgrade = protocol_downgrade
        self._snapshot: Snapshot | None
        if new_table:
            self._snapshot = None
        elif read_snapshot is not None:
            self._snapshot = read_snapshot
        else:
            self._snapshot = table.snapshot()
        self._actions: list[Action] = []
        self._read = TransactionReadInfo(
            read_version=self._snapshot.version if self._snapshot is not None else -1,
            isolation_level=isolation_level,
            table_root=table.storage.root,
        )
        self._metrics: dict[str, Any] = {}
        self._tags: dict[str, str] = {}
        self._written: list[str] = []
        # The row-id high-water mark of the latest commit seen; raised by the winners of a race.
        self._row_id_mark = NO_ROW_IDS
        if self._snapshot is not None:
            mark = high_water_mark(self._snapshot.domain_metadata.values(), version=self._snapshot.version)
            self._row_id_mark = NO_ROW_IDS if mark is None else mark
        self._committed: CommitResult | None = None

    # -- reading ----------------------------------------------------------------------------

    @property
    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            raise NotADeltaTableError(
                f"{self.table.uri} has no table yet; this transaction creates it", path=self.table.uri)
        return self._snapshot

    @property
    def read_version(self) -> int:
        return self._read.read_version

    @property
    def storage(self) -> Storage:
        return self.table.storage

    def mark_files_read(self, paths: Iterable[str]) -> None:
        """Declare files (``add.path`` as in the log) whose content this transaction depends on."""
        self._read.read_paths.update(paths)

    def read_whole_table(self) -> None:
        """Declare that the transaction's result depends on every file of the table."""
        self._read.read_whole_table = True

    def read_partitions(self, predicate: PartitionPredicate | Mapping[str, str | None]) -> None:
        """Declare a read of the partitions matching ``predicate``.

        A callable receives an ``add``'s serialised ``partitionValues`` (keys as in the log);
        a mapping means equality on each of its keys.
        """
        if callable(predicate):
            self._read.read_predicates.append(predicate)
            return
        wanted = dict(predicate)
        self._read.read_predicates.append(lambda pv: all(pv.get(k) == v for k, v in wanted.items()))

    def set_app_transaction(self, app_id: str, version: int) -> None:
        """Record ``txn(appId, version)``; a concurrent commit for the same appId conflicts."""
        self._read.read_app_ids.add(app_id)
        self._actions.append(Txn(app_id=app_id, version=int(version), last_updated=self.table.clock()))

    # -- staging ----------------------------------------------------------------------------

    def add_action(self, action: Action) -> None:
        self._check_open()
        self._actions.append(action)

    def add_actions(self, actions: Iterable[Action]) -> None:
        self._check_open()
        self._actions.extend(actions)

    def track_written_file(self, add: Add | str) -> None:
        """Remember a data file this transaction wrote, to delete it if the commit surely fails."""
        self._written.append(url_decode_path(add.path if isinstance(add, Add) else add))

    def add_written_files(self, adds: Iterable[Add]) -> None:
        """Stage ``add`` actions for files this transaction wrote (and track them)."""
        for a in adds:
            self.track_written_file(a)
            self.add_action(a)

    def set_operation_metrics(self, metrics: CommitInfoFields) -> None:
        """Record ``operationMetrics``: a typed record (``operation_records``) or a mapping."""
        self._metrics.update(commit_info_fields(metrics))

    def set_commit_tags(self, tags: Mapping[str, str]) -> None:
        """Record ``commitInfo.tags`` (e.g. ``delta.rowTracking.preserved``)."""
        self._tags.update(tags)

    @property
    def actions(self) -> list[Action]:
        return list(self._actions)

    def _check_open(self) -> None:
        if self._committed is not None:
            raise InvalidTransactionError("this transaction has already committed; start a new one",
                                          path=self.table.uri, version=self._committed.version)

    # -- context manager: files written by an abandoned transaction are cleaned up -----------

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # After CommitStateUnknownError the files may belong to a commit that landed: keep them.
        if self._committed is None and self._written and exc_type is not None and not isinstance(
            exc, CommitStateUnknownError
        ):
            self.abort()

    def abort(self) -> None:
        """Delete the data files this transaction wrote; only call when no commit landed."""
        if self._committed is not None or not self._written:
            return
        keys, self._written = self._written, []
        try:
            self.storage.delete_many(keys)
        except (OSError, StorageError) as exc:
            # Orphans are harmless (vacuum removes them); say so instead of failing twice.
            log.warning("table=%s could not delete %d uncommitted data file(s): %s",
                        self.table.uri, len(keys), exc)

    # -- validation -------------------------------------------------------------------------

    def _effective(self) -> tuple[Protocol, Metadata]:
        protocol = next((a for a in self._actions if isinstance(a, Protocol)), None)
        metadata = next((a for a in self._actions if isinstance(a, Metadata)), None)
        if protocol is None or metadata is None:
            if self._snapshot is None:
                raise InvalidTransactionError(
                    "the first commit of a table must hold both a protocol and a metaData action",
                    path=self.table.uri, version=0)
            protocol = protocol or self._snapshot.protocol
            metadata = metadata or self._snapshot.metadata
        return protocol, metadata

    @property
    def is_blind_append(self) -> bool:
        r = self._read
        if r.read_whole_table or r.read_predicates or r.read_paths:
            return False
        if any(isinstance(a, (Remove, Metadata, Protocol, DomainMetadata)) for a in self._actions):
            return False
        adds = [a for a in self._actions if isinstance(a, Add)]
        return bool(adds) and all(a.data_change for a in adds)

    def validate(self) -> None:
        """Raise a typed ``InvalidTransactionError`` (or writer-feature error) if the staged
        actions break a protocol rule. Called by ``commit`` before anything is written."""
        uri = self.table.uri
        target = self._read.read_version + 1
        n_meta = sum(isinstance(a, Metadata) for a in self._actions)
        n_proto = sum(isinstance(a, Protocol) for a in self._actions)
        if n_meta > 1 or n_proto > 1:
            raise InvalidTransactionError(
                f"a commit may hold at most one metaData and one protocol action (found {n_meta} "
                f"and {n_proto})", path=uri, version=target)
        if any(isinstance(a, CommitInfo) for a in self._actions):
            raise InvalidTransactionError("commitInfo is written by the transaction itself; do not stage one",
                                          path=uri, version=target)
        protocol, metadata = self._effective()
        file_actions = [a for a in self._actions if isinstance(a, (Add, Remove))]
        rewrite_only = bool(file_actions) and not any(a.data_change for a in file_actions)
        # Row constraints bind only commits that add rows: metadata-only commits (e.g. the one
        # adding a CHECK constraint) and rewrites pass the gate.
        adds_rows = any(isinstance(a, Add) and a.data_change for a in file_actions)
        check_write_supported(protocol, metadata, rewrite_only=not adds_rows, path=uri,
                              version=target)
        if adds_rows:
            check_new_rows_allowed(metadata.configuration, path=uri, version=target)
        if self._snapshot is not None and n_proto and not self._protocol_downgrade:
            old = self._snapshot.protocol
            if (protocol.min_reader_version, protocol.min_writer_version) < (
                    old.min_reader_version, old.min_writer_version):
                raise InvalidTransactionError(
                    "protocol downgrades are not supported", path=uri, version=target)
        self._validate_files(metadata, target)
        if assigns_row_ids(protocol, metadata.configuration):
            # A file whose ids cannot be assigned fails here, before anything is written.
            assign_row_ids(self._actions, mark=self._row_id_mark, version=target, path=uri)
        props = TableProperties(metadata.configuration)
        if props.append_only or (self._snapshot is not None and self._snapshot.properties.append_only):
            bad = [a.path for a in self._actions if isinstance(a, Remove) and a.data_change]
            if bad:
                raise AppendOnlyViolationError(
                    f"table has delta.appendOnly=true, so data cannot be removed (this commit removes "
                    f"{len(bad)} file(s), e.g. {bad[0]!r}); only dataChange=false rewrites may remove files",
                    path=uri, version=target)
        txn_ids = [a.app_id for a in self._actions if isinstance(a, Txn)]
        if len(txn_ids) != len(set(txn_ids)):
            raise InvalidTransactionError("a commit may hold one txn per appId", path=uri, version=target)
        if rewrite_only:
            self._validate_rewrite(file_actions, target)

    def _validate_files(self, metadata: Metadata, target: int) -> None:
        uri = self.table.uri
        schema = table_schema(metadata)  # mode none: leftover physical names do not count
        expected = {schema[c].physical_name for c in metadata.partition_columns}
        seen: set[tuple[bool, str, str | None]] = set()  # (an add?, path, deletion vector)
        for a in self._actions:
            if isinstance(a, (Add, Remove)):
                key = (isinstance(a, Add), a.path, a.dv_unique_id)
                if key in seen:
                    done = "added" if isinstance(a, Add) else "removed"
                    raise InvalidTransactionError(f"file {a.path!r} is {done} twice in one commit",
                                                  path=uri, version=target)
                seen.add(key)
            if isinstance(a, Add):
                keys = set(a.partition_values)
                if keys != expected:
                    missing, extra = sorted(expected - keys), sorted(keys - expected)
                    raise PartitionValueError(
                        f"add {a.path!r} has partitionValues for {sorted(keys)} but the table is "
                        f"partitioned by {sorted(expected)} (missing {missing}, unexpected {extra}); "
                        "every add needs a value (or null) for each partition column",
                        path=uri, version=target)
                if a.size < 0:
                    raise InvalidTransactionError(f"add {a.path!r} has a negative size", path=uri, version=target)
            elif isinstance(a, AddCDCFile) and not any(
                    isinstance(x, (Add, Remove)) and x.data_change for x in self._actions):
                raise InvalidTransactionError("cdc files belong to commits that change data",
                                              path=uri, version=target)

    def _validate_rewrite(self, file_actions: list[Add | Remove], target: int) -> None:
        # A dataChange=false commit promises readers (streams, CDF) that no row changed: where
        # every file carries numRecords, the live rows added must equal the rows removed.
        def live_rows(a: Add | Remove) -> int | None:
            if not a.stats:
                return None
            try:
                n = json.loads(a.stats).get("numRecords")
            except ValueError:
                return None
            if n is None:
                return None
            return int(n) - (a.deletion_vector.cardinality if a.deletion_vector else 0)

        adds = [live_rows(a) for a in file_actions if isinstance(a, Add)]
        removes = [live_rows(a) for a in file_actions if isinstance(a, Remove)]
        added = [n for n in adds if n is not None]
        removed = [n for n in removes if n is not None]
        # Checked only when every file on both sides carries numRecords.
        if added and removed and len(added) == len(adds) and len(removed) == len(removes) \
                and sum(added) != sum(removed):
            raise InvalidTransactionError(
                f"a dataChange=false rewrite must keep the rows: it adds {sum(added)} rows but removes "
                f"{sum(removed)}; commit it with dataChange=true if rows really change",
                path=self.table.uri, version=target)

    # -- committing -------------------------------------------------------------------------

    def _commit_bytes(self, version: int, txn_id: str, last_ict: int | None) -> bytes:
        now = self.table.clock()
        protocol, metadata = self._effective()
        ict = None
        if TableProperties(metadata.configuration).in_commit_timestamps:
            # In-commit timestamps must increase strictly from one commit to the next.
            ict = max(now, (last_ict or 0) + 1)
        info = build_commit_info(
            timestamp=now,
            operation=self.operation,
            operation_parameters=self.operation_parameters,
            operation_metrics=self._metrics,
            read_version=self._read.read_version,
            isolation_level=self.isolation_level,
            is_blind_append=self.is_blind_append,
            txn_id=txn_id,
            in_commit_timestamp=ict,
            tags=self._tags,
        )
        # commitInfo first (required with in-commit timestamps), then protocol and metadata.
        order = {Protocol: 0, Metadata: 1}
        body = sorted(self._actions, key=lambda a: order.get(type(a), 2))
        if ict is not None and self._snapshot is not None:
            # Turning ICT on for a table with history records where it starts; the version and
            # timestamp are this attempt's, so they are stamped here, on every retry.
            body = stamp_ict_enablement(body, self._snapshot.metadata.configuration, version=version, ict=ict)
        if assigns_row_ids(protocol, metadata.configuration):
            # Fresh ids above the mark and this attempt's version: both move when a race is lost.
            body = assign_row_ids(body, mark=self._row_id_mark, version=version, path=self.table.uri)
        return encode_actions([info, *body])

    def _latest_version_from(self, version: int, file_times: dict[int, int]) -> int:
        """The newest commit from ``version`` on; fills ``file_times`` (version -> file mtime)."""
        latest = version
        for info in self.storage.list_from(LOG_DIR, version_prefix(version)):
            lp = parse_log_name(info.name)
            if lp is not None and lp.kind is LogFileKind.COMMIT:
                file_times[lp.version] = info.modification_time
                latest = max(latest, lp.version)
        return latest

    def _winner(self, version: int) -> tuple[CommitSummary, bytes]:
        key = commit_key(version)
        data = self.storage.read(key)
        return CommitSummary.from_actions(version, parse_actions(data, path=key, version=version)), data

    def _check_write_protocol(self, protocol: Protocol) -> None:
        _, metadata = self._effective()
        check_write_supported(protocol, metadata, path=self.table.uri)

    def commit(self, *, retry: RetryPolicy | None = None, checkpoint: bool = True) -> CommitResult:
        """Commit the staged actions under ``retry`` (default ``RetryPolicy()``); see the
        module docstring for the loop and its errors."""
        policy = retry if retry is not None else RetryPolicy()
        self._check_open()
        try:
            self.validate()
        except DeltaError:
            self.abort()
            raise
        uri = self.table.uri
        self._read.actions = list(self._actions)
        txn_id = str(uuid.uuid4())
        version = self._read.read_version + 1
        ict_on = self._snapshot is not None and TableProperties(self._effective()[1].configuration).in_commit_timestamps
        last_ict = self._snapshot.timestamp if self._snapshot is not None and ict_on else None
        file_times: dict[int, int] = {}
        started = time.monotonic()
        attempt = 0
        resolved: list[ResolvedConflict] = []
        won: list[tuple[int, bytes]] = []  # winning commits checked, for the version checksum
        unknown: DeltaError | OSError | None = None  # an attempt may have landed without us knowing
        unknown_version = -1
        unknown_retries = 0
        while True:
            attempt += 1
            payload = self._commit_bytes(version, txn_id, last_ict)
            try:
                self.storage.put_if_absent(commit_key(version), payload)
            except FileAlreadyExistsError:
                log.debug("table=%s version=%d attempt=%d lost the race", uri, version, attempt)
            except (AtomicWriteUnsupportedError, AccessDeniedError, BlockedPathError) as exc:
                # Definitive: the store refused before creating the commit file.
                if unknown is not None:
                    raise self._unknown(unknown_version, unknown) from exc
                self.abort()
                raise
            except (CommitStateUnknownError, OSError, StorageError) as exc:
                # The put may or may not have landed (a storage that cannot tell raises
                # CommitStateUnknownError; any other IO error is treated alike): never clean up
                # after this, and retry the same version so that our own txnId tells us if it did.
                unknown, unknown_version = exc, version
                unknown_retries += 1
                log.warning("table=%s version=%d attempt=%d commit outcome unknown: %s",
                            uri, version, attempt, exc)
                if unknown_retries > policy.max_unknown_retries:
                    raise self._unknown(version, exc) from exc
                policy.sleep(policy.backoff(attempt))
                continue
            else:
                return self._finish(version, attempt, resolved, checkpoint=checkpoint, landed=payload, won=won)
            # Lost: check each commit that beat us, in order.
            try:
                latest = self._latest_version_from(version, file_times)
            except (OSError, StorageError) as exc:
                if unknown is None:
                    raise
                raise self._unknown(unknown_version, unknown) from exc
            for v in range(version, latest + 1):
                try:
                    winner, data = self._winner(v)
                except FileNotFoundError:
                    # A commit we lost to (or listed) is gone: never commit past an unchecked
                    # version. Nothing of ours landed unless an earlier attempt was unknown.
                    if unknown is not None:
                        raise self._unknown(unknown_version, unknown) from None
                    self.abort()
                    raise LogGapError(
                        f"commit {v} of {uri} vanished while checking for conflicts; the log is being "
                        "changed outside the protocol (a log cleanup of fresh commits?) - investigate "
                        "before writing again", path=uri, version=v) from None
                except (OSError, StorageError) as exc:
                    if unknown is None:
                        raise
                    raise self._unknown(unknown_version, unknown) from exc
                if winner.txn_id == txn_id:
                    log.info("table=%s version=%d attempt=%d found its own earlier commit", uri, v, attempt)
                    return self._finish(v, attempt, resolved, checkpoint=checkpoint, landed=data, won=won)
                if v == unknown_version:
                    # Someone else holds the version our unclear attempt targeted, so that
                    # attempt did not land: the outcome is certain again.
                    unknown = None
                try:
                    check_conflicts(self._read, winner, check_write=self._check_write_protocol)
                except CommitConflictError as exc:
                    log.info("table=%s version=%d attempt=%d conflict with commit %d: %s",
                             uri, version, attempt, v, exc.kind)
                    if unknown is not None:
                        raise self._unknown(unknown_version, unknown) from exc
                    self.abort()
                    raise
                resolved.append(ResolvedConflict.of(winner))
                mark = high_water_mark(winner.domains, version=v)
                if mark is not None:
                    self._row_id_mark = max(self._row_id_mark, mark)
                won.append((v, data))
                if winner.commit_info and winner.commit_info.get("inCommitTimestamp") is not None:
                    last_ict = int(winner.commit_info["inCommitTimestamp"])  # type: ignore[call-overload]
                elif ict_on and v in file_times:
                    # A winner without one came before the commit that turns ICT on: ours must be
                    # later than that commit file's modification time (writer rule 5).
                    last_ict = file_times[v]
            version = latest + 1
            elapsed = time.monotonic() - started
            if attempt >= policy.max_attempts or elapsed >= policy.timeout_seconds:
                if unknown is not None:
                    raise self._unknown(unknown_version, unknown)
                self.abort()
                raise CommitRetriesExhaustedError(
                    f"gave up committing to {uri} after {attempt} attempt(s) in {elapsed:.1f}s while "
                    "other writers kept winning; retry later or raise RetryPolicy.max_attempts/"
                    "timeout_seconds", path=uri, version=version)
            policy.sleep(policy.backoff(attempt))

    def _unknown(self, version: int, cause: BaseException) -> CommitStateUnknownError:
        # The written data files are kept: the commit that may have landed references them.
        return CommitStateUnknownError(
            f"committing version {version} of {self.table.uri} failed and it is unknown whether the "
            f"commit landed ({cause}); the data files it adds were kept. Read the table (its commit "
            f"{version} carries this transaction's txnId if it landed) before retrying",
            path=self.table.uri, version=version)

    def _finish(self, version: int, attempt: int, resolved: list[ResolvedConflict], *,
                checkpoint: bool, landed: bytes, won: list[tuple[int, bytes]]) -> CommitResult:
        self._written = []
        log.info("table=%s version=%d attempt=%d committed %s", self.table.uri, version, attempt,
                 self.operation)
        self._write_checksum(version, landed, won)
        cp_version = None
        if checkpoint:
            cp_version = self._maybe_checkpoint(version)
        self._committed = CommitResult(version=version, attempts=attempt, checkpoint_version=cp_version,
                                       conflicts=tuple(resolved))
        return self._committed

    def _write_checksum(self, version: int, landed: bytes, won: list[tuple[int, bytes]]) -> None:
        # From the state this transaction read plus the commits since (winners, then its own,
        # as landed): no log read, no replay (write/checksum_write.py).
        base = self._snapshot.replay_state if self._snapshot is not None else ReplayState.empty()
        try:
            commits = [parse_commit(data, version=v, source=self.storage.uri(commit_key(v)))
                       for v, data in [*won, (version, landed)]]
            checksum = checksum_after_commit(self.storage, base, commits)
        except DeltaError as exc:
            log.warning("table=%s version=%d no version checksum written: %s", self.table.uri, version, exc)
            return
        write_version_checksum(self.storage, version, checksum, table_uri=self.table.uri)

    def _maybe_checkpoint(self, version: int) -> int | None:
        _, metadata = self._effective()
        interval = TableProperties(metadata.configuration).checkpoint_interval
        if version == 0 or version % interval:
            return None
        from delta_core.write.checkpoint_write import write_checkpoint

        try:
            # Usually only our own commit is new: refreshing the read snapshot reads just that.
            fresh = self._snapshot.update() if self._snapshot is not None else None
            write_checkpoint(self.table, version=version, snapshot=fresh)
        except (DeltaError, OSError) as exc:
            # The commit stands; a missing checkpoint only costs readers time.
            log.warning("table=%s version=%d checkpoint after commit failed: %s", self.table.uri, version, exc)
            return None
        return version
