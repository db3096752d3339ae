"""``purge`` (REORG TABLE ... APPLY (PURGE)) on Spark, on copies of real tables.

Every rewrite is checked against delta-rs: its query engine (``QueryBuilder``, which applies
deletion vectors) reads the same multiset of rows at every version before and after; and
against delta-kernel-rs, which reads the same rows before and after.
"""

from __future__ import annotations

import collections
import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.dropped_columns import dropped_column_in
from delta_core.maintenance.spark.purge import purge
from delta_core.model.partition_values import url_decode_path
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info
from tests.maintenance.test_purge_plan import CONFORMANCE, MODERN, drop_columns

pytestmark = pytest.mark.spark


def rows(uri: str, version: int, *, storage_options: dict | None = None) -> collections.Counter:
    """The rows delta-rs's query engine reads at ``version`` (deletion vectors applied), as a
    multiset of canonical JSON rows (nested values are lists and dicts)."""
    import deltalake

    dt = deltalake.DeltaTable(uri, version=version, storage_options=storage_options)
    table = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def all_versions(uri: str) -> dict[int, collections.Counter]:
    return {v: rows(uri, v) for v in range(DeltaTable(uri).latest_version() + 1)}


def no_spark():
    raise AssertionError("Spark must not start when there is nothing to purge")


@pytest.mark.parametrize("name", ["golden-table-with-columnmapping-mode-name",
                                  "golden-table-with-columnmapping-mode-id"])
def test_purge_rewrites_files_holding_a_dropped_column(spark, tmp_path, name):
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE / name, root)
    dropped = next(f for f in DeltaTable(str(root)).snapshot().schema.fields if f.name == "StringType")
    table = drop_columns(root, top="StringType")
    uri = str(root)
    before = all_versions(uri)
    kernel_before = kernel_rows(uri)
    read_version = table.latest_version()

    metrics = purge(table, spark)

    assert metrics.version == read_version + 1 and metrics.versions == (read_version + 1,)
    assert (metrics.files_with_dropped_columns, metrics.files_with_deletion_vectors) == (2, 0)
    assert (metrics.num_removed_files, metrics.num_added_files) == (2, 2)
    info = commit_info(table, metrics.version)
    assert info["operation"] == "REORG"
    assert info["operationParameters"] == {"predicate": "[]", "applyPurge": "true"}  # strings, as Delta Spark writes them
    assert info["operationMetrics"]["numRemovedFiles"] == "2" and info["operationMetrics"]["numAddedFiles"] == "2"
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == "0"
    snapshot = table.snapshot()
    for path in snapshot.file_paths:
        schema = pq.read_schema(str(root / url_decode_path(path)))
        assert dropped.physical_name not in schema.names
        assert dropped_column_in(schema, snapshot.metadata) is None
    after = all_versions(uri)
    assert {v: after[v] for v in before} == before  # history reads as it did
    assert after[metrics.version] == before[read_version]
    assert kernel_rows(uri) == kernel_before
    # a second purge finds nothing: no commit, no Spark
    again = purge(table, no_spark)
    assert again.version is None and table.latest_version() == metrics.version


@pytest.mark.parametrize("root", [MODERN / "rs-cdc_ict_table", CONFORMANCE / "golden-table-with-columnmapping-mode-id"],
                         ids=lambda p: p.name)
def test_nothing_to_purge_commits_nothing_and_starts_no_spark(tmp_path, root):
    uri = str(tmp_path / "t")
    shutil.copytree(root, uri)
    table = DeltaTable(uri)
    version = table.latest_version()
    before = listing(uri)
    metrics = purge(table, no_spark)
    assert metrics.version is None and metrics.versions == ()
    assert metrics.num_removed_files == metrics.num_added_files == 0
    assert metrics.files_considered == table.snapshot().num_files
    assert table.latest_version() == version and listing(uri) == before


def test_cli_purge_reports_json(tmp_path, capsys):
    uri = str(tmp_path / "t")
    shutil.copytree(MODERN / "rs-cdc_ict_table", uri)
    assert main(["purge", uri, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] is None and out["files_considered"] == 2 and out["max_deleted_rows_ratio"] == 0.0


@pytest.mark.parametrize("ratio", ["1.5", "-0.5", "nan", "x"])
def test_cli_refuses_a_ratio_out_of_range(tmp_path, capsys, ratio):
    uri = str(tmp_path / "t")
    shutil.copytree(MODERN / "rs-cdc_ict_table", uri)
    before = listing(uri)
    assert main(["purge", uri, "--json", f"--max-deleted-rows-ratio={ratio}"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"
    assert listing(uri) == before
