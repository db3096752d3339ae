"""Bin packing of files per partition (Delta's OPTIMIZE), vectorised over Arrow columns.

The one implementation behind the compaction planner (``compaction_plan``) and the health
model's estimate (``health.compaction_estimate``). The rule: within each partition the candidate
files are sorted by size (ties by path, when the caller gives the paths) and packed greedily
into bins of at most ``target_size`` bytes, a file larger than the target opening a bin of its
own; a bin holding a single file is dropped, unless it holds a file that is ``due`` (over the
deleted-rows ratio: rewritten even alone). ``keep_bins`` then keeps the bins to rewrite: every
one, as OPTIMIZE, in a run a person starts; under automated selection only those worth their bytes
(the rule is in its docstring: small fragments merge first, larger files only into a file that is
no longer small).

No Python object is made per file. After one sort, a bin starting at sorted row ``i`` ends
where the running total of sizes first exceeds ``cumsum[i - 1] + target_size``, which one
``searchsorted`` finds; the bins of all partitions advance together, so the loop runs as many
times as the largest partition has bins, not once per file or per bin.

Partitions are told apart by their partition-value columns (``partition_key_columns``: one
string column per partition column, read from the ``partition_values`` map), turned into one
integer code per row (``partition_codes``); a null value is a partition of its own, equal to
itself. Sorting is NumPy's over integer keys: strings (partition values, and paths when they
break ties) are ranked by one Arrow sort each, never compared row against row in a multi-column
sort, and never copied.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import chunks_of, false_array, numbers_of, string_scalar, take_rows
from delta_core.write.data_writer import table_schema

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


# A fragment up to this many times the smaller ones together still merges with them (``keep_bins``).
MERGED_FRAGMENT_SLACK = 1.25


@dataclass(frozen=True, slots=True)
class Packing:
    """The bins found: bin ``b`` holds the input rows ``rows[bounds[b]:bounds[b + 1]]``, in
    packing order (partition, then size, then path)."""

    rows: np.ndarray  # int64 row numbers into the packed columns, bin after bin
    bounds: np.ndarray  # int64, one more than there are bins

    @property
    def num_bins(self) -> int:
        return len(self.bounds) - 1

    @property
    def num_files(self) -> int:
        return int(self.bounds[-1])

    def bin_totals(self, values: np.ndarray) -> np.ndarray:
        """Per bin, the sum of ``values`` (aligned with the packed rows' positions) over its rows."""
        if self.num_bins == 0:
            return np.zeros(0, dtype=values.dtype)
        totals: np.ndarray = np.add.reduceat(values[self.rows], self.bounds[:-1])
        return totals

    def first_rows(self) -> np.ndarray:
        """The row number of each bin's first file (to read its partition values)."""
        firsts: np.ndarray = self.rows[self.bounds[:-1]]
        return firsts


def partition_key_names(snapshot: Snapshot) -> list[str]:
    """The keys of the log's ``partitionValues`` maps: the partition columns' physical names
    under column mapping (in mode ``none`` leftover physical names do not count)."""
    schema = table_schema(snapshot.metadata)
    return [f.physical_name if (f := schema.get(c)) else c for c in snapshot.partition_columns]


def partition_key_columns(files: pa.Table, partition_columns: Sequence[str]) -> list[pa.ChunkedArray]:
    """One string column per partition column, looked up in the ``partition_values`` map."""
    pv = files.column("partition_values")
    out = []
    for col in partition_columns:
        if files.num_rows == 0:
            out.append(pa.chunked_array([], pa.string()))
        else:
            out.append(pa.chunked_array([_value_of(chunk, col) for chunk in pv.chunks], pa.string()))
    return out


def _value_of(maps: pa.MapArray, key: str) -> pa.Array:
    """``map_lookup(maps, key, "first")``, without the lookup when every map holds ``key``
    exactly once (the usual shape: each file names each partition column once)."""
    if maps.null_count == 0 and len(maps):
        offsets = maps.offsets  # of this slice, into the whole children
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        keys, items = maps.keys.slice(first, last - first), maps.items.slice(first, last - first)
        hit = pc.fill_null(pc.equal(keys, string_scalar(key)), false_array(1)[0])
        sizes = np.diff(numbers_of(offsets))
        rows = np.repeat(np.arange(len(maps)), sizes)[numbers_of(hit)]  # the map of each hit
        if len(rows) == len(maps) and bool((rows == np.arange(len(maps))).all()):
            return items.filter(hit)
    return pc.map_lookup(maps, string_scalar(key), "first")


def partition_codes(keys: Sequence[pa.ChunkedArray | pa.Array], n: int) -> np.ndarray:
    """Per row of ``n``, a dense integer code of its partition (the combination of its ``keys``
    values), numbered in the order the partitions sort (each column ascending, nulls last, a
    null equal to a null): all zeros without keys. Each column is dictionary-encoded and its
    dictionary ranked, so strings are compared once per distinct value, not once per row."""
    code: np.ndarray | None = None
    for column in keys:
        ranks = value_ranks(column)  # dense already: ranks of the distinct values
        if code is not None and len(ranks):
            span = (int(code.max()) + 1) * (int(ranks.max()) + 1)  # at most n * n: no overflow
            mixed = code.astype(np.int64) * (int(ranks.max()) + 1) + ranks
            if span <= max(n, 1 << 20):  # few combinations: dense again by a lookup, no sort
                seen = np.zeros(span, dtype=bool)
                seen[mixed] = True
                ranks = (np.cumsum(seen) - 1)[mixed]
            else:
                ranks = np.unique(mixed, return_inverse=True)[1].reshape(-1)
            ranks = ranks.astype(np.int64, copy=False)
        code = ranks
    return np.zeros(n, dtype=np.int32) if code is None else code


def value_ranks(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Per row, the rank (int32) of its value among the column's distinct values (nulls last)."""
    encoded = pc.dictionary_encode(column, null_encoding="encode")
    chunks = chunks_of(encoded)
    if not chunks:
        return np.zeros(0, dtype=np.int32)
    dictionary = chunks[-1].dictionary  # one dictionary across the chunks, complete in the last
    ranks = np.empty(len(dictionary), dtype=np.int32)
    ranks[numbers_of(pc.sort_indices(dictionary)).astype(np.int64)] = np.arange(len(dictionary), dtype=np.int32)
    return np.concatenate([ranks[numbers_of(c.indices)] for c in chunks])


def count_partitions(keys: Sequence[pa.ChunkedArray | pa.Array], n: int) -> int:
    """Distinct combinations of ``keys`` (the partition columns' values, nulls equal to nulls)
    among ``n`` rows: 0 without rows, 1 without keys (no sort and no Table.group_by, which loads
    pyarrow.dataset, and with it pandas)."""
    return int(partition_codes(keys, n).max()) + 1 if n else 0


def sort_order(keys: Sequence[pa.ChunkedArray], *then: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Row numbers (int64) ordering the rows by partition (``keys``), then by the columns
    ``then`` (all ascending, nulls last), over integer keys only (``sort_keys``)."""
    n = len(then[0]) if then else (len(keys[0]) if keys else 0)
    return lexical_order(partition_codes(keys, n), *(sort_keys(c) for c in then))


def lexical_order(*columns: np.ndarray) -> np.ndarray:
    """Row numbers (int64) ordering the rows by ``columns``, the first the most significant (a
    stable sort: equal rows keep their order)."""
    keys = _folded(columns)
    order = np.argsort(keys[0], kind="stable") if len(keys) == 1 else np.lexsort(keys[::-1])
    return order.astype(np.int64, copy=False)


def _folded(columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """``columns`` with each signed integer column folded into the one before it while their
    values together fit one int64 key (``(a - min a) * span b + (b - min b)`` orders as ``a``,
    then ``b``): one stable sort of a single key is faster than ``np.lexsort`` over several."""
    keys: list[np.ndarray] = []
    for column in columns:
        if keys and len(column) and _signed(keys[-1]) and _signed(column):
            low, high = int(column.min()), int(column.max())
            first, last = int(keys[-1].min()), int(keys[-1].max())
            if (last - first + 1) * (high - low + 1) < 1 << 62:
                keys[-1] = (keys[-1].astype(np.int64) - first) * (high - low + 1) + (column.astype(np.int64) - low)
                continue
        keys.append(column)
    return keys


def _signed(column: np.ndarray) -> bool:
    return bool(np.issubdtype(column.dtype, np.signedinteger))


def sort_keys(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Integer keys ordering ``column`` as Arrow sorts it (ascending, nulls last): the values
    themselves for numbers, else each row's position in ``pc.sort_indices``, which sorts a
    string column chunk by chunk without copying its strings."""
    if (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)) and not column.null_count:
        return numbers_of(column)
    positions = numbers_of(pc.sort_indices(column)).view(np.int64)  # uint64 row numbers, all below 2**63
    kind = np.int32 if len(positions) < 2**31 else np.int64
    ranks = np.empty(len(positions), dtype=kind)
    ranks[positions] = np.arange(len(positions), dtype=kind)
    return ranks


def sort_keys_of(column: pa.ChunkedArray, rows: np.ndarray) -> np.ndarray:
    """``sort_keys`` of the rows ``rows`` of ``column``: those rows taken and sorted when they are
    few, else the whole column ranked and the rows' ranks kept, so a string column is never copied
    in large part (at 10M files, most of the paths would be gigabytes)."""
    if 4 * len(rows) < len(column):
        return sort_keys(take_rows(column, rows))
    ranks: np.ndarray = sort_keys(column)[rows]
    return ranks


def pack(
    codes: np.ndarray,
    sizes: np.ndarray,
    due: np.ndarray,
    *,
    target_size: int,
    ties: np.ndarray | None = None,
) -> Packing:
    """Pack the candidate files (``sizes`` aligned with their partitions' ``codes`` from
    ``partition_codes``; ``due``: rewrite even alone) into bins of at most ``target_size`` bytes
    under the module docstring's rule; the packing's rows are positions in these arrays.

    ``ties`` (``sort_keys`` of the paths) break ties of equal size; without them equal sizes keep
    an arbitrary order, which changes which files share a bin but not how many files and bins
    there are unless a ``due`` file is among them (so a caller that only counts may leave them
    out when none is due)."""
    n = len(sizes)
    if n == 0:
        return Packing(np.zeros(0, np.int64), np.zeros(1, np.int64))
    order = lexical_order(codes, sizes, *([ties] if ties is not None else []))
    # Only what the loop below needs stays alive: at 10M files each array here is 80 MB.
    sorted_codes = codes[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_codes[1:] != sorted_codes[:-1]]))
    del sorted_codes
    ends = np.append(starts[1:], n)
    cumulative = sizes[order]
    np.cumsum(cumulative, out=cumulative)
    due_at = np.flatnonzero(due[order])  # sorted positions of the due files (usually none)
    # Every partition's next bin is found at once; partitions with rows left go round again.
    lows, highs = [], []
    frontier, limit = starts, ends
    while len(frontier):
        before = np.where(frontier > 0, cumulative[frontier - 1], 0)
        after = np.searchsorted(cumulative, before + target_size, side="right")
        after = np.maximum(np.minimum(after, limit), frontier + 1)  # an oversized file: a bin alone
        lows.append(frontier)
        highs.append(after)
        left = after < limit
        frontier, limit = after[left], limit[left]
    lo, hi = np.concatenate(lows), np.concatenate(highs)
    in_order = np.argsort(lo, kind="stable")
    lo, hi = lo[in_order], hi[in_order]
    has_due = np.searchsorted(due_at, hi) > np.searchsorted(due_at, lo)
    keep = (hi - lo > 1) | has_due
    lo, hi = lo[keep], hi[keep]
    bounds = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
    # Bins cover the sorted positions without overlap: those inside a kept bin, bin after bin.
    inside = np.zeros(n + 1, dtype=np.int8)
    inside[lo] = 1
    inside[hi] -= 1
    np.cumsum(inside, out=inside)
    return Packing(order[inside[:-1].view(bool)], bounds)


