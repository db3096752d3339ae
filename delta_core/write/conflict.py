"""Conflict detection between a transaction and the commits that beat it (PROTOCOL.md
"Requirements for Writers" / optimistic concurrency; rules as in Delta Spark's ConflictChecker
and delta-rs's conflict checker).

Pure functions over actions: ``TransactionReadInfo`` says what the losing transaction read and
wrote, ``CommitSummary`` (``delta_core.log.commit_summary``) says what one winning commit did, and ``check_conflicts``
raises the typed error of the first rule that fails, in this order:

1. protocol changed (the winner changed the protocol and we change it too, or we can no
   longer write the new one)                               -> ``ProtocolChangedError``
2. metadata changed                                        -> ``MetadataChangedError``
3. a ``txn`` for an appId this transaction depends on      -> ``ConcurrentTransactionError``
4. files added into what this transaction read             -> ``ConcurrentAppendError``
   (the isolation level decides which added files count: a transaction that changes no data
   — only ``dataChange=false`` rewrites — runs at SnapshotIsolation and ignores appends;
   WriteSerializable ignores blind appends; Serializable counts every added file)
5. a file this transaction read was removed                -> ``ConcurrentDeleteReadError``
6. a file this transaction removes was removed             -> ``ConcurrentDeleteDeleteError``

No IO (but resolving a local root's symlinks to compare paths), no clocks: unit-testable on
hand-built actions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from delta_core.errors import (
    CommitConflictError,
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentTransactionError,
    MetadataChangedError,
    ProtocolChangedError,
    UnsupportedProtocolError,
)
from delta_core.log.commit_summary import CommitSummary
from delta_core.model.actions import Action, Add, DomainMetadata, Metadata, Protocol, Remove
from delta_core.model.path_identity import TableRoot

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT_ISOLATION)

PartitionPredicate = Callable[[Mapping[str, str | None]], bool]
"""Takes an ``add``'s serialised ``partitionValues``; True when the file is in what was read."""


@dataclass(slots=True)
class TransactionReadInfo:
    """What the current transaction read and intends to write, for conflict checks."""

    read_version: int
    isolation_level: str = SERIALIZABLE
    read_whole_table: bool = False
    read_predicates: list[PartitionPredicate] = field(default_factory=list)
    read_paths: set[str] = field(default_factory=set)
    read_app_ids: set[str] = field(default_factory=set)
    actions: Sequence[Action] = ()
    # Paths are compared in their canonical form under this root (``delta_core.model.path_identity``):
    # a file read as ``f.parquet`` and removed as ``file:/t/f.parquet`` is one file.
    table_root: str | None = None

    def path_identity(self) -> Callable[[str], str]:
        if self.table_root is None:
            return lambda p: p
        return TableRoot.of(self.table_root).canonical

    @property
    def changes_metadata(self) -> bool:
        return any(isinstance(a, Metadata) for a in self.actions)

    @property
    def changes_protocol(self) -> bool:
        return any(isinstance(a, Protocol) for a in self.actions)

    @property
    def removed_paths(self) -> set[str]:
        return {a.path for a in self.actions if isinstance(a, Remove)}

    @property
    def changes_data(self) -> bool:
        """False when every file action is ``dataChange=false`` (compaction, z-order)."""
        files = [a for a in self.actions if isinstance(a, (Add, Remove))]
        return not files or any(a.data_change for a in files)

    @property
    def effective_isolation_level(self) -> str:
        # Delta Spark: a commit that changes no data cannot make a concurrent append
        # invisible to anybody, so it is checked at SnapshotIsolation.
        if not self.changes_data and not self.changes_metadata:
            return SNAPSHOT_ISOLATION
        return self.isolation_level

    def read_covers(self, add: Add) -> bool:
        if self.read_whole_table:
            return True
        return any(pred(add.partition_values) for pred in self.read_predicates)


