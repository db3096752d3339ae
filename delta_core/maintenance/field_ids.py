"""Resolving a data file's columns by Parquet field id (PROTOCOL.md "Column Mapping", mode ``id``).

In ``id`` mode a reader matches each table column to the file column whose Parquet ``field_id``
equals the column's ``delta.columnMapping.id`` — at every depth: struct fields by their own ids,
array elements and map keys/values by ``delta.columnMapping.nested.ids``. Names in the file do
not count: files written before a rename, or converted from Iceberg, hold the right ids under
other names. A column id the file lacks reads as NULL (the column was added later). A variant is
matched by its id, its ``value`` and ``metadata`` by name (they are no schema columns, so no ids);
a shredded one is rebuilt unshredded (``variant_shredding``).

A file with no field ids at all is refused (``MissingFieldIdsError``): the protocol lets a
reader return NULLs for every column there, but a rewrite would commit those NULLs as data.

``FieldIdResolver`` is built once per table schema (the physical Arrow schema, whose fields
carry ``PARQUET:field_id`` metadata) and turns what pyarrow read from a file into columns named
and nested as that schema. Pure Arrow: no IO.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import MaintenanceError, MissingFieldIdsError
from delta_core.model.schema import PARQUET_FIELD_ID, is_variant_field
from delta_core.model.variant import unshredded_problem
from delta_core.model.variant_shredding import unshred


def field_id(field: pa.Field) -> int | None:
    """The Parquet field id pyarrow reports in ``field``'s metadata, or None."""
    raw = (field.metadata or {}).get(PARQUET_FIELD_ID)
    return int(raw) if raw is not None else None


def _has_any_id(fields: Sequence[pa.Field]) -> bool:
    for f in fields:
        if field_id(f) is not None:
            return True
        t = f.type
        if pa.types.is_struct(t) and _has_any_id(list(t)):
            return True
        if (pa.types.is_list(t) or pa.types.is_large_list(t)) and _has_any_id([t.value_field]):
            return True
        if pa.types.is_map(t) and _has_any_id([t.key_field, t.item_field]):
            return True
    return False


def _fields_without_id(fields: Sequence[pa.Field], prefix: str = "") -> list[str]:
    """Struct fields, at any depth, that carry no id (array elements and map entries may lack
    one: they have one place only)."""
    out: list[str] = []
    for f in fields:
        name = f"{prefix}{f.name}"
        if field_id(f) is None:
            out.append(name)
        inner = f
        while pa.types.is_list(inner.type) or pa.types.is_map(inner.type):
            inner = inner.type.value_field if pa.types.is_list(inner.type) else inner.type.item_field
        # a variant's value and metadata are no columns of the schema: they have no ids
        if pa.types.is_struct(inner.type) and not is_variant_field(inner):
            out += _fields_without_id(list(inner.type), f"{name}.")
    return out


class FieldIdResolver:
    """Matches files' columns to ``target`` (the table's physical Arrow schema) by field id."""

    def __init__(self, target: pa.Schema, *, table: str) -> None:
        missing = _fields_without_id(list(target))
        if missing:
            raise MaintenanceError(
                f"the table is in column mapping mode 'id' but its schema gives no "
                f"delta.columnMapping.id for {missing}; its metadata is incomplete - repair the "
                "schema before rewriting", path=table)
        self.target = target
        self.table = table

    def file_columns(self, file_schema: pa.Schema, *, file: str) -> list[str]:
        """Names of the file's top-level columns that hold a table column (to read them only)."""
        if not _has_any_id(list(file_schema)):
            raise MissingFieldIdsError(
                f"{file} has no Parquet field ids, but the table resolves columns by field id "
                "(delta.columnMapping.mode=id): a rewrite could not tell its columns and would turn "
                "them into NULLs. Rewrite the file with field ids (or restore them) before compacting",
                path=file)
        wanted = {field_id(f) for f in self.target}
        return [f.name for f in file_schema if field_id(f) in wanted]

    def align(self, raw: pa.Table, *, file: str) -> pa.Table:
        """``raw`` (read from ``file``) as columns of the target schema, matched by field id at
        every depth; target columns absent from the file are left out for the caller to fill."""
        by_id = {field_id(f): i for i, f in enumerate(raw.schema) if field_id(f) is not None}
        arrays: list[pa.ChunkedArray] = []
        fields: list[pa.Field] = []
        for target in self.target:
            i = by_id.get(field_id(target))
            if i is None:
                continue
            source = raw.schema.field(i)
            chunks = [_align(chunk, source, target, where=f"{file} column {source.name!r}")
                      for chunk in raw.column(i).chunks]
            arrays.append(pa.chunked_array(chunks, type=target.type))
            fields.append(target)
        if not arrays:
            return raw.select([])  # keeps the row count
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _mismatch(where: str, source: pa.Field, target: pa.Field, why: str) -> MaintenanceError:
    return MaintenanceError(
        f"{where} has field id {field_id(source)} like table column {target.name!r}, but {why}; "
        "the file does not fit the table schema - fix or remove the file before rewriting")


