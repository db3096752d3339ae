"""Storage keys as 64-bit fingerprints: a set of millions of keys in 8 bytes each.

Vacuum asks, for every listed file, whether the log still references it. Arrow's ``is_in``
builds its hash set again on every call, so a listing that comes in batches would rebuild a set
of every referenced key (copies of their strings) for each batch. ``KeySet`` is built once:
the sorted fingerprints of the keys, 8 bytes per key, searched with a binary search per key
(the keys looked up sorted by fingerprint first, so that each search starts near the last).

A key's fingerprint is a polynomial hash of its UTF-8 bytes modulo 2**64 (an odd multiplier),
with its length mixed in and splitmix64's finaliser applied, computed with NumPy over the Arrow
buffers a slice at a time (a slice of about a megabyte of key bytes: it stays in the CPU cache).
No Python object per key.

Equal keys have equal fingerprints, so a member is always found. Two different keys may share
a fingerprint (for a key tested against n members, odds of about n / 2**64): ``may_contain`` then
answers true for a key that is not a member. Vacuum reads true as "referenced, keep", so such a
false answer can only keep an unreferenced file, never delete a referenced one.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

_MULTIPLIER = 0x100000001B3  # odd (the 64-bit FNV prime): invertible modulo 2**64
_INVERSE = pow(_MULTIPLIER, -1, 1 << 64)
_LENGTH_MIX = np.uint64(0x9E3779B97F4A7C15)
_SLICE_BYTES = 1 << 20


class _Powers:
    """``_MULTIPLIER ** i`` and its inverse's powers modulo 2**64, for ``i`` below a length grown
    on demand (NumPy's uint64 products wrap modulo 2**64)."""

    def __init__(self) -> None:
        self.up = np.ones(0, np.uint64)
        self.down = np.ones(0, np.uint64)

    def upto(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n > len(self.up):
            size = max(n, 2 * len(self.up), 1024)
            self.up, self.down = _powers(_MULTIPLIER, size), _powers(_INVERSE, size)
        return self.up, self.down


def _powers(base: int, n: int) -> np.ndarray:
    out = np.full(n, base, np.uint64)
    out[0] = 1
    return np.cumprod(out, dtype=np.uint64)


_POWERS = _Powers()


def fingerprints(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """The fingerprint of each key of a null-free string column (uint64, row for row)."""
    chunks = keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys]
    out = np.empty(len(keys), np.uint64)
    at = 0
    for chunk in chunks:
        _fingerprint_chunk(chunk, out[at:at + len(chunk)])
        at += len(chunk)
    return out


def _fingerprint_chunk(chunk: pa.Array, out: np.ndarray) -> None:
    n = len(chunk)
    if n == 0:
        return
    if chunk.null_count:
        raise ValueError("fingerprints need a column without nulls")
    large = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    if not (large or pa.types.is_string(chunk.type) or pa.types.is_binary(chunk.type)):
        raise ValueError(f"fingerprints need a string column, got {chunk.type}")
    width = np.dtype(np.int64 if large else np.int32)
    offsets = np.frombuffer(chunk.buffers()[1], width, count=n + 1, offset=chunk.offset * width.itemsize)
    offsets = offsets.astype(np.int64)
    data = chunk.buffers()[2]
    raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    first = 0
    while first < n:
        # Rows whose bytes make about one slice (at least one row, however long).
        last = int(np.searchsorted(offsets, offsets[first] + _SLICE_BYTES, side="right")) - 1
        last = min(n, max(last, first + 1))
        _fingerprint_slice(raw, offsets[first:last + 1], out[first:last])
        first = last


def _fingerprint_slice(raw: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    lo, hi = int(offsets[0]), int(offsets[-1])
    starts = offsets[:-1] - lo
    lengths = np.diff(offsets)
    up, down = _POWERS.upto(hi - lo)
    terms = raw[lo:hi].astype(np.uint64)
    terms *= up[:hi - lo]  # byte i of the slice weighted by MULTIPLIER ** i
    sums = np.zeros(len(out), np.uint64)
    filled = lengths > 0  # reduceat needs a non-empty segment per index
    if filled.any():
        sums[filled] = np.add.reduceat(terms, starts[filled])
    # Weighted from each key's own first byte: divide by MULTIPLIER ** start.
    h = sums * down[starts]
    h ^= lengths.astype(np.uint64) * _LENGTH_MIX
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    h ^= h >> np.uint64(31)
    out[:] = h


class KeySet:
    """A set of storage keys held as their sorted fingerprints (8 bytes a key, however long)."""

    __slots__ = ("_sorted",)

    def __init__(self, keys: pa.Array | pa.ChunkedArray) -> None:
        self._sorted = np.sort(fingerprints(keys))

    def __len__(self) -> int:
        return len(self._sorted)

    def may_contain(self, keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """True for each key of ``keys`` in the set, and for a key whose fingerprint a member
        shares (see the module docstring); false only for keys certainly not in the set."""
        wanted = fingerprints(keys)
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
