"""A set of storage keys held as their 64-bit hashes: millions of keys in 8 bytes each.

Vacuum asks, for every listed file, whether the log still references it. Arrow's ``is_in``
builds its hash set again on every call, so a listing that comes in batches would rebuild a set
of every referenced key (copies of their strings) for each batch. ``KeySet`` is built once: the
sorted hashes of the keys (``model.string_hashes``, no Python object per key), searched with a
binary search per key (the keys looked up sorted by hash first, so that each search starts near
the last).

Equal keys have equal hashes, so a member is always found. Two different keys may share a hash
(for a key tested against n members, odds of about n / 2**64): ``may_contain`` then answers true
for a key that is not a member. Vacuum reads true as "referenced, keep", so such a false answer
can only keep an unreferenced file, never delete a referenced one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from delta_core.model.string_hashes import string_hashes


def _hashes(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    hashes = string_hashes(keys)
    if hashes is None:
        raise ValueError(f"a key set needs a string column without nulls, got {keys.type} "
                         f"with {keys.null_count} nulls")
    return hashes


class KeySet:
    """A set of storage keys held as their sorted 64-bit hashes (8 bytes a key, however long)."""

    __slots__ = ("_sorted",)

    def __init__(self, keys: pa.Array | pa.ChunkedArray) -> None:
        self._sorted = np.sort(_hashes(keys))

    def __len__(self) -> int:
        return len(self._sorted)

    def may_contain(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """True for each key of ``keys`` in the set, and for a key whose hash a member shares
        (see the module docstring); false only for keys certainly not in the set."""
        wanted = _hashes(keys)
        found = np.zeros(len(wanted), bool)
        if len(self._sorted) == 0 or len(wanted) == 0:
            return found
        # Searched in sorted order: each search starts near the last one (several times faster
        # than searching a large set in random order).
        order = np.argsort(wanted)
        ordered = wanted[order]
        at = np.searchsorted(self._sorted, ordered)
        np.minimum(at, len(self._sorted) - 1, out=at)
        found[order] = self._sorted[at] == ordered
        return found
