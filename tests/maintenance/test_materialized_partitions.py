"""Rewrites of tables with the ``materializePartitionColumns`` writer feature (protocol RFC
"Materialize Partition Columns"): every new file holds the partition columns after the data
columns, as Delta Spark writes them (``dataColumns ++ partitionColumns``), with the values of its
``partitionValues`` and no stats for them, under column mapping by physical name and field id.
The kernel-rs fixture's files predate the feature (they hold no partition column); rows are the
same for delta-kernel-rs and delta-rs before and after."""

from __future__ import annotations

import collections
import json
import shutil

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.purge import purge
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.partition_values import url_decode_path
from delta_core.model.schema import PARQUET_FIELD_ID
from delta_core.write.table_writes import append, create_table
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import batch, file_actions

pytestmark = pytest.mark.spark

FIXTURE = MODERN_DIR / "krs-partitioned_with_materialize_feature"


def deltars_rows(root: str) -> collections.Counter:
    dt_ = deltalake.DeltaTable(root)
    rows = pa.table(deltalake.QueryBuilder().register("t", dt_).execute("select * from t").read_all())
    return collections.Counter(repr(sorted(r.items())) for r in rows.to_pylist())


def rows_of(root: str) -> tuple[collections.Counter, collections.Counter]:
    kernel = collections.Counter(repr(sorted(r.items())) for r in kernel_rows(root).to_pylist())
    return kernel, deltars_rows(root)


def copy_fixture(tmp_path) -> tuple[str, DeltaTable]:
    root = str(tmp_path / "t")
    shutil.copytree(FIXTURE, root)
    return root, DeltaTable(root)


def assert_partition_columns_stored(root: str, table: DeltaTable, version: int, names: list[str]) -> int:
    """Every file ``version`` added holds ``names`` (physical, data columns first), the partition
    columns among them hold its ``partitionValues`` and its stats leave them out; returns the count."""
    adds, _ = file_actions(table, version)
    snap = table.snapshot()
    parts = [snap.schema[c].physical_name for c in snap.partition_columns]
    for add in adds:
        data = pq.read_table(f"{root}/{url_decode_path(add['path'])}")
        assert data.column_names == names
        for p in set(parts) & set(names):
            value = add["partitionValues"][p]
            assert set(data.column(p).cast(pa.string()).to_pylist()) == {value}
        stats = json.loads(add["stats"])
        assert stats["numRecords"] == data.num_rows
        for key in ("minValues", "maxValues", "nullCount"):
            assert not set(parts) & set(stats[key]), (key, stats)
    return len(adds)


def test_compaction_stores_the_partition_columns_of_files_that_predate_the_feature(spark, tmp_path):
    root, table = copy_fixture(tmp_path)
    before = rows_of(root)
    for add in table.snapshot().add_actions():  # the inputs hold data columns only
        assert pq.read_schema(f"{root}/{url_decode_path(add.path)}").names == ["number", "a_float"]
    m = compact(table, spark)
    assert (m.num_removed_files, m.num_added_files) == (2, 1)  # partition letter=a
    assert assert_partition_columns_stored(root, table, m.version, ["number", "a_float", "letter"]) == 1
    assert rows_of(root) == before


def test_zorder_stores_the_partition_columns_null_partition_included(spark, tmp_path):
    root, table = copy_fixture(tmp_path)
    before = rows_of(root)
    m = zorder(table, spark, ["number", "a_float"])
    assert m.num_added_files >= 1
    assert assert_partition_columns_stored(root, table, m.version, ["number", "a_float", "letter"]) == \
        m.num_added_files
    assert rows_of(root) == before


def test_row_tracking_columns_come_before_the_partition_columns(spark, tmp_path):
    # Delta Spark writes the materialized row tracking columns among the data columns, and the
    # partition columns after all of them.
    from tests.row_tracking_tables import COMMIT_VERSION_COLUMN, ROW_ID_COLUMN, turn_on_row_tracking

    root, table = copy_fixture(tmp_path)
    turn_on_row_tracking(root)
    before = collections.Counter(repr(sorted(r.items())) for r in kernel_rows(root).to_pylist())
    m = compact(table, spark)
    names = ["number", "a_float", ROW_ID_COLUMN, COMMIT_VERSION_COLUMN, "letter"]
    assert assert_partition_columns_stored(root, table, m.version, names) == 1
    assert collections.Counter(repr(sorted(r.items())) for r in kernel_rows(root).to_pylist()) == before


@pytest.mark.parametrize("mode", ["name", "id"])
def test_materialized_partition_columns_carry_physical_names_and_field_ids(spark, tmp_path, mode):
    # The property turns the feature on (and lists it in the protocol), as Delta Spark's
    # delta.enableMaterializePartitionColumnsFeature does; appends and rewrites store the columns.
    root = str(tmp_path / "t")
    create_table(root, batch(0, 1).schema, partition_columns=("region", "day"),
                 properties={"delta.columnMapping.mode": mode,
                             "delta.enableMaterializePartitionColumnsFeature": "true"})
    table = DeltaTable(root)
    assert "materializePartitionColumns" in table.snapshot().protocol.writer_features
    for i in range(3):
        append(table, batch(i * 10, 10, regions=("eu",)))
    schema = table.snapshot().schema
    physical = [schema[c].physical_name for c in ("id", "x", "name", "ts", "region", "day")]
    assert all(p.startswith("col-") for p in physical)
    assert assert_partition_columns_stored(root, table, 1, physical) == 5  # the appends store them too
    before = rows_of(root)
    m = compact(table, spark)
    assert m.num_added_files == 5  # one per (region, day)
    assert assert_partition_columns_stored(root, table, m.version, physical) == 5
    add = file_actions(table, m.version)[0][0]
    written = pq.read_schema(f"{root}/{url_decode_path(add['path'])}")
    if mode == "id":
        ids = [int(f.metadata[PARQUET_FIELD_ID]) for f in written]
        assert ids == [schema[c].field_id for c in ("id", "x", "name", "ts", "region", "day")]
    assert rows_of(root) == before


def test_purge_stores_the_partition_columns(spark, tmp_path):
    from tests.dv_files import commit_deletion_vector

    root = str(tmp_path / "t")
    create_table(root, batch(0, 1).schema, partition_columns=("region",),
                 properties={"delta.enableDeletionVectors": "true",
                             "delta.enableMaterializePartitionColumnsFeature": "true"})
    table = DeltaTable(root)
    append(table, batch(0, 20))
    for path in table.snapshot().file_paths:
        commit_deletion_vector(table, path, [0, 3])
    before = rows_of(root)
    m = purge(table, spark)
    assert (m.num_removed_files, m.num_added_files) == (2, 2)
    assert assert_partition_columns_stored(root, table, m.version, ["id", "x", "name", "day", "ts", "region"]) == 2
    assert rows_of(root) == before


@pytest.mark.parametrize("value", ["true", "false", None])
def test_the_table_property_alone_asks_for_partition_columns(tmp_path, value):
    # Without the feature, delta.writePartitionColumnsToParquet=true is a "should" we follow;
    # false or unset leaves the files as they always were.
    root = str(tmp_path / "t")
    props = {} if value is None else {"delta.writePartitionColumnsToParquet": value}
    create_table(root, batch(0, 1).schema, partition_columns=("region",), properties=props)
    table = DeltaTable(root)
    assert "materializePartitionColumns" not in (table.snapshot().protocol.writer_features or ())
    append(table, batch(0, 4))
    names = ["id", "x", "name", "day", "ts"] + (["region"] if value == "true" else [])
    assert assert_partition_columns_stored(root, table, 1, names) == 2
