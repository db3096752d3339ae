"""The Variant binary encoding (apache/parquet-format ``VariantEncoding.md``), as far as
rebuilding shredded values needs it: a column of Arrow primitives encoded as Variant values at
once (numpy, no per-row Python), the metadata dictionary's names, and objects and arrays
assembled from already encoded children. Pure: no IO."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptVariantError

VARIANT_NULL = b"\x00"  # basic type 0 (primitive), primitive type 0 (null)

_PRIMITIVE, _SHORT_STRING, _OBJECT, _ARRAY = 0, 1, 2, 3
_SHORT_STRING_MAX = 63
# Primitive type ids ("Encoding types"), each with the little-endian width of its value bytes.
_TRUE, _FALSE = 1, 2
_FIXED_INTEGERS = {pa.int8(): (3, "<i1"), pa.int16(): (4, "<i2"), pa.int32(): (5, "<i4"), pa.int64(): (6, "<i8"),
                   pa.float64(): (7, "<f8"), pa.float32(): (14, "<f4")}
_DECIMALS = ((9, 8, 4), (18, 9, 8), (38, 10, 16))  # (max precision, type id, unscaled bytes)
_DATE, _BINARY, _STRING, _TIME_NTZ, _UUID = 11, 15, 16, 17, 20
_TIMESTAMPS = {("us", True): 12, ("us", False): 13, ("ns", True): 18, ("ns", False): 19}


def _binary_array(rows: np.ndarray, offsets: np.ndarray) -> pa.Array:
    """A non-null large_binary array over the uint8 ``rows`` cut at ``offsets`` (int64)."""
    return pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                 [None, pa.py_buffer(offsets.astype(np.int64)), pa.py_buffer(rows)])


def _fixed(header: int, body: np.ndarray) -> pa.Array:
    """One value per row of the uint8 matrix ``body``, each after the ``header`` byte."""
    n, width = body.shape
    rows = np.empty((n, width + 1), dtype=np.uint8)
    rows[:, 0] = header
    rows[:, 1:] = body
    return _binary_array(rows.reshape(-1), np.arange(n + 1, dtype=np.int64) * (width + 1))


def _le_bytes(values: np.ndarray, dtype: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return np.ascontiguousarray(values.astype(dtype)).view(np.uint8).reshape(len(values), width)


def _numbers(arr: pa.Array, as_type: pa.DataType) -> np.ndarray:
    return np.asarray(pc.fill_null(arr.cast(as_type), 0).to_numpy(zero_copy_only=False))


def _fixed_bytes(arr: pa.Array, width: int) -> np.ndarray:
    """The ``width``-byte values of a fixed-width array (decimal128, fixed_size_binary) as a
    uint8 matrix, one row per slot (null slots hold whatever the buffer has)."""
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, dtype=np.uint8)
    return raw[arr.offset * width:(arr.offset + len(arr)) * width].reshape(len(arr), width)


def _strings(arr: pa.Array, type_id: int, *, short: bool) -> pa.Array:
    """Strings (short-string header below 64 bytes when ``short``) or binaries: a header, for
    the long form a 4-byte little-endian length, then the bytes; built column-wise."""
    arr = pc.fill_null(arr.cast(pa.large_binary()), b"")
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    lengths = np.diff(offsets)
    is_short = lengths <= _SHORT_STRING_MAX if short else np.zeros(n, dtype=bool)
    head = np.where(is_short, 1, 5)
    out_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(head + lengths, out=out_offsets[1:])
    out = np.empty(int(out_offsets[-1]), dtype=np.uint8)
    starts = out_offsets[:-1]
    total = int(offsets[-1] - offsets[0])
    shift = np.repeat(starts + head - (offsets[:-1] - offsets[0]), lengths)
    out[shift + np.arange(total)] = data[offsets[0]:offsets[-1]]
    out[starts[is_short]] = (lengths[is_short] << 2 | _SHORT_STRING).astype(np.uint8)
    long_starts = starts[~is_short]
    out[long_starts] = type_id << 2
    out[long_starts[:, None] + 1 + np.arange(4)] = _le_bytes(lengths[~is_short], "<u4")
    return _binary_array(out, out_offsets)


def encode_primitives(arr: pa.Array) -> pa.Array:
    """Each slot of the Arrow array ``arr`` (a type the shredding spec's "Shredded Value Types"
    allows) as a Variant value (large_binary, non-null; a null slot's bytes mean nothing)."""
    t = arr.type
    if pa.types.is_dictionary(t):
        return encode_primitives(arr.cast(t.value_type))
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return _fixed(_UUID << 2, _fixed_bytes(arr.storage, 16))
        return encode_primitives(arr.storage)
    if pa.types.is_boolean(t):
        flags = np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)
        heads = np.where(flags, _TRUE << 2, _FALSE << 2).astype(np.uint8)
        return _binary_array(heads, np.arange(len(arr) + 1, dtype=np.int64))
    if t in _FIXED_INTEGERS:
        type_id, dtype = _FIXED_INTEGERS[t]
        return _fixed(type_id << 2, _le_bytes(_numbers(arr, t), dtype))
    if pa.types.is_decimal128(t):
        for max_precision, type_id, width in _DECIMALS:
            if t.precision <= max_precision:
                body = np.empty((len(arr), width + 1), dtype=np.uint8)
                body[:, 0] = t.scale
                body[:, 1:] = _fixed_bytes(arr, 16)[:, :width]  # little-endian: the low bytes
                return _fixed(type_id << 2, body)
    if pa.types.is_date32(t):
        return _fixed(_DATE << 2, _le_bytes(_numbers(arr, pa.int32()), "<i4"))
    if pa.types.is_timestamp(t):
        unit = t.unit if t.unit in ("us", "ns") else "us"  # seconds and millis widen losslessly
        values = arr if unit == t.unit else arr.cast(pa.timestamp(unit, tz=t.tz))
        type_id = _TIMESTAMPS[(unit, t.tz is not None)]
        return _fixed(type_id << 2, _le_bytes(_numbers(values, pa.int64()), "<i8"))
    if pa.types.is_time(t):
        return _fixed(_TIME_NTZ << 2, _le_bytes(_numbers(arr.cast(pa.time64("us")), pa.int64()), "<i8"))
    if pa.types.is_fixed_size_binary(t) and t.byte_width == 16:  # Parquet UUID, read without the extension
        return _fixed(_UUID << 2, _fixed_bytes(arr, 16))
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _strings(arr, _STRING, short=True)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return _strings(arr, _BINARY, short=False)
    raise CorruptVariantError(
        f"a shredded variant's typed_value has Arrow type {t}, which is not one of the Parquet types "
        "VariantShredding.md allows for shredded values: the file is not a valid shredded variant; ask its "
        "writer's maintainers. Nothing was written")


