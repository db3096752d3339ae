"""Rows of a table state's live files by ``path``, found without scanning the path column
(PROTOCOL.md "Action Reconciliation": a live file is unique by path).

A rewrite run looks its batch's inputs up in its snapshot several times (still live? with which
deletion vector? which rows does the commit remove?) and advances the snapshot by its own
commits between batches. A scan of a path column of millions per lookup costs time that grows
with the table, not the batch. This index holds each live file's 64-bit path hash
(``model.string_hashes``), sorted, with its row: a lookup hashes only the wanted paths and
returns the rows of equal hashes (a superset: hashes may collide, so callers confirm them as
strings on those rows only), and replay advances it with the rows a commit kept and added
(``advanced``), so later states never hash the whole column again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from delta_core.model.path_identity import surely_plain
from delta_core.model.string_hashes import string_hashes


@dataclass(frozen=True, slots=True)
class PathIndex:
    """``hashes`` (uint64, ascending) of the paths at ``rows`` (int64), one entry per row;
    ``plain``: every path is a plain relative path, its own canonical form
    (``path_identity.surely_plain``), so replay may match canonical paths through the index."""

    hashes: np.ndarray
    rows: np.ndarray
    plain: bool

    @classmethod
    def build(cls, paths: pa.Array | pa.ChunkedArray) -> PathIndex | None:
        """The index of ``paths`` (row ``i`` is ``paths[i]``); None when they cannot be hashed
        (nulls, or not a string column)."""
        hashes = string_hashes(paths)
        if hashes is None:
            return None
        order = np.argsort(hashes)
        return cls(hashes[order], order.astype(np.int64), surely_plain(paths))

    def candidates(self, wanted: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
        """Rows (ascending, distinct) whose path hashes as one of ``wanted``: every row whose path
        is one of them, perhaps with a few others. None when ``wanted`` cannot be hashed."""
        hashes = string_hashes(wanted)
        if hashes is None:
            return None
        hashes = np.unique(hashes)
        first = np.searchsorted(self.hashes, hashes, side="left")
        counts = np.searchsorted(self.hashes, hashes, side="right") - first
        total = int(counts.sum())
        if not total:
            return np.zeros(0, np.int64)
        # The entries first[i] .. first[i] + counts[i] - 1 of each wanted hash, in one array.
        starts = np.repeat(first - np.cumsum(counts) + counts, counts)
        return np.unique(self.rows[starts + np.arange(total)])

    def advanced(self, kept: np.ndarray | None, added: pa.Array | pa.ChunkedArray) -> PathIndex | None:
        """The index of a state whose rows are this one's rows where ``kept`` (a bool per row;
        None: all), in order, then ``added``'s paths. None when ``added`` cannot be hashed."""
        hashes, rows = self.hashes, self.rows
        if kept is not None:
            entry_kept = kept[rows]
            hashes = hashes[entry_kept]
            rows = (np.cumsum(kept) - 1)[rows[entry_kept]]
        if not len(added):
            return PathIndex(hashes, rows, self.plain)
        new = string_hashes(added)
        if new is None:
            return None
        order = np.argsort(new)
        at = np.searchsorted(hashes, new[order])
        first = len(rows) if kept is None else int(np.count_nonzero(kept))
        return PathIndex(np.insert(hashes, at, new[order]), np.insert(rows, at, first + order.astype(np.int64)),
                         self.plain and surely_plain(added))
