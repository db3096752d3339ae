"""Per-file statistics computed from Arrow data (PROTOCOL.md "Per-file Statistics").

Writers put ``numRecords``, ``minValues``, ``maxValues`` and ``nullCount`` into every ``add``.
This module computes them column by column with ``pyarrow.compute`` and encodes them as the
JSON string Delta Spark writes:

- min/max only for skipping-eligible types (numbers, decimals, dates, timestamps, strings);
  booleans, binary, arrays, maps and variants get a ``nullCount`` only; structs recurse;
- strings are cut to a 32-character prefix (UTF-16 code units, as the JVM counts them); a cut
  max gets a tie-breaker character (U+007F, or U+10FFFF) so it stays an upper bound, and is
  dropped when no safe bound exists within twice the prefix — Delta Spark's rule;
- timestamps are written at millisecond precision (floored) as Delta Spark does;
- a float column holding NaN or infinities gets no min/max (JSON has no spelling for them);
- only the first ``delta.dataSkippingNumIndexedCols`` leaf columns (default 32), or the
  columns named by ``delta.dataSkippingStatsColumns``, get stats.

The input table carries *physical* column names (column mapping), so stats keys are physical
names as the protocol requires. ``StatsCollector`` gathers the same stats chunk by chunk while a
file is streamed out (``collect_stats`` is one chunk of it), so a writer never needs the whole
file in memory. Pure: no IO.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.model.schema import is_variant_field

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
    # isoformat, not strftime("%Y"): glibc spells year 1 as "1", which no reader parses.
    text = t.replace(tzinfo=None).isoformat(timespec="milliseconds")
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
        if _is_struct(f):
            out.extend(_leaf_paths(list(f.type), parent + (f.name,)))
        else:
            out.append(parent + (f.name,))
    return out


def _is_struct(f: pa.Field) -> bool:
    """A struct whose fields are columns of their own (a variant is one leaf: PROTOCOL.md
    "Statistics for Variant Columns")."""
    return bool(pa.types.is_struct(f.type)) and not is_variant_field(f)


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
    return bool(  # pyarrow is untyped; its predicates return bool
        pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        or pa.types.is_date(t) or pa.types.is_timestamp(t)
        or pa.types.is_string(t) or pa.types.is_large_string(t)
    )


class _Leaf:
    """Running stats of one leaf column: null count, and min/max as Arrow scalars (untruncated)."""

    __slots__ = ("min_max", "nulls", "lo", "hi", "unbounded")

    def __init__(self, min_max: bool) -> None:
        self.min_max = min_max  # type eligible for min/max
        self.nulls = 0
        self.lo: pa.Scalar | None = None
        self.hi: pa.Scalar | None = None
        self.unbounded = False  # saw NaN or an infinity: no JSON bound can be written

    def update(self, col: pa.ChunkedArray) -> None:
        nulls = col.null_count
        self.nulls += nulls
        if not self.min_max or self.unbounded or nulls == len(col):
            return
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_floating(col.type):
            finite = pc.is_finite(col)
            # A NaN or infinity makes the JSON bound unwritable; recording none is always safe.
            if pc.any(pc.invert(pc.fill_null(finite, True))).as_py():
                self.unbounded = True
                self.lo = self.hi = None
                return
        mm = pc.min_max(col)
        lo, hi = mm["min"], mm["max"]
        if not lo.is_valid:
            return
        # Keep the earlier value on ties: the result is what one min_max over all rows gives.
        if self.lo is None or pc.less(lo, self.lo).as_py():
            self.lo = lo
        if self.hi is None or pc.greater(hi, self.hi).as_py():
            self.hi = hi

    def bounds(self, prefix_length: int) -> tuple[Any, Any]:
        """(min, max) as JSON values, or (None, None) when not recorded."""
        lo, hi = self.lo, self.hi
        if lo is None or hi is None:
            return None, None
        if pa.types.is_string(lo.type) or pa.types.is_large_string(lo.type):
            return truncate_min_string(lo.as_py(), prefix_length), truncate_max_string(hi.as_py(), prefix_length)
        return _encode_scalar(lo), _encode_scalar(hi)


def _flatten_struct(col: pa.ChunkedArray) -> list[pa.ChunkedArray]:
    # StructArray.flatten() merges the parent's validity into each child, so a null struct
    # counts as a null in every nested column (what a reader evaluating ``s.x`` sees).
    n = col.type.num_fields
    if col.num_chunks == 0:
        return [pa.chunked_array([], type=col.type.field(i).type) for i in range(n)]
    per_chunk = [chunk.flatten() for chunk in col.chunks]
    return [pa.chunked_array([c[i] for c in per_chunk], type=col.type.field(i).type) for i in range(n)]


def _value_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


class StatsCollector:
    """Stats of one data file, collected chunk by chunk as its rows are written.

    ``update`` takes each chunk of rows (a ``Table`` or ``RecordBatch`` with ``schema``,
    physical column names) once; ``result`` is exactly what ``collect_stats`` returns for all
    chunks concatenated: null counts add up, min/max are the least/greatest of the chunks'
    untruncated bounds, and strings are truncated (and timestamps floored) only at the end.
    """

    def __init__(
        self,
        schema: pa.Schema,
        *,
        num_indexed_cols: int = 32,
        stats_columns: Sequence[str] | None = None,
        string_prefix_length: int = STRING_PREFIX_LENGTH,
    ) -> None:
        self.schema = schema
        self.num_records = 0
        self._prefix_length = string_prefix_length
        wanted = indexed_leaves(schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns)
        self._leaves = {p: _Leaf(_eligible_for_min_max(_value_type(t))) for p, t in _leaf_types(schema)
                        if p in wanted}

    @property
    def indexed_paths(self) -> tuple[tuple[str, ...], ...]:
        """The leaf column paths (names as in ``schema``) this collector keeps stats for, in
        schema order."""
        return tuple(self._leaves)

    def update(self, data: pa.Table | pa.RecordBatch) -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        self.num_records += data.num_rows
        if not self._leaves:
            return

        def walk(names: Sequence[str], cols: Sequence[pa.ChunkedArray], path: tuple[str, ...]) -> None:
            for name, col in zip(names, cols):
                p = path + (name,)
                if p in self._leaves:
                    self._leaves[p].update(col)
                elif pa.types.is_struct(col.type) and any(leaf[: len(p)] == p for leaf in self._leaves):
                    walk([f.name for f in col.type], _flatten_struct(col), p)

        walk(data.column_names, data.columns, ())

    def result(self) -> dict[str, Any]:
        """The stats object (``numRecords``, ``minValues``, ``maxValues``, ``nullCount``)."""
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}

        def walk(fields: Sequence[pa.Field], path: tuple[str, ...],
                 mn: dict[str, Any], mx: dict[str, Any], nc: dict[str, Any]) -> None:
            for f in fields:
                p = path + (f.name,)
                if _is_struct(f):
                    sub_mn: dict[str, Any] = {}
                    sub_mx: dict[str, Any] = {}
                    sub_nc: dict[str, Any] = {}
                    walk(list(f.type), p, sub_mn, sub_mx, sub_nc)
                    if sub_mn:
                        mn[f.name] = sub_mn
                    if sub_mx:
                        mx[f.name] = sub_mx
                    if sub_nc:
                        nc[f.name] = sub_nc
                    continue
                leaf = self._leaves.get(p)
                if leaf is None:
                    continue
                nc[f.name] = leaf.nulls
                lo, hi = leaf.bounds(self._prefix_length)
                if lo is not None and hi is not None:
                    mn[f.name] = lo
                    mx[f.name] = hi

        walk(list(self.schema), (), mins, maxs, nulls)
        return {"numRecords": self.num_records, "minValues": mins, "maxValues": maxs, "nullCount": nulls}

    def json(self) -> str:
        """``result()`` encoded as the ``add.stats`` JSON string."""
        return encode_stats_json(self.result())


def _leaf_types(schema: pa.Schema) -> list[tuple[tuple[str, ...], pa.DataType]]:
    out: list[tuple[tuple[str, ...], pa.DataType]] = []

    def walk(fields: Sequence[pa.Field], path: tuple[str, ...]) -> None:
        for f in fields:
            if _is_struct(f):
                walk(list(f.type), path + (f.name,))
            else:
                out.append((path + (f.name,), f.type))

    walk(list(schema), ())
    return out


def collect_stats(
    data: pa.Table,
    *,
    num_indexed_cols: int = 32,
    stats_columns: Sequence[str] | None = None,
    string_prefix_length: int = STRING_PREFIX_LENGTH,
) -> dict[str, Any]:
    """The stats object of one data file holding ``data`` (physical column names)."""
    collector = StatsCollector(data.schema, num_indexed_cols=num_indexed_cols, stats_columns=stats_columns,
                               string_prefix_length=string_prefix_length)
    collector.update(data)
    return collector.result()


def stats_json(data: pa.Table, **options: Any) -> str:
    """``collect_stats`` encoded as the ``add.stats`` JSON string."""
    return encode_stats_json(collect_stats(data, **options))
