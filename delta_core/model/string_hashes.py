"""64-bit hashes of an Arrow string column, computed with NumPy, and the exact rows they group.

Replay must find which of millions of reconciliation keys occur more than once. Arrow's hash
kernels (``count_distinct``, ``value_counts``, ``dictionary_encode``, ``is_in``) copy every
distinct string into their memo table: at 10M keys that is over 2 GB for a moment, more than
the rows themselves. A 64-bit hash per row costs 8 bytes and groups equal strings by a sort of
integers. Hashes can collide, so only rows whose hash repeats are compared as strings
(``repeated_groups``), and a collision is reported, never resolved by the hash: callers then use
an exact method.

The hash is polynomial over the bytes (``sum b_i * P^i`` modulo 2^64, summed per row by
``np.add.reduceat``, so the whole column is a few vectorised passes), mixed with the length.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.arrow_values import chunks_of, numbers_of, take_rows

_P = 0xC2B2AE3D27D4EB4F  # odd, so invertible modulo 2^64
_P_INV = pow(_P, -1, 1 << 64)
_LENGTH_MIX = np.uint64(0x9E3779B97F4A7C15)
# Rows hashed per step: bounds the temporary arrays (8 bytes per byte of the step's strings).
_STEP_ROWS = 16 * 1024
# Rows of repeated hashes whose strings are compared per step (a copy of that many strings).
_COMPARE_ROWS = 256 * 1024


@lru_cache(maxsize=4)
def _powers(base: int, n: int) -> np.ndarray:
    """``base^0 .. base^(n-1)`` modulo 2^64."""
    out = np.full(n, base, dtype=np.uint64)
    out[0] = 1
    return np.cumprod(out, dtype=np.uint64)


def _hash_step(chunk: pa.Array) -> np.ndarray:
    """Hashes of the rows of ``chunk`` (a string or large string array without nulls)."""
    n = len(chunk)
    wide = pa.types.is_large_string(chunk.type) or pa.types.is_large_binary(chunk.type)
    offset_type = np.int64 if wide else np.int32
    offsets = np.frombuffer(chunk.buffers()[1], offset_type, count=n + 1,
                            offset=chunk.offset * np.dtype(offset_type).itemsize).astype(np.int64)
    first, last = int(offsets[0]), int(offsets[-1])
    lengths = np.diff(offsets).astype(np.uint64)
    if last == first:
        return lengths * _LENGTH_MIX
    size = 1 << (last - first).bit_length()  # > last - first; cached for steps of similar size
    data = np.frombuffer(chunk.buffers()[2], np.uint8, count=last - first, offset=first)
    # One element past the bytes (0): an empty row at the end still has a valid start.
    weighted = np.zeros(last - first + 1, dtype=np.uint64)
    weighted[:-1] = data
    weighted[:-1] *= _powers(_P, size)[:last - first]
    starts = offsets[:-1] - first
    sums = np.add.reduceat(weighted, starts)
    sums[lengths == 0] = 0  # reduceat gives an empty segment the element at its start
    # Each row's sum starts at P^start: scale it back to P^0 so equal strings hash equal anywhere.
    hashes: np.ndarray = sums * _powers(_P_INV, size)[starts] ^ lengths * _LENGTH_MIX
    return hashes


def string_hashes(values: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """A uint64 hash per row of a string column (equal strings, equal hashes), or ``None`` when
    the column has nulls or is not of a string type."""
    if values.null_count or not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        return None
    out = np.empty(len(values), dtype=np.uint64)
    at = 0
    for chunk in chunks_of(values):
        for start in range(0, len(chunk), _STEP_ROWS):
            step = chunk.slice(start, _STEP_ROWS)
            out[at:at + len(step)] = _hash_step(step)
            at += len(step)
    return out


def repeated_groups(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows whose string occurs more than once, as ``(rows, group)``: row indices, grouped,
    and each row's group number (0, 1, ...; equal strings, equal group). Empty arrays when
    every string is distinct; ``None`` when it cannot be told from the hashes (two distinct
    strings share a hash, or the column has nulls). The strings compared are copied
    ``_COMPARE_ROWS`` at a time."""
    if len(values) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    hashes = string_hashes(values)
    if hashes is None:
        return None
    by_hash = np.argsort(hashes)  # in place (a stable sort of 64-bit keys needs another n/2 of them)
    sorted_hashes = hashes[by_hash]
    del hashes
    same = sorted_hashes[1:] == sorted_hashes[:-1]
    if not same.any():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    repeated = np.zeros(len(by_hash), dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    rows = by_hash[repeated].astype(np.int64)
    candidate_hashes = sorted_hashes[repeated]
    del by_hash, sorted_hashes, same, repeated
    starts = np.concatenate([[True], candidate_hashes[1:] != candidate_hashes[:-1]])
    # Each row after the first of its hash group must equal the row before it.
    for first in range(0, len(rows) - 1, _COMPARE_ROWS):
        strings = take_rows(values, rows[first:first + _COMPARE_ROWS + 1])
        equal = numbers_of(pc.equal(strings.slice(1), strings.slice(0, len(strings) - 1)))
        if np.any(~starts[first + 1:first + len(strings)] & ~equal):
            return None  # a collision: two distinct strings in one hash group
    return rows, np.cumsum(starts) - 1
