"""Per-file statistics: parse ``add.stats`` JSON into typed Arrow; JSON from ``stats_parsed``.

Implements PROTOCOL.md "Per-file Statistics": ``numRecords``, ``tightBounds`` and per-column
``minValues`` / ``maxValues`` / ``nullCount`` that mirror the data schema (nested structs
nest). Under column mapping (mode ``id``/``name``) the keys are physical names; the columns
produced here use logical dotted names (``min.a.b``) and the table's types.

Parsing is columnar: the JSON strings of a chunk are handed to ``pyarrow.json`` with an explicit
schema derived from the table schema. A chunk that does not fit that schema (a value of an
unexpected JSON type, ``"NaN"`` for a float, a timestamp without offset...) falls back to one
``json.loads`` pass that converts leniently: a value that cannot be read as its column's type
becomes null, because a missing statistic only costs skipping, never correctness.

Note for skipping: string bounds may be prefixes and timestamp bounds are truncated to
milliseconds, so a max timestamp may be up to 999 microseconds below the true maximum.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from delta_core.model.arrow_values import false_array, float_scalar, int_scalar, numbers_of, string_scalar
from delta_core.model.schema import DataType, PrimitiveType, StructType, primitive_to_arrow

NUM_RECORDS = "num_records"
TIGHT_BOUNDS = "tight_bounds"
MIN_PREFIX = "min."
MAX_PREFIX = "max."
NULL_COUNT_PREFIX = "null_count."

_CHUNK = 16384  # rows per pyarrow.json call; one bad row only sends its chunk to the slow path
_INTS = {"byte", "short", "integer", "long"}
_NO_BOUNDS = {"binary", "variant", "void"}  # writers keep no min/max for these


@dataclass(frozen=True, slots=True)
class StatsColumn:
    """A leaf column that can carry statistics."""

    logical: tuple[str, ...]
    physical: tuple[str, ...]
    type: DataType

    @property
    def name(self) -> str:
        return ".".join(self.logical)

    @property
    def has_bounds(self) -> bool:
        return isinstance(self.type, PrimitiveType) and self.type.name not in _NO_BOUNDS

    @property
    def arrow_type(self) -> pa.DataType:
        assert isinstance(self.type, PrimitiveType)
        return primitive_to_arrow(self.type)


def stats_columns(schema: StructType, *, partition_columns: Sequence[str] = (),
                  physical: bool = False) -> list[StatsColumn]:
    """Leaf columns (through structs) outside the partition columns, in schema order.

    ``physical`` says stats keys are physical names (column mapping mode ``id``/``name``).
    """
    skip = set(partition_columns)
    out: list[StatsColumn] = []

    def walk(struct: StructType, logical: tuple[str, ...], phys: tuple[str, ...]) -> None:
        for f in struct.fields:
            if not logical and f.name in skip:
                continue
            lp = (*logical, f.name)
            pp = (*phys, f.physical_name if physical else f.name)
            if isinstance(f.type, StructType):
                walk(f.type, lp, pp)
            else:
                out.append(StatsColumn(lp, pp, f.type))

    walk(schema, (), ())
    return out


# --- parse ---------------------------------------------------------------------------------


def _json_type(col: StatsColumn) -> pa.DataType:
    """The type pyarrow.json reads a bound as (before conversion to the column's type)."""
    t = col.type
    assert isinstance(t, PrimitiveType)
    if t.name in _INTS:
        return pa.int64()
    if t.name in ("float", "double"):
        return pa.float64()
    if t.name in ("date", "timestamp", "timestamp_ntz"):
        return pa.string()
    return primitive_to_arrow(t)


def _nest(paths: Iterable[tuple[tuple[str, ...], pa.DataType]]) -> pa.StructType:
    tree: dict[str, Any] = {}
    for path, typ in paths:
        node = tree
        for part in path[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                break  # a leaf and a struct share a name: keep the first (cannot happen in a valid schema)
            node = nxt
        else:
            node.setdefault(path[-1], typ)

    def build(node: dict[str, Any]) -> pa.StructType:
        return pa.struct([pa.field(k, build(v) if isinstance(v, dict) else v) for k, v in node.items()])

    return build(tree)


@dataclass(frozen=True, slots=True)
class _Read:
    """One statistic a parse reads: ``key`` (``minValues``, ``maxValues`` or ``nullCount``) of
    ``column``, named ``prefix + column.name`` in the result."""

    key: str
    prefix: str
    column: StatsColumn

    @property
    def name(self) -> str:
        return self.prefix + self.column.name

    @property
    def arrow_type(self) -> pa.DataType:
        return pa.int64() if self.key == "nullCount" else self.column.arrow_type


# Each per-column statistic's key in the JSON and its prefix in ``parse_stats``' names.
STATS_KEYS = {"minValues": MIN_PREFIX, "maxValues": MAX_PREFIX, "nullCount": NULL_COUNT_PREFIX}


def _reads(cols: list[StatsColumn], only: Collection[str] | None) -> list[_Read]:
    """The statistics of ``cols`` a parse reads (bounds only of columns that take them): those
    named in ``only`` (result names, e.g. ``min.a``), or all."""
    reads = [_Read(key, prefix, c) for c in cols for key, prefix in STATS_KEYS.items()
             if key == "nullCount" or c.has_bounds]
    return reads if only is None else [r for r in reads if r.name in only]


def _stats_fields(reads: list[_Read], bound_type: Callable[[StatsColumn], pa.DataType]) -> list[pa.Field]:
    """``numRecords``, ``tightBounds``, then the ``_reads``' keys (``minValues``, ``maxValues``,
    ``nullCount``) nested by physical names, bounds typed ``bound_type``."""
    # tightBounds=false says the bounds may be wider than the live rows (deletion vectors):
    # a checkpoint that drops it would make such bounds read as exact.
    fields = [pa.field("numRecords", pa.int64()), pa.field("tightBounds", pa.bool_())]
    for key in STATS_KEYS:
        nested = _nest((r.column.physical, pa.int64() if key == "nullCount" else bound_type(r.column))
                       for r in reads if r.key == key)
        if nested.num_fields:
            fields.append(pa.field(key, nested))
    return fields


def _json_schema(reads: list[_Read]) -> pa.Schema:
    """What pyarrow.json reads: bounds typed as ``_json_type``."""
    return pa.schema(_stats_fields(reads, _json_type))


def _dig(table: pa.Table, top: str, path: tuple[str, ...]) -> pa.Array | None:
    if top not in table.column_names:
        return None
    arr = table.column(top).combine_chunks() if table.num_rows else None
    if arr is None:
        return None
    for part in path:
        arr = pc.struct_field(arr, part)
    return arr


def _parse_timestamp(s: Any, *, utc: bool) -> dt.datetime | None:
    if not isinstance(s, str):
        return None
    text = s.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        v = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if utc:
        return v.replace(tzinfo=dt.UTC) if v.tzinfo is None else v.astimezone(dt.UTC)
    return v.replace(tzinfo=None) if v.tzinfo is not None else v


def _convert_bound(arr: pa.Array, col: StatsColumn) -> pa.Array:
    """A pyarrow.json bound column -> the column's Arrow type (invalid values become null)."""
    target = col.arrow_type
    name = col.type.name  # type: ignore[union-attr]
    if arr.type == target:
        return arr
    if name in ("timestamp", "timestamp_ntz"):
        try:
            return pc.cast(arr, target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            vals = [_parse_timestamp(s, utc=name == "timestamp") for s in arr.to_pylist()]
            return pa.array(vals, type=target)
    try:
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([_py_bound(v, col) for v in arr.to_pylist()], type=target)


def _py_bound(v: Any, col: StatsColumn) -> Any:
    """Lenient Python conversion of one JSON bound to the column's type (None if impossible)."""
    if v is None or isinstance(v, (dict, list)):
        return None
    name = col.type.name  # type: ignore[union-attr]
    try:
        if name == "string":
            return v if isinstance(v, str) and _utf8(v) else None
        if name in _INTS:
            if isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)) or v != int(v):
                return None
            bits = {"byte": 8, "short": 16, "integer": 32, "long": 64}[name]
            return int(v) if -(1 << (bits - 1)) <= int(v) < (1 << (bits - 1)) else None
        if name in ("float", "double"):
            if isinstance(v, bool):
                return None
            return float(v)  # "NaN", "Infinity" strings included
        if name == "decimal":
            if isinstance(v, bool):
                return None
            d = decimal.Decimal(str(v))
            t = col.type
            # a decimal leaf has its precision and scale (PrimitiveType checks them)
            assert isinstance(t, PrimitiveType) and t.scale is not None and t.precision is not None
            q = d.quantize(decimal.Decimal(1).scaleb(-t.scale))
            return q if q == d and len(q.as_tuple().digits) <= t.precision else None
        if name == "boolean":
            return v if isinstance(v, bool) else None
        if name == "date":
            return dt.date.fromisoformat(v[:10]) if isinstance(v, str) else None
        if name in ("timestamp", "timestamp_ntz"):
            return _parse_timestamp(v, utc=name == "timestamp")
    except (ValueError, ArithmeticError, TypeError):
        return None
    return None


def _utf8(text: str) -> bool:
    """Can ``text`` be stored as an Arrow string (JSON may escape a lone surrogate, which cannot)?"""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _py_count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and -(1 << 63) <= v < (1 << 63) else None


def _py_flag(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _empty_result(reads: list[_Read], n: int) -> dict[str, pa.Array]:
    out: dict[str, pa.Array] = {NUM_RECORDS: pa.nulls(n, pa.int64()), TIGHT_BOUNDS: pa.nulls(n, pa.bool_())}
    out.update((r.name, pa.nulls(n, r.arrow_type)) for r in reads)
    return out


def _lines_blob(texts: pa.Array) -> pa.Buffer:
    """The strings as one newline-delimited buffer, without a Python object per row."""
    lines = pc.binary_join_element_wise(texts, string_scalar(""), string_scalar("\n"))
    offsets = lines.buffers()[1]
    first, last = numbers_of(pa.Array.from_buffers(pa.int32(), len(lines) + 1, [None, offsets],
                                                   offset=lines.offset))[[0, -1]]
    return lines.buffers()[2].slice(int(first), int(last - first))


def _parse_chunk_fast(texts: pa.Array, reads: list[_Read], schema: pa.Schema) -> dict[str, pa.Array]:
    n = len(texts)
    # One object per line; a null/empty stats string must still occupy its row.
    # Scalars built from buffers: pyarrow's conversion of Python values imports pandas (health must not).
    empty = string_scalar("{}")
    filled = pc.if_else(pc.equal(pc.utf8_length(pc.fill_null(texts, string_scalar(""))), int_scalar(0, pa.int32())),
                        empty, pc.fill_null(texts, empty))
    if n and filled[0].as_py().strip().lstrip("\ufeff").strip() in ("", "null"):
        # Arrow's JSON reader crashes the process when its first row is a JSON null.
        raise pa.ArrowInvalid("the first stats string is blank or null")
    blob = _lines_blob(filled) if n else b""
    table = pa_json.read_json(
        pa.BufferReader(blob),
        read_options=pa_json.ReadOptions(use_threads=False, block_size=max(1 << 20, len(blob) + 1)),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                           newlines_in_values=False),
    )
    if table.num_rows != n:
        raise pa.ArrowInvalid(f"stats rows {table.num_rows} != {n}")
    out = _empty_result(reads, n)
    out[NUM_RECORDS] = table.column("numRecords").combine_chunks()
    out[TIGHT_BOUNDS] = table.column("tightBounds").combine_chunks()
    for r in reads:
        arr = _dig(table, r.key, r.column.physical)
        if arr is not None:
            out[r.name] = arr if r.key == "nullCount" else _convert_bound(arr, r.column)
    return out


def _parse_chunk_slow(texts: pa.Array, reads: list[_Read]) -> dict[str, pa.Array]:
    rows: list[dict[str, Any]] = []
    for s in texts.to_pylist():
        try:
            obj = json.loads(s, parse_float=decimal.Decimal) if s else {}
        except ValueError:
            obj = {}
        rows.append(obj if isinstance(obj, dict) else {})

    def get(obj: Any, path: tuple[str, ...]) -> Any:
        for part in path:
            if not isinstance(obj, dict):
                return None
            obj = obj.get(part)
        return obj

    out: dict[str, pa.Array] = {
        NUM_RECORDS: pa.array([_py_count(r.get("numRecords")) for r in rows], pa.int64()),
        TIGHT_BOUNDS: pa.array([_py_flag(r.get("tightBounds")) for r in rows], pa.bool_()),
    }
    for read in reads:
        c = read.column
        values = [get(r.get(read.key), c.physical) for r in rows]
        out[read.name] = pa.array([_py_count(v) for v in values] if read.key == "nullCount" else
                                  [_py_bound(v, c) for v in values], type=read.arrow_type)
    return out


def parse_stats(stats: pa.Array | pa.ChunkedArray | Sequence[str | None], schema: StructType, *,
                partition_columns: Sequence[str] = (), physical: bool = False,
                only: Collection[str] | None = None) -> pa.Table:
    """Typed statistics for a column of ``add.stats`` JSON strings, one row per input row.

    Columns: ``num_records`` (int64), ``tight_bounds`` (bool, null when not logged), then per
    stats column ``min.<col>`` and ``max.<col>`` (the column's type; absent for
    binary/array/map/variant) and ``null_count.<col>`` (int64),
    ``<col>`` being the logical dotted path. ``physical`` says keys are physical names.
    ``only``: of those per-column statistics, just these names are read (the JSON reader's cost
    grows with the values it converts).
    """
    if not isinstance(stats, (pa.Array, pa.ChunkedArray)):
        stats = pa.array(list(stats), pa.string())
    if isinstance(stats, pa.ChunkedArray):
        stats = stats.combine_chunks() if stats.num_chunks else pa.array([], pa.string())
    if pa.types.is_large_string(stats.type) or pa.types.is_string_view(stats.type):
        stats = stats.cast(pa.string())
    reads = _reads(stats_columns(schema, partition_columns=partition_columns, physical=physical), only)
    json_schema = _json_schema(reads)
    parts: list[dict[str, pa.Array]] = []
    for start in range(0, len(stats), _CHUNK):
        chunk = stats.slice(start, _CHUNK)
        try:
            parts.append(_parse_chunk_fast(chunk, reads, json_schema))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            parts.append(_parse_chunk_slow(chunk, reads))
    if not parts:
        parts.append(_empty_result(reads, 0))
    names = list(parts[0])
    return pa.table({k: pa.chunked_array([p[k] for p in parts], type=parts[0][k].type) for k in names})


# --- JSON -> stats_parsed (checkpoint struct) ---------------------------------------------


def stats_parsed_type(schema: StructType, *, partition_columns: Sequence[str] = (),
                      physical: bool = False) -> pa.StructType:
    """Arrow type of a checkpoint's ``add.stats_parsed`` (PROTOCOL.md "Checkpoint Schema"):
    keys nested as in the JSON (physical names when ``physical``), values typed per schema."""
    cols = stats_columns(schema, partition_columns=partition_columns, physical=physical)
    # Only the bounds Delta Spark keeps in a checkpoint's stats_parsed: none for booleans.
    reads = [r for r in _reads(cols, None) if r.key == "nullCount" or r.column.type.name != "boolean"]  # type: ignore[union-attr]
    return pa.struct(_stats_fields(reads, lambda c: c.arrow_type))


def parse_stats_struct(stats: pa.Array | pa.ChunkedArray | Sequence[str | None], schema: StructType, *,
                       partition_columns: Sequence[str] = (), physical: bool = False) -> pa.StructArray:
    """``add.stats`` JSON strings as ``stats_parsed`` structs (type ``stats_parsed_type``).

    Parsed by ``parse_stats`` (so as leniently); one non-null row per input row, and a nested
    struct whose members are all null (absent or unreadable) is null itself.
    """
    flat = parse_stats(stats, schema, partition_columns=partition_columns, physical=physical)
    cols = stats_columns(schema, partition_columns=partition_columns, physical=physical)
    target = stats_parsed_type(schema, partition_columns=partition_columns, physical=physical)
    by_path = {c.physical: c.name for c in cols}

    def build(typ: pa.StructType, prefix: str, path: tuple[str, ...]) -> pa.Array:
        children = []
        for f in typ:
            if pa.types.is_struct(f.type):
                children.append(build(f.type, prefix, (*path, f.name)))
            else:
                children.append(flat.column(prefix + by_path[(*path, f.name)]).combine_chunks())
        all_null = pc.is_null(children[0])
        for child in children[1:]:
            all_null = pc.and_(all_null, pc.is_null(child))
        return pa.StructArray.from_arrays(children, fields=list(typ), mask=all_null)

    flags = {"numRecords": NUM_RECORDS, "tightBounds": TIGHT_BOUNDS}
    arrays = [flat.column(flags[f.name]).combine_chunks() if f.name in flags
              else build(f.type, STATS_KEYS[f.name], ()) for f in target]
    return pa.StructArray.from_arrays(arrays, fields=list(target))


# --- stats_parsed -> JSON ---------------------------------------------------------------


def _json_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return '"NaN"'
        if math.isinf(v):
            return '"Infinity"' if v > 0 else '"-Infinity"'
        return repr(v)
    if isinstance(v, decimal.Decimal):
        return str(v) if v.is_finite() else "null"
    if isinstance(v, dt.datetime):
        return json.dumps(_format_timestamp(v))
    if isinstance(v, dt.date):
        return json.dumps(v.isoformat())
    if isinstance(v, (bytes, bytearray)):
        return json.dumps(bytes(v).decode("utf-8", errors="replace"), ensure_ascii=False)
    return json.dumps(v, ensure_ascii=False)


def _format_timestamp(v: dt.datetime) -> str:
    # Delta writes millisecond precision (truncated down); aware values in UTC with 'Z'.
    # isoformat, not strftime("%Y"): glibc spells year 1 as "1", which no reader parses.
    utc = v.tzinfo is not None
    if utc:
        v = v.astimezone(dt.UTC)
    return v.replace(tzinfo=None).isoformat(timespec="milliseconds") + ("Z" if utc else "")


def _to_json(obj: Any) -> str:
    """Compact JSON that drops null members (an absent statistic and a null one mean the same)."""
    if isinstance(obj, dict):
        items = [f"{json.dumps(k, ensure_ascii=False)}:{_to_json(v)}" for k, v in obj.items()
                 if v is not None and not (isinstance(v, dict) and not _has_values(v))]
        return "{" + ",".join(items) + "}"
    if isinstance(obj, list):
        return "[" + ",".join(_to_json(v) for v in obj) + "]"
    return _json_scalar(obj)


def _has_values(d: dict[str, Any]) -> bool:
    return any(v is not None and (not isinstance(v, dict) or _has_values(v)) for v in d.values())


def _NULL_TEXT() -> pa.Scalar:  # noqa: N802  (reads as the constant it is)
    return pa.nulls(1, pa.string())[0]


def stats_json_from_parsed(struct_array: pa.Array | pa.ChunkedArray) -> pa.Array:
    """JSON ``stats`` strings from a checkpoint's ``stats_parsed`` struct column (null stays null).

    Built column by column with Arrow string kernels (a million rows must not mean a million
    Python dicts); null members are left out, as an absent statistic means the same.
    """
    if isinstance(struct_array, pa.ChunkedArray):
        struct_array = (struct_array.combine_chunks() if struct_array.num_chunks
                        else pa.array([], struct_array.type))
    if len(struct_array) == 0:
        return pa.array([], pa.string())
    text = _json_fragment(struct_array)
    # a present but empty stats struct still becomes "{}", as it was present
    return pc.if_else(pc.is_valid(struct_array), pc.fill_null(text, string_scalar("{}")), _NULL_TEXT())


def _quote(texts: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(string_scalar('"'), texts, string_scalar('"'), string_scalar(""))


def _json_string(arr: pa.Array) -> pa.Array:
    arr = pc.cast(arr, pa.string())
    needs_python = pc.fill_null(pc.match_substring_regex(arr, r"[\x00-\x1f]"), false_array(1)[0])
    if pc.any(needs_python).as_py():
        # control characters need \uXXXX escapes, which string kernels cannot compute
        return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in arr.to_pylist()],
                        pa.string())
    escaped = pc.replace_substring(pc.replace_substring(arr, "\\", "\\\\"), '"', '\\"')
    return _quote(escaped)


