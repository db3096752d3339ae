"""Compaction and Z-order planning: pure, no Spark (real snapshots of small tables)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError, UnsupportedTableForOperationError
from delta_core.maintenance.compaction_plan import (
    DEFAULT_MIN_FILE_FRACTION,
    batch_bins,
    pack_files,
    plan_compaction,
    resolve_sizes,
)
from delta_core.maintenance.zorder_plan import plan_zorder
from delta_core.model.table_properties import DEFAULT_TARGET_FILE_SIZE
from tests.maintenance.conftest import make_table


def files(rows: list[tuple[str, str, int]], *, dv_on: set[str] = frozenset()) -> pa.Table:
    dv_type = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                         ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
    return pa.table({
        "path": [r[0] for r in rows],
        "partition_values": pa.array([[("p", r[1])] for r in rows], pa.map_(pa.string(), pa.string())),
        "size": pa.array([r[2] for r in rows], pa.int64()),
        "deletion_vector": pa.array([{"storageType": "i", "pathOrInlineDv": "x", "offset": None,
                                      "sizeInBytes": 1, "cardinality": 1} if r[0] in dv_on else None
                                     for r in rows], dv_type),
    })


def test_greedy_packing_per_partition():
    t = files([("a1", "a", 10), ("a2", "a", 20), ("a3", "a", 30), ("a4", "a", 50), ("b1", "b", 10),
               ("big", "a", 500), ("lonely", "c", 5)])
    bins, considered, partitions = pack_files(t, partition_columns=["p"], target_size=60, min_file_size=55)
    assert considered == 7 and partitions == 3
    assert [(b.partition_dict["p"], b.paths) for b in bins] == [("a", ["a1", "a2", "a3"])]
    # a4 (50) alone, b1 alone in its partition, lonely alone, big above the minimum: untouched


def test_oversized_file_never_joins_a_bin():
    t = files([("a1", "a", 40), ("a2", "a", 41), ("a3", "a", 42)])
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=80, min_file_size=80)
    assert [b.paths for b in bins] == []  # no two fit together under 80 bytes


def test_deletion_vectors_refused_only_for_candidates():
    t = files([("a1", "a", 10), ("a2", "a", 10), ("big", "a", 500)], dv_on={"big"})
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100)
    assert len(bins) == 1
    t = files([("a1", "a", 10), ("a2", "a", 10)], dv_on={"a2"})
    with pytest.raises(UnsupportedTableForOperationError, match="deletion vectors"):
        pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100)


def test_batches_group_consecutive_bins():
    t = files([(f"a{i}", "a", 10) for i in range(6)] + [(f"b{i}", "b", 10) for i in range(6)])
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=20, min_file_size=20)
    assert len(bins) == 6
    assert [len(b) for b in batch_bins(bins, 40)] == [2, 2, 2]
    assert [len(b) for b in batch_bins(bins, 1)] == [1] * 6


def test_sizes_resolution():
    assert resolve_sizes(None, None) == (DEFAULT_TARGET_FILE_SIZE,
                                         int(DEFAULT_TARGET_FILE_SIZE * DEFAULT_MIN_FILE_FRACTION))
    assert resolve_sizes(None, None, table_target=1000) == (1000, 750)
    assert resolve_sizes(2000, 10, table_target=1000) == (2000, 10)
    with pytest.raises(ConfigError):
        resolve_sizes(100, 200)


def test_plan_on_real_snapshot(table_uri):
    table = make_table(table_uri, appends=4)
    snap = table.snapshot()
    plan = plan_compaction(snap)
    assert plan.read_version == snap.version
    assert plan.num_input_files == snap.num_files == 8
    assert {b.partition_dict["region"] for b in plan.bins} == {"eu", "us"}
    plan = plan_compaction(snap, where="region = 'eu'")
    assert [b.partition_dict["region"] for b in plan.bins] == ["eu"] and plan.files_considered == 4
    assert plan.operation_parameters().to_commit_info()["predicate"] == '["region = \'eu\'"]'
    assert plan_compaction(snap, where="region = 'nowhere'").is_empty
    with pytest.raises(ConfigError, match="partition column"):
        plan_compaction(snap, where="id > 3")


def test_plan_uses_table_target_size(table_uri):
    table = make_table(table_uri, appends=4, properties={"delta.targetFileSize": "1"})
    plan = plan_compaction(table.snapshot())
    assert plan.target_size == 1 and plan.is_empty  # every file already exceeds the target


def test_zorder_plan_validates_columns(table_uri):
    table = make_table(table_uri, appends=2)
    snap = table.snapshot()
    plan = plan_zorder(snap, ["X", "id"], curve="hilbert")
    assert plan.columns == ("x", "id") and plan.num_input_files == 4 and len(plan.partitions) == 2
    assert plan.operation_parameters().to_commit_info()["zOrderBy"] == '["x", "id"]'
    with pytest.raises(ConfigError, match="partition column"):
        plan_zorder(snap, ["region"])
    with pytest.raises(ConfigError, match="not in the table schema"):
        plan_zorder(snap, ["nope"])
    with pytest.raises(ConfigError, match="unknown curve"):
        plan_zorder(snap, ["x"], curve="peano")


def test_zorder_refuses_columns_without_stats(tmp_path):
    table = make_table(str(tmp_path / "t"), appends=1, properties={"delta.dataSkippingNumIndexedCols": "1"})
    with pytest.raises(ConfigError, match="no statistics"):
        plan_zorder(table.snapshot(), ["x"])
    assert plan_zorder(table.snapshot(), ["id"]).columns == ("id",)
