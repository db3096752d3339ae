"""Kinds of Arrow value: types that hold the same Delta value in another width, unit or layout.

Writers pick different Arrow types for one Delta type: delta-rs 1.6 writes ``string_view`` and
``binary_view`` (nested too) where others write ``string``/``large_string`` and
``binary``/``large_binary``; Parquet stores a byte as INT32 and timestamps in ns, us or INT96.
Readers and writers of this library treat each group below as one kind (PROTOCOL.md "Primitive
Types" names the Delta type; the Arrow layout is the writer's choice), and convert between
members by a cast that never changes a value.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa


def is_string_like(t: pa.DataType) -> bool:
    """A Delta ``string``: ``string``, ``large_string`` or ``string_view``."""
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t))


def is_binary_like(t: pa.DataType) -> bool:
    """A Delta ``binary``: ``binary``, ``large_binary``, ``fixed_size_binary`` or ``binary_view``."""
    return bool(pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)
                or pa.types.is_binary_view(t))


def is_list_like(t: pa.DataType) -> bool:
    """A Delta ``array``: any Arrow list layout (plain, large, fixed size, list views)."""
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
                or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


# Primitive kinds: two types of one kind differ only in width, unit or layout.
PRIMITIVE_KINDS: tuple[Callable[[pa.DataType], bool], ...] = (
    pa.types.is_integer, pa.types.is_floating, pa.types.is_decimal, pa.types.is_boolean,
    pa.types.is_date, pa.types.is_timestamp, pa.types.is_time, is_string_like, is_binary_like,
)


def same_primitive_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Whether ``a`` and ``b`` are one primitive kind (``PRIMITIVE_KINDS``)."""
    return any(kind(a) and kind(b) for kind in PRIMITIVE_KINDS)
