"""Unshredding: shredded Parquet variant groups (``metadata``, ``value``, ``typed_value``) back
to unshredded Variant binaries, as apache/parquet-format ``VariantShredding.md`` ("Reconstructing
a Shredded Variant") says, for PROTOCOL.md "Variant Shredding": readers must read shredded and
unshredded files alike, and writers must not shred while ``delta.enableVariantShredding`` is not
true. Values are encoded and assembled column-wise (``variant_binary``); only partially shredded
objects, whose residual ``value`` fields are merged in, are assembled one by one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptVariantError
from delta_core.model.schema import PrimitiveType, primitive_to_arrow
from delta_core.model.variant_binary import (
    VARIANT_NULL,
    encode_arrays,
    encode_object,
    encode_objects,
    encode_primitives,
    metadata_names,
    object_fields,
)

_GROUP_FIELDS = frozenset({"metadata", "value", "typed_value"})
_OBJECT_CELLS = 1 << 20  # rows x shredded fields assembled at once
UNSHREDDED = primitive_to_arrow(PrimitiveType("variant"))  # the layout of variant columns in tables' schemas


class _Dictionaries:
    """The metadata dictionaries of a column's rows: row -> distinct metadata (``index``), each
    parsed once, on first need."""

    def __init__(self, metadata: pa.Array) -> None:
        encoded = pc.dictionary_encode(metadata.cast(pa.large_binary()))
        self.index = np.asarray(pc.fill_null(encoded.indices, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
        self._binaries = encoded.dictionary.to_pylist()
        self._names: dict[int, list[str]] = {}
        self._ids: dict[int, dict[str, int]] = {}

    def names(self, which: int) -> list[str]:
        if which not in self._names:
            self._names[which] = metadata_names(self._binaries[which])
        return self._names[which]

    def _id_map(self, which: int) -> dict[str, int]:
        if which not in self._ids:
            ids: dict[str, int] = {}
            for i, n in enumerate(self.names(which)):
                ids.setdefault(n, i)
            self._ids[which] = ids
        return self._ids[which]

    def id_table(self, names: list[str], rows: np.ndarray, is_object: np.ndarray,
                 fields: list[pa.Array]) -> np.ndarray:
        """The dictionary id of each of ``names`` in each distinct metadata (distinct x names; a
        slot's row is ``table[rows[slot]]``), checked for the slots that are objects
        (``is_object``) holding a field; other entries are 0."""
        present = np.stack([np.asarray(f.is_valid().to_numpy(zero_copy_only=False), dtype=bool) for f in fields],
                           axis=1) if fields else np.zeros((len(rows), 0), dtype=bool)
        needed = is_object & present.any(axis=1)
        table = np.zeros((len(self._binaries), len(names)), dtype=np.int64)
        for which in np.unique(rows[needed]):
            ids = self._id_map(int(which))
            table[which] = [ids.get(n, 0) for n in names]
            used = present[needed & (rows == which)].any(axis=0)
            for name, is_used in zip(names, used):
                if is_used and name not in ids:
                    self.field_id(int(which), name)  # raises: a shredded field the dictionary lacks
        return table

    def field_id(self, which: int, name: str) -> int:
        found = self._id_map(which).get(name)
        if found is None:
            raise CorruptVariantError(
                f"the shredded variant field {name!r} is not in its row's metadata dictionary (VariantShredding.md "
                "\"Variant Metadata\": every field name must be there): the file is corrupt; ask its writer's "
                "maintainers. Nothing was written")
        return found


def is_shredded_group(t: pa.DataType) -> bool:
    """Whether the Arrow type is a variant group in shredded layout (has ``typed_value``)."""
    return pa.types.is_struct(t) and "typed_value" in {f.name for f in t} and \
        {f.name for f in t} <= _GROUP_FIELDS


def _child(group: pa.StructArray, name: str) -> pa.Array | None:
    t = group.type
    return group.field(t.get_field_index(name)) if t.get_field_index(name) >= 0 else None


def _rebuild(value: pa.Array | None, typed: pa.Array | None, rows: np.ndarray, dicts: _Dictionaries) -> pa.Array:
    """The Variant value of each slot (large_binary; null: missing), from its ``value`` and
    ``typed_value`` (either absent); ``rows`` maps each slot to its row's metadata."""
    n = len(rows)
    residual = value.cast(pa.large_binary()) if value is not None else pa.nulls(n, pa.large_binary())
    if typed is None:
        return residual
    if pa.types.is_struct(typed.type):
        return _objects(residual, typed, rows, dicts)
    if pa.types.is_list(typed.type) or pa.types.is_large_list(typed.type):
        built = _arrays(typed, rows, dicts)
    else:
        built = encode_primitives(typed)
    return pc.if_else(typed.is_valid(), built, residual)


def _objects(residual: pa.Array, typed: pa.StructArray, rows: np.ndarray, dicts: _Dictionaries) -> pa.Array:
    """Shredded objects: the present shredded fields (assembled column-wise), merged with the
    residual ``value`` object's fields where the object is partially shredded (per value); a
    null ``typed_value`` keeps ``value``."""
    order = sorted(range(typed.type.num_fields), key=lambda j: typed.type.field(j).name.encode("utf-8"))
    names = [typed.type.field(j).name for j in order]
    fields = [_rebuild(_child(c, "value"), _child(c, "typed_value"), rows, dicts)
              for c in (typed.field(j) for j in order)]
    is_object = np.asarray(typed.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    ids = dicts.id_table(names, rows, is_object, fields)
    # slices of rows keep the (rows x fields) work arrays small for wide shredding schemas
    step = max(1, _OBJECT_CELLS // max(1, len(names)))
    built = pa.concat_arrays([encode_objects([f.slice(at, step) for f in fields], ids[rows[at:at + step]])
                              for at in range(0, len(rows), step)] or [pa.array([], pa.large_binary())])
    partial = np.flatnonzero(is_object & np.asarray(residual.is_valid().to_numpy(zero_copy_only=False), dtype=bool))
    if len(partial):
        columns = [f.take(pa.array(partial)).to_pylist() for f in fields]
        merged = []
        for at, i in enumerate(partial):
            which = int(rows[i])
            present = [(name, dicts.field_id(which, name), col[at]) for name, col in zip(names, columns)
                       if col[at] is not None]
            merged.append(encode_object(present + object_fields(residual[int(i)].as_py(), dicts.names(which))))
        mask = np.zeros(len(rows), dtype=bool)
        mask[partial] = True
        built = pc.replace_with_mask(built, pa.array(mask), pa.array(merged, type=pa.large_binary()))
    return pc.if_else(pa.array(is_object), built, residual)


def _arrays(typed: pa.Array, rows: np.ndarray, dicts: _Dictionaries) -> pa.Array:
    """Shredded arrays: each element rebuilt from its ``value``/``typed_value`` (a missing
    element is read as Variant null); a null list slot's bytes mean nothing."""
    lengths = np.asarray(pc.fill_null(pc.list_value_length(typed), 0).to_numpy(zero_copy_only=False),
                         dtype=np.int64)
    elements = typed.flatten()
    built = _rebuild(_child(elements, "value"), _child(elements, "typed_value"), np.repeat(rows, lengths), dicts)
    bounds = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=bounds[1:])
    return encode_arrays(pc.fill_null(built, VARIANT_NULL), bounds)


def unshred_group(group: pa.StructArray, target: pa.StructType) -> pa.StructArray:
    """The shredded variant ``group`` as the unshredded ``target`` struct (fields ``value`` and
    ``metadata``, in the target's order). A row whose variant is missing but whose group is
    present reads as Variant null (VariantShredding.md "Value Shredding")."""
    # flatten(): a null group's slots are null in its fields too, so nothing under it is decoded
    fields = dict(zip([f.name for f in group.type], group.flatten()))
    metadata = fields.get("metadata")
    if metadata is None:
        raise CorruptVariantError("a variant group has no metadata field: the file is corrupt. Nothing was written")
    dicts = _Dictionaries(metadata)
    values = pc.fill_null(_rebuild(fields.get("value"), fields.get("typed_value"), dicts.index, dicts), VARIANT_NULL)
    children = {"value": values, "metadata": pc.fill_null(metadata.cast(pa.large_binary()), b"")}
    arrays = [children[f.name].cast(f.type) for f in target]
    mask = group.is_null() if group.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask)


def unshred(array: pa.Array, target: pa.DataType) -> pa.Array:
    """``array`` (a column as a file holds it) with every shredded variant group inside it,
    at any depth of structs, lists and maps, rebuilt unshredded where the table's ``target``
    type has a variant (``UNSHREDDED``). Other values are unchanged."""
    t = array.type
    if not has_shredded(t):
        return array
    if target == UNSHREDDED and is_shredded_group(t):
        return unshred_group(array, target)
    if pa.types.is_struct(t) and pa.types.is_struct(target):
        by_name = {f.name: f for f in target}
        fields = [f for f in t]
        children = [unshred(c, by_name[f.name].type) if f.name in by_name else c
                    for f, c in zip(fields, array.flatten())]
        new_fields = [f.with_type(c.type) for f, c in zip(fields, children)]
        mask = array.is_null() if array.null_count else None
        return pa.StructArray.from_arrays(children, fields=new_fields, mask=mask)
    if (pa.types.is_list(t) or pa.types.is_large_list(t)) and (pa.types.is_list(target) or pa.types.is_large_list(target)):
        items = unshred(array.values, target.value_type)
        list_type = (pa.large_list if pa.types.is_large_list(t) else pa.list_)(t.value_field.with_type(items.type))
        return pa.Array.from_buffers(list_type, len(array), [array.buffers()[0], array.buffers()[1]],
                                     offset=array.offset, children=[items])
    if pa.types.is_map(t) and pa.types.is_map(target):
        items = unshred(array.items, target.item_type)
        map_type = pa.map_(t.key_field, t.item_field.with_type(items.type))
        entries = pa.StructArray.from_arrays([array.keys, items], fields=[map_type.key_field, map_type.item_field])
        return pa.Array.from_buffers(map_type, len(array), [array.buffers()[0], array.buffers()[1]],
                                     offset=array.offset, children=[entries])
    return array


def unshred_column(column: pa.ChunkedArray, target: pa.DataType) -> pa.ChunkedArray:
    """``unshred`` for each chunk of a column read from a file."""
    return pa.chunked_array([unshred(c, target) for c in column.chunks or [pa.array([], column.type)]])


def has_shredded(t: pa.DataType) -> bool:
    """Whether the Arrow type holds a shredded variant group at any depth."""
    if is_shredded_group(t):
        return True
    if pa.types.is_struct(t):
        return any(has_shredded(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_shredded(t.value_type)
    if pa.types.is_map(t):
        return has_shredded(t.key_type) or has_shredded(t.item_type)
    return False
