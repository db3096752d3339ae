"""Space-filling curves for multi-dimensional clustering (Z-order and Hilbert).

Pure numpy/pyarrow, no Spark: the Z-order executor calls these inside Spark tasks.

Each clustering column is first mapped to a *range id*: the sample of that column taken by the
driver is cut at ``k`` quantiles (``quantile_boundaries``), and every value gets the index of
the quantile range it falls in (``range_ids``). Ranks rather than raw values make the curve
indifferent to skew and to the column's type (strings, dates, decimals all work). Nulls take
range 0, so they cluster with the smallest values.

The per-column range ids (``bits`` bits each) are then combined into one ``uint64`` curve key:

- ``zorder_keys``: bit interleaving (Morton order), first column most significant;
- ``hilbert_keys``: the Hilbert index (Skilling, "Programming the Hilbert curve", AIP 2004:
  axes -> transposed Gray code, then the same interleaving), which keeps successive keys
  adjacent in space, so a file's bounding box is tighter in every dimension.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.maintenance.options import ZORDER_CURVES as CURVES

MAX_KEY_BITS = 63
DEFAULT_BITS_PER_COLUMN = 16
# Integer columns spanning fewer values than this (or than twice the rows) find their range ids
# through a lookup table over the span (``_search``).
LOOKUP_SPAN = 1 << 17


def bits_per_column(num_columns: int, *, max_bits: int = DEFAULT_BITS_PER_COLUMN) -> int:
    """Bits of range id per column so that all of them fit in one 63-bit key."""
    if num_columns < 1:
        raise ConfigError("clustering needs at least one column")
    bits = min(max_bits, MAX_KEY_BITS // num_columns)
    if bits < 1:
        raise ConfigError(f"cannot cluster on {num_columns} columns: at most {MAX_KEY_BITS} are supported")
    return bits


def sortable(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """``values`` as a numpy array whose natural order is the column's order (nulls dropped)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    values = values.drop_null()
    typ = values.type
    if pa.types.is_dictionary(typ):
        values = values.dictionary_decode()
        typ = values.type
    # np.asarray (no copy) gives the untyped pyarrow results a type.
    if pa.types.is_boolean(typ):
        return np.asarray(values.cast(pa.int8()).to_numpy(zero_copy_only=False))
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return np.asarray(values.to_numpy(zero_copy_only=False))
    if pa.types.is_decimal(typ):
        return np.asarray(values.cast(pa.float64()).to_numpy(zero_copy_only=False))
    if pa.types.is_temporal(typ):
        width = pa.int32() if typ.bit_width == 32 else pa.int64()
        return np.asarray(values.view(width).to_numpy(zero_copy_only=False))
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ) \
            or pa.types.is_large_binary(typ):
        return np.asarray(values.to_pylist(), dtype=object)
    raise ConfigError(f"cannot cluster on a column of type {typ}: only primitive, orderable types work")


def quantile_boundaries(sample: pa.Array | pa.ChunkedArray, num_ranges: int) -> np.ndarray:
    """Up to ``num_ranges - 1`` distinct cut points splitting ``sample`` into equal-count ranges."""
    values = np.sort(sortable(sample), kind="stable")
    if len(values) == 0 or num_ranges <= 1:
        return values[:0]
    positions = (np.arange(1, num_ranges) * len(values)) // num_ranges
    cuts = values[positions]
    # Deduplicate keeping order: repeated cut points would leave empty ranges.
    keep = np.ones(len(cuts), dtype=bool)
    keep[1:] = cuts[1:] != cuts[:-1]
    return cuts[keep]


def range_ids(values: pa.Array | pa.ChunkedArray, boundaries: np.ndarray) -> np.ndarray:
    """The quantile range (``0 .. len(boundaries)``) of every value; nulls get 0.

    Ranges are ``(b[i-1], b[i]]``: a heavy value that is a cut point closes its range, so
    everything above it lands in the next one.
    """
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    out = np.zeros(len(values), dtype=np.uint64)
    valid = pc.is_valid(values).to_numpy(zero_copy_only=False)
    if not valid.any():
        return out
    dense = sortable(values)
    if len(boundaries):
        ids = _search(boundaries, dense).astype(np.uint64)
    else:
        ids = np.zeros(len(dense), dtype=np.uint64)
    out[valid] = ids
    return out


