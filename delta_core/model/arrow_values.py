"""Arrow arrays and scalars from Python values without pyarrow's pandas probe.

``pa.array``, ``pa.scalar`` and compute calls given a Python literal check whether the value
is a pandas object, which imports pandas (0.3-0.9 s per process) whenever it is installed.
The log read path (snapshot loading, replay) builds its few constants and index arrays here,
through the buffer protocol, so a process that only reads a table never pays that import.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    import numpy as np

_CODES = {pa.int32(): "i", pa.int64(): "q", pa.uint8(): "B", pa.uint64(): "Q"}
_INT64 = pa.int64()  # module-level so the default below is not a call in the signature (immutable anyway)


def int_array(values: Iterable[int], typ: pa.DataType = _INT64) -> pa.Array:
    """A non-null integer array (``typ`` one of int32, int64, uint8, uint64). A ``range`` (the
    row ordinals replay and checkpoint reads number millions of rows with) is filled by numpy,
    without a Python int per row."""
    if isinstance(values, range):
        import numpy as np  # loaded with pyarrow already

        ordinals = np.arange(values.start, values.stop, values.step, dtype=np.dtype(_CODES[typ]))
        return pa.Array.from_buffers(typ, len(ordinals), [None, pa.py_buffer(ordinals)])
    buf = array(_CODES[typ], values)
    return pa.Array.from_buffers(typ, len(buf), [None, pa.py_buffer(buf)])


def int_scalar(value: int, typ: pa.DataType = _INT64) -> pa.Scalar:
    return int_array([value], typ)[0]


def float_array(values: Iterable[float]) -> pa.Array:
    """A non-null float64 array."""
    buf = array("d", values)
    return pa.Array.from_buffers(pa.float64(), len(buf), [None, pa.py_buffer(buf)])


def float_scalar(value: float) -> pa.Scalar:
    return float_array([value])[0]


def bool_array(values: Iterable[bool]) -> pa.Array:
    """A non-null boolean array."""
    flags = list(values)
    bits = bytearray((len(flags) + 7) // 8)
    for i, v in enumerate(flags):
        if v:
            bits[i >> 3] |= 1 << (i & 7)
    return pa.Array.from_buffers(pa.bool_(), len(flags), [None, pa.py_buffer(bytes(bits))])


def true_array(n: int) -> pa.Array:
    """``n`` true values."""
    return pc.is_null(pa.nulls(n))


def false_array(n: int) -> pa.Array:
    """``n`` false values."""
    return pc.is_valid(pa.nulls(n))


def string_array(values: Sequence[str | None]) -> pa.Array:
    """A string array of ``values`` (null where ``None``)."""
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = array("i", [0])
    offsets.extend(accumulate(len(e) for e in encoded))
    nulls = [i for i, v in enumerate(values) if v is None]
    validity = None
    if nulls:
        bits = bytearray(b"\xff" * ((len(values) + 7) // 8))
        for i in nulls:
            bits[i >> 3] &= ~(1 << (i & 7)) & 0xFF
        validity = pa.py_buffer(bytes(bits))
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded)),
                                       validity, len(nulls))


def string_scalar(value: str) -> pa.Scalar:
    data = value.encode("utf-8")
    return pa.StringArray.from_buffers(1, pa.py_buffer(array("i", [0, len(data)])), pa.py_buffer(data))[0]


def repeat_string(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times (a string array)."""
    return pc.fill_null(pa.nulls(n, pa.string()), string_scalar(value))


def empty_table(schema: pa.Schema) -> pa.Table:
    """A table with no rows (``Schema.empty_table`` goes through the pandas probe)."""
    return pa.Table.from_batches([], schema=schema)


