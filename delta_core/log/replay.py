"""Columnar Action Reconciliation (PROTOCOL.md "Action Reconciliation").

Given a base state (a checkpoint, or an earlier snapshot being updated) and the commits after
it, this computes the snapshot's state:

- the latest ``protocol`` and ``metaData`` win;
- the latest ``txn`` per ``appId`` wins (no expiry here: ``live_txns`` applies
  ``delta.setTransactionRetentionDuration`` when a caller wants it);
- the latest ``domainMetadata`` per ``domain`` wins; ``removed=true`` ones are dropped;
- a logical file is keyed by ``(path, deletionVector.uniqueId)``, ``path`` in its canonical
  form (``delta_core.model.path_identity``: ``/t/f``, ``file:/t/f`` and ``f`` under root ``/t`` are one
  file, as in Delta Spark); the newest action per key wins; the output keeps each ``path`` as
  the log wrote it; ``add`` winners form the live files, unique by ``path`` (newest wins); ``remove``
  winners are tombstones, kept until a checkpoint writer expires them
  (``expire_tombstones_before``).

All file work is done on Arrow arrays: the base (possibly millions of rows) is only filtered
with hash lookups against the keys the commits touched, chunk by chunk; the commits' repeated
keys are found by 64-bit hashes confirmed as strings (``model.string_hashes``), so no hash table
copies millions of keys. Commit ``stats`` stay packed (``commit_stats``) unless a step asks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.log.checkpoint_stats import CHECKPOINT_ROW, CheckpointStats
from delta_core.log.commit_read import CommitBatch
from delta_core.log.commit_stats import COMMIT_ROW, CommitStats
from delta_core.log.file_actions import (
    FILES_SCHEMA,
    KEY_SEPARATOR,
    TOMBSTONES_SCHEMA,
    file_keys,
    num_records_from_stats,
)
from delta_core.log.path_index import PathIndex
from delta_core.model.actions import DomainMetadata, Metadata, Protocol, Txn
from delta_core.model.arrow_values import (
    bool_array,
    chunks_of,
    empty_table,
    int_array,
    int_array_of,
    int_scalar,
    mask_array,
    numbers_of,
    one_array,
    ordinal_mask,
    sharing_nulls,
    take_rows,
)
from delta_core.model.ordered_threads import in_background
from delta_core.model.path_identity import TableRoot, canonical_paths
from delta_core.model.string_hashes import repeated_groups

# ``_cache`` key of the checkpoint rows' ``numRecords`` (every row, by ordinal).
CHECKPOINT_NUM_RECORDS = "checkpoint_num_records"
# ``_cache`` keys of the rows' ``PathIndex`` (None: the paths cannot be hashed), of its build
# while it runs (a ``Future``), and of the last lookup by path (``rows_of``): (the paths, their rows).
PATH_INDEX = "path_index"
PATH_INDEX_BUILD = "path_index_build"
LAST_LOOKUP = "last_lookup"
# ``_cache`` key of the tombstones' ``PathIndex``, which replay builds once the live files' serves.
TOMBSTONE_INDEX = "tombstone_index"
# ``_cache`` key of the last rows ``files_at`` read, by the columns read: {names: (rows, table)}.
LAST_READ = "last_read"


@dataclass(frozen=True, slots=True)
class ReplayState:
    """A reconciled table state. ``txns`` and ``domain_metadata`` are keyed by appId/domain.

    ``rows`` are the live files. Their ``stats`` and ``tags`` may not be in ``rows`` (null there):

    - rows loaded from a Parquet checkpoint carry their ordinal in ``CHECKPOINT_ROW``, and
      ``checkpoint_stats`` reads their ``stats``, ``num_records`` and ``tags`` on first use;
    - rows from commits read with packed stats (snapshot loading) carry their ordinal in
      ``COMMIT_ROW``, and ``commit_stats`` unpacks their ``stats`` (``num_records`` is theirs)
      and their ``tags``, packed beside the stats and null in ``rows`` too.

    Replay keeps the rows in source order: checkpoint rows first (ascending ordinals), then rows
    whose stats are their own (a JSON checkpoint's lines, or commits read with their stats),
    then commit rows (ascending ordinals). ``files``, ``stats``, ``num_records`` and
    ``file_columns`` put the columns together; ``iter_stats`` and ``iter_tags`` stream them.
    """

    protocol: Protocol | None
    metadata: Metadata | None
    rows: pa.Table
    tombstones: pa.Table
    txns: Mapping[str, Txn] = field(default_factory=dict)
    domain_metadata: Mapping[str, DomainMetadata] = field(default_factory=dict)
    checkpoint_stats: CheckpointStats | None = None
    commit_stats: CommitStats | None = None
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def empty(cls) -> ReplayState:
        return cls(None, None, empty_table(FILES_SCHEMA), empty_table(TOMBSTONES_SCHEMA))

    @property
    def stats_deferred(self) -> bool:
        """Whether some rows' ``stats`` and ``tags`` are not in ``rows`` (checkpoint or commit
        ordinals)."""
        return self._checkpoint_deferred or self._commits_deferred

    @property
    def _checkpoint_deferred(self) -> bool:
        return self.checkpoint_stats is not None and CHECKPOINT_ROW in self.rows.column_names

    @property
    def _commits_deferred(self) -> bool:
        return self.commit_stats is not None and COMMIT_ROW in self.rows.column_names

    @property
    def files(self) -> pa.Table:
        """Live files (``FILES_SCHEMA``), statistics and tags included (read or unpacked now if
        they were deferred)."""
        if not self.stats_deferred:
            return self.rows
        if "files" not in self._cache:
            self._cache["files"] = self.file_columns(FILES_SCHEMA.names)
        files: pa.Table = self._cache["files"]
        return files

    @property
    def num_records(self) -> pa.ChunkedArray:
        """``num_records`` of each live file; for checkpoint rows from the stats already read,
        else from ``stats_parsed.numRecords`` or the JSON read batch by batch."""
        if not self._checkpoint_deferred:
            return self.rows["num_records"]
        if "num_records" not in self._cache:
            assert self.checkpoint_stats is not None
            kept, _ = self._segments()
            stats = self._cache.get("stats")
            if stats is not None:  # the JSON is in memory already: count there
                counted = num_records_from_stats(stats.slice(0, kept))
            else:
                if CHECKPOINT_NUM_RECORDS not in self._cache:
                    self._cache[CHECKPOINT_NUM_RECORDS] = self.checkpoint_stats.num_records()
                counted = self._cache[CHECKPOINT_NUM_RECORDS]
                if kept != len(counted):  # some were removed by later commits
                    wanted = ordinal_mask(self.rows[CHECKPOINT_ROW].slice(0, kept), len(counted))
                    counted = counted.filter(mask_array(wanted))
            own = self.rows["num_records"].slice(kept)
            self._cache["num_records"] = pa.chunked_array([*counted.chunks, *own.chunks], type=pa.int64())
        column: pa.ChunkedArray = self._cache["num_records"]
        return column

    @property
    def stats(self) -> pa.ChunkedArray:
        """``stats`` of each live file (the deferred ones read or unpacked now, and kept)."""
        if not self.stats_deferred:
            return self.rows["stats"]
        if "stats" not in self._cache:
            pieces = [c for piece in self.iter_stats() for c in chunks_of(piece)]
            self._cache["stats"] = pa.chunked_array(pieces, type=pa.string())
        column: pa.ChunkedArray = self._cache["stats"]
        return column

    def iter_stats(self, *, after_checkpoint: bool = False,
                   count_records: bool = False) -> Iterator[pa.Array | pa.ChunkedArray]:
        """``stats`` of each live file in order, a piece at a time: deferred checkpoint stats
        are read batch by batch and commit stats unpacked commit by commit, never held whole
        (``stats`` holds the whole column). ``after_checkpoint``: only those of the files after
        the ``checkpoint_rows`` ones (none of the checkpoint is read). ``count_records``: the
        checkpoint rows' ``numRecords`` are counted from the batches read (where the checkpoint
        counts them from its JSON: ``CheckpointStats.iter_counted_stats``) and kept, so
        ``num_records`` does not read the column again."""
        skip = self._segments()[0] if after_checkpoint else 0
        if not self.stats_deferred or "stats" in self._cache:
            yield self.stats.slice(skip)
            return
        yield from (piece for piece, _ in self._iter_deferred("stats", skip_checkpoint=after_checkpoint,
                                                               count_records=count_records))

    def iter_stats_with_struct(self, typ: pa.StructType) -> Iterator[tuple[pa.Array | pa.ChunkedArray,
                                                                          pa.Array | None]]:
        """``iter_stats()``'s pieces, each with its files' ``stats_parsed`` where a Parquet
        checkpoint holds it typed ``typ`` (``CheckpointStats.iter_stats_with_struct``), else None."""
        if not self.stats_deferred or "stats" in self._cache:
            yield self.stats, None
            return
        yield from self._iter_deferred("stats", struct=typ)

    def checkpoint_num_records(self) -> pa.ChunkedArray | None:
        """``numRecords`` of every checkpoint ``add`` row, by ordinal, as ``num_records`` read
        them (None before, or when they were counted otherwise)."""
        counted: pa.ChunkedArray | None = self._cache.get(CHECKPOINT_NUM_RECORDS)
        return counted

    def reuse_checkpoint_num_records(self, counted: pa.ChunkedArray) -> None:
        """Count with ``counted``, what ``checkpoint_num_records`` gave for the same checkpoint
        (an earlier evaluation's), instead of reading the checkpoint's stats for them."""
        if self.checkpoint_stats is None or len(counted) != self.checkpoint_stats.num_rows:
            raise ValueError(f"{len(counted)} counts for a checkpoint of "
                             f"{None if self.checkpoint_stats is None else self.checkpoint_stats.num_rows} add rows")
        self._cache[CHECKPOINT_NUM_RECORDS] = counted

    def checkpoint_rows(self) -> pa.ChunkedArray | None:
        """The checkpoint ``add`` row ordinals of the first live files, those replay kept from the
        checkpoint with their statistics unread (``files`` order); None without such rows. A
        file's checkpoint row never changes: a later version keeps a subset of them."""
        if not self._checkpoint_deferred:
            return None
        column: pa.ChunkedArray = self.rows[CHECKPOINT_ROW].slice(0, self._segments()[0])
        return column

    def iter_tags(self) -> Iterator[pa.Array | pa.ChunkedArray]:
        """``tags`` of each live file in order, a piece at a time: checkpoint rows' tags are read
        from the checkpoint batch by batch, commit rows' (packed with their stats) unpacked
        commit by commit; the whole column is never held."""
        if not self.stats_deferred or "files" in self._cache:
            yield self.files["tags"]
            return
        yield from (piece for piece, _ in self._iter_deferred("tags"))

    def _iter_deferred(self, name: str, *, skip_checkpoint: bool = False, count_records: bool = False,
                       struct: pa.StructType | None = None,
                       ) -> Iterator[tuple[pa.Array | pa.ChunkedArray, pa.Array | None]]:
        """Column ``name`` (``stats`` or ``tags``) of each live file in order: the checkpoint
        rows' read batch by batch (only the batches' rows replay kept; none when
        ``skip_checkpoint``), then the rows' own, then the commit rows' unpacked piece by piece.
        ``count_records``: as ``iter_stats``. Each piece comes with the checkpoint rows'
        ``stats_parsed`` when ``struct`` and the checkpoint holds it so typed, else None."""
        kept, first_commit = self._segments()
        if kept and not skip_checkpoint:
            assert self.checkpoint_stats is not None
            total = self.checkpoint_stats.num_rows
            wanted = None if kept == total else ordinal_mask(self.rows[CHECKPOINT_ROW].slice(0, kept), total)
            counting = count_records and name == "stats" and CHECKPOINT_NUM_RECORDS not in self._cache
            batches: Iterator[tuple[pa.Array, pa.ChunkedArray | None, pa.Array | None]]
            if counting:
                batches = ((batch, counted, None) for batch, counted in self.checkpoint_stats.iter_counted_stats())
            elif struct is not None:
                batches = ((batch, None, parsed) for batch, parsed in
                           self.checkpoint_stats.iter_stats_with_struct(struct))
            else:
                batches = ((batch, None, None) for batch in self.checkpoint_stats.iter_stats(name))
            counts: list[pa.Array] | None = [] if counting else None
            start = 0
            for batch, counted, parsed in batches:
                if counted is None:
                    counts = None
                elif counts is not None:
                    counts.extend(counted.chunks)
                if wanted is None:
                    yield batch, parsed
                else:
                    mask = mask_array(wanted[start:start + len(batch)])
                    yield batch.filter(mask), None if parsed is None else parsed.filter(mask)
                start += len(batch)
            self.checkpoint_stats.check_rows(start)
            if counts is not None:
                self._cache[CHECKPOINT_NUM_RECORDS] = pa.chunked_array(counts, type=pa.int64())
        if first_commit > kept:
            yield self.rows[name].slice(kept, first_commit - kept), None
        if first_commit < self.rows.num_rows:
            assert self.commit_stats is not None
            yield from ((piece, None) for piece in
                        self.commit_stats.iter_stats(self.rows[COMMIT_ROW].slice(first_commit), name))

    def file_columns(self, names: Sequence[str]) -> pa.Table:
        """Columns ``names`` of the live files (``FILES_SCHEMA`` names); ``stats`` are read
        only if asked for, ``num_records`` without them where the checkpoint allows, ``tags``
        read and unpacked only if asked for."""
        if not self.stats_deferred:
            return self.rows.select(list(names))
        lazy = {"stats": lambda: self.stats, "num_records": lambda: self.num_records,
                "tags": lambda: pa.chunked_array([c for p in self.iter_tags() for c in chunks_of(p)],
                                                 type=FILES_SCHEMA.field("tags").type)}
        columns = [lazy[n]() if n in lazy else self.rows[n] for n in names]
        return pa.Table.from_arrays(columns, schema=pa.schema([FILES_SCHEMA.field(n) for n in names]))

    def rows_of(self, paths: pa.Array) -> np.ndarray:
        """Row numbers (ascending) of the live files whose ``path`` (as in the log) is one of
        ``paths`` (distinct, no nulls). A state's first lookup scans the path column; the second
        starts building its ``PathIndex`` on a thread (kept, and advanced to the states
        ``reconcile`` makes from it: a rewrite run looks up each batch's inputs several times),
        which later lookups use once it is built, confirming what it finds as strings on those
        rows only; until then they scan. The same paths again (a batch's checks, its summaries and
        its commit ask for the same inputs) get the last lookup's rows; the index is started all
        the same, for the states replay advances from this one. So a rewrite's first batch looks
        its inputs up by one scan and the index of millions of paths is built while its Spark
        tasks run, not before them."""
        last: tuple[pa.Array, np.ndarray] | None = self._cache.get(LAST_LOOKUP)
        if last is not None and PATH_INDEX not in self._cache and PATH_INDEX_BUILD not in self._cache:
            self._cache[PATH_INDEX_BUILD] = in_background(PathIndex.build, self.rows["path"], name="path-index")
        index = self.path_index(wait=False)
        if last is not None and last[0].equals(paths):
            return last[1]
        candidates = None if index is None else index.candidates(paths)
        if candidates is None:
            rows = numbers_of(pc.indices_nonzero(pc.is_in(self.rows["path"], value_set=paths))).astype(np.int64)
        else:
            found = pc.is_in(take_rows(self.rows["path"], candidates), value_set=paths)
            rows = candidates[numbers_of(found).astype(bool)]
        rows.flags.writeable = False  # handed out again by the next lookup of the same paths
        self._cache[LAST_LOOKUP] = (paths, rows)
        return rows

    def path_index(self, *, wait: bool) -> PathIndex | None:
        """The rows' ``PathIndex`` once built (``rows_of``; an error building it is raised
        here), waiting for a build under way when ``wait``; None when none is built (or being
        built, without ``wait``), or the paths cannot be hashed."""
        if PATH_INDEX not in self._cache:
            build: Future[PathIndex | None] | None = self._cache.get(PATH_INDEX_BUILD)
            if build is None or not (wait or build.done()):
                return None
            self._cache[PATH_INDEX] = build.result()
            del self._cache[PATH_INDEX_BUILD]
        index: PathIndex | None = self._cache[PATH_INDEX]
        return index

    def files_at(self, rows: np.ndarray, names: Sequence[str] = FILES_SCHEMA.names) -> pa.Table:
        """Columns ``names`` of ``files`` at row numbers ``rows`` (ascending, distinct). Deferred
        statistics and tags are read only if named, and only for these rows: from the checkpoint
        row groups and the commits' packed pieces that hold them (``files`` reads every file's).
        The last rows read of each set of columns are kept: a rewrite batch reads its inputs'
        rows twice (which need summaries, then the rows its commit removes), and their keys twice."""
        rows = np.asarray(rows, dtype=np.int64)
        last = self._cache.setdefault(LAST_READ, {})
        kept = last.get(tuple(names))
        if kept is not None and np.array_equal(kept[0], rows):
            table: pa.Table = kept[1]
            return table
        table = self._read_files_at(rows, names)
        last[tuple(names)] = (rows, table)
        return table

    def _read_files_at(self, rows: np.ndarray, names: Sequence[str]) -> pa.Table:
        if not self.stats_deferred or "files" in self._cache:
            return _take_columns(self.files, rows, names)
        picked = _take_columns(self.rows, rows, [n for n in self.rows.column_names
                                                 if n in names or n in ("path", CHECKPOINT_ROW, COMMIT_ROW)])
        kept, first_commit = self._segments()
        in_checkpoint, in_commits = (int(i) for i in np.searchsorted(rows, [kept, first_commit]))
        commit_ordinals = picked[COMMIT_ROW].slice(in_commits) if in_commits < len(rows) else None
        from_checkpoint: dict[str, list[pa.Array]] = {"stats": [], "tags": []}
        for column, needed_by in (("stats", {"stats", "num_records"}), ("tags", {"tags"})):
            if in_checkpoint and needed_by & set(names):
                assert self.checkpoint_stats is not None
                ordinals = numbers_of(picked[CHECKPOINT_ROW].slice(0, in_checkpoint))
                from_checkpoint[column] = list(self.checkpoint_stats.stats_at(
                    ordinals, picked["path"].slice(0, in_checkpoint), column))

        def deferred(name: str) -> list[pa.Array]:
            if name == "num_records":
                counted = num_records_from_stats(pa.chunked_array(from_checkpoint["stats"], type=pa.string()))
                return [*counted.chunks, *chunks_of(picked[name].slice(in_checkpoint))]
            mine = picked[name].slice(in_checkpoint, in_commits - in_checkpoint)
            pieces = [*from_checkpoint[name], *chunks_of(mine)]
            if commit_ordinals is not None:
                assert self.commit_stats is not None
                pieces.extend(self.commit_stats.iter_stats(commit_ordinals, name))
            return pieces

        fields = [FILES_SCHEMA.field(n) for n in names]
        columns = [pa.chunked_array(deferred(f.name), type=f.type) if f.name in ("stats", "num_records", "tags")
                   else picked[f.name] for f in fields]
        return pa.Table.from_arrays(columns, schema=pa.schema(fields))

    def _segments(self) -> tuple[int, int]:
        """(number of checkpoint rows with deferred stats, index of the first commit row with
        packed stats): replay keeps the first at the start and the second at the end."""
        n = self.rows.num_rows
        kept, first_commit = 0, n
        if self._checkpoint_deferred:
            ordinals = self.rows[CHECKPOINT_ROW]
            kept = len(ordinals) - ordinals.null_count
            if ordinals.slice(0, kept).null_count:
                raise AssertionError("replay moved a checkpoint row after another row")
        if self._commits_deferred:
            ordinals = self.rows[COMMIT_ROW]
            first_commit = n - (len(ordinals) - ordinals.null_count)
            if ordinals.slice(first_commit).null_count or first_commit < kept:
                raise AssertionError("replay moved a commit row before another row")
        return kept, first_commit


def _newest_per_key(keys: pa.ChunkedArray | pa.Array, order: pa.Array) -> pa.Array | None:
    """Row indices (ascending) of the newest (highest ``order``) row for each distinct key, or
    ``None`` when every key occurs once, so every row wins. Repeated keys are found by their
    64-bit hashes and confirmed as strings (``string_hashes.repeated_groups``: no string copy
    beyond those rows; most commits touch each file once); if hashes cannot tell, by Arrow's
    exact hash tables (``_newest_per_key_exact``)."""
    groups = repeated_groups(keys)
    if groups is None:
        return _newest_per_key_exact(keys, order)
    rows, group = groups
    if not len(rows):
        return None
    # Within each group the newest row (highest order) wins; a group's rows sort by order last.
    newest_last = np.lexsort((numbers_of(order)[rows], group))
    grouped = group[newest_last]
    winners = rows[newest_last][np.concatenate([grouped[1:] != grouped[:-1], [True]])]
    wins = np.ones(len(keys), dtype=bool)  # a key that occurs once wins
    wins[rows] = False
    wins[winners] = True
    return int_array_of(np.flatnonzero(wins))


def _newest_per_key_exact(keys: pa.ChunkedArray | pa.Array, order: pa.Array) -> pa.Array | None:
    """``_newest_per_key`` with Arrow's hash tables (they copy every distinct key). Keys are
    counted with a hash table; only the rows of repeated keys are sorted."""
    n = len(keys)
    if n == 0 or pc.count_distinct(keys).as_py() == n:
        return None
    counts = pc.value_counts(keys)
    repeated = counts.field("values").filter(pc.greater(counts.field("counts"), int_scalar(1)))
    if not len(repeated):
        return None
    in_repeated = pc.is_in(keys, value_set=repeated)
    rows = pc.cast(pc.indices_nonzero(in_repeated), pa.int64())
    t = pa.table({"k": keys.take(rows), "o": order.take(rows), "i": rows})
    t = t.sort_by([("k", "ascending"), ("o", "descending")])
    k = one_array(t["k"])
    m = len(k)
    # Sorted by key then newest first: a row starts a new key group iff its key differs
    # from the previous row's, and that first row is the newest of its group.
    first = pc.not_equal(k.slice(1), k.slice(0, m - 1))
    mask = pa.concat_arrays([bool_array([True]), first])
    winners = pa.concat_arrays([
        pc.cast(pc.indices_nonzero(pc.invert(in_repeated)), pa.int64()),
        one_array(t["i"]).filter(mask),
    ])
    return winners.take(pc.sort_indices(winners))


def _take_columns(table: pa.Table, rows: np.ndarray, names: Sequence[str]) -> pa.Table:
    """Columns ``names`` of ``table`` at row numbers ``rows``, taken chunk by chunk
    (``take_rows``): ``Table.take`` joins each column's chunks first, a copy of the whole table
    for a few rows of it."""
    fields = [table.schema.field(n) for n in names]
    return pa.Table.from_arrays([take_rows(table[n], rows) for n in names], schema=pa.schema(fields))


def _take_ascending(table: pa.Table, rows: pa.Array) -> pa.Table:
    """Rows ``rows`` (ascending, distinct) of ``table``, as a filter: Arrow's ``take`` on a table
    of many chunks (one per commit) first concatenates each column, a whole copy of the table
    beside the result; a filter goes chunk by chunk."""
    if table.num_rows == 0 or len(rows) == table.num_rows:
        return table
    return table.filter(mask_array(ordinal_mask(rows, table.num_rows)))


def _take_ascending_freeing(chunks: list[pa.RecordBatch], rows: pa.Array, schema: pa.Schema) -> pa.Table:
    """``_take_ascending`` over the rows of ``chunks``, emptying the list as it goes: each chunk
    is dropped (freed, when the caller holds no other reference) once its rows are copied."""
    total = sum(c.num_rows for c in chunks)
    wanted = mask_array(ordinal_mask(rows, total))
    out: list[pa.RecordBatch] = []
    start = 0
    chunks.reverse()  # pop() from the end is O(1)
    while chunks:
        chunk = chunks.pop()
        out.append(sharing_nulls(chunk.filter(wanted.slice(start, chunk.num_rows))))
        start += chunk.num_rows
        del chunk
    return pa.Table.from_batches(out, schema=schema)


def _filter_by_chunk(table: pa.Table, keep: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Rows of ``table`` where ``keep``. Filtering copies every column: the base holds millions
    of rows, and the commits after it usually remove files from a few of its chunks, so a chunk
    that keeps every row is reused as it is and only the others are copied."""
    if pc.all(keep).as_py():
        return table
    keep = one_array(keep)
    out = []
    start = 0
    for batch in table.to_batches():
        kept = keep.slice(start, batch.num_rows)
        start += batch.num_rows
        out.append(batch if pc.all(kept).as_py() is not False else batch.filter(kept))
    return pa.Table.from_batches(out, schema=table.schema)


def _aligned(*tables: pa.Table) -> list[pa.Table]:
    """``tables`` with the same columns: ``FILES_SCHEMA`` and the ordinal columns any of them
    has (``CHECKPOINT_ROW``, ``COMMIT_ROW``; null in rows from elsewhere), in that order."""
    extra = [c for c in (CHECKPOINT_ROW, COMMIT_ROW) if any(c in t.column_names for t in tables)]
    out = []
    for t in tables:
        for c in extra:
            if c not in t.column_names:
                t = t.append_column(c, pa.nulls(t.num_rows, pa.int64()))
        out.append(t.select([*FILES_SCHEMA.names, *extra]))
    return out


def _chunked(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    return pa.chunked_array([*chunks_of(a), *chunks_of(b)], type=a.type)


def _concat(a: pa.ChunkedArray | pa.Array, b: pa.ChunkedArray | pa.Array) -> pa.Array:
    return pa.concat_arrays([one_array(a), one_array(b)])


def reconcile_files(
    base_files: pa.Table, base_tombstones: pa.Table, batch: CommitBatch, *, table_root: TableRoot | None = None,
    consume: bool = False, first_ordinal: int = 0,
) -> tuple[pa.Table, pa.Table]:
    """Apply the commits' file actions to the base live files and tombstones. New rows follow
    the base rows, in the log order of their winning actions. With ``table_root``, paths are
    matched in their canonical form (without it, as written). ``consume``: the batch's adds
    are taken from it (``CommitBatch.hand_over_adds``) and each chunk is freed once its winning
    rows are copied, so the commits' rows and the result do not both exist whole. When the
    batch's stats are packed, each new row gets ``COMMIT_ROW``: ``first_ordinal`` plus its row
    in the batch's adds."""
    files, tombstones, _, _ = _reconcile_files(base_files, base_tombstones, batch, table_root=table_root,
                                               consume=consume, first_ordinal=first_ordinal)
    return files, tombstones


def _reconcile_files(
    base_files: pa.Table, base_tombstones: pa.Table, batch: CommitBatch, *, table_root: TableRoot | None,
    consume: bool, first_ordinal: int, path_index: PathIndex | None = None,
    tombstone_index: PathIndex | None = None,
) -> tuple[pa.Table, pa.Table, PathIndex | None, PathIndex | None]:
    """``reconcile_files``, and the result's ``PathIndex`` of its live files and of its
    tombstones, advanced from ``path_index`` and ``tombstone_index``, the base's (None without
    one). With an index of plain paths (their own canonical forms), the base rows a commit
    touches are found through it, without a scan of the base's paths; the tombstones' index is
    built the first time the live files' one serves."""
    if not batch.has_file_actions:
        return base_files, base_tombstones, path_index, tombstone_index

    def paths(t: pa.Table) -> pa.ChunkedArray | pa.Array:
        return t["path"] if table_root is None else canonical_paths(t["path"], table_root)

    adds, removes = batch.adds, batch.removes
    add_paths: pa.ChunkedArray | pa.Array | None = paths(adds)
    keys: pa.Array | pa.ChunkedArray | None
    if removes.num_rows:  # one column of both, chunk by chunk (no copy of the keys)
        keys = _chunked(file_keys(adds, paths=add_paths), file_keys(removes, paths=paths(removes)))
        order = _concat(batch.add_order, batch.remove_order)
    else:  # the common append-only batch
        keys, order = file_keys(adds, paths=add_paths), batch.add_order
    winners = _newest_per_key(keys, order)
    # Every key of the batch is touched: its winner replaces the base's row of that key. Keys
    # and paths are only kept when a base or deletion vectors need them; otherwise nothing
    # holds the commits' path strings while their winning rows are copied (``consume``).
    touched = keys if base_files.num_rows or base_tombstones.num_rows else None
    dvs = adds["deletion_vector"]
    if not base_files.num_rows and dvs.null_count == len(dvs):
        add_paths = None
    del keys
    if batch.add_stats is not None:  # the row's place in the packed stats goes with it
        adds = adds.append_column(COMMIT_ROW, int_array(range(first_ordinal, first_ordinal + adds.num_rows)))
    if winners is None:  # each key has one action: all of them win, nothing to copy
        new_adds, new_removes, add_order, new_add_paths = adds, removes, batch.add_order, add_paths
    else:
        n_add = int_scalar(adds.num_rows)
        is_add = pc.less(winners, n_add)
        add_rows = winners.filter(is_add)
        remove_rows = pc.subtract(winners.filter(pc.invert(is_add)), n_add)
        new_add_paths = None if add_paths is None else take_rows(add_paths, numbers_of(add_rows))
        add_order = batch.add_order.take(add_rows)
        if consume:
            chunks, schema = adds.to_batches(), adds.schema
            del adds, dvs, add_paths
            batch.hand_over_adds()
            new_adds = _take_ascending_freeing(chunks, add_rows, schema)
        else:
            new_adds = _take_ascending(adds, add_rows)
        new_removes = _take_ascending(removes, remove_rows)
    new_dvs = new_adds["deletion_vector"]
    if new_adds.num_rows > 1 and new_dvs.null_count < len(new_dvs):
        # A path may be added with two DV ids only if the older one is also removed; either
        # way the add set is unique by path and the newest pair wins.
        assert new_add_paths is not None  # kept above for deletion vectors
        newest = _newest_per_key(new_add_paths, add_order)
        if newest is not None:
            new_adds, new_add_paths = _take_ascending(new_adds, newest), new_add_paths.take(newest)

    index = tomb = None
    if base_files.num_rows:
        assert touched is not None and new_add_paths is not None  # kept above for the base
        if path_index is not None and path_index.plain:
            base_files, index = _without_touched(base_files, path_index, touched, new_adds["path"],
                                                 new_add_paths=new_add_paths)
        else:
            base_paths = paths(base_files)
            keep_files = pc.invert(pc.is_in(file_keys(base_files, paths=base_paths), value_set=touched))
            if new_adds.num_rows:
                keep_files = pc.and_(keep_files, pc.invert(pc.is_in(base_paths, value_set=new_add_paths)))
            base_files = _filter_by_chunk(base_files, keep_files)
    if base_tombstones.num_rows:
        if index is not None:
            tomb = tombstone_index or PathIndex.build(base_tombstones["path"])  # built once, then advanced
        if tomb is not None and tomb.plain:
            base_tombstones, tomb = _without_touched(base_tombstones, tomb, touched, new_removes["path"])
        else:
            keep_tombstones = pc.invert(pc.is_in(file_keys(base_tombstones, paths=paths(base_tombstones)),
                                                 value_set=touched))
            base_tombstones = _filter_by_chunk(base_tombstones, keep_tombstones)
            tomb = None
    files = pa.concat_tables(_aligned(base_files, new_adds))
    tombstones = pa.concat_tables([base_tombstones, new_removes])
    return files, tombstones, index, tomb


def _without_touched(table: pa.Table, index: PathIndex, touched: pa.Array | pa.ChunkedArray,
                     added: pa.Array | pa.ChunkedArray, *,
                     new_add_paths: pa.Array | pa.ChunkedArray | None = None) -> tuple[pa.Table, PathIndex | None]:
    """``table`` (a base's live files or tombstones, paths plain) without the rows the commits
    replace (``_gone_by_index``), and ``index`` advanced to it followed by the rows ``added``."""
    gone = _gone_by_index(table, index, touched, new_add_paths)
    if len(gone):
        kept = np.ones(table.num_rows, dtype=bool)
        kept[gone] = False
        table = _filter_by_chunk(table, mask_array(kept))
    return table, index.advanced(gone, added)


def _gone_by_index(base: pa.Table, index: PathIndex, touched: pa.Array | pa.ChunkedArray,
                   new_add_paths: pa.Array | pa.ChunkedArray | None) -> np.ndarray:
    """The base rows (ascending) that go, as ``_reconcile_files``'s scan decides it: a row goes
    when its key is ``touched`` or its path is newly added (``new_add_paths``, for live files).
    The base's paths are their own canonical forms (``index.plain``), so a row that goes has the
    path of a touched key: only the rows ``index`` finds for those paths are compared, as strings."""
    key_paths = pc.list_element(pc.split_pattern(touched, KEY_SEPARATOR, max_splits=1), 0)
    candidates = index.candidates(key_paths)
    if candidates is None:  # a touched key without a path: compare every row's
        candidates = np.arange(base.num_rows, dtype=np.int64)
    if not len(candidates):
        return candidates
    found = _take_columns(base, candidates, ["path", "deletion_vector"])
    goes = pc.is_in(file_keys(found), value_set=touched)
    if new_add_paths is not None:
        goes = pc.or_(goes, pc.is_in(found["path"], value_set=new_add_paths))
    gone: np.ndarray = candidates[numbers_of(goes).astype(bool)]
    return gone


def reconciliation_defect(batch: CommitBatch, *, table_root: str) -> str | None:
    """Why the file actions of ``batch`` are not reconciled, or ``None`` when they are.

    A log compaction file (PROTOCOL.md "Log Compaction Files") holds the *reconciled* actions of
    the commits it covers: at most one action per logical file ``(path, dvId)`` (so no add
    beside a remove of the same key) and adds unique by path. Replay takes the last line of a
    file as the newest, so a file that breaks this (e.g. commits concatenated newest first)
    would bring removed files back; such a file must not stand in for its commits."""
    if not batch.has_file_actions:
        return None
    root = TableRoot.of(table_root)
    add_paths = canonical_paths(batch.adds["path"], root)
    keys = _concat(file_keys(batch.adds, paths=add_paths),
                   file_keys(batch.removes, paths=canonical_paths(batch.removes["path"], root)))
    for values, what in ((keys, "has more than one action"), (one_array(add_paths), "is added more than once")):
        if pc.count_distinct(values).as_py() != len(values):
            counts = pc.value_counts(values)
            repeated = counts.field("values").filter(pc.greater(counts.field("counts"), int_scalar(1)))
            return f"{str(repeated[0].as_py()).split(KEY_SEPARATOR)[0]!r} {what}"
    return None


def reconcile(base: ReplayState, batch: CommitBatch, *, table_root: str | None = None,
              consume: bool = False) -> ReplayState:
    """The state after applying ``batch`` (commits in ascending order) on top of ``base``; file
    paths are matched in their canonical form under ``table_root`` when given. ``consume``:
    see ``reconcile_files``. Once the base's rows have packed commit stats, the batch's are
    packed too (rows with their own stats stay before commit rows: see ``ReplayState``)."""
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
    root = TableRoot.of(table_root) if table_root is not None and batch.has_file_actions else None
    commit_stats, first_ordinal = base.commit_stats, 0
    if batch.has_file_actions:
        if commit_stats is not None and batch.add_stats is None:
            batch = batch.packed()
        if batch.add_stats is not None:
            first_ordinal = 0 if commit_stats is None else commit_stats.num_rows
            commit_stats = batch.add_stats if commit_stats is None else commit_stats.then(batch.add_stats)
    rows, tombstones, index, tombstone_index = _reconcile_files(
        base.rows, base.tombstones, batch, table_root=root, consume=consume, first_ordinal=first_ordinal,
        path_index=base.path_index(wait=True), tombstone_index=base._cache.get(TOMBSTONE_INDEX))
    if commit_stats is not None and COMMIT_ROW in rows.column_names and batch.has_file_actions:
        ordinals = rows[COMMIT_ROW]
        commit_stats = commit_stats.keeping(ordinals.slice(ordinals.null_count))  # commit rows come last
    state = ReplayState(
        protocol=protocol, metadata=metadata, rows=rows, tombstones=tombstones, txns=txns,
        domain_metadata={k: d for k, d in domains.items() if not d.removed},
        checkpoint_stats=base.checkpoint_stats if CHECKPOINT_ROW in rows.column_names else None,
        commit_stats=commit_stats if COMMIT_ROW in rows.column_names else None,
    )
    if index is not None:  # advanced from the base's: lookups in the new state use it at once
        state._cache[PATH_INDEX] = index
    if tombstone_index is not None:
        state._cache[TOMBSTONE_INDEX] = tombstone_index
    return state


def base_state(
    *,
    protocol: Protocol | None,
    metadata: Metadata | None,
    files: pa.Table,
    tombstones: pa.Table,
    txns: Iterable[Txn] = (),
    domain_metadata: Iterable[DomainMetadata] = (),
    checkpoint_stats: CheckpointStats | None = None,
) -> ReplayState:
    """A replay base from a checkpoint's actions (later entries of one appId/domain win);
    ``checkpoint_stats`` when ``files`` came without statistics (``CHECKPOINT_ROW``)."""
    t = {x.app_id: x for x in txns}
    d = {x.domain: x for x in domain_metadata}
    return ReplayState(protocol, metadata, files, tombstones, t, {k: v for k, v in d.items() if not v.removed},
                       checkpoint_stats)


# --- expiry (applied by checkpoint writers and callers that ask for it) -------------------


def expire_tombstones_before(tombstones: pa.Table, ms: int) -> pa.Table:
    """Tombstones deleted after ``ms`` (epoch millis); a missing ``deletionTimestamp`` counts as 0,
    so it expires (PROTOCOL.md "Add File and Remove File": a tombstone lives until expired)."""
    ts = pc.fill_null(tombstones["deletion_timestamp"], int_scalar(0))
    return tombstones.filter(pc.greater(ts, int_scalar(ms)))


def live_txns(
    txns: Mapping[str, Txn], *, retention: dt.timedelta | None, now_ms: int,
) -> dict[str, Txn]:
    """Txns not older than ``retention`` (``delta.setTransactionRetentionDuration``), by
    ``lastUpdated``; a txn without ``lastUpdated`` never expires. ``None`` keeps all."""
    if retention is None:
        return dict(txns)
    cutoff = now_ms - int(retention.total_seconds() * 1000)
    return {k: t for k, t in txns.items() if t.last_updated is None or t.last_updated >= cutoff}
