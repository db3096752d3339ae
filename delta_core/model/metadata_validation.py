"""Validation of a snapshot's ``metaData`` action (PROTOCOL.md "Change Metadata", "Schema
Serialization Format").

Run by every snapshot load (``snapshot._gate``), after the protocol and metadata presence
checks, so a table that one command refuses as corrupt is refused by all of them (describe,
checkpoint, log cleanup, maintenance, transactions) before anything is read further or
written. The checks are what a reader needs to make sense of the table: ``schemaString`` is a
parsable struct type, and every partition column names a top-level column of it that can
partition a table (not a variant: PROTOCOL.md "Variant Data Type").
"""

from __future__ import annotations

from delta_core.errors import CorruptLogError
from delta_core.model.actions import Metadata
from delta_core.model.schema import StructType
from delta_core.model.variant import not_comparable_reason, variant_columns

_REMEDY = "restore the log from a backup, or re-create the table"


def validate_metadata(metadata: Metadata, *, path: str, version: int) -> StructType:
    """The table schema of ``metadata``; a metadata no reader can use raises ``CorruptLogError``
    carrying ``path`` and ``version``."""
    where = f"the metaData action of version {version} of {path}"
    try:
        schema = StructType.from_json(metadata.schema_string)
    except CorruptLogError as exc:
        raise CorruptLogError(f"{where} is unusable: {exc}", path=path, version=version) from exc
    names = set(schema.field_names)
    unknown = [c for c in metadata.partition_columns if c not in names]
    if unknown:
        raise CorruptLogError(
            f"{where} partitions by {unknown}, which the schema does not have (columns: "
            f"{sorted(names)}); the metadata is corrupt: {_REMEDY}", path=path, version=version,
        )
    variants = variant_columns(schema, metadata.partition_columns)
    if variants:
        raise CorruptLogError(f"{where} is invalid: {not_comparable_reason(variants[0])}; {_REMEDY}",
                              path=path, version=version)
    return schema
