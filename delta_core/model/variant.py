"""The variant type: where variant columns sit in a schema and what they allow.

Implements PROTOCOL.md "Variant Data Type" (features ``variantType``, ``variantType-preview``)
for unshredded variants: a column is stored as a struct of two required binaries ``value`` and
``metadata`` (``schema.py``'s Arrow layout; writers order the two differently, so files are read
by field name and rewrites carry both binaries unchanged), gets a ``nullCount`` and no bounds
("Delta Column Statistics"), and cannot be a partition, clustering or Z-order column (it is not
comparable). Shredded files ("Variant Shredding") are rebuilt by ``variant_shredding`` first;
a layout still not this one is refused here, never cast.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from delta_core.model.arrow_kinds import is_binary_like, is_list_like
from delta_core.model.schema import ArrayType, DataType, MapType, PrimitiveType, StructType, contains_type

VARIANT_FIELDS = ("value", "metadata")  # the unshredded layout's two binaries


def is_variant(t: DataType) -> bool:
    return isinstance(t, PrimitiveType) and t.name == "variant"


def has_variant(t: DataType) -> bool:
    """Whether ``t`` is a variant or holds one at any depth."""
    return contains_type(t, is_variant)


def variant_columns(schema: StructType, names: Sequence[str]) -> list[str]:
    """Those of the top-level ``names`` (any case) whose type is or holds a variant."""
    out = []
    for name in names:
        f = schema.get(name, case_sensitive=False)
        if f is not None and has_variant(f.type):
            out.append(f.name)
    return out


def not_comparable_reason(column: str) -> str:
    """Why ``column`` (a variant) cannot order, cluster or partition a table."""
    return (f"column {column!r} is a variant, which is not a comparable type (PROTOCOL.md \"Variant "
            "Data Type\"), so it cannot be a partition, clustering or Z-order column")


def unshredded_problem(stored: pa.DataType, *, column: str) -> str | None:
    """Why Arrow type ``stored`` is not an unshredded variant: a struct of exactly the binaries
    ``value`` and ``metadata``, in either order (None when it is one)."""
    if pa.types.is_dictionary(stored):
        stored = stored.value_type
    names = sorted(f.name for f in stored) if pa.types.is_struct(stored) else None
    if pa.types.is_null(stored) or (names == sorted(VARIANT_FIELDS) and all(is_binary_like(f.type) for f in stored)):
        return None
    return (f"variant column {column!r} is stored as {stored}, not as the unshredded struct of "
            "binaries value and metadata that a table without variantShredding must hold")


def stored_layout_problem(t: DataType, stored: pa.DataType, *, column: str) -> str | None:
    """Why Arrow type ``stored`` (as read from a data file) cannot be read as the unshredded
    variants that Delta type ``t`` holds, or ``None`` when it can. A variant must be a struct of
    exactly the binaries ``value`` and ``metadata``, in either order: a shredded one
    (``typed_value``, or ``value`` missing) would lose values if cast to that layout."""
    if pa.types.is_dictionary(stored):
        stored = stored.value_type
    if pa.types.is_null(stored):
        return None
    if is_variant(t):
        return unshredded_problem(stored, column=column)
    if isinstance(t, StructType) and pa.types.is_struct(stored):
        have = {f.name: f.type for f in stored}
        for f in t.fields:
            if f.name in have:
                why = stored_layout_problem(f.type, have[f.name], column=f"{column}.{f.name}")
                if why is not None:
                    return why
        return None
    if isinstance(t, ArrayType) and is_list_like(stored):
        return stored_layout_problem(t.element_type, stored.value_type, column=f"{column}.element")
    if isinstance(t, MapType) and pa.types.is_map(stored):
        return (stored_layout_problem(t.key_type, stored.key_type, column=f"{column}.key")
                or stored_layout_problem(t.value_type, stored.item_type, column=f"{column}.value"))
    return None
