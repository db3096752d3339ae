"""The Delta table schema: parse, encode, convert to and from Arrow, and column mapping.

Implements PROTOCOL.md "Schema Serialization Format" (a subset of Spark SQL's JSON schema:
primitive types, ``struct``, ``array``, ``map``, ``variant``; field ``nullable`` and
``metadata``) and the naming side of "Column Mapping": every field may carry a physical name
(``delta.columnMapping.physicalName``) and an id (``delta.columnMapping.id``) in its metadata.
Data files, partition values and statistics use physical names when the table's column
mapping mode is ``id`` or ``name``; users and ``metaData.partitionColumns`` use logical names.

The records are frozen and hold no IO. A schemaString that cannot be parsed raises
``CorruptLogError`` (it comes from the log); an Arrow type with no Delta equivalent raises
``SchemaMismatchError`` (it comes from user data).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from delta_core.errors import CorruptLogError, SchemaMismatchError
from delta_core.model.arrow_kinds import is_binary_like, is_list_like, is_string_like

PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
FIELD_ID_KEY = "delta.columnMapping.id"
# Ids of array elements and map keys/values, on the nearest struct field above them, keyed by
# the physical path from that field ("col-a.element", "col-m.key", "col-m.value").
NESTED_IDS_KEY = "delta.columnMapping.nested.ids"
MAPPING_KEYS = (PHYSICAL_NAME_KEY, FIELD_ID_KEY, NESTED_IDS_KEY)
PARQUET_FIELD_ID = b"PARQUET:field_id"
# Arrow field metadata marking a variant column: Arrow sees a struct, statistics one leaf.
VARIANT_FIELD_KEY = b"delta.type"
VARIANT_FIELD_VALUE = b"variant"

# Canonical Delta names; a few aliases seen in the wild are accepted on read only.
PRIMITIVE_NAMES = frozenset({
    "string", "long", "integer", "short", "byte", "float", "double", "boolean", "binary",
    "date", "timestamp", "timestamp_ntz", "variant", "void",
})
_ALIASES = {"int": "integer", "bigint": "long", "smallint": "short", "tinyint": "byte",
            "bool": "boolean", "real": "float", "timestampntz": "timestamp_ntz"}
_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True, slots=True)
class PrimitiveType:
    """A primitive type by its Delta name; ``decimal`` carries precision and scale."""

    name: str
    precision: int | None = None
    scale: int | None = None

    def __post_init__(self) -> None:
        if self.name == "decimal":
            p, s = self.precision, self.scale
            if p is None or s is None or not (1 <= p <= MAX_DECIMAL_PRECISION) or not (0 <= s <= p):
                raise CorruptLogError(
                    f"decimal({p},{s}) is not a valid decimal type: precision must be 1..38 "
                    "and scale 0..precision"
                )
        elif self.name not in PRIMITIVE_NAMES:
            raise CorruptLogError(
                f"unknown primitive type {self.name!r}; known types are "
                f"{', '.join(sorted(PRIMITIVE_NAMES))} and decimal(p,s)"
            )

    @classmethod
    def decimal(cls, precision: int, scale: int) -> PrimitiveType:
        return cls("decimal", precision, scale)

    @property
    def type_name(self) -> str:
        """The name written in a schemaString, e.g. ``decimal(10,2)``."""
        return f"decimal({self.precision},{self.scale})" if self.name == "decimal" else self.name

    def to_json_value(self) -> Any:
        # a variant is spelled "variant", as Delta Spark writes it (the object form
        # {"type": "variant"}, also in the protocol's example, is read too)
        return self.type_name

    def __str__(self) -> str:
        return self.type_name


@dataclass(frozen=True, slots=True)
class ArrayType:
    element_type: DataType
    contains_null: bool = True

    def to_json_value(self) -> Any:
        return {"type": "array", "elementType": self.element_type.to_json_value(),
                "containsNull": self.contains_null}


@dataclass(frozen=True, slots=True)
class MapType:
    key_type: DataType
    value_type: DataType
    value_contains_null: bool = True

    def to_json_value(self) -> Any:
        return {"type": "map", "keyType": self.key_type.to_json_value(),
                "valueType": self.value_type.to_json_value(),
                "valueContainsNull": self.value_contains_null}


@dataclass(frozen=True, slots=True)
class StructField:
    name: str
    type: DataType
    nullable: bool = True
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def physical_name(self) -> str:
        """Name in data files, partition values and stats under column mapping (else ``name``)."""
        phys = self.metadata.get(PHYSICAL_NAME_KEY)
        return phys if isinstance(phys, str) and phys else self.name

    @property
    def field_id(self) -> int | None:
        """The column mapping id (``delta.columnMapping.id``), written as Parquet field_id."""
        fid = self.metadata.get(FIELD_ID_KEY)
        if fid is None:
            return None
        try:
            return int(fid)
        except (TypeError, ValueError):
            raise CorruptLogError(
                f"column {self.name!r} has a non-integer {FIELD_ID_KEY}={fid!r}; the schema is corrupt"
            ) from None

    def to_json_value(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type.to_json_value(), "nullable": self.nullable,
                "metadata": dict(self.metadata)}


@dataclass(frozen=True, slots=True)
class StructType:
    fields: tuple[StructField, ...] = ()

    def __post_init__(self) -> None:
        # The protocol requires unique names regardless of case; duplicates make every
        # by-name lookup (partition values, stats) ambiguous, so refuse them here.
        seen: dict[str, str] = {}
        for f in self.fields:
            low = f.name.lower()
            if low in seen:
                raise CorruptLogError(
                    f"schema has two columns named {seen[low]!r} and {f.name!r}; column names "
                    "must be unique regardless of case"
                )
            seen[low] = f.name

    # --- container protocol -------------------------------------------------------------
    def __iter__(self) -> Iterator[StructField]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, name: str) -> StructField:
        f = self.get(name)
        if f is None:
            raise KeyError(name)
        return f

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def get(self, name: str, *, case_sensitive: bool = True) -> StructField | None:
        for f in self.fields:
            if f.name == name or (not case_sensitive and f.name.lower() == name.lower()):
                return f
        return None

    def find(self, path: Sequence[str]) -> StructField:
        """The (possibly nested) field at logical ``path`` through structs; KeyError if absent."""
        current: StructType = self
        f: StructField | None = None
        for i, part in enumerate(path):
            if f is not None:
                if not isinstance(f.type, StructType):
                    raise KeyError(".".join(path))
                current = f.type
            f = current.get(part)
            if f is None:
                raise KeyError(".".join(path[: i + 1]))
        if f is None:
            raise KeyError("")
        return f

    # --- JSON ---------------------------------------------------------------------------
    def to_json_value(self) -> dict[str, Any]:
        return {"type": "struct", "fields": [f.to_json_value() for f in self.fields]}

    def to_json(self) -> str:
        """The single-line schemaString for a ``metaData`` action."""
        return json.dumps(self.to_json_value(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | None) -> StructType:
        """Parse a schemaString; anything malformed raises ``CorruptLogError``."""
        if not isinstance(text, str) or not text.strip():
            raise CorruptLogError(
                "metaData.schemaString is missing or empty; the table's metadata is corrupt - "
                "restore the log from a backup or re-create the table"
            )
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise CorruptLogError(
                f"metaData.schemaString is not valid JSON ({exc}); the table's metadata is "
                "corrupt - restore the log from a backup or re-create the table"
            ) from exc
        parsed = _parse_type(obj, "schema")
        if not isinstance(parsed, StructType):
            raise CorruptLogError(f"metaData.schemaString must be a struct type, found {obj!r:.80}")
        return parsed

    # --- column mapping -----------------------------------------------------------------
    def physical(self) -> StructType:
        """This schema with every field (nested too) renamed to its physical name."""
        return _rename_struct(self)

    def leaves(self) -> list[tuple[tuple[str, ...], StructField]]:
        """Leaf fields reached through structs only, with their logical paths, in order.

        Arrays, maps and variants count as leaves: statistics stop at them.
        """
        out: list[tuple[tuple[str, ...], StructField]] = []
        for f in self.fields:
            if isinstance(f.type, StructType):
                out.extend(((f.name, *p), leaf) for p, leaf in f.type.leaves())
            else:
                out.append(((f.name,), f))
        return out


DataType = PrimitiveType | ArrayType | MapType | StructType


def parse_data_type(obj: Any) -> DataType:
    """A Delta type from its schemaString form: a name (``"long"``, ``"decimal(10,2)"``) or an object."""
    return _parse_type(obj, "type")


def _bool(obj: Mapping[str, Any], key: str, default: bool, where: str) -> bool:
    v = obj.get(key, default)
    if not isinstance(v, bool):
        raise CorruptLogError(f"{where}: {key!r} must be true or false, found {v!r}")
    return v


def _parse_type(obj: Any, where: str) -> DataType:
    if isinstance(obj, str):
        name = obj.strip().lower()
        name = _ALIASES.get(name, name)
        m = _DECIMAL.match(name)
        if m:
            return PrimitiveType.decimal(int(m[1]), int(m[2]))
        if name == "decimal":  # Spark's default decimal
            return PrimitiveType.decimal(10, 0)
        try:
            return PrimitiveType(name)
        except CorruptLogError as exc:
            raise CorruptLogError(f"{where}: {exc}") from None
    if not isinstance(obj, Mapping):
        raise CorruptLogError(f"{where}: a type must be a name or an object, found {obj!r:.80}")
    kind = obj.get("type")
    if kind == "struct":
        raw_fields = obj.get("fields")
        if not isinstance(raw_fields, list):
            raise CorruptLogError(f"{where}: struct type needs a 'fields' list")
        return StructType(tuple(_parse_field(f, where) for f in raw_fields))
    if kind == "array":
        if "elementType" not in obj:
            raise CorruptLogError(f"{where}: array type needs 'elementType'")
        return ArrayType(_parse_type(obj["elementType"], f"{where}.element"),
                         _bool(obj, "containsNull", True, where))
    if kind == "map":
        if "keyType" not in obj or "valueType" not in obj:
            raise CorruptLogError(f"{where}: map type needs 'keyType' and 'valueType'")
        return MapType(_parse_type(obj["keyType"], f"{where}.key"),
                       _parse_type(obj["valueType"], f"{where}.value"),
                       _bool(obj, "valueContainsNull", True, where))
    if kind == "variant":
        return PrimitiveType("variant")
    raise CorruptLogError(f"{where}: unknown type {kind!r}")


def _parse_field(obj: Any, where: str) -> StructField:
    if not isinstance(obj, Mapping):
        raise CorruptLogError(f"{where}: a struct field must be an object, found {obj!r:.80}")
    name = obj.get("name")
    if not isinstance(name, str):
        raise CorruptLogError(f"{where}: a struct field lacks a string 'name'")
    if "type" not in obj:
        raise CorruptLogError(f"{where}.{name}: field lacks 'type'")
    metadata = obj.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise CorruptLogError(f"{where}.{name}: field metadata must be an object")
    return StructField(name, _parse_type(obj["type"], f"{where}.{name}"),
                       _bool(obj, "nullable", True, f"{where}.{name}"), dict(metadata))


def contains_type(t: DataType, predicate: Callable[[DataType], bool]) -> bool:
    """Whether ``t`` or any type nested in it (array elements, map keys and values, struct
    fields, at any depth) satisfies ``predicate``."""
    if predicate(t):
        return True
    if isinstance(t, ArrayType):
        return contains_type(t.element_type, predicate)
    if isinstance(t, MapType):
        return contains_type(t.key_type, predicate) or contains_type(t.value_type, predicate)
    if isinstance(t, StructType):
        return any(contains_type(f.type, predicate) for f in t.fields)
    return False


def map_fields(t: DataType, fn: Callable[[StructField], StructField]) -> DataType:
    """``t`` with ``fn`` applied to every struct field at any depth (through structs, arrays and
    maps), to a field before the fields nested in its type."""
    if isinstance(t, StructType):
        out = []
        for f in t.fields:
            g = fn(f)
            out.append(replace(g, type=map_fields(g.type, fn)))
        return StructType(tuple(out))
    if isinstance(t, ArrayType):
        return replace(t, element_type=map_fields(t.element_type, fn))
    if isinstance(t, MapType):
        return replace(t, key_type=map_fields(t.key_type, fn), value_type=map_fields(t.value_type, fn))
    return t


def _rename_struct(s: StructType) -> StructType:
    return map_fields(s, lambda f: replace(f, name=f.physical_name))  # type: ignore[return-value]


# --- logical <-> physical names ------------------------------------------------------------


def to_physical_path(schema: StructType, path: Sequence[str]) -> tuple[str, ...]:
    """Map a logical path through structs to physical names (KeyError if absent)."""
    out: list[str] = []
    current: DataType = schema
    for part in path:
        if not isinstance(current, StructType):
            raise KeyError(".".join(path))
        f = current.get(part)
        if f is None:
            raise KeyError(".".join(path))
        out.append(f.physical_name)
        current = f.type
    return tuple(out)


def to_logical_path(schema: StructType, path: Sequence[str]) -> tuple[str, ...]:
    """Map a physical path through structs back to logical names (KeyError if absent)."""
    out: list[str] = []
    current: DataType = schema
    for part in path:
        if not isinstance(current, StructType):
            raise KeyError(".".join(path))
        match = next((f for f in current.fields if f.physical_name == part), None)
        if match is None:
            raise KeyError(".".join(path))
        out.append(match.name)
        current = match.type
    return tuple(out)


def physical_name_map(schema: StructType) -> dict[str, str]:
    """Top-level logical name -> physical name (identity without column mapping metadata)."""
    return {f.name: f.physical_name for f in schema.fields}


# --- Arrow ---------------------------------------------------------------------------------

_TO_ARROW: dict[str, pa.DataType] = {
    "string": pa.string(), "long": pa.int64(), "integer": pa.int32(), "short": pa.int16(),
    "byte": pa.int8(), "float": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(),
    "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"), "void": pa.null(),
    # Unshredded variant as stored in Parquet (PROTOCOL.md "Variant data in Parquet").
    "variant": pa.struct([pa.field("value", pa.binary(), nullable=False),
                          pa.field("metadata", pa.binary(), nullable=False)]),
}


def primitive_to_arrow(t: PrimitiveType) -> pa.DataType:
    if t.name == "decimal":
        return pa.decimal128(t.precision, t.scale)
    return _TO_ARROW[t.name]


def type_to_arrow(t: DataType, *, physical: bool = False) -> pa.DataType:
    if isinstance(t, PrimitiveType):
        return primitive_to_arrow(t)
    if isinstance(t, ArrayType):
        # "element" matches what Parquet writers (Spark, pyarrow) use for 3-level lists.
        return pa.list_(pa.field("element", type_to_arrow(t.element_type, physical=physical),
                                 nullable=t.contains_null, metadata=_variant_marker(t.element_type)))
    if isinstance(t, MapType):
        return pa.map_(pa.field("key", type_to_arrow(t.key_type, physical=physical), nullable=False),
                       pa.field("value", type_to_arrow(t.value_type, physical=physical),
                                nullable=t.value_contains_null, metadata=_variant_marker(t.value_type)))
    return pa.struct([field_to_arrow(f, physical=physical) for f in t.fields])


def field_to_arrow(f: StructField, *, physical: bool = False) -> pa.Field:
    metadata = _variant_marker(f.type) or {}
    if physical and f.field_id is not None:
        # Parquet field ids let id-mode readers resolve columns (PROTOCOL.md "Column Mapping").
        metadata[PARQUET_FIELD_ID] = str(f.field_id).encode()
    name = f.physical_name if physical else f.name
    typ = type_to_arrow(f.type, physical=physical)
    nested = f.metadata.get(NESTED_IDS_KEY)
    if physical and isinstance(nested, Mapping) and nested:
        typ = _with_nested_ids(typ, name, nested)
    return pa.field(name, typ, nullable=f.nullable, metadata=metadata or None)


def _variant_marker(t: DataType) -> dict[bytes, bytes] | None:
    """The Arrow field metadata of a field of type ``t``: the variant marker, or None."""
    return {VARIANT_FIELD_KEY: VARIANT_FIELD_VALUE} if isinstance(t, PrimitiveType) and t.name == "variant" else None


def is_variant_field(f: pa.Field) -> bool:
    """Whether Arrow field ``f`` (from ``field_to_arrow``) is a variant column."""
    return bool(f.metadata) and f.metadata.get(VARIANT_FIELD_KEY) == VARIANT_FIELD_VALUE


def _with_nested_ids(t: pa.DataType, path: str, ids: Mapping[str, Any]) -> pa.DataType:
    """``t`` with the ``delta.columnMapping.nested.ids`` of its array elements and map keys and
    values as Parquet field ids; structs below carry their own ids in their fields' metadata."""

    def child(f: pa.Field, suffix: str) -> pa.Field:
        sub = f"{path}.{suffix}"
        f = f.with_type(_with_nested_ids(f.type, sub, ids))
        fid = ids.get(sub)
        if isinstance(fid, int) and not isinstance(fid, bool):
            f = f.with_metadata({**(f.metadata or {}), PARQUET_FIELD_ID: str(fid).encode()})
        return f

    if pa.types.is_list(t):
        return pa.list_(child(t.value_field, "element"))
    if pa.types.is_map(t):
        return pa.map_(child(t.key_field, "key"), child(t.item_field, "value"))
    return t


