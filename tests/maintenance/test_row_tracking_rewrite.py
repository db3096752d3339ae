"""Rewrites of row-tracking tables keep every row's stable row id and row commit version
(PROTOCOL.md "Row Tracking": materialized columns, ``delta.rowTracking.preserved``), give the new
files fresh ids above the high-water mark, and drop rows a deletion vector removed; delta-rs and
delta-kernel-rs read the same rows after as before (kernel-rs ignoring the materialized columns)."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import CorruptLogError, MaintenanceError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import DataFileReader, rewrite_files, rewrite_output_key
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import encode_actions
from delta_core.model.partition_values import url_decode_path
from delta_core.model.schema import PARQUET_FIELD_ID
from delta_core.write.row_tracking import FileRowIds, input_row_ids, preserved_tags
from delta_core.write.table_writes import append, commit_rewrite, create_table
from tests.core_write.conftest import listing
from tests.dv_files import rows_applying_dvs, write_uuid_dv
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info, multiset
from tests.row_tracking_tables import (
    COMMIT_VERSION_COLUMN,
    ROW_ID_COLUMN,
    assert_disjoint,
    high_water_mark,
    row_id_ranges,
    stable_ids,
    turn_on_row_tracking,
)

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": list(range(start, start + n)), "s": [f"v{i}" for i in range(start, start + n)]},
                    schema=SCHEMA)


def rt_table(root: str) -> DeltaTable:
    """Three files written before row tracking was on (ids 0..8 by the backfill) and one after
    (fresh ids from our transaction): stable ids come from two sources."""
    t = create_table(root, SCHEMA)
    for start in (0, 3, 6):
        append(t, rows(start, 3))
    turn_on_row_tracking(root)
    append(t, rows(9, 2))
    return t


def delete_rows(t: DeltaTable, root: str, base_row_id: int, indexes: list[int]) -> dict:
    """Give the file whose ``baseRowId`` is given a deletion vector over its physical rows
    ``indexes`` (as Delta Spark's DELETE would); returns the row at its physical index 1."""
    snap = t.snapshot()
    victim = next(a for a in snap.add_actions() if a.base_row_id == base_row_id)
    kept = pq.read_table(f"{root}/{url_decode_path(victim.path)}").slice(1, 1).to_pylist()[0]
    (dv,) = write_uuid_dv(root, [indexes])
    t.storage.put_if_absent(f"_delta_log/{snap.version + 1:020d}.json", encode_actions([
        victim.to_remove(1, data_change=True), dataclasses.replace(victim, deletion_vector=dv)]))
    return kept


def check_preserving_rewrite(t: DeltaTable, root: str, version: int, before: dict, versions_rows: dict) -> None:
    assert stable_ids(root) == before  # every row kept its stable id and commit version
    info = commit_info(t, version)
    assert info["tags"] == {"delta.rowTracking.preserved": "true"}
    new = [a for a in t.snapshot().add_actions() if a.default_row_commit_version == version]
    assert new and all(a.base_row_id > high_water_mark(root, version - 1) for a in new)
    assert high_water_mark(root) == max(last for _, last in row_id_ranges(root))
    assert_disjoint(row_id_ranges(root))
    for a in new:  # the new files store the materialized columns, outside the stats
        f = pq.read_table(f"{root}/{url_decode_path(a.path)}")
        assert f.column_names == ["id", "s", ROW_ID_COLUMN, COMMIT_VERSION_COLUMN]
        assert f.column(ROW_ID_COLUMN).null_count == 0
        stats = json.loads(a.stats)
        assert set(stats["minValues"]) == {"id", "s"} and set(stats["nullCount"]) == {"id", "s"}
    for v, expected in versions_rows.items():  # delta-rs reads the same rows at every version
        assert multiset(rows_applying_dvs(root, v)) == expected


@pytest.mark.spark
def test_compaction_keeps_stable_row_ids(spark, tmp_path):
    root = str(tmp_path / "t")
    t = rt_table(root)
    kept = delete_rows(t, root, 3, [0, 2])  # a DV over physical rows 0 and 2 of ids 3..5
    before = stable_ids(root)
    assert len(before) == 9 and before[(kept["id"], kept["s"])] == (4, 4) and before[(9, "v9")][1] == 5
    versions_rows = {v: multiset(rows_applying_dvs(root, v)) for v in range(t.latest_version() + 1)}
    kernel_before = kernel_rows(root)
    m = compact(t, spark, target_size=10**9, min_file_size=10**9)
    assert m.num_removed_files == 4 and m.num_added_files == 1
    assert json.loads(next(t.snapshot().add_actions()).stats)["numRecords"] == 9  # deleted rows not written
    versions_rows[m.version] = versions_rows[m.version - 1]
    check_preserving_rewrite(t, root, m.version, before, versions_rows)
    assert kernel_rows(root) == kernel_before
    # a second compaction reads the materialized values back instead of the new baseRowId
    append(t, rows(20, 2))
    before = stable_ids(root)
    kernel_before = kernel_rows(root)
    sizes = [a.size for a in t.snapshot().add_actions()]  # both small, together a file that is not
    again = compact(t, spark, target_size=10**9, min_file_size=max(sizes) + 1)
    assert again.num_removed_files == 2
    assert stable_ids(root) == before
    assert kernel_rows(root) == kernel_before


@pytest.mark.spark
def test_zorder_keeps_stable_row_ids(spark, tmp_path):
    root = str(tmp_path / "t")
    t = rt_table(root)
    delete_rows(t, root, 0, [1])
    before = stable_ids(root)
    expected = multiset(rows_applying_dvs(root))
    kernel_before = kernel_rows(root)
    m = zorder(t, spark, ["id", "s"])
    assert m.version is not None
    check_preserving_rewrite(t, root, m.version, before, {m.version: expected})
    assert kernel_rows(root) == kernel_before


def test_rewrite_drops_rows_a_deletion_vector_removed_and_keeps_the_others_ids(tmp_path):
    root = str(tmp_path / "t")
    t = rt_table(root)
    middle = delete_rows(t, root, 3, [0, 2])  # 3 rows, ids 3..5: physical rows 0 and 2 deleted
    snap = t.snapshot()
    before = stable_ids(root)
    assert len(before) == 9 and before[(middle["id"], middle["s"])] == (4, 4)
    paths = snap.file_paths
    ids = input_row_ids(snap, paths)
    adds = {a.path: a for a in snap.add_actions()}
    new = rewrite_files(t.storage, paths, metadata=snap.metadata, partition_values={},
                        deletion_vectors=[adds[p].deletion_vector for p in paths], row_ids=ids,
                        key=rewrite_output_key(snap.metadata, {}))
    r = commit_rewrite(t, removed=list(adds.values()), added=[new], read_snapshot=snap,
                       tags={"delta.rowTracking.preserved": "true"})
    assert json.loads(new.stats)["numRecords"] == 9
    assert stable_ids(root) == before
    assert multiset(rows_applying_dvs(root)) == multiset(rows_applying_dvs(root, r.version - 1))
    assert kernel_rows(root) == kernel_rows(root, version=r.version - 1)


def test_reader_without_row_ids_on_an_enabled_table_is_unchanged(tmp_path):
    root = str(tmp_path / "t")
    t = rt_table(root)
    snap = t.snapshot()
    path = snap.file_paths[0]
    plain = DataFileReader(t.storage, snap.metadata).read(path)
    assert plain.column_names == ["id", "s"]
    with_ids = DataFileReader(t.storage, snap.metadata, row_ids=input_row_ids(snap, [path])).read(path)
    assert with_ids.column_names == ["id", "s", ROW_ID_COLUMN, COMMIT_VERSION_COLUMN]


def test_rewrite_without_row_ids_on_an_enabled_table_is_refused(tmp_path):
    # a rewrite that did not read the inputs' row ids would give every row a new stable id
    root = str(tmp_path / "t")
    t = rt_table(root)
    snap = t.snapshot()
    before = listing(root)
    with pytest.raises(MaintenanceError, match="row_ids"):
        rewrite_files(t.storage, snap.file_paths, metadata=snap.metadata, partition_values={},
                      key=rewrite_output_key(snap.metadata, {}))
    assert listing(root) == before


def test_input_without_base_row_id_on_an_enabled_table_is_refused(tmp_path):
    root = str(tmp_path / "t")
    t = rt_table(root)
    snap = t.snapshot()
    path = snap.file_paths[0]
    before = listing(root)
    with pytest.raises(CorruptLogError, match="baseRowId") as ei:
        rewrite_files(t.storage, [path], metadata=snap.metadata, partition_values={},
                      row_ids={path: FileRowIds(None, None)}, key=rewrite_output_key(snap.metadata, {}))
    assert ei.value.path.endswith(url_decode_path(path))
    assert listing(root) == before


def test_id_mode_table_keeps_stable_ids_through_two_rewrites(conformance_dir, tmp_path):
    # column mapping mode id: data columns are found by field id, the hidden columns (no id) by name
    root = str(tmp_path / "t")
    shutil.copytree(conformance_dir / "golden-table-with-columnmapping-mode-id", root)
    turn_on_row_tracking(root)
    t = DeltaTable(root)
    key = (t.snapshot().schema["IntegerType"].physical_name,)
    before = stable_ids(root, key_columns=key)
    assert len(before) == 6
    for _ in range(2):  # the second rewrite reads the materialized values the first one wrote
        snap = t.snapshot()
        adds = list(snap.add_actions())
        new = rewrite_files(t.storage, [a.path for a in adds], metadata=snap.metadata, partition_values={},
                            row_ids=input_row_ids(snap, [a.path for a in adds]),
                            key=rewrite_output_key(snap.metadata, {}))
        r = commit_rewrite(t, removed=adds, added=[new], read_snapshot=snap,
                           tags=preserved_tags(snap.protocol, snap.metadata))
        assert stable_ids(root, key_columns=key) == before
        written = pq.read_schema(f"{root}/{url_decode_path(new.path)}")
        assert written.names[-2:] == [ROW_ID_COLUMN, COMMIT_VERSION_COLUMN]
        assert all(written.field(n).metadata and PARQUET_FIELD_ID in written.field(n).metadata
                   for n in written.names[:-2])
        assert commit_info(t, r.version)["tags"] == {"delta.rowTracking.preserved": "true"}
        assert kernel_rows(root) == kernel_rows(root, version=r.version - 1)
