"""DROP FEATURE planning (pure): which table features can be dropped, what their pre-downgrade
steps change, what must hold before the protocol commit, and the protocol that commit writes.

Follows Delta Spark (delta-io/delta ``TableFeature.scala`` ``RemovableFeature``,
``PreDowngradeTableFeatureCommand.scala``, ``AlterTableDropFeatureDeltaCommand``,
``Protocol.removeFeature``/``normalized``), PROTOCOL.md "Table Features" and the
checkpoint-protection RFC (protocol_rfcs/checkpoint-protection.md). ``drop_feature`` runs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from delta_core.log.history import ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION
from delta_core.maintenance.drop_feature_errors import FeatureNotDroppableError, FeatureNotPresentError
from delta_core.maintenance.droppable_features import (
    CHECKPOINT_PROTECTION,
    DROPPABLE,
    ENABLE_TYPE_WIDENING,
    DroppableFeature,
)
from delta_core.model.actions import Action, Add, AddCDCFile, CheckpointMetadata, Metadata, Protocol, Remove, Sidecar
from delta_core.model.table_features import reader_features, writer_features
from delta_core.model.table_properties import (
    ENABLE_DELETION_VECTORS,
    ENABLE_IN_COMMIT_TIMESTAMPS,
    REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION,
    parse_bool,
)
from delta_core.model.type_widening import TYPE_CHANGES_KEY, TYPE_WIDENING_FEATURES, type_changes
from delta_core.write.feature_enablement import CHECKPOINT_POLICY, LEGACY_VERSIONS, READER_WRITER_FEATURES

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

def check_droppable(protocol: Protocol, name: str, *, truncate_history: bool, path: str | None = None,
                    version: int | None = None) -> DroppableFeature:
    """The feature to drop, or the typed error Delta Spark's command raises (nothing written)."""
    feature = DROPPABLE.get(name)
    listed = name in reader_features(protocol) or name in writer_features(protocol)
    if feature is None:
        known = ", ".join(DROPPABLE)
        why = "is a table property, not a feature; " if name.startswith("delta.") else ""
        raise FeatureNotDroppableError(
            f"{name!r} {why}cannot be dropped here{' although the table lists it' if listed else ''}: the "
            f"features this library drops are {known}; drop other features with Delta Spark (ALTER TABLE "
            "... DROP FEATURE)", path=path, version=version)
    if not listed:
        raise FeatureNotPresentError(
            f"the table's protocol does not list {name!r} (reader features: "
            f"{', '.join(sorted(reader_features(protocol))) or 'none'}; writer features: "
            f"{', '.join(sorted(writer_features(protocol))) or 'none'}); there is nothing to drop",
            path=path, version=version)
    if truncate_history and not feature.history_protection and name != CHECKPOINT_PROTECTION:
        raise FeatureNotDroppableError(
            f"{name} is a writer feature: dropping it needs no history truncation; run it without "
            "--truncate-history", path=path, version=version)
    if name == CHECKPOINT_PROTECTION and not truncate_history:
        raise FeatureNotDroppableError(
            f"{CHECKPOINT_PROTECTION} can only be dropped with --truncate-history: the log before "
            f"{REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION} must be truncated first", path=path, version=version)
    return feature


# --- the protocol commit ---------------------------------------------------------------------


def _features_of(protocol: Protocol) -> set[str]:
    """Every feature the protocol supports, listed or implied by legacy versions (Delta Spark's
    ``denormalized``)."""
    return set(reader_features(protocol)) | set(writer_features(protocol))


