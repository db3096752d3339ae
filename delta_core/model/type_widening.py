"""Type widening: the type changes a table's schema records and whether this library can honour
them (PROTOCOL.md "Type Widening": "Type Change Metadata", "Writer Requirements for Type
Widening", "Reader Requirements for Type Widening").

A column (or a struct field) whose type was widened keeps the history in its ``metadata`` under
``delta.typeChanges``: ``fromType``, ``toType`` and, for a map key/value or array element below
it, ``fieldPath``. Data files written before a change hold the narrower type; readers convert
them to the current type (``maintenance.data_io`` casts every column to the table's type, so
rewrites write the current type) and must fail on a change they do not support.

``typeWidening-preview`` is not in PROTOCOL.md: it is Delta Spark's preview of the feature,
whose entries also carry a ``tableVersion``. Delta Spark (``TypeWidening.isSupported``,
``assertTableReadable``) treats both features alike and checks every recorded change with the
same rule, which ``check_type_changes`` follows: the widenings PROTOCOL.md lists (Delta Spark's
``isTypeChangeSupported``), plus changes between string, char and varchar, which Delta Spark
tolerates because they do not change what files hold. Anything else is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from delta_core.errors import CorruptLogError, UnsupportedWriterFeatureError
from delta_core.model.actions import Metadata
from delta_core.model.arrow_kinds import is_list_like, same_primitive_kind
from delta_core.model.schema import PrimitiveType, parse_data_type

TYPE_CHANGES_KEY = "delta.typeChanges"
TYPE_WIDENING_FEATURES = frozenset({"typeWidening", "typeWidening-preview"})

_INTEGRAL = {"byte": 1, "short": 2, "integer": 4, "long": 8}
# digits left of the decimal point a decimal needs to hold every value of an integral type
_INTEGRAL_DIGITS = {"byte": 10, "short": 10, "integer": 10, "long": 20}  # INT32 / INT64 in Parquet
_STRINGISH = re.compile(r"^\s*(string|char\s*\(\s*\d+\s*\)|varchar\s*\(\s*\d+\s*\))\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TypeChange:
    """One recorded change: ``column`` (dotted field path) and ``field_path`` below it."""

    column: str
    from_type: str
    to_type: str
    field_path: str | None = None

    @property
    def where(self) -> str:
        return f"{self.column}.{self.field_path}" if self.field_path else self.column


def is_supported_widening(from_type: PrimitiveType, to_type: PrimitiveType) -> bool:
    """Whether ``from_type`` -> ``to_type`` is a widening PROTOCOL.md "Type Widening" lists."""
    f, t = from_type.name, to_type.name
    if from_type == to_type:
        return True
    if f in _INTEGRAL and t in _INTEGRAL:
        return _INTEGRAL[f] <= _INTEGRAL[t]
    if (f, t) == ("float", "double") or (f, t) == ("date", "timestamp_ntz"):
        return True
    if f in ("byte", "short", "integer") and t == "double":
        return True
    if t == "decimal":
        assert to_type.precision is not None and to_type.scale is not None
        if f == "decimal":
            assert from_type.precision is not None and from_type.scale is not None
            # Decimal(p, s) -> Decimal(p + k1, s + k2) with k1 >= k2 >= 0
            return (to_type.scale >= from_type.scale
                    and to_type.precision - to_type.scale >= from_type.precision - from_type.scale)
        if f in _INTEGRAL_DIGITS:
            return to_type.precision - to_type.scale >= _INTEGRAL_DIGITS[f]
    return False


def readable_as(stored: pa.DataType, table: pa.DataType) -> bool:
    """Whether values a data file stores as Arrow type ``stored`` may be read as the table's
    ``table`` type: the same kind of value (another width, unit or layout, ``arrow_kinds``), or one that type
    widening turns into it (integer to floating point or decimal, date to timestamp_ntz). A file
    holding anything else (a string for a number, ...) does not fit the schema; a cast would
    invent values."""
    if stored == table or pa.types.is_null(stored):
        return True
    if pa.types.is_dictionary(stored):
        return readable_as(stored.value_type, table)
    if pa.types.is_struct(table):
        if not pa.types.is_struct(stored):
            return False
        have = {f.name: f.type for f in stored}
        return all(readable_as(have[f.name], f.type) for f in table if f.name in have)
    if is_list_like(table):
        return is_list_like(stored) and readable_as(stored.value_type, table.value_type)
    if pa.types.is_map(table):
        return pa.types.is_map(stored) and readable_as(stored.key_type, table.key_type) \
            and readable_as(stored.item_type, table.item_type)
    if same_primitive_kind(stored, table):
        return True
    if pa.types.is_integer(stored):
        return bool(pa.types.is_floating(table) or pa.types.is_decimal(table))
    return bool(pa.types.is_date(stored) and pa.types.is_timestamp(table) and table.tz is None)


def type_changes(metadata: Metadata) -> Iterator[TypeChange]:
    """Every ``delta.typeChanges`` entry of the schema, at any depth (raw JSON: no full parse)."""
    try:
        root = json.loads(metadata.schema_string or "{}")
    except ValueError as exc:
        raise CorruptLogError(f"the table's schemaString is not JSON: {exc}") from exc
    yield from _walk(root, "")


def _walk(obj: Any, prefix: str) -> Iterator[TypeChange]:
    if isinstance(obj, list):
        for item in obj:
            yield from _walk(item, prefix)
        return
    if not isinstance(obj, dict):
        return
    name = obj.get("name")
    here = f"{prefix}.{name}" if prefix and isinstance(name, str) else (name if isinstance(name, str) else prefix)
    md = obj.get("metadata")
    if isinstance(name, str) and isinstance(md, dict) and TYPE_CHANGES_KEY in md:
        entries = md[TYPE_CHANGES_KEY]
        if not isinstance(entries, list):
            raise CorruptLogError(f"column {here!r}: {TYPE_CHANGES_KEY} must be a list, found {entries!r:.80}")
        for e in entries:
            if not isinstance(e, dict) or not isinstance(e.get("fromType"), str) \
                    or not isinstance(e.get("toType"), str):
                raise CorruptLogError(
                    f"column {here!r}: each {TYPE_CHANGES_KEY} entry needs string fromType and toType, "
                    f"found {e!r:.120}")
            fp = e.get("fieldPath")
            yield TypeChange(here, e["fromType"], e["toType"], fp if isinstance(fp, str) and fp else None)
    for key, value in obj.items():
        if key != "metadata":
            yield from _walk(value, here)


def unsupported_type_changes(metadata: Metadata) -> list[TypeChange]:
    """The recorded changes this library (like Delta Spark) cannot read or rewrite."""
    bad = []
    for change in type_changes(metadata):
        if _STRINGISH.match(change.from_type) and _STRINGISH.match(change.to_type):
            continue  # Delta Spark tolerates these: files hold strings either way
        try:
            from_type, to_type = parse_data_type(change.from_type), parse_data_type(change.to_type)
        except CorruptLogError:
            bad.append(change)
            continue
        if not (isinstance(from_type, PrimitiveType) and isinstance(to_type, PrimitiveType)
                and is_supported_widening(from_type, to_type)):
            bad.append(change)
    return bad


def check_type_changes(metadata: Metadata, *, path: str | None = None, version: int | None = None) -> None:
    """Raise ``UnsupportedWriterFeatureError`` when the schema records a type change that is not
    a supported widening: rewriting (or reading) such files would not give the table's values."""
    try:
        bad = unsupported_type_changes(metadata)
    except CorruptLogError as exc:
        raise UnsupportedWriterFeatureError(
            f"the table's type change history cannot be read ({exc}); rewrite it with Delta Spark",
            path=path, version=version) from None
    if bad:
        listed = ", ".join(f"{c.where}: {c.from_type} -> {c.to_type}" for c in bad[:5])
        raise UnsupportedWriterFeatureError(
            f"the table records type change(s) that are not supported widenings ({listed}); type "
            "widening allows byte->short->int->long, float->double, byte/short/int->double, "
            "date->timestamp_ntz and wider decimals only. Its old data files cannot be converted "
            "safely: rewrite the table with the engine that made the change (Delta Spark)",
            path=path, version=version)
