"""delta_core.model.table_features: the read gate on real protocols, the write gate's rules."""

from __future__ import annotations

import importlib.util
import json

import pyarrow as pa
import pytest

from delta_core.errors import UnsupportedProtocolError, UnsupportedWriterFeatureError
from delta_core.model.actions import Metadata, Protocol, action_from_json
from delta_core.model.table_features import (
    SUPPORTED_READER_FEATURES,
    SUPPORTED_WRITER_FEATURES,
    WRITER_FEATURES,
    Scope,
    check_read_supported,
    check_write_supported,
    column_mapping_mode,
    has_feature,
    reader_features,
    writer_features,
)
from tests.core_types.logdata import actions, expected, last_metadata, table_dirs


def _last_protocol(table):
    protos = actions(table, "protocol")
    return action_from_json({"protocol": protos[-1]}) if protos else None


def _metadata(schema_fields=(), configuration=None) -> Metadata:
    schema = {"type": "struct", "fields": list(schema_fields)}
    return Metadata(id="t", schema_string=json.dumps(schema), configuration=configuration or {})


PLAIN = _metadata([{"name": "x", "type": "long", "nullable": True, "metadata": {}}])


@pytest.mark.parametrize("table", [t for t in table_dirs() if _last_protocol(t) is not None],
                         ids=lambda p: p.name)
def test_read_gate_agrees_with_conformance_expectations(table):
    exp = expected(table)
    protocol = _last_protocol(table)
    if exp.get("error_kind") == "unsupported_protocol":
        with pytest.raises(UnsupportedProtocolError) as ei:
            check_read_supported(protocol)
        assert ei.value.kind == "unsupported_protocol"
    elif exp["outcome"] == "ok" and not any((table / "_delta_log").glob("*.checkpoint*")):
        # with a checkpoint the JSON commits may not hold the winning protocol
        check_read_supported(protocol)


def test_unknown_reader_feature_is_named_with_advice():
    p = Protocol(3, 7, ("deletionVectors", "fancyNewThing"), ("deletionVectors", "fancyNewThing"))
    with pytest.raises(UnsupportedProtocolError, match="fancyNewThing") as ei:
        check_read_supported(p, path="s3://b/t", version=4)
    assert "use a Delta engine that supports them" in str(ei.value)
    assert ei.value.path == "s3://b/t" and ei.value.version == 4


def test_catalog_managed_gets_a_specific_hint():
    p = Protocol(3, 7, ("catalogManaged",), ("catalogManaged", "inCommitTimestamp"))
    with pytest.raises(UnsupportedProtocolError, match="through that catalog's client"):
        check_read_supported(p)


@pytest.mark.parametrize("reader", [0, 4, 99])
def test_reader_versions_outside_1_to_3(reader):
    with pytest.raises(UnsupportedProtocolError, match=f"reader version {reader}"):
        check_read_supported(Protocol(reader, 7, (), ()))


def test_supported_reader_features_read_fine():
    check_read_supported(Protocol(3, 7, tuple(sorted(SUPPORTED_READER_FEATURES)), ()))
    check_read_supported(Protocol(2, 5))
    check_read_supported(Protocol(3, 7, None, None))  # malformed but harmless: nothing required


def test_legacy_versions_imply_features():
    assert writer_features(Protocol(1, 2)) == {"appendOnly", "invariants"}
    assert "checkConstraints" in writer_features(Protocol(1, 3))
    assert {"changeDataFeed", "generatedColumns"} <= writer_features(Protocol(1, 4))
    assert has_feature(Protocol(2, 5), "columnMapping")
    assert has_feature(Protocol(1, 6), "identityColumns")
    assert not has_feature(Protocol(1, 2), "checkConstraints")
    assert reader_features(Protocol(1, 2)) == frozenset()
    # listed features replace implied ones at writer 7
    assert writer_features(Protocol(1, 7, None, ("appendOnly",))) == {"appendOnly"}
    assert has_feature(Protocol(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)), "v2Checkpoint")


def test_column_mapping_mode_needs_protocol_support():
    conf = {"delta.columnMapping.mode": "name"}
    assert column_mapping_mode(Protocol(1, 2), conf) == "none"
    assert column_mapping_mode(Protocol(2, 5), conf) == "name"
    assert column_mapping_mode(Protocol(3, 7, ("columnMapping",), ("columnMapping",)), {}) == "none"
    with pytest.raises(UnsupportedProtocolError, match="column mapping mode"):
        column_mapping_mode(Protocol(2, 5), {"delta.columnMapping.mode": "magic"})


def test_plain_legacy_tables_are_writable():
    for writer in range(1, 7):
        check_write_supported(Protocol(1, writer), PLAIN)
    check_write_supported(Protocol(3, 7, ("deletionVectors", "columnMapping"),
                                   tuple(sorted(SUPPORTED_WRITER_FEATURES))), PLAIN)


def test_writer_version_above_7_is_refused():
    with pytest.raises(UnsupportedWriterFeatureError, match="writer version 8"):
        check_write_supported(Protocol(1, 8), PLAIN)


def test_write_gate_also_applies_reader_rules():
    with pytest.raises(UnsupportedWriterFeatureError, match="fancy") as ei:
        check_write_supported(Protocol(3, 7, ("fancy",), ("fancy",)), PLAIN)
    assert isinstance(ei.value, UnsupportedProtocolError)  # callers may catch the broader type


@pytest.mark.parametrize("feature", ["icebergCompatV1", "liquid", "catalogManaged", "someFutureFeature"])
def test_unimplemented_writer_features_are_refused(feature):
    with pytest.raises(UnsupportedWriterFeatureError, match=feature):
        check_write_supported(Protocol(1, 7, None, (feature,)), PLAIN)


