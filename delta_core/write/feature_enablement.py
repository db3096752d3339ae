"""Table properties that turn a table feature on, and the protocol they need
(PROTOCOL.md "Table Features", "Table Features for New and Existing Tables", "Supported
Features", "Writer Version Requirements", "CHECK Constraints", "In-Commit Timestamps").

A property such as ``delta.enableDeletionVectors=true`` only means something to other engines
when the table's protocol supports the feature. Like Delta Spark, every command that sets
properties (``create_table``, ``set_properties``, and any later one) asks ``protocol_for`` for the
protocol the new configuration needs and commits it in the same commit:

- a legacy protocol (writer 2-6) stays legacy when legacy versions cover every needed feature
  (``delta.enableChangeDataFeed`` -> writer 4, ``delta.constraints.*`` -> writer 3);
- otherwise it becomes a table-features protocol (writer 7, and reader 3 when a reader feature
  is needed) listing the features its legacy versions implied, as "Table Features for New and
  Existing Tables" requires, plus the new ones.

A property whose feature this library cannot write (row tracking, type widening, Iceberg
compatibility, variant shredding) or a ``delta.*`` property it does not know is refused with a
``ConfigError`` before anything is written: setting it would tell other engines nothing, or
promise what our writes do not keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from delta_core.errors import ConfigError
from delta_core.log.history import ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION
from delta_core.model.actions import Action, Metadata, Protocol
from delta_core.model.table_features import (
    ROW_CONSTRAINT_FEATURES,
    SUPPORTED_WRITER_FEATURES,
    reader_features,
    writer_features,
)
from delta_core.model.table_properties import (
    ENABLE_IN_COMMIT_TIMESTAMPS,
    WRITE_PARTITION_COLUMNS_TO_PARQUET,
    parse_bool,
)
from delta_core.write.constraints import CONSTRAINT_PREFIX

CHECKPOINT_POLICY = "delta.checkpointPolicy"

# Features that readers must also support (listed in readerFeatures and writerFeatures).
READER_WRITER_FEATURES = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "variantShredding", "catalogManaged",
})

# The legacy (reader, writer) versions that support a feature, for features that have one.
LEGACY_VERSIONS: Mapping[str, tuple[int, int]] = {
    "appendOnly": (1, 2), "invariants": (1, 2), "checkConstraints": (1, 3),
    "changeDataFeed": (1, 4), "generatedColumns": (1, 4), "columnMapping": (2, 5),
    "identityColumns": (1, 6),
}

# Features a property may turn on here: those the write gate supports always (in-commit
# timestamps among them, written by ``transaction``), and row constraints: new rows are refused
# on such tables (``constraints``), which keeps the feature's promise. We write row tracking and
# type widening tables, but do not turn them on: enabling row tracking needs a backfill of
# ``baseRowId`` on every live file first (PROTOCOL.md "Row Tracking"), and we change no column's
# type, which is all enabling type widening would allow.
_ENABLEABLE = (SUPPORTED_WRITER_FEATURES | ROW_CONSTRAINT_FEATURES) - {
    "rowTracking", "typeWidening", "typeWidening-preview"}


def _when_true(*features: str) -> Callable[[str, str], tuple[str, ...]]:
    def needs(key: str, value: str) -> tuple[str, ...]:
        return features if parse_bool(value, key=key) else ()
    return needs


def _checkpoint_policy(key: str, value: str) -> tuple[str, ...]:
    policy = value.strip().lower()
    if policy not in ("classic", "v2"):
        raise ConfigError(f"{key}={value!r} must be 'classic' or 'v2'")
    return ("v2Checkpoint",) if policy == "v2" else ()


@dataclass(frozen=True, slots=True)
class PropertyRule:
    """What setting ``key`` needs: ``features(key, value)`` names the table features it turns on."""

    key: str
    features: Callable[[str, str], tuple[str, ...]]


# The one table of feature-enabling properties (Delta Spark's DeltaConfigs).
FEATURE_PROPERTIES: Mapping[str, PropertyRule] = {r.key: r for r in (
    PropertyRule("delta.enableDeletionVectors", _when_true("deletionVectors")),
    PropertyRule("delta.enableRowTracking", _when_true("rowTracking", "domainMetadata")),
    PropertyRule("delta.enableChangeDataFeed", _when_true("changeDataFeed")),
    PropertyRule("delta.appendOnly", _when_true("appendOnly")),
    PropertyRule(CHECKPOINT_POLICY, _checkpoint_policy),
    PropertyRule("delta.enableTypeWidening", _when_true("typeWidening")),
    PropertyRule(ENABLE_IN_COMMIT_TIMESTAMPS, _when_true("inCommitTimestamp")),
    PropertyRule("delta.enableIcebergCompatV1", _when_true("icebergCompatV1")),
    PropertyRule("delta.enableIcebergCompatV2", _when_true("icebergCompatV2")),
    PropertyRule("delta.enableVariantShredding", _when_true("variantShredding")),
    PropertyRule("delta.enableMaterializePartitionColumnsFeature", _when_true("materializePartitionColumns")),
)}

# delta.* properties that need no table feature (their values are parsed by TableProperties or
# only tune writers). Any other delta.* key is refused: we cannot know what it needs.
PLAIN_PROPERTIES = frozenset({
    "delta.checkpointInterval", "delta.checkpoint.writeStatsAsJson", "delta.checkpoint.writeStatsAsStruct",
    "delta.checkpointRetentionDuration", "delta.deletedFileRetentionDuration", "delta.logRetentionDuration",
    "delta.setTransactionRetentionDuration", "delta.targetFileSize", "delta.tuneFileSizesForRewrites",
    "delta.dataSkippingNumIndexedCols", "delta.dataSkippingStatsColumns", "delta.enableExpiredLogCleanup",
    "delta.randomizeFilePrefixes", "delta.randomPrefixLength", "delta.isolationLevel",
    "delta.compatibility.symlinkFormatManifest.enabled", "delta.autoOptimize.autoCompact",
    WRITE_PARTITION_COLUMNS_TO_PARQUET,
    "delta.autoOptimize.optimizeWrite", "delta.parquet.compression.codec", "delta.parquet.format.version",
    # column mapping is decided by create_table from the schema (set_properties refuses a change)
    "delta.columnMapping.mode", "delta.columnMapping.maxColumnId",
})

# Written by the library itself when in-commit timestamps are turned on; never by a caller.
_MANAGED_PROPERTIES = frozenset({ICT_ENABLEMENT_VERSION, ICT_ENABLEMENT_TIMESTAMP})


def required_features(changed: Mapping[str, str], *, path: str | None = None,
                      version: int | None = None) -> set[str]:
    """Table features the ``changed`` properties turn on; ``ConfigError`` for a property this
    library cannot honour (unknown ``delta.*`` key, or a feature it cannot write)."""
    needed: set[str] = set()
    for key, value in changed.items():
        if key.startswith(CONSTRAINT_PREFIX):
            needed.add("checkConstraints")
            continue
        rule = FEATURE_PROPERTIES.get(key)
        if rule is not None:
            try:
                needed.update(rule.features(key, str(value)))
            except ConfigError as exc:
                raise ConfigError(str(exc), path=path, version=version) from None
            continue
        if key in _MANAGED_PROPERTIES:
            raise ConfigError(
                f"{key} records when in-commit timestamps were turned on and is set by the writer "
                "that turns them on; do not set it, set delta.enableInCommitTimestamps=true instead",
                path=path, version=version)
        if key.startswith("delta.") and key not in PLAIN_PROPERTIES:
            raise ConfigError(
                f"{key} is not a Delta table property this library knows, so it cannot tell which "
                "protocol features it needs; set it with Delta Spark, or drop it (user properties "
                "must not start with 'delta.')", path=path, version=version)
    refused = sorted(f for f in needed if f not in _ENABLEABLE)
    if refused:
        keys = sorted(k for k, v in changed.items() if k in FEATURE_PROPERTIES
                      and set(FEATURE_PROPERTIES[k].features(k, str(v))) & set(refused))
        raise ConfigError(
            f"{', '.join(keys)} would turn on table feature(s) {', '.join(refused)}, whose writer "
            "rules this library does not implement; enable them with Delta Spark (ALTER TABLE ... "
            "SET TBLPROPERTIES), which also upgrades the protocol", path=path, version=version)
    return needed


def upgrade_protocol(protocol: Protocol, features: set[str]) -> Protocol:
    """``protocol`` extended to support ``features`` (unchanged when it already does).

    Stays legacy when legacy versions cover every feature; otherwise converts to table features,
    listing every feature the legacy versions implied (PROTOCOL.md "Table Features for New and
    Existing Tables": a converted table must assume they were used).
    """
    have_r, have_w = reader_features(protocol), writer_features(protocol)
    missing = {f for f in features if f not in have_w and f not in have_r}
    if not missing:
        return protocol
    legacy = protocol.min_writer_version < 7
    if legacy and all(f in LEGACY_VERSIONS for f in missing):
        reader = max([protocol.min_reader_version] + [LEGACY_VERSIONS[f][0] for f in missing])
        writer = max([protocol.min_writer_version] + [LEGACY_VERSIONS[f][1] for f in missing])
        return Protocol(reader, writer, extra=protocol.extra)
    writers = set(have_w) | set(have_r) | missing
    readers = set(have_r) | {f for f in missing if f in READER_WRITER_FEATURES}
    if readers - set(have_r) or protocol.min_reader_version >= 3:
        return Protocol(3, 7, tuple(sorted(readers)), tuple(sorted(writers)), extra=protocol.extra)
    # Reader 1 or 2 keeps its version: writer features alone may be listed ("It is illegal to
    # support reader but not writer features" only forbids the reverse).
    return Protocol(protocol.min_reader_version, 7, None, tuple(sorted(writers)), extra=protocol.extra)


def protocol_for(protocol: Protocol, old: Mapping[str, str], new: Mapping[str, str], *,
                 path: str | None = None, version: int | None = None) -> Protocol:
    """The protocol a table with ``protocol`` and configuration ``old`` needs after it becomes
    ``new``: only the properties that change are judged (a table another engine wrote may hold
    properties we would not set ourselves)."""
    changed = {k: v for k, v in new.items() if old.get(k) != v}
    return upgrade_protocol(protocol, required_features(changed, path=path, version=version))


def stamp_ict_enablement(actions: Sequence[Action], old: Mapping[str, str], *, version: int,
                         ict: int) -> list[Action]:
    """``actions`` with the staged ``metaData`` recording where in-commit timestamps start, when
    this commit turns them on for a table with history (``old``: the configuration before).

    PROTOCOL.md "In-Commit Timestamps", writer rule 4: the enablement version is this commit's
    version and the enablement timestamp its ``inCommitTimestamp``.
    """
    def on(conf: Mapping[str, str]) -> bool:
        return str(conf.get(ENABLE_IN_COMMIT_TIMESTAMPS, "")).strip().lower() == "true"

    if on(old):
        return list(actions)
    out: list[Action] = []
    for a in actions:
        if isinstance(a, Metadata) and on(a.configuration):
            a = replace(a, configuration={**a.configuration, ICT_ENABLEMENT_VERSION: str(version),
                                          ICT_ENABLEMENT_TIMESTAMP: str(ict)})
        out.append(a)
    return out
