"""Per-file statistics computed from Arrow data (PROTOCOL.md "Per-file Statistics").

Writers put ``numRecords``, ``minValues``, ``maxValues`` and ``nullCount`` into every ``add``.
This module computes them column by column with ``pyarrow.compute`` and encodes them as the
JSON string Delta Spark writes:

- min/max only for skipping-eligible types (numbers, decimals, dates, timestamps, strings);
  booleans, binary, arrays and maps get a ``nullCount`` only; structs recurse;
- strings are cut to a 32-character prefix (UTF-16 code units, as the JVM counts them); a cut
  max gets a tie-breaker character (U+007F, or U+10FFFF) so it stays an upper bound, and is
  dropped when no safe bound exists within twice the prefix — Delta Spark's rule;
- timestamps are written at millisecond precision (floored) as Delta Spark does;
- a float column holding NaN or infinities gets no min/max (JSON has no spelling for them);
- only the first ``delta.dataSkippingNumIndexedCols`` leaf columns (default 32), or the
  columns named by ``delta.dataSkippingStatsColumns``, get stats.

The input table carries *physical* column names (column mapping), so stats keys are physical
names as the protocol requires. Pure: no IO.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from typing import TYPE_CHECKING, Any, Sequence

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from delta_core.schema import StructType

STRING_PREFIX_LENGTH = 32
_ASCII_MAX = "\x7f"
_UTF8_MAX = "\U0010ffff"
_UTF8_MAX_UNITS = _UTF8_MAX.encode("utf-16-le")  # one surrogate pair, 4 bytes
_EPOCH = dt.datetime(1970, 1, 1)


# --- string truncation (UTF-16 code units, like java.lang.String) --------------------------


def _units(s: str) -> bytes:
    return s.encode("utf-16-le", "surrogatepass")


def _unit_at(u: bytes, i: int) -> int:
    return u[2 * i] | (u[2 * i + 1] << 8)


def _prefix(u: bytes, n: int) -> str:
    return u[: 2 * n].decode("utf-16-le", "surrogatepass")


def _valid_prefix_len(u: bytes, n: int) -> int:
    # Never split a surrogate pair: keep the low half with its high half.
    if 0 < n < len(u) // 2 and 0xD800 <= _unit_at(u, n - 1) <= 0xDBFF and 0xDC00 <= _unit_at(u, n) <= 0xDFFF:
        return n + 1
    return n


def truncate_min_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str | None:
    """A lower bound of ``value`` at most ``prefix_length`` UTF-16 units long (a prefix)."""
    u = _units(value)
    if len(u) // 2 <= prefix_length:
        return value
    if prefix_length <= 0:
        return None
    return _prefix(u, _valid_prefix_len(u, prefix_length))


def truncate_max_string(value: str, prefix_length: int = STRING_PREFIX_LENGTH) -> str | None:
    """An upper bound of ``value``: a prefix plus a tie-breaker, or ``None`` if none is safe.

    The tie-breaker is only an upper bound if the first dropped character sorts below it in
    UTF-8 byte order, so the prefix grows past characters equal to U+10FFFF, up to twice the
    prefix length.
    """
    u = _units(value)
    length = len(u) // 2
    if length <= prefix_length:
        return value
    if prefix_length <= 0:
        return None
    cur = _valid_prefix_len(u, prefix_length)
    while cur <= 2 * prefix_length:
        if cur >= length:
            return value
        if cur + 1 < length and u[2 * cur: 2 * cur + 4] == _UTF8_MAX_UNITS:
            cur += 2
        elif _unit_at(u, cur) < 0x7F:
            return _prefix(u, cur) + _ASCII_MAX
        else:
            return _prefix(u, cur) + _UTF8_MAX
    return None


# --- value encoding ---------------------------------------------------------------------


class _Raw(str):
    """A JSON number already spelled out (decimals must not go through float)."""


def _format_timestamp(micros: int, *, utc: bool) -> str:
    # Delta Spark writes stats timestamps at millisecond precision, truncated toward -inf.
    millis = micros // 1000
    t = _EPOCH + dt.timedelta(milliseconds=millis)
    text = t.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis % 1000:03d}"
    return text + ("Z" if utc else "")


def _encode_scalar(scalar: pa.Scalar) -> Any:
    """JSON value of a min/max scalar, or ``None`` when it has no safe JSON spelling."""
    t = scalar.type
    if pa.types.is_timestamp(t):
        micros = pc.cast(scalar, pa.timestamp("us", tz=t.tz)).value
        return _format_timestamp(micros, utc=t.tz is not None)
    value = scalar.as_py()
    if isinstance(value, decimal.Decimal):
        return _Raw(format(value, "f"))
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def encode_stats_json(stats: dict[str, Any]) -> str:
    """Compact JSON for a stats dict; decimals are written as exact numbers."""

    def enc(v: Any) -> str:
        if isinstance(v, _Raw):
            return str(v)
        if isinstance(v, dict):
            return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{enc(x)}" for k, x in v.items()) + "}"
        return json.dumps(v, ensure_ascii=False)

    return enc(stats)


# --- which columns get stats ------------------------------------------------------------


def _leaf_paths(fields: Sequence[pa.Field], parent: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for f in fields:
        if pa.types.is_struct(f.type):
            out.extend(_leaf_paths(list(f.type), parent + (f.name,)))
        else:
            out.append(parent + (f.name,))
    return out


def split_column_name(name: str) -> tuple[str, ...]:
    # ``a.b`` names a nested field; backticks quote a name containing dots.
    parts: list[str] = []
    cur, quoted = "", False
    for ch in name:
        if ch == "`":
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return tuple(p.strip() for p in parts)


def indexed_leaves(
    schema: pa.Schema,
    *,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
) -> set[tuple[str, ...]]:
    """Leaf column paths that get stats (``stats_columns`` wins over ``num_indexed_cols``)."""
    leaves = _leaf_paths(list(schema))
    if stats_columns is not None:
        wanted = [split_column_name(c) for c in stats_columns]
        return {leaf for leaf in leaves if any(leaf[: len(w)] == w for w in wanted)}
    if num_indexed_cols < 0:
        return set(leaves)
    return set(leaves[:num_indexed_cols])


# --- computing --------------------------------------------------------------------------


def _eligible_for_min_max(t: pa.DataType) -> bool:
    return (
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        or pa.types.is_date(t) or pa.types.is_timestamp(t)
        or pa.types.is_string(t) or pa.types.is_large_string(t)
    )


def _column_stats(
    col: pa.ChunkedArray, prefix_length: int
) -> tuple[Any, Any, int]:
    """(min, max, null_count) of one leaf column; min/max are ``None`` when not recorded."""
    nulls = col.null_count
    t = col.type
    if pa.types.is_dictionary(t):
        col = col.cast(t.value_type)
        t = t.value_type
    if not _eligible_for_min_max(t) or nulls == len(col):
        return None, None, nulls
    if pa.types.is_floating(t):
        finite = pc.is_finite(col)
        # A NaN or infinity makes the JSON bound unwritable; recording none is always safe.
        if pc.any(pc.invert(pc.fill_null(finite, True))).as_py():
            return None, None, nulls
    mm = pc.min_max(col)
    lo, hi = mm["min"], mm["max"]
    if not lo.is_valid:
        return None, None, nulls
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return (
            truncate_min_string(lo.as_py(), prefix_length),
            truncate_max_string(hi.as_py(), prefix_length),
            nulls,
        )
    return _encode_scalar(lo), _encode_scalar(hi), nulls


def _flatten_struct(col: pa.ChunkedArray) -> list[pa.ChunkedArray]:
    # StructArray.flatten() merges the parent's validity into each child, so a null struct
    # counts as a null in every nested column (what a reader evaluating ``s.x`` sees).
    n = col.type.num_fields
    if col.num_chunks == 0:
        return [pa.chunked_array([], type=col.type.field(i).type) for i in range(n)]
    per_chunk = [chunk.flatten() for chunk in col.chunks]
    return [pa.chunked_array([c[i] for c in per_chunk], type=col.type.field(i).type) for i in range(n)]


def collect_stats(
    data: pa.Table,
    *,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
    string_prefix_length: int = STRING_PREFIX_LENGTH,
) -> dict[str, Any]:
    """The stats object of one data file holding ``data`` (physical column names)."""
    wanted = indexed_leaves(data.schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}

    def walk(names: list[str], cols: list[pa.ChunkedArray], path: tuple[str, ...],
             mn: dict[str, Any], mx: dict[str, Any], nc: dict[str, Any]) -> None:
        for name, col in zip(names, cols):
            p = path + (name,)
            if pa.types.is_struct(col.type):
                sub_mn: dict[str, Any] = {}
                sub_mx: dict[str, Any] = {}
                sub_nc: dict[str, Any] = {}
                walk([f.name for f in col.type], _flatten_struct(col), p, sub_mn, sub_mx, sub_nc)
                if sub_mn:
                    mn[name] = sub_mn
                if sub_mx:
                    mx[name] = sub_mx
                if sub_nc:
                    nc[name] = sub_nc
                continue
            if p not in wanted:
                continue
            lo, hi, n = _column_stats(col, string_prefix_length)
            nc[name] = n
            if lo is not None and hi is not None:
                mn[name] = lo
                mx[name] = hi

    walk(data.column_names, list(data.columns), (), mins, maxs, nulls)
    return {"numRecords": data.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls}


def stats_json(data: pa.Table, **options: Any) -> str:
    """``collect_stats`` encoded as the ``add.stats`` JSON string."""
    return encode_stats_json(collect_stats(data, **options))


# --- stats as a struct (checkpoint ``stats_parsed``) ------------------------------------------


def _stats_leaf_types(schema: "StructType", *, physical: bool, for_min_max: bool) -> list[pa.Field]:
    from delta_core.schema import StructType, type_to_arrow

    out: list[pa.Field] = []
    for f in schema.fields:
        name = f.physical_name if physical else f.name
        if isinstance(f.type, StructType):
            sub = _stats_leaf_types(f.type, physical=physical, for_min_max=for_min_max)
            if sub:
                out.append(pa.field(name, pa.struct(sub)))
            continue
        t = type_to_arrow(f.type, physical=physical)
        if for_min_max:
            if _eligible_for_min_max(t):
                out.append(pa.field(name, t))
        else:
            out.append(pa.field(name, pa.int64()))
    return out


def stats_parsed_type(data_schema: "StructType", *, physical: bool = False) -> pa.StructType:
    """Arrow type of ``add.stats_parsed`` for the table's data columns (PROTOCOL.md "Checkpoint Schema")."""
    fields = [pa.field("numRecords", pa.int64())]
    mins = _stats_leaf_types(data_schema, physical=physical, for_min_max=True)
    if mins:
        fields += [pa.field("minValues", pa.struct(mins)), pa.field("maxValues", pa.struct(mins))]
    nulls = _stats_leaf_types(data_schema, physical=physical, for_min_max=False)
    if nulls:
        fields.append(pa.field("nullCount", pa.struct(nulls)))
    return pa.struct(fields)


