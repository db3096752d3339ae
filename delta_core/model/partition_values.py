"""Partition values: their string form in the log, Hive-style directories, and Arrow columns.

Implements PROTOCOL.md "Partition Value Serialization" (``add.partitionValues`` holds strings;
an empty string or null means null) and the directory convention of the reference
implementation (``a=1/b=x``, Hive path escaping, ``__HIVE_DEFAULT_PARTITION__`` for null).
``add.path`` is a URI reference, so a directory name that already holds ``%3A`` appears in the
log as ``%253A``: ``url_encode_path`` / ``url_decode_path`` convert exactly once.

Values coming from users and failing to serialise raise ``PartitionValueError``; strings read
from the log that do not parse as their column's type raise ``CorruptLogError``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import struct
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptLogError, PartitionValueError
from delta_core.model.arrow_rows import array_from_pylist
from delta_core.model.arrow_values import int_array_of, mask_array, numbers_of, string_scalar
from delta_core.model.schema import DataType, PrimitiveType, StructType, parse_data_type, primitive_to_arrow

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_INT_RANGES = {"byte": 8, "short": 16, "integer": 32, "long": 64}

# Characters Hive (and so Spark/Delta) escape in partition directory names.
_HIVE_ESCAPE = frozenset(
    [chr(c) for c in range(0x01, 0x20)] + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f",
                                           "{", "[", "]", "^"]
)
# What stays literal when a relative path becomes a URI reference: RFC 3986 unreserved and
# sub-delims plus ':' '@' '/'. Other ASCII (space, '%', '#', ...) is %XX-encoded.
_URI_SAFE_SET = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/:@!$&'()*+,;=-._~"
)


def _primitive(delta_type: DataType | str) -> PrimitiveType:
    t = parse_data_type(delta_type) if isinstance(delta_type, str) else delta_type
    if not isinstance(t, PrimitiveType) or t.name in ("variant", "void"):
        raise PartitionValueError(f"type {t} cannot be a partition column type")
    return t


# --- serialise -----------------------------------------------------------------------------


def serialize_partition_value(value: Any, delta_type: DataType | str) -> str | None:
    """The ``partitionValues`` string for a Python value of the column's Delta type (None for null)."""
    t = _primitive(delta_type)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None:
        return None
    name = t.name
    try:
        if name == "string":
            if not isinstance(value, str):
                raise TypeError("expected str")
            return value
        if name in _INT_RANGES:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise TypeError("expected int")
            bits = _INT_RANGES[name]
            if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
                raise ValueError(f"{value} is out of range for {name}")
            return str(value)
        if name in ("float", "double"):
            if isinstance(value, bool) or not isinstance(value, (int, float, decimal.Decimal)):
                raise TypeError("expected a number")
            return _format_float(float(value), single=name == "float")
        if name == "decimal":
            d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(str(value))
            _check_decimal(d, t)
            return str(d.quantize(decimal.Decimal(1).scaleb(-_precision_scale(t)[1])))
        if name == "boolean":
            if not isinstance(value, bool):
                raise TypeError("expected bool")
            return "true" if value else "false"
        if name == "date":
            if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
                raise TypeError("expected datetime.date")
            return value.isoformat()
        if name == "timestamp":
            if not isinstance(value, dt.datetime):
                raise TypeError("expected datetime.datetime")
            # Naive datetimes are taken as UTC; the protocol recommends ISO8601 adjusted to UTC.
            utc = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
            # isoformat, not strftime("%Y"): glibc spells year 1 as "1", which no reader parses.
            return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
        if name == "timestamp_ntz":
            if not isinstance(value, dt.datetime) or value.tzinfo is not None:
                raise TypeError("expected a naive datetime.datetime")
            return value.isoformat(sep=" ", timespec="microseconds" if value.microsecond else "seconds")
        if name == "binary":
            if not isinstance(value, (bytes, bytearray, memoryview)):
                raise TypeError("expected bytes")
            # Spark casts binary to string as UTF-8; other bytes have no string form.
            return bytes(value).decode("utf-8")
    except (TypeError, ValueError, ArithmeticError, UnicodeDecodeError) as exc:
        raise PartitionValueError(
            f"cannot write {value!r} as a partition value of type {t}: {exc}; convert the value "
            f"to the column's type before writing"
        ) from None
    raise PartitionValueError(f"type {t} cannot be a partition column type")


def _format_float(x: float, *, single: bool) -> str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if single:
        # shortest decimal that round-trips through float32, as Java's Float.toString does
        packed = struct.pack("<f", x)
        for digits in range(1, 10):
            s = f"{x:.{digits}g}"
            if struct.pack("<f", float(s)) == packed:
                x = float(s)
                break
    r = repr(x)
    if "e" in r or "E" in r:
        mant, exp = r.split("e")
        if "." not in mant:
            mant += ".0"
        return f"{mant}E{int(exp)}"
    return r