def _spread_table(stride: int) -> np.ndarray:
    """For every byte value, its 8 bits moved ``stride`` apart (bit k to bit ``k * stride``)."""
    values = np.arange(256, dtype=np.uint64)
    out = np.zeros(256, dtype=np.uint64)
    for k in range(8):
        out |= ((values >> np.uint64(k)) & np.uint64(1)) << np.uint64(k * stride)
    return out


def _search(boundaries: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """``np.searchsorted(boundaries, dense, side="left")``, faster for integers of a narrow span.

    A binary search per row misses the cache at every step; when the values span few distinct
    integers (ports, small codes, dates as days), the answer for every integer in the span is
    computed once, by one pass over them in order, and each row looks its value up."""
    if dense.dtype.kind == "i" and len(dense):  # signed: offsets from the minimum stay in int64
        lo, hi = int(dense.min()), int(dense.max())
        if hi - lo < max(LOOKUP_SPAN, 2 * len(dense)):
            table = np.searchsorted(boundaries, np.arange(lo, hi + 1, dtype=np.int64), side="left")
            return table[dense.astype(np.int64) - lo]
    return np.searchsorted(boundaries, dense, side="left")


def interleave(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Morton interleaving: for each bit from the top, one bit of every coordinate in order.

    Bit ``b`` of coordinate ``i`` (of ``n``) lands at ``b * n + (n - 1 - i)``. Each coordinate
    is spread a byte at a time through a 256-entry table, a few whole-array operations per
    byte rather than several per bit (the keys of every row of a rewrite are computed here)."""
    n = len(coords)
    if n * bits > MAX_KEY_BITS:
        raise ConfigError(f"{n} columns x {bits} bits do not fit in a {MAX_KEY_BITS}-bit key")
    key = np.zeros(len(coords[0]) if n else 0, dtype=np.uint64)
    table = _spread_table(n)
    low = np.uint64((1 << bits) - 1)
    index = np.empty(len(key), dtype=np.uint64)
    for i, c in enumerate(coords):
        c = np.asarray(c, dtype=np.uint64) & low  # only the low ``bits`` bits take part
        for byte in range(0, bits, 8):
            np.right_shift(c, np.uint64(byte), out=index)
            index &= np.uint64(0xFF)
            spread = table.take(index.view(np.int64))  # each row's byte, spread out
            spread <<= np.uint64(byte * n + (n - 1 - i))
            key |= spread
    return key


def zorder_keys(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Z-order (Morton) keys of integer coordinates in ``[0, 2**bits)``."""
    return interleave([np.asarray(c, dtype=np.uint64) for c in coords], bits)


def hilbert_keys(coords: list[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert-curve keys of integer coordinates in ``[0, 2**bits)`` (any number of dimensions)."""
    x = [np.array(c, dtype=np.uint64, copy=True) for c in coords]
    n = len(x)
    if n == 1:
        return x[0]
    # Undo excess work: walk bits from the top, reflecting or swapping the lower bits. Where
    # bit q of x[i] is set, x[0]'s lower bits are inverted, else x[0] and x[i] exchange them;
    # masks (0 or all ones) stand in for a per-row branch, without temporaries per choice.
    # In-place operations on two scratch arrays: this runs bits x columns times over every row.
    one = np.uint64(1)
    mask = np.empty_like(x[0])
    t = np.empty_like(x[0])
    for b in range(bits - 1, 0, -1):
        p = np.uint64((1 << b) - 1)
        for i in range(n):
            np.right_shift(x[i], np.uint64(b), out=mask)
            mask &= one
            mask *= p  # p where bit b of x[i] is set (invert), else 0
            x[0] ^= mask
            mask ^= p  # p where the lower bits are exchanged, else 0
            np.bitwise_xor(x[0], x[i], out=t)
            t &= mask
            x[0] ^= t
            x[i] ^= t
    # Gray encode.
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t[:] = 0
    for b in range(bits - 1, 0, -1):
        np.right_shift(x[n - 1], np.uint64(b), out=mask)
        mask &= one
        mask *= np.uint64((1 << b) - 1)
        t ^= mask
    for i in range(n):
        x[i] ^= t
    return interleave(x, bits)


def curve_keys(curve: str, coords: list[np.ndarray], bits: int) -> np.ndarray:
    if curve == "zorder":
        return zorder_keys(coords, bits)
    if curve == "hilbert":
        return hilbert_keys(coords, bits)
    raise ConfigError(f"unknown curve {curve!r}; choose one of {', '.join(CURVES)}")
