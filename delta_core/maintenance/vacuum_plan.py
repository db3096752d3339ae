"""Vacuum planning (pure): which files under the table root may be deleted.

Delta's rule (PROTOCOL.md "Overview", Delta Spark's VacuumCommand): a file may be deleted when

1. it is not *hidden* — no path component starts with ``_`` or ``.``, except directories named
   ``<partition column>=...`` (partition directories are data); so ``_delta_log``,
   ``_symlink_format_manifest``, ``_SUCCESS``, ``.crc`` files and temporary files are never
   touched. Unlike Delta Spark we also leave ``_change_data`` and ``_delta_index`` alone: this
   product promises never to delete under a ``_``/``.`` path, and keeping files is the safe side;
2. it is not referenced by the current snapshot (data files and their deletion-vector files),
   nor by a tombstone whose ``deletionTimestamp`` is still inside the retention window (readers
   of recent versions may still need it);
3. its modification time is older than the retention cutoff (a young unreferenced file may be
   a concurrent writer's not-yet-committed output).

Paths come from the log URI-encoded and possibly absolute; ``log_path_to_key`` turns them into
storage keys (through ``delta_core.model.path_identity``, so every spelling of the root matches) and
rejects (the caller warns) anything outside the table root. The file a deletion vector
descriptor points at comes from ``delta_core.log.deletion_vectors.dv_relative_path``. No IO
here: the caller lists, plans, then deletes.

At 10M files neither the listing nor a hash set of every referenced key's string fits beside
the snapshot on a small driver, so ``plan_vacuum`` takes the listing as batches (a listing
directory by directory, an inventory batch by batch), anti-joins each against the referenced
keys held as their 64-bit hashes (``key_fingerprints.KeySet``: a shared hash can only keep a
file) and keeps only each batch's deletion candidates. ``plan_batch`` is that one step, run by
the driver and, with Spark, by the task listing each top-level directory (against that
directory's share of the hashes, by the picklable ``VacuumRules``); ``assemble_plan`` sums the
parts' counts and sorts their candidates into the ``VacuumPlan``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import PathEscapesTableError
from delta_core.maintenance.key_fingerprints import KeySet
from delta_core.model.arrow_values import int_scalar, numbers_of, string_array
from delta_core.model.path_identity import TableRoot, Where, needs_canonicalising, plain_mask
from delta_core.storage.base import normalize_key

_MAYBE_HIDDEN = r"(^|/)[_.]"
# What a listing holds, and what ``plan_vacuum`` takes: one row per file, its modification time in ms.
LISTING_SCHEMA = pa.schema([("key", pa.string()), ("size", pa.int64()), ("modification_time", pa.int64())])


@dataclass(frozen=True, slots=True)
class VacuumPlan:
    """Files to delete (keys relative to the root), with what was kept and why."""

    cutoff_ms: int
    retention_ms: int
    to_delete: tuple[str, ...]  # sorted
    sizes: tuple[int, ...]  # of each file of ``to_delete``, in its order
    bytes_to_delete: int
    files_listed: int
    hidden_skipped: int
    referenced_kept: int
    young_kept: int

    @property
    def num_files_to_delete(self) -> int:
        return len(self.to_delete)


def is_hidden(key: str, partition_columns: Sequence[str]) -> bool:
    """Delta's hidden-path rule for a key relative to the table root."""
    parts = key.split("/")
    if parts[-1].startswith(("_", ".")):
        return True
    for directory in parts[:-1]:
        if not directory.startswith(("_", ".")):
            continue
        if any(directory.startswith(f"{c}=") for c in partition_columns):
            continue
        return True
    return False


