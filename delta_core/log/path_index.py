"""Rows of a table state's live files by ``path``, found without scanning the path column
(PROTOCOL.md "Action Reconciliation": a live file is unique by path).

A rewrite run looks its batch's inputs up in its snapshot several times (still live? with which
deletion vector? which rows does the commit remove?) and advances the snapshot by its own
commits between batches. A scan of a path column of millions per lookup costs time that grows
with the table, not the batch. This index holds each live file's 64-bit path hash
(``model.string_hashes``) with its row, sorted: a lookup hashes only the wanted paths and
returns the rows of equal hashes (a superset: hashes may collide, so callers confirm them as
strings on those rows only), and replay advances it with the rows a commit kept and added
(``advanced``), so later states never hash the whole column again. The row goes in the low bits
of the hash it replaces, so the index is one array of 8 bytes a file, sorted without an argsort.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from delta_core.model.path_identity import surely_plain
from delta_core.model.string_hashes import string_hashes

_NONE = np.zeros(0, np.int64)


def _matching(hashes: np.ndarray, rows: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """``rows`` of the entries of ``hashes`` (ascending) equal to one of ``wanted`` (distinct)."""
    first = np.searchsorted(hashes, wanted, side="left")
    counts = np.searchsorted(hashes, wanted, side="right") - first
    total = int(counts.sum())
    if not total:
        return _NONE
    # The entries first[i] .. first[i] + counts[i] - 1 of each wanted hash, in one array.
    starts = np.repeat(first - np.cumsum(counts) + counts, counts)
    found: np.ndarray = rows[starts + np.arange(total)]
    return found


def _mixed(hashes: np.ndarray) -> np.ndarray:
    """``hashes`` through SplitMix64's finaliser, in place: a bijection whose high bits depend on
    every bit (a polynomial hash of a short string varies in its low bits only), so the high
    bits the packed index keeps still tell paths apart."""
    hashes ^= hashes >> np.uint64(30)
    hashes *= np.uint64(0xBF58476D1CE4E5B9)
    hashes ^= hashes >> np.uint64(27)
    hashes *= np.uint64(0x94D049BB133111EB)
    hashes ^= hashes >> np.uint64(31)
    return hashes


def _matching_packed(keys: np.ndarray, bits: int, wanted: np.ndarray) -> np.ndarray:
    """The rows packed in the low ``bits`` of the ``keys`` (ascending) whose high bits are those
    of one of ``wanted``'s (mixed) hashes."""
    low = np.uint64((1 << bits) - 1)
    # Sorted again after mixing: ascending needles walk ``keys`` in order (about 3x faster
    # at 10M keys than needles in random order, each a cache miss per step).
    lo = np.sort(_mixed(wanted.copy()) & ~low)
    first = np.searchsorted(keys, lo, side="left")
    counts = np.searchsorted(keys, lo | low, side="right") - first
    total = int(counts.sum())
    if not total:
        return _NONE
    starts = np.repeat(first - np.cumsum(counts) + counts, counts)
    return (keys[starts + np.arange(total)] & low).astype(np.int64)


def _sorted_by_hash(hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(hashes)
    return hashes[order], rows[order].astype(np.int64)


@dataclass(frozen=True, slots=True)
class PathIndex:
    """The rows of a state are its live ``core`` rows, then its ``tail`` rows. ``core`` (uint64,
    ascending) holds each core row's path hash with its low ``bits`` replaced by the row (numbered
    as when the index was built, ``core_rows`` of them), ``dropped`` (ascending) the core rows no
    longer live; ``tail_hashes``
    (ascending) those of the tail rows at ``tail_rows`` (counted from the first tail row).
    Advancing the index drops rows and appends others without touching the core's entries, so
    it costs what the commits touched, not what the table holds. ``plain``: every path is a
    plain relative path, its own canonical form (``path_identity.surely_plain``), so replay may
    match canonical paths through the index."""

    core: np.ndarray
    bits: int
    core_rows: int
    plain: bool
    dropped: np.ndarray = field(default_factory=lambda: _NONE)
    tail_hashes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    tail_rows: np.ndarray = field(default_factory=lambda: _NONE)

    @classmethod
    def build(cls, paths: pa.Array | pa.ChunkedArray) -> PathIndex | None:
        """The index of ``paths`` (row ``i`` is ``paths[i]``); None when they cannot be hashed
        (nulls, or not a string column)."""
        hashes = string_hashes(paths)
        if hashes is None:
            return None
        bits = max(1, (len(hashes) - 1).bit_length())
        _mixed(hashes)
        hashes &= ~np.uint64((1 << bits) - 1)
        hashes |= np.arange(len(hashes), dtype=np.uint64)
        hashes.sort()
        return cls(hashes, bits, len(hashes), surely_plain(paths))

    @property
    def _live_core(self) -> int:
        return self.core_rows - len(self.dropped)

    def candidates(self, wanted: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
        """Rows (ascending, distinct) whose path hashes as one of ``wanted``: every row whose path
        is one of them, perhaps with a few others. None when ``wanted`` cannot be hashed."""
        hashes = string_hashes(wanted)
        if hashes is None:
            return None
        hashes = np.unique(hashes)
        core = _matching_packed(self.core, self.bits, hashes)
        if len(self.dropped) and len(core):
            at = np.searchsorted(self.dropped, core)
            gone = self.dropped[np.minimum(at, len(self.dropped) - 1)] == core
            core = core[~gone] - at[~gone]  # numbered among the live core rows
        tail = _matching(self.tail_hashes, self.tail_rows, hashes) + self._live_core
        return np.unique(np.concatenate([core, tail]))

    def advanced(self, gone: np.ndarray, added: pa.Array | pa.ChunkedArray) -> PathIndex | None:
        """The index of a state whose rows are this one's rows but those at ``gone`` (ascending,
        distinct), in order, then ``added``'s paths. None when ``added`` cannot be hashed."""
        live_core = self._live_core
        split = int(np.searchsorted(gone, live_core))
        gone_core, gone_tail = gone[:split], gone[split:] - live_core
        dropped = self.dropped
        if len(gone_core):
            # The k-th live core row is core row k + #{j: dropped[j] - j <= k}.
            shifted = dropped - np.arange(len(dropped))
            core_rows = gone_core + np.searchsorted(shifted, gone_core, side="right")
            dropped = np.insert(dropped, np.searchsorted(dropped, core_rows), core_rows)
        tail_hashes, tail_rows = self.tail_hashes, self.tail_rows
        if len(gone_tail):
            at = np.searchsorted(gone_tail, tail_rows)
            stays = gone_tail[np.minimum(at, len(gone_tail) - 1)] != tail_rows
            tail_hashes, tail_rows = tail_hashes[stays], tail_rows[stays] - at[stays]
        if len(added):
            new = string_hashes(added)
            if new is None:
                return None
            tail_hashes, tail_rows = _sorted_by_hash(
                np.concatenate([tail_hashes, new]),
                np.concatenate([tail_rows, len(tail_rows) + np.arange(len(new))]))
        return PathIndex(self.core, self.bits, self.core_rows, self.plain and (not len(added) or surely_plain(added)),
                         dropped, tail_hashes, tail_rows)
