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

``by_top_directory`` splits the keys' set by their top-level directory (the part before the
first ``/``): a listed file ``d/...`` can only equal a key of ``d``'s set, so a Spark task
listing ``d`` needs that set alone, and the keys directly under the root stay with the driver.
A ``KeySet`` pickles as its hashes (a task payload).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import chunks_of
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

    @classmethod
    def of_sorted_hashes(cls, hashes: np.ndarray) -> KeySet:
        """The set whose members' hashes are ``hashes`` (uint64, sorted ascending)."""
        out = cls.__new__(cls)
        out._sorted = hashes
        return out

    def __getstate__(self) -> np.ndarray:
        return self._sorted

    def __setstate__(self, state: np.ndarray) -> None:
        self._sorted = state

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


# Keys hashed and their directories found at a time: bounds the directory names copied at once.
_SPLIT_ROWS = 256 * 1024
_TOP_DIRECTORY = r"^(?P<directory>[^/]*)/"


@dataclass(frozen=True, slots=True)
class KeySetsByDirectory:
    """A key set split by top-level directory: ``root`` holds the keys directly under the root
    (no ``/``), ``below[d]`` the keys of the form ``d/...``."""

    root: KeySet
    below: dict[str, KeySet]

    def of(self, directory: str) -> KeySet:
        """The keys below ``directory`` (an empty set when the keys name nothing there)."""
        return self.below.get(directory, _EMPTY)


_EMPTY = KeySet.of_sorted_hashes(np.zeros(0, np.uint64))


def by_top_directory(keys: pa.Array | pa.ChunkedArray) -> KeySetsByDirectory:
    """``keys`` (a string column without nulls) as one ``KeySet`` per top-level directory, plus
    the set of the keys directly under the root. Each key's directory is found by Arrow (only
    the directory names are copied, ``_SPLIT_ROWS`` keys at a time, and numbered through their
    few distinct values), then the hashes are sorted by directory and hash at once."""
    names: dict[str, int] = {}
    hashes: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    for chunk in chunks_of(keys):
        for start in range(0, len(chunk), _SPLIT_ROWS):
            step = chunk.slice(start, _SPLIT_ROWS)
            hashes.append(_hashes(step))
            found = pc.struct_field(pc.extract_regex(step, _TOP_DIRECTORY), "directory")
            encoded = pc.dictionary_encode(found)
            numbers = np.array([names.setdefault(d, len(names)) for d in encoded.dictionary.to_pylist()] + [-1],
                               np.int32)
            # Root-level keys (no match) have null indices: number -1, the last entry above.
            indices = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False)
            codes.append(numbers[indices])
    all_hashes = np.concatenate(hashes) if hashes else np.zeros(0, np.uint64)
    all_codes = np.concatenate(codes) if codes else np.zeros(0, np.int32)
    del hashes, codes
    # Set i (0: the root's, then each directory's) is rows bounds[i]:bounds[i + 1] of the sorted hashes.
    bounds = np.concatenate([[0], np.cumsum(np.bincount(all_codes + 1, minlength=len(names) + 1))])
    order = np.lexsort((all_hashes, all_codes))
    del all_codes
    sorted_hashes = all_hashes[order]
    del order, all_hashes
    # The directories' sets are slices of one array (a slice pickles as its own elements); the
    # root's is a copy, as it outlives the others on the driver.
    root = KeySet.of_sorted_hashes(sorted_hashes[:bounds[1]].copy())
    return KeySetsByDirectory(root=root, below={
        name: KeySet.of_sorted_hashes(sorted_hashes[bounds[code + 1]:bounds[code + 2]]) for name, code in names.items()})