def normalized_protocol(features: Iterable[str], *, extra: Mapping[str, Any] | None = None) -> Protocol:
    """The weakest protocol supporting exactly ``features`` (Delta Spark's ``Protocol.normalized``):
    a legacy ``(reader, writer)`` pair when one implies exactly that set, else writer 7 listing
    them (reader 3 listing the reader-writer ones when any is not legacy)."""
    wanted = set(features)
    readers = wanted & (READER_WRITER_FEATURES | {"columnMapping"})
    reader = 3 if readers - {"columnMapping"} else (2 if readers else 1)
    if wanted <= set(LEGACY_VERSIONS):  # the legacy versions each feature needs (Delta Spark's minimumRequiredVersions)
        legacy = Protocol(max((LEGACY_VERSIONS[f][0] for f in wanted), default=1),
                          max((LEGACY_VERSIONS[f][1] for f in wanted), default=1))
        if _features_of(legacy) == wanted:
            return Protocol(legacy.min_reader_version, legacy.min_writer_version, extra=dict(extra or {}))
    return Protocol(reader, 7, tuple(sorted(readers)) if reader == 3 else None, tuple(sorted(wanted)),
                    extra=dict(extra or {}))


def protocol_without(protocol: Protocol, name: str, *, add_checkpoint_protection: bool) -> Protocol:
    """``protocol`` without ``name`` (and with ``checkpointProtection`` for a fast drop),
    normalized as Delta Spark's ``removeFeature``/``withFeature`` leave it."""
    features = _features_of(protocol) - {name}
    if add_checkpoint_protection:
        features.add(CHECKPOINT_PROTECTION)
    return normalized_protocol(features, extra=protocol.extra)


def metadata_at_drop(metadata: Metadata, *, protected_version: int | None) -> Metadata | None:
    """The protocol commit's ``metaData``: a fast drop records the version before which
    checkpoints are protected (the drop's own version, Delta Spark's ``readVersion + 1``);
    ``None``: unchanged."""
    if protected_version is None:
        return None
    return with_configuration(metadata, set={REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION: str(protected_version)})


# --- pre-downgrade metadata changes ------------------------------------------------------------


def with_configuration(metadata: Metadata, *, unset: Iterable[str] = (),
                       set: Mapping[str, str] | None = None) -> Metadata:  # noqa: A002 - Delta's verbs
    """``metadata`` with the ``unset`` keys removed and ``set`` applied."""
    conf = {k: v for k, v in metadata.configuration.items() if k not in frozenset(unset)}
    conf.update(set or {})
    return replace(metadata, configuration=conf)


def properties_to_unset(name: str, metadata: Metadata) -> dict[str, str | None]:
    """The first pre-downgrade step's property changes (key -> new value, ``None``: unset) that
    stop writers from using ``name`` again; empty when nothing is to change. As Delta Spark:
    deletion vectors and type widening unset their property; in-commit timestamps are turned
    off and their enablement provenance unset; ``v2Checkpoint`` sets the checkpoint policy to
    classic (explicitly); ``checkpointProtection`` unsets the protected version (once history is truncated)."""
    conf = metadata.configuration
    wanted: dict[str, str | None]
    if name == "deletionVectors":
        wanted = {ENABLE_DELETION_VECTORS: None}
    elif name in TYPE_WIDENING_FEATURES:
        wanted = {ENABLE_TYPE_WIDENING: None}
    elif name == "inCommitTimestamp":
        wanted = {ICT_ENABLEMENT_TIMESTAMP: None, ICT_ENABLEMENT_VERSION: None}
        if _true(conf, ENABLE_IN_COMMIT_TIMESTAMPS):
            wanted[ENABLE_IN_COMMIT_TIMESTAMPS] = "false"
    elif name == "v2Checkpoint":
        # also when unset: our checkpoint writer writes V2-spec checkpoints then (``writes_v2_spec``)
        wanted = {CHECKPOINT_POLICY: "classic"}
    elif name == CHECKPOINT_PROTECTION:
        wanted = {REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION: None}
    else:
        wanted = {}
    return {k: v for k, v in wanted.items() if conf.get(k) != v}


def without_type_changes(metadata: Metadata) -> tuple[Metadata, tuple[str, ...]]:
    """``metadata`` with every ``delta.typeChanges`` entry removed from the schema's field
    metadata (Delta Spark's ``TypeWideningMetadata.removeTypeWideningMetadata``), and the
    columns that had one."""
    columns = tuple(sorted({c.column for c in type_changes(metadata)}))
    if not columns:
        return metadata, ()
    root = json.loads(metadata.schema_string)
    _strip_type_changes(root)
    return replace(metadata, schema_string=json.dumps(root, separators=(",", ":"))), columns


