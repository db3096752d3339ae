"""Purge planning and dropped-column detection: no Spark, real tables (modern-tables, conformance)
copied to tmp_path when changed."""

from __future__ import annotations

import json
import pathlib
import shutil
from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import ConfigError, MissingDataFileError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.dropped_columns import (
    columns_were_dropped,
    dropped_column_in,
    files_with_dropped_columns,
)
from delta_core.maintenance.purge_plan import plan_purge
from delta_core.model.actions import action_to_json
from delta_core.model.partition_values import url_decode_path
from delta_core.write.operation_records import ReorgParameters
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.core_write.conftest import listing

# the fixture tables of tests/data (tests/conftest.py)
CONFORMANCE = CONFORMANCE_DIR
MODERN = MODERN_DIR
DV_TABLES = [MODERN / "golden-dv-partitioned-with-checkpoint", MODERN / "krs-with-short-dv",
             MODERN / "rs-cdf-table-with-cdc-and-dvs", CONFORMANCE / "golden-dv-with-columnmapping",
             CONFORMANCE / "rs-table_with_deletion_logs", CONFORMANCE / "golden-log-replay-dv-key-cases"]
CM_TABLES = [CONFORMANCE / "golden-table-with-columnmapping-mode-name",
             CONFORMANCE / "golden-table-with-columnmapping-mode-id",
             CONFORMANCE / "rs-table_with_column_mapping", CONFORMANCE / "golden-dv-with-columnmapping",
             CONFORMANCE / "golden-data-reader-timestamp_ntz-id-mode"]


@pytest.mark.parametrize("root", DV_TABLES, ids=lambda p: p.name)
def test_selects_exactly_the_files_whose_vectors_delete_rows(root):
    snapshot = DeltaTable(str(root)).snapshot()
    files = snapshot.files
    dv = files.column("deletion_vector")
    cardinality = pc.fill_null(pc.struct_field(dv, "cardinality"), 0)
    expected = set(files.filter(pc.greater(cardinality, 0)).column("path").to_pylist())
    assert expected  # every table here has at least one vector deleting rows

    plan = plan_purge(snapshot)
    assert {g.paths[0] for g in plan.groups} == expected
    assert all(len(g.files) == 1 for g in plan.groups)  # one file per group: layout kept
    assert plan.files_with_deletion_vectors == len(expected) and plan.files_with_dropped_columns == 0
    assert plan.deleted_rows == pc.sum(cardinality).as_py()
    assert plan.files_considered == snapshot.num_files
    assert plan.operation_parameters() == ReorgParameters(predicate=None)


def test_ratio_and_predicate_narrow_the_selection():
    snapshot = DeltaTable(str(MODERN / "golden-dv-partitioned-with-checkpoint")).snapshot()
    plan = plan_purge(snapshot)
    by_part = {g.partition_dict["part"]: g for g in plan.groups}
    assert sorted(by_part) == ["6", "8"]
    only = plan_purge(snapshot, where="part = 6")
    assert [g.paths for g in only.groups] == [by_part["6"].paths]
    assert only.predicate is not None and "part" in only.predicate
    assert only.operation_parameters().to_commit_info() == {
        "predicate": json.dumps([only.predicate]), "applyPurge": True}
    # ratio: each file deletes 1 row; above its share nothing is selected, below it both are
    records = dict(zip(*(c.to_pylist() for c in snapshot.file_columns("path", "num_records").columns)))
    shares = [1 / records[g.paths[0]] for g in plan.groups]
    assert plan_purge(snapshot, max_deleted_rows_ratio=max(shares)).is_empty
    assert plan_purge(snapshot, max_deleted_rows_ratio=min(shares) / 2).num_input_files == 2


@pytest.mark.parametrize("ratio", [-0.1, 1.5, float("nan")])
def test_ratio_out_of_range_is_a_config_error(ratio):
    snapshot = DeltaTable(str(MODERN / "krs-with-short-dv")).snapshot()
    with pytest.raises(ConfigError, match="max deleted rows ratio"):
        plan_purge(snapshot, max_deleted_rows_ratio=ratio)