def test_active_invariants_refuse_new_rows_but_allow_rewrites():
    md = _metadata([{"name": "x", "type": "integer", "nullable": True,
                     "metadata": {"delta.invariants": '{"expression": {"expression": "x > 3"}}'}}])
    with pytest.raises(UnsupportedWriterFeatureError, match=r"invariants \(a column has delta.invariants\)"):
        check_write_supported(Protocol(1, 2), md)
    check_write_supported(Protocol(1, 2), md, rewrite_only=True)
    check_write_supported(Protocol(1, 2), PLAIN)  # supported but inactive


def test_check_constraints_in_configuration():
    md = _metadata([{"name": "x", "type": "long", "nullable": True, "metadata": {}}],
                   {"delta.constraints.positive": "x > 0"})
    with pytest.raises(UnsupportedWriterFeatureError, match="delta.constraints.positive"):
        check_write_supported(Protocol(1, 3), md)
    check_write_supported(Protocol(1, 3), md, rewrite_only=True)


def test_identity_columns_of_a_real_table(conformance_dir):
    table = conformance_dir / "rs-checkpoint-v2-table"
    protocol = _last_protocol(table)
    md = action_from_json({"metaData": last_metadata(table)})
    with pytest.raises(UnsupportedWriterFeatureError, match="identity column"):
        check_write_supported(protocol, md)
    check_write_supported(protocol, md, rewrite_only=True)


def test_type_widening_with_supported_recorded_changes_is_writable(conformance_dir):
    # tests/maintenance/test_type_widening_rewrite.py rewrites it and tests/core_types/
    # test_type_widening.py refuses unsupported changes
    table = conformance_dir / "golden-type-widening"
    protocol = _last_protocol(table)
    md = action_from_json({"metaData": last_metadata(table)})
    check_read_supported(protocol)
    check_write_supported(protocol, md, rewrite_only=True)
    check_write_supported(Protocol(3, 7, ("typeWidening",), ("typeWidening",)), PLAIN)


def test_in_commit_timestamps_are_writable_when_enabled():
    # Every writing command honours them (the transaction writes them, log cleanup keeps the
    # commit at the kept checkpoint), so the one gate accepts them without caller plumbing.
    p = Protocol(1, 7, None, ("inCommitTimestamp",))
    check_write_supported(p, PLAIN)
    check_write_supported(p, _metadata([], {"delta.enableInCommitTimestamps": "true"}))
    assert WRITER_FEATURES["inCommitTimestamp"].module == "delta_core.write.transaction"


def test_one_table_of_writer_features_names_each_module():
    # Every feature a reader must understand is also a writer feature of the table.
    assert SUPPORTED_READER_FEATURES <= set(WRITER_FEATURES)
    assert {"inCommitTimestamp", "checkpointProtection"} <= SUPPORTED_WRITER_FEATURES
    for name, feature in WRITER_FEATURES.items():
        assert feature.name == name
        if feature.scope is Scope.ALWAYS:
            assert feature.module and importlib.util.find_spec(feature.module) is not None, name
        else:  # duties not implemented: accepted only while inactive (or for pure rewrites)
            assert feature.module is None, name
        assert feature.reader_writer == (name in SUPPORTED_READER_FEATURES), name
    with pytest.raises(UnsupportedWriterFeatureError, match="fooBarWriter"):
        check_write_supported(Protocol(1, 7, None, ("appendOnly", "fooBarWriter")), PLAIN)


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_refuse_every_write(feature):
    for rewrite_only in (False, True):
        with pytest.raises(UnsupportedWriterFeatureError, match="commits must go through the catalog") as ei:
            check_write_supported(Protocol(3, 7, (feature,), (feature, "inCommitTimestamp")), PLAIN,
                                  rewrite_only=rewrite_only, path="/t", version=3)
        assert (ei.value.kind, ei.value.path, ei.value.version) == ("unsupported_protocol", "/t", 3)


def test_row_tracking_tables_are_writable_suspended_or_not():
    # every commit assigns row ids (delta_core.write.row_tracking), so the gate lets them through
    p = Protocol(1, 7, None, ("rowTracking", "domainMetadata"))
    check_write_supported(p, PLAIN, rewrite_only=True)
    check_write_supported(p, _metadata([], {"delta.enableRowTracking": "true"}))
    check_write_supported(p, _metadata([], {"delta.rowTrackingSuspended": "true"}))


def test_delta_rs_default_table_is_writable(tmp_path):
    deltalake = pytest.importorskip("deltalake")
    deltalake.write_deltalake(str(tmp_path), pa.table({"a": [1, 2]}))
    protocol = _last_protocol(tmp_path)
    md = action_from_json({"metaData": last_metadata(tmp_path)})
    check_read_supported(protocol)
    check_write_supported(protocol, md)


@pytest.mark.parametrize("feature, module", [
    ("materializePartitionColumns", "delta_core.write.materialized_partitions"),
    ("collations", "delta_core.model.stats_collect"),
    ("collations-preview", "delta_core.model.stats_collect"),
])
def test_rfc_writer_features_are_writable(feature, module):
    # Writer-only features (their RFCs): reader 1 with writer features, or reader 3 with an
    # empty readerFeatures as the kernel-rs fixture has it.
    for p in (Protocol(1, 7, None, (feature, "domainMetadata")), Protocol(3, 7, (), (feature,))):
        check_read_supported(p)
        check_write_supported(p, PLAIN)
        check_write_supported(p, PLAIN, rewrite_only=True)
    assert WRITER_FEATURES[feature].module == module and not WRITER_FEATURES[feature].reader_writer