def _strip_type_changes(obj: Any) -> None:
    if isinstance(obj, list):
        for item in obj:
            _strip_type_changes(item)
    elif isinstance(obj, dict):
        md = obj.get("metadata")
        if isinstance(md, dict):
            md.pop(TYPE_CHANGES_KEY, None)
        for value in obj.values():
            _strip_type_changes(value)


# --- validateDropInvariants ----------------------------------------------------------------------


def drop_invariant_violations(name: str, snapshot: Snapshot, *, checkpoint_is_v2: bool) -> list[str]:
    """What still uses ``name`` in ``snapshot`` (Delta Spark's ``validateDropInvariants``), one
    reason each; empty: the protocol commit may drop it. ``checkpoint_is_v2``: the snapshot's
    checkpoint follows the V2 spec."""
    conf = snapshot.metadata.configuration
    out: list[str] = []
    if name == "deletionVectors":
        if _true(conf, ENABLE_DELETION_VECTORS):
            out.append(f"{ENABLE_DELETION_VECTORS}=true: writers may add deletion vectors")
        with_dv = files_with_deletion_vectors(snapshot)
        if with_dv:
            out.append(f"{with_dv} live file(s) have deletion vectors")
    elif name in TYPE_WIDENING_FEATURES:
        if _true(conf, ENABLE_TYPE_WIDENING):
            out.append(f"{ENABLE_TYPE_WIDENING}=true: writers may widen types")
        columns = sorted({c.column for c in type_changes(snapshot.metadata)})
        if columns:
            out.append(f"the schema records {TYPE_CHANGES_KEY} on {', '.join(columns)}")
    elif name == "inCommitTimestamp":
        if _true(conf, ENABLE_IN_COMMIT_TIMESTAMPS):
            out.append(f"{ENABLE_IN_COMMIT_TIMESTAMPS}=true")
        out += [f"{k} is set" for k in (ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION) if k in conf]
    elif name == "v2Checkpoint":
        if _v2_policy(conf):
            out.append(f"{CHECKPOINT_POLICY}=v2: writers may write V2 checkpoints")
        if checkpoint_is_v2:
            out.append(f"the table's state is read from a V2 checkpoint (version {snapshot.log_segment.checkpoint_version})")
    elif name == CHECKPOINT_PROTECTION and REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION in conf:
        out.append(f"{REQUIRE_CHECKPOINT_PROTECTION_BEFORE_VERSION} is set")
    return out


def files_with_deletion_vectors(snapshot: Snapshot) -> int:
    """Live files with a deletion vector (Delta Spark's ``numDeletionVectorsOpt``)."""
    dv = snapshot.file_columns("deletion_vector").column("deletion_vector")
    return int(len(dv) - dv.null_count)


def action_uses_feature(name: str, action: Action) -> bool:
    """Whether a commit's action is a trace of ``name`` (Delta Spark's ``actionUsesFeature``), for
    the history check of ``--truncate-history``."""
    if name == "deletionVectors":
        if isinstance(action, Metadata):
            return _true(action.configuration, ENABLE_DELETION_VECTORS)
        return isinstance(action, (Add, Remove, AddCDCFile)) and getattr(action, "deletion_vector", None) is not None
    if name in TYPE_WIDENING_FEATURES:
        return isinstance(action, Metadata) and any(True for _ in type_changes(action))
    if name == "v2Checkpoint":
        return (isinstance(action, Metadata) and _v2_policy(action.configuration)) or \
            isinstance(action, (CheckpointMetadata, Sidecar))
    return False


def _true(conf: Mapping[str, str], key: str) -> bool:
    return key in conf and parse_bool(conf[key], key=key)


def _v2_policy(conf: Mapping[str, str]) -> bool:
    return conf.get(CHECKPOINT_POLICY, "").strip().lower() == "v2"
