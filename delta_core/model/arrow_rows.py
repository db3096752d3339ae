"""Arrow arrays of nested Python values without pyarrow's pandas probe.

``pa.array(values, type)`` first asks whether ``values`` is a pandas object, which imports
pandas (0.2-0.9 s) in any process that has it installed. Writers build a few rows of nested
actions (a checkpoint's protocol, metaData, txn rows); ``array_from_pylist`` builds them through
Arrow's JSON reader instead: each value becomes one JSON line under an explicit type, with maps
read as lists of key/value structs and rebuilt as maps, dates and timestamps as their integer
days and microseconds and cast back. Types JSON cannot carry exactly (binary, decimals,
floats...) go to ``pa.array``.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

_SCALARS = (pa.string(), pa.large_string(), pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.int64())
# Read as these integers (days, microseconds since the epoch) and cast.
_AS_INTEGERS = {pa.date32(): pa.int32(), pa.timestamp("us", tz="UTC"): pa.int64(), pa.timestamp("us"): pa.int64()}
_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1)
_MICROSECOND = dt.timedelta(microseconds=1)


def array_from_pylist(values: Sequence[Any], typ: pa.DataType) -> pa.Array:
    """What ``pa.array(values, typ)`` gives, for values of strings, booleans, integers, dates,
    microsecond timestamps (aware ones in UTC, naive ones without a zone), lists, structs (dicts)
    and maps (dicts or lists of pairs), any of them null."""
    if not _json_readable(typ):
        return pa.array(values, typ)
    if not values:
        return pa.nulls(0, typ)
    import pyarrow.json as pa_json

    lines = "\n".join(json.dumps({"v": _jsonable(v, typ)}, ensure_ascii=False) for v in values).encode()
    table = pa_json.read_json(
        io.BytesIO(lines),
        read_options=pa_json.ReadOptions(use_threads=False),
        parse_options=pa_json.ParseOptions(explicit_schema=pa.schema([("v", _read_type(typ))]),
                                           unexpected_field_behavior="ignore"),
    )
    column = table.column("v")
    read = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    return _restore(read, typ)


def _json_readable(typ: pa.DataType) -> bool:
    if typ in _SCALARS or typ in _AS_INTEGERS:
        return True
    if pa.types.is_list(typ):
        return _json_readable(typ.value_type)
    if pa.types.is_map(typ):
        return _json_readable(typ.key_type) and _json_readable(typ.item_type)
    if pa.types.is_struct(typ):
        return all(_json_readable(f.type) for f in typ)
    return False


def _read_type(typ: pa.DataType) -> pa.DataType:
    """``typ`` with each map as a list of ``{key, value}`` structs (the JSON reader has no map)."""
    if pa.types.is_map(typ):
        return pa.list_(pa.struct([("key", _read_type(typ.key_type)), ("value", _read_type(typ.item_type))]))
    if pa.types.is_list(typ):
        return pa.list_(_read_type(typ.value_type))
    if pa.types.is_struct(typ):
        return pa.struct([pa.field(f.name, _read_type(f.type), f.nullable) for f in typ])
    return _AS_INTEGERS.get(typ, typ)


def _jsonable(value: Any, typ: pa.DataType) -> Any:
    if value is None:
        return None
    if pa.types.is_map(typ):
        pairs = value.items() if isinstance(value, Mapping) else value
        return [{"key": _jsonable(k, typ.key_type), "value": _jsonable(v, typ.item_type)} for k, v in pairs]
    if pa.types.is_list(typ):
        return [_jsonable(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return {f.name: _jsonable(value.get(f.name), f.type) for f in typ}
    if pa.types.is_date32(typ):
        return (value - _EPOCH_DAY).days
    if pa.types.is_timestamp(typ):
        naive = value if value.tzinfo is None else value.astimezone(dt.UTC).replace(tzinfo=None)
        return (naive - _EPOCH) // _MICROSECOND
    return value


def _restore(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    """The array read with ``_read_type(typ)`` as ``typ``."""
    if arr.type == typ:
        return arr
    valid = arr.is_valid()
    if pa.types.is_map(typ):
        entries = arr.values
        offsets = arr.offsets
        keys = _restore(entries.field("key"), typ.key_type)
        items = _restore(entries.field("value"), typ.item_type)
        return pa.MapArray.from_arrays(offsets, keys, items, type=typ, mask=pc.invert(valid))
    if pa.types.is_list(typ):
        return pa.ListArray.from_arrays(arr.offsets, _restore(arr.values, typ.value_type), type=typ,
                                        mask=pc.invert(valid))
    if pa.types.is_struct(typ):
        children = [_restore(arr.field(f.name), f.type) for f in typ]
        return pa.StructArray.from_arrays(children, fields=list(typ), mask=pc.invert(valid))
    return arr.cast(typ)
