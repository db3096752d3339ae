"""Issue 21 §5: a property that turns a feature on puts the feature in the protocol, in the same
commit (as Delta Spark does), or is refused with nothing written.

Tables start on (1, 2), written by delta-rs or by us; the resulting protocol is read back from
the commit and delta-rs must still read the table.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import deltalake
import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.log.history import ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Protocol
from delta_core.write.feature_enablement import upgrade_protocol
from delta_core.write.table_writes import append, create_table, set_properties
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "s": [f"v{i}" for i in ids]}, schema=SCHEMA)


def commit(table_dir: str, version: int) -> list[dict]:
    with open(os.path.join(table_dir, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def protocol_of(table_dir: str, version: int) -> dict | None:
    return next((a["protocol"] for a in commit(table_dir, version) if "protocol" in a), None)


@pytest.fixture(params=["delta-rs", "delta_core"])
def legacy_table(request, table_dir) -> DeltaTable:
    """A (1, 2) table with one data file, written by delta-rs or by us."""
    if request.param == "delta-rs":
        deltalake.write_deltalake(table_dir, rows([1, 2]))
    else:
        append(create_table(table_dir, SCHEMA), rows([1, 2]))
    t = DeltaTable(table_dir)
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (1, 2)
    return t


def _delta_rs_reads(table_dir: str) -> list[int]:
    # Through delta-rs's query engine: its pyarrow path refuses deletionVectors/v2Checkpoint.
    dt = deltalake.DeltaTable(table_dir)
    out = deltalake.QueryBuilder().register("t", dt).execute("SELECT id FROM t").read_all()
    return sorted(pa.table(out).column("id").to_pylist())


@pytest.mark.parametrize("props, expected", [
    ({"delta.enableDeletionVectors": "true"},
     {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
      "writerFeatures": ["appendOnly", "deletionVectors", "invariants"]}),
    ({"delta.enableChangeDataFeed": "true"}, {"minReaderVersion": 1, "minWriterVersion": 4}),
    ({"delta.checkpointPolicy": "v2"},
     {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
      "writerFeatures": ["appendOnly", "invariants", "v2Checkpoint"]}),
    ({"delta.enableInCommitTimestamps": "true"},
     {"minReaderVersion": 1, "minWriterVersion": 7,
      "writerFeatures": ["appendOnly", "inCommitTimestamp", "invariants"]}),
    ({"delta.enableMaterializePartitionColumnsFeature": "true"},
     {"minReaderVersion": 1, "minWriterVersion": 7,
      "writerFeatures": ["appendOnly", "invariants", "materializePartitionColumns"]}),
    ({"delta.writePartitionColumnsToParquet": "true"}, None),
])
def test_set_properties_upgrades_protocol_in_same_commit(legacy_table, table_dir, props, expected):
    result = set_properties(legacy_table, props)
    assert protocol_of(table_dir, result.version) == expected
    snap = DeltaTable(table_dir).snapshot()
    assert all(snap.configuration[k] == v for k, v in props.items())
    assert _delta_rs_reads(table_dir) == [1, 2]
    dr = deltalake.DeltaTable(table_dir).protocol()
    versions = (1, 2) if expected is None else (expected["minReaderVersion"], expected["minWriterVersion"])
    assert (dr.min_reader_version, dr.min_writer_version) == versions


def test_property_already_supported_keeps_protocol(legacy_table, table_dir):
    # (1, 2) implies appendOnly: no protocol action, as Delta Spark.
    result = set_properties(legacy_table, {"delta.appendOnly": "true"})
    assert protocol_of(table_dir, result.version) is None


def test_append_only_on_writer7_table_lists_feature_and_binds_delta_rs(table_dir):
    append(create_table(table_dir, SCHEMA, properties={"delta.enableInCommitTimestamps": "true"}), rows([1, 2]))
    set_properties(DeltaTable(table_dir), {"delta.enableInCommitTimestamps": "false"})
    # A hand-made writer-7 protocol without appendOnly, as another engine may leave it.
    log = os.path.join(table_dir, "_delta_log")
    with open(os.path.join(log, f"{2:020d}.json"), "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                          "writerFeatures": ["inCommitTimestamp"]}}) + "\n")
    result = set_properties(DeltaTable(table_dir), {"delta.appendOnly": "true"})
    assert protocol_of(table_dir, result.version) == {
        "minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "inCommitTimestamp"]}
    # Now other engines honour it too: delta-rs refuses to delete from the table.
    with pytest.raises(deltalake.exceptions.DeltaError):
        deltalake.DeltaTable(table_dir).delete("id = 1")
    assert _delta_rs_reads(table_dir) == [1, 2]


def test_check_constraint_on_empty_table_needs_writer_3(table_dir):
    t = create_table(table_dir, SCHEMA)
    result = set_properties(t, {"delta.constraints.positive": "id > 0"})
    assert protocol_of(table_dir, result.version) == {"minReaderVersion": 1, "minWriterVersion": 3}
    assert deltalake.DeltaTable(table_dir).to_pyarrow_table().num_rows == 0


@pytest.mark.parametrize("props", [
    {"delta.enableRowTracking": "true"},
    {"delta.enableTypeWidening": "true"},
    {"delta.enableIcebergCompatV1": "true"},
    {"delta.enableIcebergCompatV2": "true"},
    {"delta.enableVariantShredding": "true"},
    {"delta.someFutureFeature.enabled": "true"},
    {"delta.feature.rowTracking": "supported"},
    {"delta.checkpointPolicy": "v3"},
    {ICT_ENABLEMENT_VERSION: "1"},
])
def test_unimplemented_feature_properties_refused_nothing_written(legacy_table, table_dir, props):
    before = listing(table_dir)
    with pytest.raises(ConfigError) as e:
        set_properties(legacy_table, props)
    assert next(iter(props)) in str(e.value)
    assert e.value.path == legacy_table.uri
    assert listing(table_dir) == before


@pytest.mark.parametrize("props", [
    {"delta.enableRowTracking": "true"},
    {"delta.enableVariantShredding": "true"},
    {"delta.unknownThing": "1"},
])
def test_create_table_refuses_unimplemented_feature_properties(tmp_path, props):
    target = tmp_path / "new"
    with pytest.raises(ConfigError):
        create_table(str(target), SCHEMA, properties=props)
    assert not target.exists() or listing(str(target)) == []


def test_create_table_puts_property_features_in_protocol(table_dir):
    create_table(table_dir, SCHEMA, properties={
        "delta.checkpointPolicy": "v2", "delta.enableChangeDataFeed": "true", "delta.constraints.c": "id > 0",
        "delta.enableRowTracking": "false", "user.note": "kept"})
    assert protocol_of(table_dir, 0) == {
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["v2Checkpoint"],
        "writerFeatures": ["appendOnly", "changeDataFeed", "checkConstraints", "invariants", "v2Checkpoint"]}
    assert _delta_rs_reads(table_dir) == []


def test_legacy_protocol_converts_with_implied_features():
    # (2, 5) implies column mapping (reader and writer) and every writer feature up to 5.
    p = upgrade_protocol(Protocol(2, 5), {"deletionVectors"})
    assert p == Protocol(3, 7, ("columnMapping", "deletionVectors"), (
        "appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "deletionVectors",
        "generatedColumns", "invariants"))
    assert upgrade_protocol(Protocol(2, 5), {"checkConstraints", "changeDataFeed"}) == Protocol(2, 5)
    assert upgrade_protocol(Protocol(1, 2), {"checkConstraints"}) == Protocol(1, 3)
    assert upgrade_protocol(Protocol(1, 7, None, ("appendOnly",)), {"changeDataFeed"}) == Protocol(
        1, 7, None, ("appendOnly", "changeDataFeed"))


def test_ict_enablement_records_version_and_timestamp(legacy_table, table_dir):
    result = set_properties(legacy_table, {"delta.enableInCommitTimestamps": "true"})
    actions = commit(table_dir, result.version)
    info = actions[0]["commitInfo"]
    conf = next(a["metaData"] for a in actions if "metaData" in a)["configuration"]
    assert conf[ICT_ENABLEMENT_VERSION] == str(result.version)
    assert conf[ICT_ENABLEMENT_TIMESTAMP] == str(info["inCommitTimestamp"])
    prev_mtime = os.path.getmtime(os.path.join(table_dir, "_delta_log", f"{result.version - 1:020d}.json"))
    assert info["inCommitTimestamp"] > int(prev_mtime * 1000)  # writer rule 5
    t = DeltaTable(table_dir)
    append(t, rows([3]))
    assert t.version_at(info["inCommitTimestamp"]) == result.version
    assert _delta_rs_reads(table_dir) == [1, 2, 3]


def test_ict_enablement_version_follows_a_lost_race(table_dir):
    t = create_table(table_dir, SCHEMA)
    append(t, rows([1]))
    snap = t.snapshot()
    # Stage the change on version 1, then let a concurrent append take version 2.
    txn = Transaction(t, read_snapshot=snap, operation="SET TBLPROPERTIES")
    conf = {**snap.configuration, "delta.enableInCommitTimestamps": "true"}
    txn.add_action(replace(snap.metadata, configuration=conf))
    txn.add_action(Protocol(1, 7, None, ("appendOnly", "inCommitTimestamp", "invariants")))
    append(DeltaTable(table_dir), rows([2]))
    result = txn.commit()
    assert result.version == 3
    actions = commit(table_dir, 3)
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert meta["configuration"][ICT_ENABLEMENT_VERSION] == "3"
    assert meta["configuration"][ICT_ENABLEMENT_TIMESTAMP] == str(actions[0]["commitInfo"]["inCommitTimestamp"])
