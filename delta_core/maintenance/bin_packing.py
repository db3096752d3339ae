"""Bin packing of files per partition (Delta's OPTIMIZE), vectorised over Arrow columns.

The one implementation behind the compaction planner (``compaction_plan``) and the health
model's estimate (``health.compaction_estimate``). The rule: within each partition the candidate
files are sorted by size (ties by path, when the caller gives the paths) and packed greedily
into bins of at most ``target_size`` bytes, a file larger than the target opening a bin of its
own; a bin holding a single file is dropped, unless it holds a file that is ``due`` (over the
deleted-rows ratio: rewritten even alone).

No Python object is made per file. After one sort, a bin starting at sorted row ``i`` ends
where the running total of sizes first exceeds ``cumsum[i - 1] + target_size``, which one
``searchsorted`` finds; the bins of all partitions advance together, so the loop runs as many
times as the largest partition has bins, not once per file or per bin.

Partitions are told apart by their partition-value columns (``partition_key_columns``: one
string column per partition column, read from the ``partition_values`` map); a null value is a
partition of its own, equal to itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import false_array, int_scalar, numbers_of, string_scalar
from delta_core.write.data_writer import table_schema

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot


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


def group_starts(keys: Sequence[pa.ChunkedArray | pa.Array], n: int) -> np.ndarray:
    """For ``n`` rows sorted by ``keys``, whether each row starts a new partition (the first
    row does; a null equals a null)."""
    starts = np.zeros(n, dtype=bool)
    if n:
        starts[0] = True
    for column in keys:
        flat = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        after, before = flat.slice(1), flat.slice(0, max(0, n - 1))
        differs = pc.or_(pc.fill_null(pc.not_equal(after, before), false_array(1)[0]),
                         pc.xor(pc.is_null(after), pc.is_null(before)))
        starts[1:] |= numbers_of(differs)
    return starts


def count_partitions(keys: Sequence[pa.ChunkedArray | pa.Array], n: int) -> int:
    """Distinct combinations of ``keys`` (the partition columns' values, nulls equal to nulls)
    among ``n`` rows: 0 without rows, 1 without keys. Each column is dictionary-encoded and its
    codes folded into one dense code per row, so no sort and no Table.group_by (which loads
    pyarrow.dataset, and with it pandas)."""
    if n == 0:
        return 0
    code = np.zeros(n, dtype=np.int64)
    for column in keys:
        flat = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        encoded = pc.dictionary_encode(flat, null_encoding="encode")
        mixed = code * len(encoded.dictionary) + numbers_of(encoded.indices).astype(np.int64)
        code = np.unique(mixed, return_inverse=True)[1]  # dense again: no overflow however many keys
    return int(code.max()) + 1


def sort_order(keys: Sequence[pa.ChunkedArray], *then: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Row numbers (uint64) ordering the rows by ``keys`` (partition), then by the columns
    ``then`` (all ascending, nulls last)."""
    columns = {f"k{i}": k for i, k in enumerate([*keys, *then])}
    return pc.sort_indices(pa.table(columns), sort_keys=[(name, "ascending") for name in columns])


def row_numbers(rows: np.ndarray) -> pa.Array:
    """``rows`` (int64) as an Arrow array for ``take``, from its buffer (``pa.array`` probes for
    pandas, which imports it)."""
    flat = np.ascontiguousarray(rows, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(flat), [None, pa.py_buffer(flat)])


def pack(
    keys: Sequence[pa.ChunkedArray],
    sizes: pa.ChunkedArray | pa.Array,
    due: pa.ChunkedArray | pa.Array,
    *,
    target_size: int,
    paths: pa.ChunkedArray | pa.Array | None = None,
) -> Packing:
    """Pack the candidate files (``sizes`` aligned with the partition ``keys``; ``due``: rewrite
    even alone) into bins of at most ``target_size`` bytes under the module docstring's rule.

    ``paths`` break ties of equal size; without them equal sizes keep an arbitrary order, which
    changes which files share a bin but not how many files and bins there are unless a ``due``
    file is among them (so a caller that only counts may leave them out when none is due)."""
    n = len(sizes)
    if n == 0:
        return Packing(np.zeros(0, np.int64), np.zeros(1, np.int64))
    order = sort_order(keys, sizes, *([paths] if paths is not None else []))
    sorted_sizes = numbers_of(pc.fill_null(pc.take(sizes, order), int_scalar(0))).astype(np.int64)
    sorted_due = numbers_of(pc.fill_null(pc.take(due, order), false_array(1)[0]))
    starts = np.flatnonzero(group_starts([pc.take(k, order) for k in keys], n))
    ends = np.append(starts[1:], n)
    cumulative = np.cumsum(sorted_sizes)
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
    due_before = np.concatenate([[0], np.cumsum(sorted_due, dtype=np.int64)])
    keep = (hi - lo > 1) | (due_before[hi] > due_before[lo])
    lo, hi = lo[keep], hi[keep]
    lengths = hi - lo
    bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # the sorted positions of every kept file: each bin's range lo..hi, bin after bin
    positions = np.arange(bounds[-1], dtype=np.int64) + np.repeat(lo - bounds[:-1], lengths)
    return Packing(numbers_of(order).astype(np.int64)[positions], bounds)