def _precision_scale(t: PrimitiveType) -> tuple[int, int]:
    # PrimitiveType.__post_init__ rejects a decimal lacking either: this only narrows the type.
    assert t.precision is not None and t.scale is not None
    return t.precision, t.scale


def _check_decimal(d: decimal.Decimal, t: PrimitiveType) -> None:
    if not d.is_finite():
        raise ValueError(f"{d} is not a finite decimal")
    precision, scale = _precision_scale(t)
    quantized = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    if quantized != d:
        raise ValueError(f"{d} has more than {scale} fractional digits")
    digits = len(quantized.as_tuple().digits) if quantized != 0 else 1
    if max(digits, scale) - scale > precision - scale:
        raise ValueError(f"{d} does not fit decimal({precision},{scale})")


# --- deserialise ---------------------------------------------------------------------------


def deserialize_partition_value(text: str | None, delta_type: DataType | str, *,
                                column: str | None = None) -> Any:
    """The Python value of a ``partitionValues`` string (None for null or empty)."""
    t = _primitive(delta_type)
    if text is None or text == "":
        return None
    name = t.name
    try:
        if name == "string":
            return text
        if name in _INT_RANGES:
            v = int(text.strip())
            bits = _INT_RANGES[name]
            if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
                raise ValueError("out of range")
            return v
        if name in ("float", "double"):
            return float(text.strip())  # also accepts NaN, Infinity, -Infinity
        if name == "decimal":
            d = decimal.Decimal(text.strip())
            _check_decimal(d, t)
            return d
        if name == "boolean":
            low = text.strip().lower()
            if low not in ("true", "false"):
                raise ValueError("not true/false")
            return low == "true"
        if name == "date":
            return dt.date.fromisoformat(text.strip())
        if name == "timestamp":
            return _parse_timestamp(text, utc=True)
        if name == "timestamp_ntz":
            return _parse_timestamp(text, utc=False)
        if name == "binary":
            return text.encode("utf-8")
    except (ValueError, ArithmeticError) as exc:
        where = f" of column {column!r}" if column else ""
        raise CorruptLogError(
            f"partition value {text!r}{where} is not a valid {t} ({exc}); the add action was "
            "written by a non-conforming writer - rewrite the partition or fix the log entry"
        ) from None
    raise CorruptLogError(f"type {t} cannot be a partition column type")


def _parse_timestamp(text: str, *, utc: bool) -> dt.datetime:
    s = text.strip()
    # Python before 3.11 rejects 'Z'; Delta writes both 'Z' and '+00:00' style offsets.
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(s)
    if utc:
        # A timestamp without zone was written in the writer's zone, which the log does not
        # record; UTC is the only defensible reading (and what Delta writers use by default).
        return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)
    if value.tzinfo is not None:
        raise ValueError("timestamp_ntz value carries a time zone")
    return value


# --- paths ---------------------------------------------------------------------------------


def escape_path_name(text: str) -> str:
    """Hive-escape one directory-name component (``:`` -> ``%3A``, ``/`` -> ``%2F``, ...)."""
    return "".join(f"%{ord(c):02X}" if c in _HIVE_ESCAPE else c for c in text)