def without_column_mapping(struct: StructType) -> StructType:
    """``struct`` without column mapping metadata at any depth: in mode ``none`` a reader and a
    writer use logical names, whatever physical names or ids another writer left behind."""
    def strip(f: StructField) -> StructField:
        if not any(k in f.metadata for k in MAPPING_KEYS):
            return f
        return replace(f, metadata={k: v for k, v in f.metadata.items() if k not in MAPPING_KEYS})

    return map_fields(struct, strip)  # type: ignore[return-value]


def schema_to_arrow(struct: StructType, *, physical: bool = False) -> pa.Schema:
    """Arrow schema with logical names, or physical names and field ids when ``physical``."""
    return pa.schema([field_to_arrow(f, physical=physical) for f in struct.fields])


def type_from_arrow(t: pa.DataType, *, where: str = "column") -> DataType:
    """The Delta type for an Arrow type; ``SchemaMismatchError`` if Delta has none."""
    if pa.types.is_dictionary(t):
        return type_from_arrow(t.value_type, where=where)
    if isinstance(t, pa.ExtensionType):
        return type_from_arrow(t.storage_type, where=where)
    simple = [
        (pa.types.is_boolean, "boolean"), (pa.types.is_int8, "byte"), (pa.types.is_int16, "short"),
        (pa.types.is_int32, "integer"), (pa.types.is_int64, "long"),
        # unsigned widen to the next signed type that holds every value
        (pa.types.is_uint8, "short"), (pa.types.is_uint16, "integer"), (pa.types.is_uint32, "long"),
        (pa.types.is_float16, "float"), (pa.types.is_float32, "float"), (pa.types.is_float64, "double"),
        (is_string_like, "string"), (is_binary_like, "binary"),
        (pa.types.is_date32, "date"), (pa.types.is_date64, "date"),
    ]
    for pred, name in simple:
        if pred(t):
            return PrimitiveType(name)
    if pa.types.is_timestamp(t):
        return PrimitiveType("timestamp" if t.tz is not None else "timestamp_ntz")
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise SchemaMismatchError(
                f"{where}: {t} has precision {t.precision}; Delta decimals allow at most 38 digits - "
                "cast the column to a narrower decimal"
            )
        return PrimitiveType.decimal(t.precision, t.scale)
    if is_list_like(t):
        vf = t.value_field
        return ArrayType(type_from_arrow(vf.type, where=f"{where}.element"), vf.nullable)
    if pa.types.is_map(t):
        return MapType(type_from_arrow(t.key_type, where=f"{where}.key"),
                       type_from_arrow(t.item_type, where=f"{where}.value"), t.item_field.nullable)
    if pa.types.is_struct(t):
        return StructType(tuple(_field_from_arrow(t.field(i), where) for i in range(t.num_fields)))
    raise SchemaMismatchError(
        f"{where}: Arrow type {t} has no Delta equivalent; cast it to a supported type "
        "(string, integers, float/double, decimal, boolean, binary, date, timestamp, list, map, struct)"
    )


def _field_from_arrow(f: pa.Field, where: str) -> StructField:
    return StructField(f.name, type_from_arrow(f.type, where=f"{where}.{f.name}"), f.nullable, {})


def schema_from_arrow(schema: pa.Schema) -> StructType:
    """The Delta schema (logical names, no metadata) for an Arrow schema."""
    return StructType(tuple(StructField(f.name, type_from_arrow(f.type, where=f.name), f.nullable, {})
                            for f in schema))