def keep_bins(packing: Packing, sizes: np.ndarray, due: np.ndarray, *, min_file_size: int, fragment_size: int,
              min_input_files: int, automated: bool) -> Packing:
    """The bins of ``packing`` (over ``sizes`` and ``due``, as given to ``pack``) to rewrite, each
    kept whole, cut to its fragments, or dropped:

    - a bin holding a ``due`` file is kept whole (its deleted rows go);
    - a bin of two files or more whose sizes reach ``min_file_size`` is kept whole: it merges them
      into one file that is no longer small, which no later run rewrites, whatever its count
      (as Iceberg rewrites a group short of ``min-input-files`` whose bytes make a full file);
    - bin-packing (not ``automated``: OPTIMIZE's, a run a person starts) keeps any other bin whole
      when it holds at least ``min_input_files`` files, whatever their sizes;
    - ``automated`` selection keeps of any other bin only its fragments (files under
      ``fragment_size``), and only when there are at least ``min_input_files`` of them: small
      fragments merge first (Amoro's minor optimizing), while a larger file waits until it can join
      a file that is no longer small. The fragments kept are the most, smallest first, whose
      largest is at most the others together (give or take ``MERGED_FRAGMENT_SLACK``, so that
      fragments of about one size always merge), so a merged fragment is rewritten only once about
      as much new data has come as it holds: each merge nearly doubles its largest input, and a
      byte is rewritten a few times on its way to the target, not once per run;
    - the rest are dropped: too few files to pay for their rewrite (Iceberg's ``min-input-files``).

    The bins keep their order; a kept bin keeps its rows' order. Only the rows of the bins not
    kept whole are looked at one by one: at scale most bins are whole, often all of them."""
    if packing.num_bins == 0:
        return packing
    counts = np.diff(packing.bounds)
    whole = (counts >= 2) & (packing.bin_totals(sizes) >= min_file_size)
    if due.any():
        whole |= packing.bin_totals(due.astype(np.int64)) > 0
    if not automated:
        return _kept_bins(packing, whole | (counts >= min_input_files))
    rest = np.flatnonzero(~whole)
    if not len(rest):
        return packing
    # The bins not whole, side by side: local row ``i`` is the packing's row ``at[i]``.
    lengths = counts[rest]
    starts = np.cumsum(lengths) - lengths
    at = np.arange(int(lengths.sum())) + np.repeat(packing.bounds[rest] - starts, lengths)
    bin_of = np.repeat(np.arange(len(rest)), lengths)
    packed = sizes[packing.rows[at]]
    # rows are by size within a bin: the fragments kept are the longest run, smallest first, whose
    # largest is at most MERGED_FRAGMENT_SLACK times the others together (the first row alone qualifies)
    index = np.arange(len(packed))
    before = np.cumsum(packed) - packed
    before -= before[starts][bin_of]
    ends = (packed < fragment_size) & ((index == starts[bin_of]) | (packed <= MERGED_FRAGMENT_SLACK * before))
    last = np.maximum.reduceat(np.where(ends, index, -1), starts)
    fragment = index <= last[bin_of]
    minor = np.bincount(bin_of[fragment], minlength=len(rest)) >= min_input_files
    chosen = minor[bin_of] & fragment
    keep = np.repeat(whole, counts)
    keep[at[chosen]] = True
    kept = np.where(whole, counts, 0)
    kept[rest] = np.bincount(bin_of[chosen], minlength=len(rest))
    return Packing(packing.rows[keep], np.concatenate([[0], np.cumsum(kept[kept > 0])]).astype(np.int64))


def _kept_bins(packing: Packing, keep: np.ndarray) -> Packing:
    """``packing`` with only the bins ``keep`` marks, each whole."""
    if keep.all():
        return packing
    counts = np.diff(packing.bounds)
    return Packing(packing.rows[np.repeat(keep, counts)],
                   np.concatenate([[0], np.cumsum(counts[keep])]).astype(np.int64))
