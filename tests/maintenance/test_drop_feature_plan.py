"""DROP FEATURE planning without IO: the protocol after a drop, normalized as Delta Spark's
``Protocol.removeFeature``/``normalized`` leave it, and the properties each pre-downgrade step
changes."""

from __future__ import annotations

import json

import pytest

from delta_core.maintenance.drop_feature_errors import FeatureNotDroppableError, FeatureNotPresentError
from delta_core.maintenance.drop_feature_plan import (
    check_droppable,
    properties_to_unset,
    protocol_without,
    without_type_changes,
)
from delta_core.model.actions import Metadata, Protocol
from delta_core.model.type_widening import type_changes

DV_TABLE = Protocol(3, 7, ("deletionVectors",), ("appendOnly", "deletionVectors", "invariants"))


@pytest.mark.parametrize(("protocol", "feature", "fast", "expected"), [
    # the last reader feature gone: back to the legacy protocol its writer features make
    (DV_TABLE, "deletionVectors", False, Protocol(1, 2)),
    # a fast drop adds checkpointProtection, a writer feature: reader 1, writer 7
    (DV_TABLE, "deletionVectors", True, Protocol(1, 7, None, ("appendOnly", "checkpointProtection", "invariants"))),
    # another reader feature stays: reader 3 keeps listing it
    (Protocol(3, 7, ("deletionVectors", "v2Checkpoint"), ("deletionVectors", "v2Checkpoint")), "v2Checkpoint", True,
     Protocol(3, 7, ("deletionVectors",), ("checkpointProtection", "deletionVectors"))),
    # column mapping is a legacy reader feature: reader 2 and the legacy writer 5 when nothing else is left
    (Protocol(3, 7, ("columnMapping", "vacuumProtocolCheck"),
              ("appendOnly", "changeDataFeed", "checkConstraints", "columnMapping", "generatedColumns", "invariants",
               "vacuumProtocolCheck")), "vacuumProtocolCheck", False, Protocol(2, 5)),
    # writer features only: no legacy protocol holds inCommitTimestamp's neighbours exactly
    (Protocol(1, 7, None, ("appendOnly", "changeDataFeed", "inCommitTimestamp", "invariants")), "inCommitTimestamp",
     False, Protocol(1, 7, None, ("appendOnly", "changeDataFeed", "invariants"))),
    (Protocol(1, 7, None, ("checkpointProtection",)), "checkpointProtection", False, Protocol(1, 1)),
])
def test_protocol_without(protocol, feature, fast, expected):
    assert protocol_without(protocol, feature, add_checkpoint_protection=fast) == expected


def test_check_droppable_refuses_what_delta_spark_refuses():
    assert check_droppable(DV_TABLE, "deletionVectors", truncate_history=True).reader_writer
    with pytest.raises(FeatureNotDroppableError, match="drops are"):
        check_droppable(DV_TABLE, "appendOnly", truncate_history=False)
    with pytest.raises(FeatureNotPresentError):
        check_droppable(DV_TABLE, "v2Checkpoint", truncate_history=False)
    ict = Protocol(1, 7, None, ("checkpointProtection", "inCommitTimestamp"))
    with pytest.raises(FeatureNotDroppableError, match="writer feature"):
        check_droppable(ict, "inCommitTimestamp", truncate_history=True)
    with pytest.raises(FeatureNotDroppableError, match="only be dropped with --truncate-history"):
        check_droppable(ict, "checkpointProtection", truncate_history=False)


def test_pre_downgrade_properties():
    def meta(**conf: str) -> Metadata:
        return Metadata(id="x", schema_string='{"type":"struct","fields":[]}', configuration=conf)

    assert properties_to_unset("deletionVectors", meta(**{"delta.enableDeletionVectors": "true"})) == {
        "delta.enableDeletionVectors": None}
    assert properties_to_unset("deletionVectors", meta()) == {}
    assert properties_to_unset("inCommitTimestamp", meta(**{
        "delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "3"})) == {
        "delta.enableInCommitTimestamps": "false", "delta.inCommitTimestampEnablementVersion": None}
    assert properties_to_unset("v2Checkpoint", meta(**{"delta.checkpointPolicy": "v2"})) == {
        "delta.checkpointPolicy": "classic"}
    assert properties_to_unset("v2Checkpoint", meta()) == {"delta.checkpointPolicy": "classic"}
    assert properties_to_unset("v2Checkpoint", meta(**{"delta.checkpointPolicy": "classic"})) == {}
    assert properties_to_unset("vacuumProtocolCheck", meta(a="b")) == {}


def test_type_changes_removed_at_every_depth():
    change = [{"fromType": "integer", "toType": "long"}]
    schema = {"type": "struct", "fields": [
        {"name": "a", "type": "long", "nullable": True, "metadata": {"delta.typeChanges": change, "comment": "kept"}},
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "b", "type": "long", "nullable": True, "metadata": {"delta.typeChanges": change}}]},
         "nullable": True, "metadata": {}}]}
    cleaned, columns = without_type_changes(Metadata(id="x", schema_string=json.dumps(schema)))
    assert columns == ("a", "s.b") and not list(type_changes(cleaned))
    assert json.loads(cleaned.schema_string)["fields"][0]["metadata"] == {"comment": "kept"}
