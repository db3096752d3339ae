"""Columnar Action Reconciliation (PROTOCOL.md "Action Reconciliation").

Given a base state (a checkpoint, or an earlier snapshot being updated) and the commits after
it, this computes the snapshot's state:

- the latest ``protocol`` and ``metaData`` win;
- the latest ``txn`` per ``appId`` wins (no expiry here: ``live_txns`` applies
  ``delta.setTransactionRetentionDuration`` when a caller wants it);
- the latest ``domainMetadata`` per ``domain`` wins; ``removed=true`` ones are dropped;
- a logical file is keyed by ``(path, deletionVector.uniqueId)``; the newest action per key
  wins; ``add`` winners form the live files, unique by ``path`` (newest wins); ``remove``
  winners are tombstones, kept until a checkpoint writer expires them
  (``expire_tombstones_before``).

All file work is done on Arrow arrays: the base (possibly millions of rows) is only filtered
with hash lookups against the keys the commits touched; only the commit rows are sorted.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.actions import DomainMetadata, Metadata, Protocol, Txn
from delta_core.commit_read import CommitBatch
from delta_core.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA, file_keys


@dataclass(frozen=True, slots=True)
class ReplayState:
    """A reconciled table state. ``txns`` and ``domain_metadata`` are keyed by appId/domain."""

    protocol: Protocol | None
    metadata: Metadata | None
    files: pa.Table
    tombstones: pa.Table
    txns: Mapping[str, Txn] = field(default_factory=dict)
    domain_metadata: Mapping[str, DomainMetadata] = field(default_factory=dict)

    @classmethod
    def empty(cls) -> "ReplayState":
        return cls(None, None, FILES_SCHEMA.empty_table(), TOMBSTONES_SCHEMA.empty_table())


def _newest_per_key(keys: pa.ChunkedArray | pa.Array, order: pa.Array) -> pa.Array:
    """Row indices of the newest (highest ``order``) row for each distinct key."""
    n = len(keys)
    if n == 0:
        return pa.array([], pa.int64())
    t = pa.table({"k": keys, "o": order, "i": pa.array(range(n), pa.int64())})
    t = t.sort_by([("k", "ascending"), ("o", "descending")])
    k = t["k"].combine_chunks()
    # Sorted by key then newest first: a row starts a new key group iff its key differs
    # from the previous row's, and that first row is the newest of its group.
    first = pc.not_equal(k.slice(1), k.slice(0, n - 1))
    mask = pa.concat_arrays([pa.array([True]), first])
    return t["i"].combine_chunks().filter(mask)


def _concat(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> pa.Array:
    def arr(x):
        return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x
    return pa.concat_arrays([arr(a), arr(b)])


def reconcile_files(
    base_files: pa.Table, base_tombstones: pa.Table, batch: CommitBatch,
) -> tuple[pa.Table, pa.Table]:
    """Apply the commits' file actions to the base live files and tombstones."""
    if not batch.has_file_actions:
        return base_files, base_tombstones
    adds, removes = batch.adds, batch.removes
    keys = _concat(file_keys(adds), file_keys(removes))
    order = _concat(batch.add_order, batch.remove_order)
    n_add = adds.num_rows
    winners = _newest_per_key(keys, order)
    is_add = pc.less(winners, n_add)
    add_rows = winners.filter(is_add)
    remove_rows = pc.subtract(winners.filter(pc.invert(is_add)), n_add)

    new_adds = adds.take(add_rows)
    if new_adds.num_rows > 1:
        # A path may be added with two DV ids only if the older one is also removed; either
        # way the add set is unique by path and the newest pair wins.
        newest = _newest_per_key(new_adds["path"], batch.add_order.take(add_rows))
        if len(newest) != new_adds.num_rows:
            new_adds = adds.take(add_rows.take(newest))
    new_removes = removes.take(remove_rows)

    touched = keys.take(winners)
    keep_files = pc.invert(pc.is_in(file_keys(base_files), value_set=touched))
    if new_adds.num_rows:
        keep_files = pc.and_(keep_files, pc.invert(pc.is_in(base_files["path"], value_set=new_adds["path"].combine_chunks())))
    keep_tombstones = pc.invert(pc.is_in(file_keys(base_tombstones), value_set=touched))
    # Filtering copies every column of the base (millions of rows): skip it when nothing goes.
    if not pc.all(keep_files).as_py():
        base_files = base_files.filter(keep_files)
    if not pc.all(keep_tombstones).as_py():
        base_tombstones = base_tombstones.filter(keep_tombstones)
    files = pa.concat_tables([base_files, new_adds])
    tombstones = pa.concat_tables([base_tombstones, new_removes])
    return files, tombstones


def reconcile(base: ReplayState, batch: CommitBatch) -> ReplayState:
    """The state after applying ``batch`` (commits in ascending order) on top of ``base``."""
    protocol, metadata = base.protocol, base.metadata
    txns = dict(base.txns)
    domains = dict(base.domain_metadata)
    for c in batch.commits:
        if c.protocol is not None:
            protocol = c.protocol
        if c.metadata is not None:
            metadata = c.metadata
        for t in c.txns:
            txns[t.app_id] = t
        for d in c.domain_metadata:
            domains[d.domain] = d
    files, tombstones = reconcile_files(base.files, base.tombstones, batch)
    return ReplayState(
        protocol=protocol, metadata=metadata, files=files, tombstones=tombstones, txns=txns,
        domain_metadata={k: d for k, d in domains.items() if not d.removed},
    )


def base_state(
    *,
    protocol: Protocol | None,
    metadata: Metadata | None,
    files: pa.Table,
    tombstones: pa.Table,
    txns: Iterable[Txn] = (),
    domain_metadata: Iterable[DomainMetadata] = (),
) -> ReplayState:
    """A replay base from a checkpoint's actions (later entries of one appId/domain win)."""
    t = {x.app_id: x for x in txns}
    d = {x.domain: x for x in domain_metadata}
    return ReplayState(protocol, metadata, files, tombstones, t, {k: v for k, v in d.items() if not v.removed})


# --- expiry (applied by checkpoint writers and callers that ask for it) -------------------


def expire_tombstones_before(tombstones: pa.Table, ms: int) -> pa.Table:
    """Tombstones deleted after ``ms`` (epoch millis); a missing ``deletionTimestamp`` counts as 0,
    so it expires (PROTOCOL.md "Add File and Remove File": a tombstone lives until expired)."""
    ts = pc.fill_null(tombstones["deletion_timestamp"], 0)
    return tombstones.filter(pc.greater(ts, ms))


def live_txns(
    txns: Mapping[str, Txn], *, retention: dt.timedelta | None, now_ms: int,
) -> dict[str, Txn]:
    """Txns not older than ``retention`` (``delta.setTransactionRetentionDuration``), by
    ``lastUpdated``; a txn without ``lastUpdated`` never expires. ``None`` keeps all."""
    if retention is None:
        return dict(txns)
    cutoff = now_ms - int(retention.total_seconds() * 1000)
    return {k: t for k, t in txns.items() if t.last_updated is None or t.last_updated >= cutoff}
