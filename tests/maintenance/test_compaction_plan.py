"""Compaction and Z-order planning: pure, no Spark (real snapshots of small tables)."""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from delta_core.errors import ConfigError
from delta_core.maintenance.bin_packing import partition_key_columns
from delta_core.maintenance.compaction_plan import (
    DEFAULT_MIN_FILE_FRACTION,
    pack_files,
    plan_compaction,
    resolve_sizes,
)
from delta_core.maintenance.file_groups import batch_groups
from delta_core.maintenance.zorder_plan import plan_zorder
from delta_core.model.table_properties import DEFAULT_TARGET_FILE_SIZE
from tests.maintenance.conftest import make_table


def files(rows: list[tuple[str, str, int]], *, dv_on: Mapping[str, int] | frozenset[str] = frozenset(),
          records: Mapping[str, int] | None = None) -> pa.Table:
    """``Snapshot.files``-like rows ``(path, partition, size)``; ``dv_on``: paths with a deletion
    vector (path -> cardinality, else 1); ``records``: path -> numRecords (else none)."""
    dv_type = pa.struct([("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
                         ("sizeInBytes", pa.int32()), ("cardinality", pa.int64())])
    cards = dv_on if isinstance(dv_on, Mapping) else dict.fromkeys(dv_on, 1)
    return pa.table({
        "path": [r[0] for r in rows],
        "partition_values": pa.array([[("p", r[1])] for r in rows], pa.map_(pa.string(), pa.string())),
        "size": pa.array([r[2] for r in rows], pa.int64()),
        "deletion_vector": pa.array([{"storageType": "i", "pathOrInlineDv": "x", "offset": None,
                                      "sizeInBytes": 1, "cardinality": cards[r[0]]} if r[0] in cards else None
                                     for r in rows], dv_type),
        "num_records": pa.array([(records or {}).get(r[0]) for r in rows], pa.int64()),
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


def test_files_over_the_deleted_rows_ratio_are_picked_whatever_their_size():
    """Delta Spark's maxDeletedRowsRatio (0.05): cardinality / numRecords above it, or a vector
    without numRecords, makes a file a candidate; such a file is rewritten even alone."""
    t = files([("a1", "a", 10), ("a2", "a", 10), ("big_over", "a", 500), ("big_under", "a", 600),
               ("big_equal", "a", 700), ("b_no_stats", "b", 800), ("c_over", "c", 900)],
              dv_on={"big_over": 6, "big_under": 4, "big_equal": 5, "b_no_stats": 1, "c_over": 50},
              records={"big_over": 100, "big_under": 100, "big_equal": 100, "c_over": 100})
    bins, considered, _ = pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100,
                                     min_input_files=2)
    assert considered == 7
    assert sorted(b.paths for b in bins) == [["a1", "a2"], ["b_no_stats"], ["big_over"], ["c_over"]]
    # a stricter ratio takes big_under and big_equal too; 1.0 takes only the vector without stats
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100,
                            max_deleted_rows_ratio=0.01, min_input_files=2)
    assert sorted(p for b in bins for p in b.paths) == sorted(r for r in t.column("path").to_pylist())
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100,
                            max_deleted_rows_ratio=1.0, min_input_files=2)
    assert sorted(b.paths for b in bins) == [["a1", "a2"], ["b_no_stats"]]


def test_a_small_file_over_the_ratio_is_rewritten_alone():
    t = files([("lonely", "a", 10)], dv_on={"lonely": 3}, records={"lonely": 10})
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100)
    assert [b.paths for b in bins] == [["lonely"]]
    t = files([("lonely", "a", 10)], dv_on={"lonely": 0}, records={"lonely": 10})  # nothing deleted
    assert pack_files(t, partition_columns=["p"], target_size=100, min_file_size=100)[0] == []


@pytest.mark.parametrize("ratio", [-0.1, 1.5])
def test_deleted_rows_ratio_must_be_a_share(tmp_path, ratio):
    table = make_table(str(tmp_path / "t"), appends=2)
    with pytest.raises(ConfigError, match="between 0 and 1"):
        plan_compaction(table.snapshot(), max_deleted_rows_ratio=ratio)


def test_batches_group_consecutive_bins():
    t = files([(f"a{i}", "a", 10) for i in range(6)] + [(f"b{i}", "b", 10) for i in range(6)])
    bins, _, _ = pack_files(t, partition_columns=["p"], target_size=20, min_file_size=20)
    assert len(bins) == 6
    assert [len(b) for b in batch_groups(bins, 40)] == [2, 2, 2]
    assert [len(b) for b in batch_groups(bins, 1)] == [1] * 6


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
    plan = plan_compaction(snap, min_input_files=4)  # four files per partition
    assert plan.read_version == snap.version
    assert plan.num_input_files == snap.num_files == 8
    assert {b.partition_dict["region"] for b in plan.bins} == {"eu", "us"}
    plan = plan_compaction(snap, where="region = 'eu'", min_input_files=4)
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


MAP = pa.map_(pa.string(), pa.string())


@pytest.mark.parametrize("maps", [
    [[("a", "1"), ("b", "x")], [("a", "2"), ("b", "y")], [("b", "z"), ("a", "3")]],  # one key each
    [[("a", "1")], [], [("b", "q")]],  # a key missing
    [[("a", "1"), ("a", "9")], [("a", "2")], [("a", None)]],  # a key twice, a null value
    [[("a", "1")], None, [("a", "3")]],  # a null map
])
def test_partition_key_columns_equal_map_lookup(maps) -> None:
    column = pa.array(maps, MAP)
    for part in (column, column.slice(1), column.slice(1, 1)):
        table = pa.table({"partition_values": pa.chunked_array([part, part])})
        for key in ("a", "b"):
            (got,) = partition_key_columns(table, [key])
            assert got.to_pylist() == pc.map_lookup(table.column("partition_values"), pa.scalar(key), "first").to_pylist()