def _uint(data: bytes, at: int, size: int) -> int:
    return int.from_bytes(data[at:at + size], "little")


def metadata_names(metadata: bytes) -> list[str]:
    """The dictionary of a Variant ``metadata`` binary, in id order."""
    if not metadata or metadata[0] & 0x0F != 1:
        raise CorruptVariantError("a variant metadata binary is not version 1 (VariantEncoding.md \"Metadata "
                                  "encoding\"): the file is corrupt or from a newer writer. Nothing was written")
    size = (metadata[0] >> 6) + 1
    count = _uint(metadata, 1, size)
    offsets = [_uint(metadata, 1 + size * (i + 1), size) for i in range(count + 1)]
    base = 1 + size * (count + 2)
    return [metadata[base + offsets[i]:base + offsets[i + 1]].decode("utf-8") for i in range(count)]


def object_fields(value: bytes, names: Sequence[str]) -> list[tuple[str, int, bytes]]:
    """The fields (name, dictionary id, encoded value) of the Variant object ``value``, whose
    metadata dictionary is ``names``."""
    head = value[0]
    if head & 0x03 != _OBJECT:
        raise CorruptVariantError(
            "a partially shredded variant's value is not an object (VariantShredding.md \"Objects\": only an "
            "object may have both value and typed_value): the file is corrupt. Nothing was written")
    offset_size, id_size, large = (head >> 2 & 0x03) + 1, (head >> 4 & 0x03) + 1, head >> 6 & 0x01
    count_size = 4 if large else 1
    count = _uint(value, 1, count_size)
    ids_at = 1 + count_size
    offsets_at = ids_at + count * id_size
    values_at = offsets_at + (count + 1) * offset_size
    ids = [_uint(value, ids_at + i * id_size, id_size) for i in range(count)]
    offsets = [_uint(value, offsets_at + i * offset_size, offset_size) for i in range(count + 1)]
    # Values may come in any order: each ends where the next one in byte order starts.
    ends = dict(zip(sorted(offsets[:-1]), sorted(offsets[:-1])[1:] + [offsets[-1]]))
    return [(names[i], i, value[values_at + o:values_at + ends[o]]) for i, o in zip(ids, offsets)]


def _size(n: int) -> int:
    return 1 if n <= 0xFF else 2 if n <= 0xFFFF else 3 if n <= 0xFFFFFF else 4


def encode_object(fields: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A Variant object of ``fields`` (name, dictionary id, encoded value), ids and offsets in
    the names' unsigned-byte order as VariantEncoding.md requires."""
    ordered = sorted(fields, key=lambda f: f[0].encode("utf-8"))
    starts = np.cumsum([0] + [len(f[2]) for f in ordered])
    offset_size = _size(int(starts[-1]))
    id_size = _size(max((f[1] for f in ordered), default=0))
    large = len(ordered) > 0xFF
    head = _OBJECT | (offset_size - 1) << 2 | (id_size - 1) << 4 | int(large) << 6
    parts = [bytes([head]), len(ordered).to_bytes(4 if large else 1, "little")]
    parts += [f[1].to_bytes(id_size, "little") for f in ordered]
    parts += [int(s).to_bytes(offset_size, "little") for s in starts]
    parts += [f[2] for f in ordered]
    return b"".join(parts)


def _sizes(values: np.ndarray) -> np.ndarray:
    """Bytes (1-4) needed for each unsigned value."""
    return 1 + (values > 0xFF).astype(np.int64) + (values > 0xFFFF) + (values > 0xFFFFFF)


def _put_le(out: np.ndarray, at: np.ndarray, values: np.ndarray, widths: np.ndarray) -> None:
    """Write each of ``values`` little-endian in ``widths`` bytes at ``at`` of ``out``."""
    for b in range(4):
        wide = widths > b
        out[at[wide] + b] = (values[wide] >> (8 * b)) & 0xFF


def _slots(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A large_binary array's value offsets (n+1), bytes and validity, as numpy arrays."""
    n = len(arr)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64)[arr.offset:arr.offset + n + 1]
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, dtype=np.uint8)
    valid = np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    return offsets, data, valid