def _json_read_type(t: pa.DataType) -> pa.DataType:
    # The JSON reader cannot turn strings into dates/timestamps; read those as strings and cast.
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _json_read_type(f.type)) for f in t])
    if pa.types.is_date(t) or pa.types.is_timestamp(t):
        return pa.string()
    return t


def parse_stats_column(stats: pa.Array, target: pa.StructType) -> pa.StructArray | None:
    """Parse a column of JSON stats strings into ``target`` in bulk; ``None`` if they do not fit."""
    import pyarrow.json as pj

    n = len(stats)
    if n == 0:
        return pa.array([], target)
    filled = pc.fill_null(stats, "{}")
    offsets = pa.array([0, n], pa.int32())
    joined = pc.binary_join(pa.ListArray.from_arrays(offsets, filled), "\n")[0].as_buffer()
    read_type = _json_read_type(target)
    try:
        parsed = pj.read_json(
            pa.BufferReader(joined),
            read_options=pj.ReadOptions(block_size=max(1 << 20, min(joined.size + 1, 1 << 28))),
            parse_options=pj.ParseOptions(explicit_schema=pa.schema(list(read_type)),
                                          unexpected_field_behavior="ignore",
                                          newlines_in_values=False),
        )
        if parsed.num_rows != n:
            return None
        arrays = [parsed.column(f.name).combine_chunks() for f in read_type]
        struct = pa.StructArray.from_arrays(arrays, fields=list(read_type))
        return struct.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
