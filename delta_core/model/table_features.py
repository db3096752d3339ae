"""The protocol gate: which reader/writer versions and table features this library honours.

Implements PROTOCOL.md "Table Features", "Reader Version Requirements" and "Writer Version
Requirements". Legacy protocols (reader 1-2, writer 2-6) imply features by version; reader 3
and writer 7 list them in ``readerFeatures`` / ``writerFeatures``.

Reading the log needs every reader feature to be understood. Writing needs every reader
feature plus every writer feature, and "honouring" a writer feature is judged strictly: a
feature is supported here only if every write this library makes (commits, checkpoints, log
cleanup, manifests, vacuum, compaction/z-order rewrites with ``dataChange=false``) obeys its
writer requirements. ``WRITER_FEATURES`` is the one table of them, each naming the module that
carries out its duties. Some features only constrain writes while *active* (e.g. CHECK
constraints exist, row tracking is not suspended); those are accepted while inactive, and
constraint-like features are also accepted for pure rewrites, which copy rows unchanged.
Catalog-managed tables (``catalogManaged``, ``catalogOwned-preview``) are refused for every
write: their commits must go through the catalog.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from delta_core.errors import UnsupportedProtocolError, UnsupportedWriterFeatureError
from delta_core.model.actions import Metadata, Protocol
from delta_core.model.type_widening import TYPE_WIDENING_FEATURES, check_type_changes

MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

SUPPORTED_READER_FEATURES: frozenset[str] = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "typeWidening-preview",
})

class Scope(enum.Enum):
    """When this library honours a writer feature."""

    ALWAYS = "always"  # every write obeys the feature's writer requirements
    ROW_CONSTRAINT = "row_constraint"  # honoured while inactive, and by rewrites copying rows
    INACTIVE_ONLY = "inactive_only"  # writer duties not implemented: honoured while inactive


@dataclass(frozen=True, slots=True)
class WriterFeature:
    """One row of the table of writer features this library honours."""

    name: str
    reader_writer: bool  # also a reader feature (PROTOCOL.md "Table Features")
    scope: Scope
    module: str | None  # where its writer duties are carried out; None: not implemented


# The one table of writer features. A feature enters with ``Scope.ALWAYS`` only when every
# writing command (commit, checkpoint, log cleanup, manifest, vacuum, compaction, z-order)
# honours it; anything absent from this table is refused by ``check_write_supported``.
WRITER_FEATURES: Mapping[str, WriterFeature] = {f.name: f for f in (
    # the transaction refuses removes with dataChange=true when delta.appendOnly
    WriterFeature("appendOnly", False, Scope.ALWAYS, "delta_core.write.transaction"),
    # our writes only add or remove whole files or rearrange rows (dataChange=false), for
    # which the protocol needs no cdc files
    WriterFeature("changeDataFeed", False, Scope.ALWAYS, "delta_core.write.transaction"),
    # data files and stats use physical names; rewrites keep them; manifests refuse
    WriterFeature("columnMapping", True, Scope.ALWAYS, "delta_core.write.data_writer"),
    # rewrites apply DVs (deleted rows dropped, removes keep the descriptor); we never write
    # new DVs; manifests refuse
    WriterFeature("deletionVectors", True, Scope.ALWAYS, "delta_core.maintenance.data_io"),
    # timestamp and timestamp_ntz are kept apart in data files, stats and partition values
    WriterFeature("timestampNtz", True, Scope.ALWAYS, "delta_core.write.data_writer"),
    # vacuum runs this gate (reader features included) before listing anything
    WriterFeature("vacuumProtocolCheck", True, Scope.ALWAYS, "delta_core.maintenance.spark.vacuum"),
    # commits keep every domain they do not change (only cluster-by writes one, the
    # delta.clustering domain it understands); checkpoints keep the live ones
    WriterFeature("domainMetadata", False, Scope.ALWAYS, "delta_core.write.checkpoint_write"),
    # checkpoint writers must not write multi-part checkpoints then
    WriterFeature("v2Checkpoint", True, Scope.ALWAYS, "delta_core.write.checkpoint_write"),
    # commitInfo first with a strictly increasing inCommitTimestamp; log cleanup keeps the
    # commit at the kept checkpoint; the other commands commit through the transaction
    WriterFeature("inCommitTimestamp", False, Scope.ALWAYS, "delta_core.write.transaction"),
    # protected checkpoints are never deleted, history of unsupported protocols is cleaned
    # only in one go, no checkpoint of an unsupported protocol below the protected version
    WriterFeature("checkpointProtection", False, Scope.ALWAYS,
                  "delta_core.write.checkpoint_protection"),
    WriterFeature("invariants", False, Scope.ROW_CONSTRAINT, None),
    WriterFeature("checkConstraints", False, Scope.ROW_CONSTRAINT, None),
    WriterFeature("generatedColumns", False, Scope.ROW_CONSTRAINT, None),
    WriterFeature("identityColumns", False, Scope.ROW_CONSTRAINT, None),
    WriterFeature("allowColumnDefaults", False, Scope.ROW_CONSTRAINT, None),
    # every commit assigns baseRowId/defaultRowCommitVersion above the high-water mark and raises
    # it (re-assigned on each retry); rewrites of enabled tables keep stable ids in the
    # materialized columns
    WriterFeature("rowTracking", False, Scope.ALWAYS, "delta_core.write.row_tracking"),
    # we change no column's type; rewrites write the table's current type (data_io casts the
    # narrower types old files hold); recorded changes that are not supported widenings are
    # refused by this gate; the preview feature is treated alike, as Delta Spark does
    WriterFeature("typeWidening", True, Scope.ALWAYS, "delta_core.model.type_widening"),
    WriterFeature("typeWidening-preview", True, Scope.ALWAYS, "delta_core.model.type_widening"),
    # cluster-by keeps the columns in the delta.clustering domain and refuses partitioned
    # tables and columns without stats; set_properties refuses dropping their stats; every
    # data file we write has stats; clustering tags files clusteringProvider=liquid and
    # reclusters only liquid or unclustered files (all with --full, as OPTIMIZE FULL)
    WriterFeature("clustering", False, Scope.ALWAYS, "delta_core.maintenance.spark.cluster"),
    # every new data file (rewrites and appends) holds the partition columns, after the data
    # columns as Delta Spark writes them, physical names, no stats
    WriterFeature("materializePartitionColumns", False, Scope.ALWAYS,
                  "delta_core.write.materialized_partitions"),
    # no command changes a schema's collations (__COLLATIONS metadata); new files get UTF-8 binary
    # stats, which the RFC allows, and never statsWithCollation (stats are collected afresh per
    # file: rewrites and analyze drop the inputs' ones); files re-added unchanged keep theirs
    WriterFeature("collations", False, Scope.ALWAYS, "delta_core.model.stats_collect"),
    WriterFeature("collations-preview", False, Scope.ALWAYS, "delta_core.model.stats_collect"),
)}

SUPPORTED_WRITER_FEATURES: frozenset[str] = frozenset(
    n for n, f in WRITER_FEATURES.items() if f.scope is Scope.ALWAYS)
ROW_CONSTRAINT_FEATURES: frozenset[str] = frozenset(
    n for n, f in WRITER_FEATURES.items() if f.scope is Scope.ROW_CONSTRAINT)

# Catalog-managed tables: the catalog commits on the client's behalf (PROTOCOL.md
# "Catalog-managed tables"), so a write through the storage path would bypass it.
CATALOG_MANAGED_FEATURES: frozenset[str] = frozenset({"catalogManaged", "catalogOwned-preview"})


# Features implied by legacy protocol versions (each version inherits the ones before).
_LEGACY_READER = {2: ("columnMapping",)}
_LEGACY_WRITER = {
    2: ("appendOnly", "invariants"),
    3: ("checkConstraints",),
    4: ("changeDataFeed", "generatedColumns"),
    5: ("columnMapping",),
    6: ("identityColumns",),
}

_FEATURE_HINTS = {
    "catalogManaged": "the table is managed by a catalog; read and write it through that "
                      "catalog's client instead of the storage path (commits must go through the catalog)",
    "catalogOwned-preview": "the table is managed by a catalog; read and write it through that "
                            "catalog's client instead of the storage path (commits must go through "
                            "the catalog)",
    "variantType": "the table has variant columns, which this library does not read",
    "variantType-preview": "the table has variant columns, which this library does not read",
    "variantShredding": "the table stores shredded variant data, which this library does not read",
    "variantShredding-preview": "the table stores shredded variant data, which this library does not read",
}


def reader_features(protocol: Protocol) -> frozenset[str]:
    """Reader features in effect: listed (reader 3) or implied by a legacy reader version."""
    if protocol.min_reader_version >= 3:
        return frozenset(protocol.reader_features or ())
    implied: set[str] = set()
    for v, names in _LEGACY_READER.items():
        if protocol.min_reader_version >= v:
            implied.update(names)
    return frozenset(implied)


def writer_features(protocol: Protocol) -> frozenset[str]:
    """Writer features in effect: listed (writer 7) or implied by a legacy writer version."""
    if protocol.min_writer_version >= 7:
        return frozenset(protocol.writer_features or ())
    implied: set[str] = set()
    for v, names in _LEGACY_WRITER.items():
        if protocol.min_writer_version >= v:
            implied.update(names)
    return frozenset(implied)


def has_feature(protocol: Protocol, name: str) -> bool:
    """Whether ``name`` is supported by the table (listed, or implied by its versions)."""
    return name in reader_features(protocol) or name in writer_features(protocol)


def column_mapping_mode(protocol: Protocol, configuration: Mapping[str, str]) -> str:
    """``none``, ``id`` or ``name``; the property counts only when the protocol supports the feature."""
    if "columnMapping" not in reader_features(protocol) and "columnMapping" not in writer_features(protocol):
        return "none"
    mode = (configuration.get("delta.columnMapping.mode") or "none").strip().lower()
    if mode not in ("none", "id", "name"):
        raise UnsupportedProtocolError(
            f"delta.columnMapping.mode={mode!r} is not a column mapping mode this library knows "
            "(none, id, name); upgrade delta_core or fix the table property"
        )
    return mode


def check_read_supported(protocol: Protocol, *, path: str | None = None,
                         version: int | None = None) -> None:
    """Raise ``UnsupportedProtocolError`` unless every reader requirement is understood."""
    if protocol.min_reader_version > MAX_READER_VERSION or protocol.min_reader_version < 1:
        raise UnsupportedProtocolError(
            f"table needs reader version {protocol.min_reader_version}; this library reads "
            f"versions 1 to {MAX_READER_VERSION}. Use a newer Delta reader for this table",
            path=path, version=version,
        )
    unknown = sorted(reader_features(protocol) - SUPPORTED_READER_FEATURES)
    if unknown:
        raise UnsupportedProtocolError(_feature_message("reader", unknown, "read"),
                                       path=path, version=version)


def check_write_supported(protocol: Protocol, metadata: Metadata, *, rewrite_only: bool = False,
                          path: str | None = None, version: int | None = None) -> None:
    """The protocol gate of every write: raise ``UnsupportedWriterFeatureError`` unless this
    library can write the table safely. Writing commands call it before touching anything.

    Reader requirements are checked too (vacuum's ``vacuumProtocolCheck`` asks for that).
    ``rewrite_only`` declares that the write only rearranges existing rows
    (``dataChange=false``), which honours row constraints trivially.
    """
    catalog = sorted(CATALOG_MANAGED_FEATURES & (writer_features(protocol) | reader_features(protocol)))
    if catalog:
        raise UnsupportedWriterFeatureError(
            f"table is catalog-managed ({', '.join(catalog)}): commits must go through the catalog, "
            "so this library refuses every write through the storage path; write it with that "
            "catalog's Delta client", path=path, version=version)
    try:
        check_read_supported(protocol, path=path, version=version)
    except UnsupportedProtocolError as exc:
        raise UnsupportedWriterFeatureError(str(exc), path=path, version=version) from None
    if protocol.min_writer_version > MAX_WRITER_VERSION or protocol.min_writer_version < 1:
        raise UnsupportedWriterFeatureError(
            f"table needs writer version {protocol.min_writer_version}; this library writes "
            f"versions up to {MAX_WRITER_VERSION}. Write to this table with a newer Delta writer",
            path=path, version=version,
        )
    refused: list[str] = []
    reasons: list[str] = []
    for name in sorted(writer_features(protocol) | reader_features(protocol)):
        feature = WRITER_FEATURES.get(name)
        if feature is None:
            refused.append(name)
            continue
        if feature.scope is Scope.ALWAYS or (feature.scope is Scope.ROW_CONSTRAINT and rewrite_only):
            continue
        why = _active_reason(name, metadata)
        if why is not None:
            reasons.append(f"{name} ({why})")
    if refused or reasons:
        parts = refused + reasons
        raise UnsupportedWriterFeatureError(_feature_message("writer", parts, "write"),
                                            path=path, version=version)
    if TYPE_WIDENING_FEATURES & (writer_features(protocol) | reader_features(protocol)):
        check_type_changes(metadata, path=path, version=version)


def _feature_message(side: str, names: list[str], verb: str) -> str:
    hints = [f"{n}: {_FEATURE_HINTS[n]}" for n in names if n in _FEATURE_HINTS]
    msg = (f"table requires {side} feature(s) {', '.join(names)} that this library cannot {verb} "
           f"safely; use a Delta engine that supports them (e.g. Delta Spark) for this table")
    if verb == "write":
        msg += ", or disable the feature's table property where the protocol allows it"
    return msg + ("; " + "; ".join(hints) if hints else "")


def _schema_metadata_keys(metadata: Metadata) -> set[str]:
    """All column-metadata keys in the schema (nested fields included), without full parsing."""
    keys: set[str] = set()

    def walk(obj: Any) -> None:
        if isinstance(obj, dict):
            md = obj.get("metadata")
            if isinstance(md, dict) and "name" in obj:
                keys.update(md)
            for v in obj.values():
                walk(v)
        elif isinstance(obj, list):
            for v in obj:
                walk(v)

    try:
        walk(json.loads(metadata.schema_string or "{}"))
    except ValueError:
        # an unreadable schema cannot prove a feature inactive
        keys.add("<unreadable schema>")
    return keys


def _active_reason(name: str, metadata: Metadata) -> str | None:
    """Why ``name`` is active on this table (so its writer duties apply), or None if inactive."""
    conf = metadata.configuration or {}
    keys = _schema_metadata_keys(metadata)
    unreadable = "<unreadable schema>" in keys
    if name == "invariants":
        return "a column has delta.invariants" if "delta.invariants" in keys or unreadable else None
    if name == "checkConstraints":
        found = sorted(k for k in conf if k.startswith("delta.constraints."))
        return f"CHECK constraint {found[0]} is set" if found else None
    if name == "generatedColumns":
        hit = "delta.generationExpression" in keys or unreadable
        return "a column has delta.generationExpression" if hit else None
    if name == "identityColumns":
        hit = any(k.startswith("delta.identity.") for k in keys) or unreadable
        return "the table has an identity column" if hit else None
    if name == "allowColumnDefaults":
        return "a column has a default value" if "CURRENT_DEFAULT" in keys or unreadable else None
    return "active"