@pytest.mark.parametrize("root", CM_TABLES, ids=lambda p: p.name)
def test_no_column_dropped_in_the_real_column_mapping_tables(root):
    """Every id up to maxColumnId is still in these schemas (nested ids included), so no footer
    needs reading; their footers indeed hold no column outside the schema."""
    snapshot = DeltaTable(str(root)).snapshot()
    assert not columns_were_dropped(snapshot.metadata)
    for path in snapshot.file_paths:
        schema = pq.read_schema(str(root / url_decode_path(path)))
        assert dropped_column_in(schema, snapshot.metadata) is None


def drop_columns(root: pathlib.Path, *, top: str, nested: tuple[str, str] | None = None) -> DeltaTable:
    """Commit the next version: the schema without column ``top`` (and ``nested`` = (struct,
    field)), as ALTER TABLE DROP COLUMN does under column mapping: data files untouched."""
    table = DeltaTable(str(root))
    snapshot = table.snapshot()
    schema = json.loads(snapshot.metadata.schema_string)
    schema["fields"] = [f for f in schema["fields"] if f["name"] != top]
    if nested is not None:
        struct = next(f for f in schema["fields"] if f["name"] == nested[0])
        struct["type"]["fields"] = [f for f in struct["type"]["fields"] if f["name"] != nested[1]]
    meta = action_to_json(replace(snapshot.metadata, schema_string=json.dumps(schema)))
    version = snapshot.version + 1
    lines = [{"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "ALTER TABLE DROP COLUMNS",
                             "operationParameters": {"columns": json.dumps([top])}}},
             meta]
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return DeltaTable(str(root))


@pytest.mark.parametrize("name", ["golden-table-with-columnmapping-mode-name", "golden-table-with-columnmapping-mode-id"])
def test_files_holding_a_dropped_column_are_found(tmp_path, name):
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE / name, root)
    table = drop_columns(root, top="StringType")
    snapshot = table.snapshot()
    assert columns_were_dropped(snapshot.metadata)
    found = files_with_dropped_columns(table.storage, snapshot.metadata, snapshot.file_paths)
    assert found == set(snapshot.file_paths)
    plan = plan_purge(snapshot, dropped_column_paths=found)
    assert plan.num_input_files == 2 and plan.files_with_dropped_columns == 2
    assert plan.files_with_deletion_vectors == 0 and plan.deleted_rows == 0


def test_a_dropped_nested_field_is_found(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE / "golden-table-with-columnmapping-mode-name", root)
    snapshot = DeltaTable(str(root)).snapshot()
    nested = next(f for f in snapshot.schema.fields if f.name == "nested_struct")
    inner = nested.type.fields[0]
    table = drop_columns(root, top="no such column", nested=("nested_struct", inner.name))
    snapshot = table.snapshot()
    path = snapshot.file_paths[0]
    extra = dropped_column_in(pq.read_schema(str(root / url_decode_path(path))), snapshot.metadata)
    assert extra == f"{nested.physical_name}.{inner.physical_name}"


def test_materialized_row_tracking_columns_are_not_dropped_columns():
    snapshot = DeltaTable(str(CONFORMANCE / "golden-table-with-columnmapping-mode-name")).snapshot()
    conf = dict(snapshot.metadata.configuration)
    conf["delta.rowTracking.materializedRowIdColumnName"] = "_row-id-col"
    metadata = replace(snapshot.metadata, configuration=conf)
    file_schema = pa.schema([pa.field("_row-id-col", pa.int64())])
    assert dropped_column_in(file_schema, metadata) is None
    assert dropped_column_in(pa.schema([pa.field("col-gone", pa.int64())]), metadata) == "col-gone"


def test_missing_file_is_named_only_when_footers_are_needed(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE / "golden-table-with-columnmapping-mode-name", root)
    snapshot = DeltaTable(str(root)).snapshot()
    victim = snapshot.file_paths[0]
    (root / url_decode_path(victim)).unlink()
    # nothing dropped: no footer is read, so the missing file does not matter here
    assert files_with_dropped_columns(DeltaTable(str(root)).storage, snapshot.metadata, snapshot.file_paths) == set()
    table = drop_columns(root, top="StringType")
    snapshot = table.snapshot()
    before = listing(str(root))
    with pytest.raises(MissingDataFileError, match="missing from storage") as err:
        files_with_dropped_columns(table.storage, snapshot.metadata, snapshot.file_paths)
    assert url_decode_path(victim) in err.value.path
    assert listing(str(root)) == before