def unescape_path_name(text: str) -> str:
    """Undo ``escape_path_name`` (only valid ``%XX`` sequences are decoded)."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "%" and _is_hex(text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdefABCDEF" for c in s)


def partition_path(columns: Sequence[str], values: Mapping[str, str | None]) -> str:
    """Hive-style relative directory (``a=1/b=x``) for serialised partition values (no URI encoding).

    ``columns`` are the names in the order of ``metaData.partitionColumns`` (physical names
    under column mapping, as the values are keyed); a missing, null or empty value becomes
    ``__HIVE_DEFAULT_PARTITION__``.
    """
    parts = []
    for col in columns:
        v = values.get(col)
        text = HIVE_DEFAULT_PARTITION if v is None or v == "" else escape_path_name(v)
        parts.append(f"{escape_path_name(col)}={text}")
    return "/".join(parts)


def url_encode_path(path: str) -> str:
    """Relative file path -> ``add.path`` URI reference (``%`` -> ``%25``, space -> ``%20``).

    Like java.net.URI (what Delta Spark uses), only ASCII characters outside the URI's path
    alphabet are encoded; other Unicode characters are kept as they are.
    """
    encoded = "".join(c if c in _URI_SAFE_SET or ord(c) > 0x7F else "".join(
        f"%{b:02X}" for b in c.encode("utf-8")) for c in path)
    first, sep, rest = encoded.partition("/")
    # A ':' in the first segment would read as a URI scheme ("a:b/x" -> scheme "a").
    return first.replace(":", "%3A") + sep + rest


def url_decode_path(path: str) -> str:
    """``add.path`` -> the path to open, decoding exactly once (``+`` stays ``+``)."""
    return urllib.parse.unquote(path)


# --- Arrow ---------------------------------------------------------------------------------


def map_value(maps: pa.MapArray, key: str) -> pa.Array:
    """The value of ``key`` in each of ``maps`` (string keys and values), null where a map lacks
    it; the first where a map holds it twice. ``pc.map_lookup(maps, key, "first")``, in a few
    vectorised steps over the flat entries instead of a walk of each map (a third of its time).
    Where every map holds the same number of entries with ``key`` at the same place in each (a
    partitioned table's ``partitionValues``, as writers log them), the values are those entries,
    taken without a search (a zero-copy slice for one partition column)."""
    import numpy as np

    offsets = numbers_of(maps.offsets)  # the slice's, into the whole entries array
    lo, hi = int(offsets[0]), int(offsets[-1])
    keys = pc.struct_field(maps.values, [0]).slice(lo, hi - lo)
    aligned = _aligned_values(maps, offsets, keys, key)
    if aligned is not None:
        return aligned
    found = numbers_of(pc.indices_nonzero(pc.equal(keys, string_scalar(key))))
    owners = np.searchsorted(offsets - lo, found, side="right") - 1
    values = pc.struct_field(maps.values, [1]).slice(lo, hi - lo).take(int_array_of(found))
    if len(owners) > 1 and not bool(np.all(np.diff(owners) > 0)):
        owners, first = np.unique(owners, return_index=True)
        values = values.take(int_array_of(first))
    held = np.zeros(len(maps), dtype=bool)
    held[owners] = True
    return pc.replace_with_mask(pa.nulls(len(maps), pa.string()), mask_array(held), values.cast(pa.string()))


def _aligned_values(maps: pa.MapArray, offsets: Any, keys: pa.Array, key: str) -> pa.Array | None:
    """``map_value``'s answer when each of ``maps`` (no nulls) holds ``n`` entries and ``key`` is
    the ``j``-th key of every one, found from the first map; else None."""
    import numpy as np

    if not len(maps) or maps.null_count:
        return None
    n = int(offsets[1] - offsets[0])
    if not n or len(keys) != n * len(maps) or not bool(np.all(np.diff(offsets) == n)):
        return None
    first = pc.index(keys.slice(0, n), string_scalar(key)).as_py()
    if first < 0:
        return None
    lo = int(offsets[0])
    values = pc.struct_field(maps.values, [1]).slice(lo, len(keys))
    if n == 1:
        at_key, values_at_key = keys, values
    else:
        rows = int_array_of(np.arange(first, len(keys), n, dtype=np.int64))
        at_key, values_at_key = keys.take(rows), values.take(rows)
    if not pc.all(pc.equal(at_key, string_scalar(key))).as_py():
        return None
    return values_at_key.cast(pa.string())


def typed_partition_values(partition_values: pa.Array | pa.ChunkedArray, schema: StructType,
                           partition_columns: Sequence[str], *, physical_keys: bool = False,
                           paths: pa.Array | pa.ChunkedArray | None = None) -> pa.Table:
    """Typed Arrow columns from a ``map<string,string>`` ``partitionValues`` column.

    Output has ``path`` first when ``paths`` is given, then one column per partition column,
    named with its logical name and typed per the schema (timestamps as ``timestamp[us, UTC]``).
    ``physical_keys`` says the map is keyed by physical names (column mapping mode id/name).
    Each distinct string is parsed once, so the cost follows the number of partitions, not of
    files.
    """
    # Looked up chunk by chunk: joining the chunks of millions of maps first costs more than the lookups.
    chunks = (partition_values.chunks if isinstance(partition_values, pa.ChunkedArray) else [partition_values])
    columns: dict[str, pa.Array | pa.ChunkedArray] = {}
    if paths is not None:
        columns["path"] = paths
    for logical in partition_columns:
        f = schema.get(logical)
        if f is None:
            raise CorruptLogError(
                f"partition column {logical!r} is not in the table schema; the metadata is corrupt"
            )
        t = _primitive(f.type)
        key = f.physical_name if physical_keys else logical
        if len(partition_values) == 0:
            columns[logical] = pa.nulls(0, primitive_to_arrow(t))
            continue
        texts = pa.chunked_array([map_value(c, key) for c in chunks], pa.string()).combine_chunks()
        if t.name == "string":  # the value itself, but an empty one is null
            columns[logical] = pc.if_else(pc.equal(texts, string_scalar("")), pa.nulls(len(texts), pa.string()), texts)
            continue
        encoded = pc.dictionary_encode(texts)
        uniques = [deserialize_partition_value(s, t, column=logical)
                   for s in encoded.dictionary.to_pylist()]
        dictionary = array_from_pylist(uniques, primitive_to_arrow(t))
        columns[logical] = dictionary.take(encoded.indices)
    return pa.table(columns)