def _json_fragment(arr: pa.Array) -> pa.Array:
    """JSON text per row for a stats value column; null where the value is null (left out)."""
    t = arr.type
    if pa.types.is_struct(t):
        members = []
        for i in range(t.num_fields):
            child = _json_fragment(pc.struct_field(arr, [i]))
            key = string_scalar(json.dumps(t.field(i).name, ensure_ascii=False) + ":")
            members.append(pc.binary_join_element_wise(key, child, string_scalar("")))
        # A non-null "{" leads every row: pyarrow 26's skip-nulls join drops rows whose
        # arguments are all null, which would shift rows; the lead keeps every row present.
        lead = pc.fill_null(pa.nulls(len(arr), pa.string()), string_scalar("{"))
        joined = pc.binary_join_element_wise(lead, *members, string_scalar(","), null_handling="skip")
        obj = pc.binary_join_element_wise(pc.replace_substring(joined, "{,", "{", max_replacements=1),
                                          string_scalar("}"), string_scalar(""))
        return pc.if_else(pc.equal(joined, string_scalar("{")), _NULL_TEXT(), obj)
    if pa.types.is_boolean(t):
        return pc.if_else(arr, string_scalar("true"), string_scalar("false"))
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_floating(t):
        arr = pc.cast(arr, pa.float64())
        text = pc.cast(arr, pa.string())
        text = pc.if_else(pc.is_nan(arr), string_scalar('"NaN"'), text)
        text = pc.if_else(pc.equal(arr, float_scalar(math.inf)), string_scalar('"Infinity"'), text)
        return pc.if_else(pc.equal(arr, float_scalar(-math.inf)), string_scalar('"-Infinity"'), text)
    if pa.types.is_date(t):
        return _quote(pc.cast(pc.cast(arr, pa.date32()), pa.string()))
    if pa.types.is_timestamp(t):
        # stats hold milliseconds, truncated down (PROTOCOL.md "Per-file Statistics")
        ms = pc.cast(arr, pa.timestamp("ms", tz=t.tz), safe=False)
        fmt = pc.strftime(ms, format="%Y-%m-%dT%H:%M:%S")
        if t.tz is not None:
            fmt = pc.binary_join_element_wise(fmt, string_scalar("Z"), string_scalar(""))
        return _quote(fmt)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _json_string(arr)
    # anything else (binary, lists, maps) is rare in stats: one Python pass
    return pa.array([None if v is None else _to_json(v) for v in arr.to_pylist()], pa.string())