def numbers_of(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """A NumPy array of a null-free integer, float or boolean column, read from its buffers
    (``to_numpy`` imports pandas). Nulls, or another type, raise ``ValueError``."""
    import numpy as np

    flat = one_array(values)
    if flat.null_count:
        raise ValueError("numbers_of needs a column without nulls")
    typ = flat.type
    if pa.types.is_boolean(typ):
        flat = pc.cast(flat, pa.uint8())
        typ = flat.type
    if not (pa.types.is_integer(typ) or pa.types.is_floating(typ)):
        raise ValueError(f"numbers_of needs a numeric or boolean column, got {typ}")
    dtype = np.dtype(f"{'f' if pa.types.is_floating(typ) else ('u' if pa.types.is_unsigned_integer(typ) else 'i')}"
                     f"{typ.bit_width // 8}")
    data = flat.buffers()[1]
    out = np.zeros(0, dtype) if data is None or len(flat) == 0 else \
        np.frombuffer(data, dtype, count=len(flat), offset=flat.offset * dtype.itemsize)
    return out.astype(bool) if pa.types.is_boolean(values.type) else out


def ordinal_mask(ordinals: pa.Array | pa.ChunkedArray, total: int) -> np.ndarray:
    """A NumPy boolean mask of length ``total``, true at each of the (null-free) ``ordinals``:
    which rows of a source of ``total`` rows are wanted. A bitmap by position costs ``total``
    bytes, where ``pc.is_in`` would hash every ordinal."""
    import numpy as np

    mask = np.zeros(total, dtype=bool)
    if len(ordinals):
        mask[numbers_of(ordinals)] = True
    return mask


def mask_array(mask: np.ndarray) -> pa.Array:
    """A non-null Arrow boolean array of a NumPy boolean mask (without ``pa.array``'s pandas probe)."""
    import numpy as np

    bits = np.packbits(mask, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(mask), [None, pa.py_buffer(bits)])


def int_array_of(values: np.ndarray) -> pa.Array:
    """A non-null int64 Arrow array of a NumPy integer array (without ``pa.array``'s pandas probe)."""
    import numpy as np

    ints = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(ints), [None, pa.py_buffer(ints)])


def chunks_of(values: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The arrays of ``values``: its chunks, or itself."""
    return list(values.chunks) if isinstance(values, pa.ChunkedArray) else [values]


def one_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``values`` as one array: a single chunk as it is, several joined, none an empty array of
    its type (``combine_chunks()`` of no chunks goes through ``pa.array``, which imports pandas)."""
    if isinstance(values, pa.Array):
        return values
    if values.num_chunks == 1:
        return values.chunk(0)
    return pa.concat_arrays(values.chunks) if values.num_chunks else pa.nulls(0, values.type)


def numbers_or_zero(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """An int64 NumPy array of an integer column (a file ``size`` column), a null as 0."""
    import numpy as np

    if not len(values):
        return np.zeros(0, np.int64)
    filled: np.ndarray = numbers_of(pc.fill_null(values, int_scalar(0))).astype(np.int64, copy=False)
    return filled


def take_rows(values: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.Array:
    """``values[rows]`` (any order), taken chunk by chunk: only the rows taken are copied
    (``ChunkedArray.take`` joins every chunk first: for a few rows of a column of millions, a copy
    of all of it)."""
    import numpy as np

    chunks = chunks_of(values)
    bounds = np.cumsum([0, *(len(c) for c in chunks)])
    order = np.argsort(rows, kind="stable")
    ascending = rows[order]
    cut = np.searchsorted(ascending, bounds)
    pieces = [chunks[i].take(int_array_of(ascending[cut[i]:cut[i + 1]] - bounds[i]))
              for i in np.flatnonzero(cut[1:] > cut[:-1]).tolist()]
    taken = pa.concat_arrays(pieces) if pieces else pa.nulls(0, values.type)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(len(order))
    return taken.take(int_array_of(inverse))


_NULLS: dict[pa.DataType, pa.Array] = {}


def shared_nulls(typ: pa.DataType, n: int) -> pa.Array:
    """``n`` nulls of ``typ`` as a slice of one all-null array kept per type: every all-null
    column of every commit shares its buffers, where each would hold its own (a null struct
    keeps all its children: ~25 bytes a row for a deletion vector)."""
    held = _NULLS.get(typ)
    if held is None or len(held) < n:
        held = _NULLS[typ] = pa.nulls(max(n, 2 * len(held) if held is not None else 1 << 16), typ)
    return held.slice(0, n)


def sharing_nulls(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with each all-null column replaced by ``shared_nulls`` (same values)."""
    if not any(c.null_count == len(c) and len(c) for c in batch.columns):
        return batch
    columns = [shared_nulls(c.type, len(c)) if c.null_count == len(c) else c for c in batch.columns]
    return pa.RecordBatch.from_arrays(columns, schema=batch.schema)