def _msg(kind: str, winner: CommitSummary, detail: str) -> str:
    op = winner.commit_info.get("operation") if winner.commit_info else None
    by = f" (operation {op})" if op else ""
    return f"{kind}: commit {winner.version}{by} {detail}; re-read the table and retry the operation"


def check_protocol(
    txn: TransactionReadInfo,
    winner: CommitSummary,
    *,
    check_write: Callable[[Protocol], None] | None = None,
) -> None:
    if winner.protocol is None:
        return
    if txn.changes_protocol:
        raise ProtocolChangedError(
            _msg("protocol changed", winner, "also changed the protocol"), version=winner.version)
    if check_write is not None:
        try:
            check_write(winner.protocol)
        except UnsupportedProtocolError as exc:
            raise ProtocolChangedError(
                _msg("protocol changed", winner, f"upgraded the protocol to one we cannot write ({exc})"),
                version=winner.version,
            ) from exc


def check_metadata(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    if winner.metadata is not None:
        raise MetadataChangedError(
            _msg("metadata changed", winner, "changed the table metadata (schema, partitioning or "
                 "properties)"), version=winner.version)


def check_app_transactions(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    clash = sorted({t.app_id for t in winner.app_txns} & txn.read_app_ids)
    if clash:
        raise ConcurrentTransactionError(
            _msg("concurrent transaction", winner, f"committed a txn for appId {clash[0]!r} this "
                 "transaction also writes"), version=winner.version)


def check_added_files(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    level = txn.effective_isolation_level
    if level == SNAPSHOT_ISOLATION or not winner.added_files:
        return
    if level == WRITE_SERIALIZABLE and not txn.changes_metadata and winner.is_blind_append:
        return
    for add in winner.added_files:
        if txn.read_covers(add):
            raise ConcurrentAppendError(
                _msg("concurrent append", winner, f"added {add.path!r} into data this transaction "
                     "read"), version=winner.version, path=add.path)


def check_deleted_read_files(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    same = txn.path_identity()
    read = {same(p) for p in txn.read_paths} if winner.removed_files else set()
    for rm in winner.removed_files:
        if same(rm.path) in read:
            raise ConcurrentDeleteReadError(
                _msg("concurrent delete-read", winner, f"removed {rm.path!r}, which this "
                     "transaction read"), version=winner.version, path=rm.path)
    if winner.removed_files and txn.read_whole_table:
        rm = winner.removed_files[0]
        raise ConcurrentDeleteReadError(
            _msg("concurrent delete-read", winner, f"removed {rm.path!r} while this transaction "
                 "read the whole table"), version=winner.version, path=rm.path)


def check_deleted_deleted_files(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    same = txn.path_identity()
    mine = {same(p) for p in txn.removed_paths}
    if not mine:
        return
    for rm in winner.removed_files:
        if same(rm.path) in mine:
            raise ConcurrentDeleteDeleteError(
                _msg("concurrent delete-delete", winner, f"also removed {rm.path!r}"),
                version=winner.version, path=rm.path)


def check_domains(txn: TransactionReadInfo, winner: CommitSummary) -> None:
    mine = {a.domain for a in txn.actions if isinstance(a, DomainMetadata)}
    clash = sorted(mine & {d.domain for d in winner.domains})
    if clash:
        raise CommitConflictError(
            _msg("concurrent domain metadata", winner, f"also changed domain {clash[0]!r}"),
            version=winner.version)


def check_conflicts(
    txn: TransactionReadInfo,
    winner: CommitSummary,
    *,
    check_write: Callable[[Protocol], None] | None = None,
) -> None:
    """Raise the typed conflict error if ``winner`` invalidates ``txn``; return if compatible."""
    check_protocol(txn, winner, check_write=check_write)
    check_metadata(txn, winner)
    check_app_transactions(txn, winner)
    check_added_files(txn, winner)
    check_deleted_read_files(txn, winner)
    check_deleted_deleted_files(txn, winner)
    check_domains(txn, winner)