def hidden_mask(keys: pa.Array | pa.ChunkedArray, partition_columns: Sequence[str]) -> pa.Array:
    """``is_hidden`` over an Arrow column; only keys with a ``_``/``.`` component go through Python."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks() if keys.num_chunks else pa.array([], pa.string())
    maybe = pc.match_substring_regex(keys, _MAYBE_HIDDEN)
    if not pc.any(maybe).as_py():
        return pc.fill_null(maybe, False)
    candidates = pc.indices_nonzero(maybe).to_pylist()
    values = keys.to_pylist()
    out = [False] * len(values)
    for i in candidates:
        out[i] = is_hidden(values[i], partition_columns)
    return pa.array(out, pa.bool_())


def log_path_to_key(path: str, table_root: str | TableRoot) -> str:
    """The storage key of a path found in the log (decoded once; absolute URIs naming a file
    under the root, in any spelling ``path_identity`` knows, become relative). Raises
    ``PathEscapesTableError`` for anything not certainly inside the root."""
    name = table_root if isinstance(table_root, str) else table_root.location.uri
    if not needs_canonicalising(path):  # a plain relative path is its own key
        return normalize_key(path, root=name)
    root = table_root if isinstance(table_root, TableRoot) else TableRoot.of(table_root)
    placed = root.place(path)
    if placed.key is None:
        where = "outside" if placed.where is Where.OUTSIDE else "not certainly inside"
        raise PathEscapesTableError(f"{path!r} is {where} the table root {name}", path=name)
    return normalize_key(placed.key, root=name)


def log_paths_to_keys(paths: pa.Array | pa.ChunkedArray, table_root: TableRoot) -> tuple[pa.Array, list[str]]:
    """``log_path_to_key`` over an Arrow column: the keys, row for row (null for null or empty
    paths and for paths not certainly inside the root), and the latter paths. Plain relative
    paths are their own keys, found in one vectorised pass (``plain_mask``); only the others
    are placed one by one."""
    flat = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    odd = pc.invert(plain_mask(flat))
    if not pc.any(odd).as_py():
        return flat, []
    placed: list[str | None] = []
    unplaced: list[str] = []
    for path in flat.filter(odd).to_pylist():
        key = None
        if path:
            try:
                key = log_path_to_key(path, table_root)
            except PathEscapesTableError:
                unplaced.append(path)
        placed.append(key)
    return pc.replace_with_mask(flat, odd, string_array(placed)), unplaced


@dataclass(frozen=True, slots=True)
class PlanCounts:
    """What planning saw: the files listed, and those kept as hidden, referenced or young."""

    listed: int = 0
    hidden: int = 0
    referenced: int = 0
    young: int = 0

    def __add__(self, other: PlanCounts) -> PlanCounts:
        return PlanCounts(self.listed + other.listed, self.hidden + other.hidden,
                          self.referenced + other.referenced, self.young + other.young)


@dataclass(frozen=True, slots=True)
class VacuumRules:
    """A plan's inputs besides the listing and the referenced keys: picklable, so that a Spark
    task plans its directory by the driver's rules. ``exempt``: sorted keys exempt from the
    hidden-path rule (see ``plan_vacuum``'s ``named_by_log``)."""

    partition_columns: tuple[str, ...]
    cutoff_ms: int
    retention_ms: int
    exempt: tuple[str, ...] = ()

    @classmethod
    def of(cls, partition_columns: Sequence[str], *, now_ms: int, retention: dt.timedelta,
           named_by_log: Iterable[str] = ()) -> VacuumRules:
        retention_ms = int(retention.total_seconds() * 1000)
        return cls(tuple(partition_columns), now_ms - retention_ms, retention_ms, tuple(sorted(set(named_by_log))))


# The deletion candidates of a batch (or of a part of the listing).
CANDIDATES_SCHEMA = pa.schema([("key", pa.string()), ("size", pa.int64())])


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """The deletion candidates of a part of the listing (``CANDIDATES_SCHEMA``, in no set
    order) and what planning it saw."""

    candidates: pa.RecordBatch | pa.Table
    counts: PlanCounts


def plan_vacuum(
    listed: pa.Table | Iterable[pa.RecordBatch | pa.Table],
    *,
    referenced: pa.Array | pa.ChunkedArray,
    partition_columns: Sequence[str],
    now_ms: int,
    retention: dt.timedelta,
    named_by_log: Iterable[str] = (),
) -> VacuumPlan:
    """Plan a vacuum over ``listed`` (``LISTING_SCHEMA``: every file under the root outside
    ``_delta_log``, as one table or as batches in any order, e.g. a listing directory by
    directory or an inventory read batch by batch) given the ``referenced`` keys (an Arrow string
    column, repeats allowed: live files, their DV files, and files of tombstones still inside the
    retention window). ``named_by_log`` are keys exempt from the hidden-path rule because the log
    names them as files of the table (vacuum lite's cdc files under ``_change_data``).

    The referenced keys become a ``KeySet`` once; each batch is anti-joined against it as it
    comes (``plan_batch``) and only its deletion candidates are kept, so a plan over millions of
    files holds the referenced keys' fingerprints, one batch and the candidates, never the whole
    listing."""
    rules = VacuumRules.of(partition_columns, now_ms=now_ms, retention=retention, named_by_log=named_by_log)
    known = KeySet(referenced)
    batches = listed.to_batches() if isinstance(listed, pa.Table) else listed
    return assemble_plan((plan_batch(part, known, rules) for batch in batches
                          for part in (batch.to_batches() if isinstance(batch, pa.Table) else [batch])), rules)


def assemble_plan(parts: Iterable[BatchPlan], rules: VacuumRules) -> VacuumPlan:
    """The plan of a listing planned in ``parts`` (by the driver, or by Spark tasks a
    directory each): their candidates sorted by key (in Arrow), their counts summed."""
    counts = PlanCounts()
    candidates: list[pa.RecordBatch] = []
    for part in parts:
        counts += part.counts
        candidates.extend(part.candidates.to_batches() if isinstance(part.candidates, pa.Table)
                          else [part.candidates])
    chosen = pa.Table.from_batches(candidates, schema=CANDIDATES_SCHEMA)
    chosen = chosen.take(pc.sort_indices(chosen, sort_keys=[("key", "ascending")]))
    return VacuumPlan(
        cutoff_ms=rules.cutoff_ms,
        retention_ms=rules.retention_ms,
        to_delete=tuple(chosen.column("key").to_pylist()),
        sizes=tuple(chosen.column("size").to_pylist()),
        bytes_to_delete=int(pc.sum(chosen.column("size")).as_py() or 0),
        files_listed=counts.listed,
        hidden_skipped=counts.hidden,
        referenced_kept=counts.referenced,
        young_kept=counts.young,
    )


def plan_batch(batch: pa.RecordBatch, known: KeySet, rules: VacuumRules) -> BatchPlan:
    """The deletion candidates of one listing batch against the ``known`` referenced keys, and
    its counts: the one planning step, on the driver and in Spark tasks alike. A file without a
    modification time (an inventory row may lack one) counts as young: kept. One without a size
    counts as 0 bytes. A key whose fingerprint a referenced key shares counts as referenced:
    kept."""
    keys = batch.column("key").cast(pa.string())
    cutoff = rules.cutoff_ms
    hidden = hidden_mask(keys, rules.partition_columns)
    if rules.exempt:
        hidden = pc.and_(hidden, pc.invert(pc.is_in(keys, value_set=string_array(rules.exempt))))
    visible = ~numbers_of(hidden)
    referenced = known.may_contain(keys)
    young = numbers_of(pc.fill_null(batch.column("modification_time"), int_scalar(cutoff))) >= cutoff
    unreferenced = visible & ~referenced
    delete = unreferenced & ~young
    counts = PlanCounts(listed=len(keys), hidden=len(keys) - int(np.count_nonzero(visible)),
                        referenced=int(np.count_nonzero(visible & referenced)),
                        young=int(np.count_nonzero(unreferenced & young)))
    rows = np.flatnonzero(delete)
    taken = pa.Array.from_buffers(pa.int64(), len(rows), [None, pa.py_buffer(rows.astype(np.int64))])
    sizes = pc.fill_null(batch.column("size").cast(pa.int64()).take(taken), int_scalar(0))
    return BatchPlan(pa.RecordBatch.from_arrays([keys.take(taken), sizes], schema=CANDIDATES_SCHEMA), counts)


def empty_dir_candidates(deleted: Sequence[str]) -> list[str]:
    """Parent directories of deleted keys, deepest first (candidates for empty-dir removal)."""
    parents = {key.rpartition("/")[0] for key in deleted}  # many files share a directory: walk up once each
    dirs: set[str] = set()
    for parent in parents:
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return sorted(dirs, key=lambda d: (-d.count("/"), d))