def _align(arr: pa.Array, source: pa.Field, target: pa.Field, *, where: str) -> pa.Array:
    """``arr`` (of ``source``) re-nested as ``target``: children matched by field id, missing
    children NULL, leaves cast to the target type."""
    t = target.type
    if pa.types.is_dictionary(arr.type):
        arr = arr.cast(arr.type.value_type)
    mask = arr.is_null() if arr.null_count else None
    if is_variant_field(target):  # matched by name: value and metadata carry no ids
        arr = unshred(arr, t)  # a shredded one is rebuilt first
        why = unshredded_problem(arr.type, column=where)
        if why is not None:
            raise MaintenanceError(f"{why}; fix or remove the file before rewriting")
        return arr if arr.type == t else arr.cast(t)
    if pa.types.is_struct(t):
        if not pa.types.is_struct(arr.type):
            raise _mismatch(where, source, target, f"it is {arr.type}, not a struct")
        by_id = {field_id(f): j for j, f in enumerate(arr.type) if field_id(f) is not None}
        children = []
        for child in t:
            j = by_id.get(field_id(child)) if field_id(child) is not None else None
            if j is None:
                children.append(pa.nulls(len(arr), child.type))
            else:
                children.append(_align(arr.field(j), arr.type.field(j), child, where=f"{where}.{child.name}"))
        return pa.StructArray.from_arrays(children, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        if pa.types.is_large_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        if not pa.types.is_list(arr.type):
            raise _mismatch(where, source, target, f"it is {arr.type}, not an array")
        _same_nested_id(arr.type.value_field, t.value_field, where)
        offsets, lo, hi = _rebased_offsets(arr)
        values = _align(arr.values.slice(lo, hi - lo), arr.type.value_field, t.value_field, where=f"{where}.element")
        return pa.ListArray.from_arrays(offsets, values, type=t, mask=mask)
    if pa.types.is_map(t):
        if not pa.types.is_map(arr.type):
            raise _mismatch(where, source, target, f"it is {arr.type}, not a map")
        _same_nested_id(arr.type.key_field, t.key_field, where)
        _same_nested_id(arr.type.item_field, t.item_field, where)
        offsets, lo, hi = _rebased_offsets(arr)
        keys = _align(arr.keys.slice(lo, hi - lo), arr.type.key_field, t.key_field, where=f"{where}.key")
        items = _align(arr.items.slice(lo, hi - lo), arr.type.item_field, t.item_field, where=f"{where}.value")
        return pa.MapArray.from_arrays(offsets, keys, items, type=t, mask=mask)
    if arr.type == t:
        return arr
    try:
        return arr.cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _mismatch(where, source, target, f"its type {arr.type} cannot be read as {t}: {exc}") from exc


def _rebased_offsets(arr: pa.ListArray | pa.MapArray) -> tuple[pa.Array, int, int]:
    """Offsets of a (possibly sliced) list or map starting at 0, and the stretch [lo, hi) of its
    values they cover: Arrow builds a list with a validity mask only from unsliced offsets."""
    offsets = arr.offsets
    lo, hi = offsets[0].as_py(), offsets[-1].as_py()
    return pc.subtract(offsets, pa.scalar(lo, offsets.type)), lo, hi


def _same_nested_id(source: pa.Field, target: pa.Field, where: str) -> None:
    # An element, key or value has one place only, so its id can only confirm it; a different
    # id means the file's collection holds something else.
    s, t = field_id(source), field_id(target)
    if s is not None and t is not None and s != t:
        raise _mismatch(where, source, target, f"its {target.name} has field id {s} where the table's has {t}")
