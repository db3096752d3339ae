"""Compaction and Z-order on tables with deletion vectors (PROTOCOL.md "Deletion Vectors").

On real tables written by Delta Spark, delta-rs and kernel (``u`` vectors, column mapping,
partitions, checkpoints): delta-rs's query engine (which applies vectors) reads the same
multiset of rows before and after every rewrite, at every version, and delta-kernel-rs the
same rows before and after; the ``remove`` of each
input carries its exact descriptor; the new files have no vector and count live rows only.
A missing or corrupt vector file stops the rewrite with a typed error and writes nothing.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest

from delta_core.errors import DeletionVectorError
from delta_core.log.deletion_vectors import dv_file_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import Add, Remove
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.core_write.conftest import listing
from tests.dv_files import rows_applying_dvs
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import multiset

pytestmark = pytest.mark.spark

TABLES = {
    "golden-dv-partitioned-with-checkpoint": MODERN_DIR,
    "krs-with-short-dv": MODERN_DIR,
    "rs-cdf-table-with-cdc-and-dvs": MODERN_DIR,
    "golden-dv-with-columnmapping": CONFORMANCE_DIR,
    "rs-table_with_deletion_logs": CONFORMANCE_DIR,
}


def copy_table(name: str, tmp_path) -> str:
    source = TABLES[name] / name
    if not source.is_dir():
        pytest.skip(f"{source} not present")
    uri = str(tmp_path / name)
    shutil.copytree(source, uri)
    return uri


def all_versions(uri: str) -> dict[int, object]:
    table = DeltaTable(uri)
    out = {}
    for v in range(table.latest_version() + 1):
        try:
            out[v] = multiset(rows_applying_dvs(uri, v))
        except OSError:  # a version whose commit was cleaned up: not readable by anyone
            continue
    return out


def check_rewrite(table: DeltaTable, version: int, before_rows) -> None:
    """The commit at ``version`` removed each input with its exact vector and added files with
    none, whose ``numRecords`` sum to the live rows removed."""
    prior = {(a.path, a.deletion_vector) for a in table.snapshot(version - 1).add_actions()}
    actions = table.commit_actions(version)
    removes = [a for a in actions if isinstance(a, Remove)]
    adds = [a for a in actions if isinstance(a, Add)]
    assert removes and adds
    assert {(r.path, r.deletion_vector) for r in removes} <= prior
    assert all(not r.data_change for r in removes) and all(not a.data_change for a in adds)
    assert all(a.deletion_vector is None for a in adds)
    live_removed = sum(json.loads(r.stats)["numRecords"] - (r.deletion_vector.cardinality if r.deletion_vector
                                                            else 0) for r in removes)
    assert sum(json.loads(a.stats)["numRecords"] for a in adds) == live_removed


@pytest.mark.parametrize("name", sorted(TABLES))
def test_compaction_applies_deletion_vectors(spark, tmp_path, name):
    uri = copy_table(name, tmp_path)
    table = DeltaTable(uri)
    versions = all_versions(uri)
    kernel_before = kernel_rows(uri)
    snap = table.snapshot()
    with_dv = sum(a.deletion_vector is not None for a in snap.add_actions())
    ratio = 0.05
    if name == "rs-table_with_deletion_logs":
        # One file, 2 of 100 rows deleted: under the default ratio, so left alone ...
        assert compact(table, spark).version is None
        ratio = 0.01  # ... and rewritten alone above a lower one
    metrics = compact(table, spark, max_deleted_rows_ratio=ratio)
    assert metrics.version == snap.version + 1 and metrics.num_deletion_vectors_removed == with_dv > 0
    check_rewrite(table, metrics.version, versions[snap.version])
    assert all(a.deletion_vector is None for a in table.snapshot().add_actions())
    assert multiset(rows_applying_dvs(uri)) == versions[snap.version]
    assert all_versions(uri) == {**versions, metrics.version: versions[snap.version]}
    assert kernel_rows(uri) == kernel_before
    info = table.history(1)[0].commit_info
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == str(with_dv)


@pytest.mark.parametrize(("name", "columns"), [("golden-dv-with-columnmapping", ["col1"]),
                                               ("golden-dv-partitioned-with-checkpoint", ["col2"])])
def test_zorder_applies_deletion_vectors(spark, tmp_path, name, columns):
    uri = copy_table(name, tmp_path)
    table = DeltaTable(uri)
    versions = all_versions(uri)
    kernel_before = kernel_rows(uri)
    read = table.latest_version()
    metrics = zorder(table, spark, columns)
    assert metrics.versions and metrics.num_deletion_vectors_removed > 0
    for v in metrics.versions:
        check_rewrite(table, v, versions[read])
    assert all(a.deletion_vector is None for a in table.snapshot().add_actions())
    assert multiset(rows_applying_dvs(uri)) == versions[read]
    assert all_versions(uri) == {**versions, **dict.fromkeys(metrics.versions, versions[read])}
    assert kernel_rows(uri) == kernel_before


def test_a_lone_file_over_the_ratio_is_rewritten_alone(spark, tmp_path):
    """krs-with-short-dv: a 5-row file with 3 rows deleted and a clean file. With every file
    "large enough", only the file over the ratio is rewritten, alone in its bin."""
    uri = copy_table("krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    before = multiset(rows_applying_dvs(uri))
    kernel_before = kernel_rows(uri)
    snap = table.snapshot()
    dv_file = next(a for a in snap.add_actions() if a.deletion_vector is not None)
    assert compact(table, spark, min_file_size=1, target_size=1, max_deleted_rows_ratio=0.7).version is None
    metrics = compact(table, spark, min_file_size=1, target_size=1)
    assert (metrics.num_bins, metrics.num_removed_files, metrics.num_added_files) == (1, 1, 1)
    removes = [a for a in table.commit_actions(metrics.version) if isinstance(a, Remove)]
    assert [(r.path, r.deletion_vector) for r in removes] == [(dv_file.path, dv_file.deletion_vector)]
    assert multiset(rows_applying_dvs(uri)) == before
    assert kernel_rows(uri) == kernel_before
    assert compact(table, spark, min_file_size=1, target_size=1).version is None  # nothing left to clean


def _break_dv(uri: str, how: str) -> None:
    table = DeltaTable(uri)
    dv = next(a.deletion_vector for a in table.snapshot().add_actions() if a.deletion_vector is not None)
    path = os.path.join(uri, dv_file_key(dv, uri))
    if how == "missing":
        os.remove(path)
        return
    data = bytearray(open(path, "rb").read())
    data[dv.offset + 4 + dv.size_in_bytes - 1] ^= 0xFF  # last bitmap byte: the CRC fails
    with open(path, "wb") as fh:
        fh.write(bytes(data))


@pytest.mark.parametrize("how", ["missing", "corrupt"])
@pytest.mark.parametrize("operation", ["compact", "zorder"])
def test_broken_vector_file_is_a_typed_error_and_nothing_is_written(spark, tmp_path, how, operation):
    uri = copy_table("golden-dv-partitioned-with-checkpoint", tmp_path)
    _break_dv(uri, how)
    table = DeltaTable(uri)
    version = table.latest_version()
    before = listing(uri)
    with pytest.raises(DeletionVectorError, match="missing" if how == "missing" else "CRC-32") as info:
        if operation == "compact":
            compact(table, spark)
        else:
            zorder(table, spark, ["col2"])
    assert "deletion_vector_" in str(info.value)  # names the file
    assert listing(uri) == before and table.latest_version() == version


def test_rows_of_new_files_are_the_live_rows(spark, tmp_path):
    """Stats of the rewritten file describe the live rows only (min/max/nullCount)."""
    uri = copy_table("krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    live = rows_applying_dvs(uri)
    kernel_before = kernel_rows(uri)
    metrics = compact(table, spark)
    assert kernel_rows(uri) == kernel_before
    (add,) = [a for a in table.commit_actions(metrics.version) if isinstance(a, Add)]
    stats = json.loads(add.stats)
    assert stats["numRecords"] == live.num_rows
    ids = live.column("id").to_pylist()
    assert (stats["minValues"]["id"], stats["maxValues"]["id"]) == (min(ids), max(ids))
    assert stats["nullCount"]["value"] == live.column("value").null_count
    assert isinstance(live, pa.Table)


def test_cli_max_deleted_rows_ratio(spark, capsys, tmp_path):
    """``compact --max-deleted-rows-ratio``: krs-with-short-dv's vector deletes 3 of 5 rows (0.6)."""
    from delta_core.cli.main import main

    uri = copy_table("krs-with-short-dv", tmp_path)
    before = listing(uri)
    common = ["compact", uri, "--json", "--spark-master", "local[2]", "--min-file-size", "1", "--target-size", "1"]
    assert main([*common, "--max-deleted-rows-ratio", "1.5"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"
    assert main([*common, "--max-deleted-rows-ratio", "0.6"]) == 0  # 0.6 is not above 0.6
    out = json.loads(capsys.readouterr().out)
    assert out["version"] is None and out["max_deleted_rows_ratio"] == 0.6
    assert listing(uri) == before
    assert main([*common, "--max-deleted-rows-ratio", "0.59"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["num_removed_files"], out["num_added_files"], out["num_deletion_vectors_removed"]) == (1, 1, 1)
    assert kernel_rows(uri) == kernel_rows(uri, version=out["version"] - 1)