def encode_objects(fields: Sequence[pa.Array], ids: np.ndarray) -> pa.Array:
    """Variant objects built column-wise: row ``i`` holds the non-null slots of ``fields``
    (large_binary arrays of encoded values, in the unsigned-byte order of their names), field
    ``j`` with dictionary id ``ids[i, j]``. Same bytes as ``encode_object`` of each row."""
    n, k = len(ids), len(fields)
    slots = [_slots(f) for f in fields]
    present = np.stack([s[2] for s in slots], axis=1) if k else np.zeros((n, 0), dtype=bool)
    lengths = np.stack([np.diff(s[0]) for s in slots], axis=1) * present if k else np.zeros((n, 0), dtype=np.int64)
    count = present.sum(axis=1)
    size = lengths.sum(axis=1)
    id_size = _sizes(np.where(present, ids, 0).max(axis=1, initial=0))
    offset_size = _sizes(size)
    large = count > 0xFF
    count_size = np.where(large, 4, 1)
    ids_at = 1 + count_size
    offsets_at = ids_at + count * id_size
    values_at = offsets_at + (count + 1) * offset_size
    row_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(values_at + size, out=row_offsets[1:])
    starts = row_offsets[:-1]
    out = np.zeros(int(row_offsets[-1]), dtype=np.uint8)
    out[starts] = 0x02 | (offset_size - 1) << 2 | (id_size - 1) << 4 | large.astype(np.int64) << 6
    _put_le(out, starts + 1, count, count_size)
    _put_le(out, starts + offsets_at + count * offset_size, size, offset_size)  # the last offset
    rank = np.cumsum(present, axis=1) - 1  # a present field's place among its row's fields
    value_start = np.cumsum(lengths, axis=1) - lengths  # where its bytes start among the values
    for j, (offsets, data, _) in enumerate(slots):
        rows = np.flatnonzero(present[:, j])
        r = rank[rows, j]
        _put_le(out, starts[rows] + ids_at[rows] + r * id_size[rows], ids[rows, j], id_size[rows])
        _put_le(out, starts[rows] + offsets_at[rows] + r * offset_size[rows], value_start[rows, j],
                offset_size[rows])
        lens = lengths[rows, j]
        within = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
        out[np.repeat(starts[rows] + values_at[rows] + value_start[rows, j], lens) + within] = \
            data[np.repeat(offsets[rows], lens) + within]
    return _binary_array(out, row_offsets)


def encode_arrays(elements: pa.Array, bounds: np.ndarray) -> pa.Array:
    """Variant arrays built column-wise: row ``i`` holds the encoded ``elements`` (a non-null
    large_binary array) from ``bounds[i]`` to ``bounds[i + 1]``."""
    offsets, data, _ = _slots(elements)
    n = len(bounds) - 1
    count = np.diff(bounds)
    row_bytes = offsets[bounds[1:]] - offsets[bounds[:-1]]  # the row's elements, contiguous
    offset_size = _sizes(row_bytes)
    large = count > 0xFF
    count_size = np.where(large, 4, 1)
    offsets_at = 1 + count_size
    values_at = offsets_at + (count + 1) * offset_size
    row_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(values_at + row_bytes, out=row_offsets[1:])
    starts = row_offsets[:-1]
    out = np.zeros(int(row_offsets[-1]), dtype=np.uint8)
    out[starts] = 0x03 | (offset_size - 1) << 2 | large.astype(np.int64) << 4
    _put_le(out, starts + 1, count, count_size)
    _put_le(out, starts + offsets_at + count * offset_size, row_bytes, offset_size)  # the last offset
    row_of = np.repeat(np.arange(n), count)  # each element's row
    rank = np.arange(len(row_of)) - bounds[:-1][row_of]
    element_start = offsets[bounds[0]:bounds[-1]] - offsets[bounds[:-1]][row_of]
    _put_le(out, starts[row_of] + offsets_at[row_of] + rank * offset_size[row_of], element_start,
            offset_size[row_of])
    first = offsets[bounds[:-1]]
    within = np.arange(int(row_bytes.sum())) - np.repeat(np.cumsum(row_bytes) - row_bytes, row_bytes)
    out[np.repeat(starts + values_at, row_bytes) + within] = data[np.repeat(first, row_bytes) + within]
    return _binary_array(out, row_offsets)
