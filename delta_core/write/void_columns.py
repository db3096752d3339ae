"""``void`` columns in data files (PROTOCOL.md "Schema Serialization Format" > "Void Type").

Spark writes ``NullType`` columns as ``void``. Writers MUST omit them from data files (readers
rebuild them as all-null columns, as for any column a file lacks), so a later type change of
the column, which the protocol allows, never meets a stored null column of another type. And
writers MUST refuse to write new files when the table schema has ``void`` inside an array or
map, a struct whose fields are all ``void``, or only ``void`` columns: such rows have no
Parquet form.

``check_void_writable`` is called before a data file is opened; ``without_void`` gives the
schema a data file holds and ``drop_void`` the matching rows.
"""

from __future__ import annotations

import pyarrow as pa

from delta_core.errors import SchemaMismatchError
from delta_core.model.schema import ArrayType, DataType, MapType, PrimitiveType, StructField, StructType, contains_type

_HOW_TO_FIX = ("change the column's type first (Delta Spark: ALTER TABLE ... ALTER COLUMN ... TYPE), "
               "then write; the table stays readable meanwhile")


def is_void(t: DataType) -> bool:
    return isinstance(t, PrimitiveType) and t.name == "void"


def _has_void(t: DataType) -> bool:
    return contains_type(t, is_void)


def _refusal(t: DataType, where: str) -> str | None:
    """Why a column of type ``t`` at ``where`` cannot be written, or None."""
    if isinstance(t, ArrayType):
        if _has_void(t.element_type):
            return f"{where} is an array holding a void type"
        return _refusal(t.element_type, f"{where}.element")
    if isinstance(t, MapType):
        if _has_void(t.key_type) or _has_void(t.value_type):
            return f"{where} is a map holding a void type"
        return _refusal(t.key_type, f"{where}.key") or _refusal(t.value_type, f"{where}.value")
    if isinstance(t, StructType):
        if t.fields and all(is_void(f.type) for f in t.fields):
            return f"{where} is a struct whose fields are all void"
        for f in t.fields:
            why = _refusal(f.type, f"{where}.{f.name}")
            if why:
                return why
    return None


def check_void_writable(schema: StructType, *, partition_columns: tuple[str, ...] = (),
                        path: str | None = None, version: int | None = None) -> None:
    """Raise ``SchemaMismatchError`` when the table schema forbids writing new data files."""
    why: str | None = None
    if schema.fields and all(is_void(f.type) for f in schema.fields):
        why = "every column of the table is void"
    else:
        for f in schema.fields:
            why = _refusal(f.type, f"column {f.name!r}")
            if why:
                break
    if why is None:
        data = [f for f in schema.fields if f.name not in set(partition_columns)]
        if data and all(is_void(f.type) for f in data):
            # Not named by the protocol, but a file with no column cannot carry a row count.
            why = "every column stored in data files (all but the partition columns) is void"
    if why:
        raise SchemaMismatchError(f"cannot write data files: {why}, which has no Parquet form; {_HOW_TO_FIX}",
                                  path=path, version=version)


def without_void(schema: StructType) -> StructType:
    """``schema`` without its void fields, at any struct depth: what a data file holds."""
    return StructType(tuple(_strip_field(f) for f in schema.fields if not is_void(f.type)))


def _strip_field(f: StructField) -> StructField:
    if isinstance(f.type, StructType):
        return StructField(f.name, without_void(f.type), f.nullable, f.metadata)
    return f


def drop_void(data: pa.Table, schema: StructType) -> pa.Table:
    """Rows of ``data`` (columns in ``schema``'s order, logical names) without void fields."""
    if not _has_void(schema):
        return data
    arrays, fields = [], []
    for f, col, af in zip(schema.fields, data.columns, data.schema):
        if is_void(f.type):
            continue
        if isinstance(f.type, StructType) and _has_void(f.type):
            chunks = [_drop_struct(c, f.type) for c in col.chunks]
            col = pa.chunked_array(chunks, type=chunks[0].type) if chunks else pa.chunked_array(
                [], type=_stripped_arrow(af.type, f.type))
            af = af.with_type(col.type)
        arrays.append(col)
        fields.append(af)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _stripped_arrow(t: pa.StructType, schema: StructType) -> pa.DataType:
    out = []
    for f in schema.fields:
        if is_void(f.type):
            continue
        af = t.field(f.name)
        if isinstance(f.type, StructType):
            af = af.with_type(_stripped_arrow(af.type, f.type))
        out.append(af)
    return pa.struct(out)


def _drop_struct(arr: pa.StructArray, schema: StructType) -> pa.StructArray:
    children, fields = [], []
    for f in schema.fields:
        if is_void(f.type):
            continue
        child = arr.field(f.name)
        if isinstance(f.type, StructType):
            child = _drop_struct(child, f.type)
        children.append(child)
        fields.append(arr.type.field(f.name).with_type(child.type))
    return pa.StructArray.from_arrays(children, fields=fields, mask=arr.is_null() if arr.null_count else None)
