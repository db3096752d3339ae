"""``purge`` on the real deletion-vector tables (modern-tables, conformance), then vacuum.

For every table, delta-rs's query engine (``QueryBuilder``, which applies deletion vectors)
reads the same multiset of rows at every version before and after the purge, and the purge's
version reads as the version before it, for delta-kernel-rs too. A deletion vector that is missing or corrupt fails the
purge with a typed error and nothing written.
"""

from __future__ import annotations

import collections
import json
import os
import shutil

import pytest

from delta_core.errors import DeletionVectorError
from delta_core.log.deletion_vectors import dv_relative_path
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.spark.purge import purge
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.model.actions import Remove
from delta_core.model.partition_values import url_decode_path
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows, kernel_rows_elsewhere
from tests.maintenance.conftest import commit_info
from tests.maintenance.test_purge import all_versions, no_spark, rows
from tests.maintenance.test_purge_plan import DV_TABLES, MODERN

pytestmark = pytest.mark.spark


def copy(root, tmp_path) -> str:
    uri = str(tmp_path / "t")
    shutil.copytree(root, uri)
    return uri


@pytest.mark.parametrize("root", DV_TABLES, ids=lambda p: p.name)
def test_purge_drops_deleted_rows_and_vectors(spark, tmp_path, root):
    uri = copy(root, tmp_path)
    table = DeltaTable(uri)
    snapshot = table.snapshot()
    with_dv = {a.path: a.deletion_vector for a in snapshot.add_actions()
               if a.deletion_vector is not None and a.deletion_vector.cardinality > 0}
    before = all_versions(uri)
    kernel_before = kernel_rows(uri)

    metrics = purge(table, spark)

    assert metrics.version == snapshot.version + 1
    assert metrics.files_with_deletion_vectors == metrics.num_removed_files == len(with_dv)
    assert metrics.num_added_files == len(with_dv)  # one new file per purged file
    assert metrics.num_deletion_vectors_removed == len(with_dv)
    assert metrics.deleted_rows == sum(dv.cardinality for dv in with_dv.values())
    info = commit_info(table, metrics.version)
    assert (info["operation"], info["operationParameters"]) == ("REORG", {"predicate": "[]", "applyPurge": "true"})
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == str(len(with_dv))
    # each remove names the exact vector it drops; no live file has a vector deleting rows any more
    removes = {a.path: a for a in table.commit_actions(metrics.version) if isinstance(a, Remove)}
    assert {p: r.deletion_vector for p, r in removes.items()} == with_dv
    assert not any(r.data_change for r in removes.values())
    after_snapshot = table.snapshot()
    assert not [a for a in after_snapshot.add_actions() if a.deletion_vector is not None
                and a.deletion_vector.cardinality > 0]
    after = all_versions(uri)
    assert {v: after[v] for v in before} == before
    assert after[metrics.version] == before[snapshot.version]
    assert kernel_rows(uri) == kernel_before
    assert after_snapshot.num_records == sum(before[snapshot.version].values())  # stats count live rows
    assert purge(table, no_spark).version is None  # nothing left to purge


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_unreadable_deletion_vector_fails_typed_and_writes_nothing(spark, tmp_path, damage):
    uri = copy(MODERN / "golden-dv-partitioned-with-checkpoint", tmp_path)
    table = DeltaTable(uri)
    snapshot = table.snapshot()
    dv = next(a.deletion_vector for a in snapshot.add_actions() if a.deletion_vector is not None)
    dv_file = os.path.join(uri, url_decode_path(dv_relative_path(dv.storage_type, dv.path_or_inline_dv)))
    if damage == "missing":
        os.remove(dv_file)
    else:
        with open(dv_file, "r+b") as fh:  # flip one byte of the bitmap: the CRC no longer matches
            fh.seek(dv.offset + 4 + 6)
            byte = fh.read(1)
            fh.seek(dv.offset + 4 + 6)
            fh.write(bytes([byte[0] ^ 0xFF]))
    before = listing(uri)
    with pytest.raises(DeletionVectorError) as err:
        purge(table, spark)
    assert "deletion_vector_" in str(err.value)
    assert listing(uri) == before and table.latest_version() == snapshot.version


def test_vacuum_after_purge_deletes_unreferenced_vectors_and_keeps_referenced_ones(spark, tmp_path):
    uri = copy(MODERN / "golden-dv-partitioned-with-checkpoint", tmp_path)
    table = DeltaTable(uri)
    live = {a.partition_values["part"]: a for a in table.snapshot().add_actions() if a.deletion_vector is not None}
    assert sorted(live) == ["6", "8"]

    def dv_key(add) -> str:
        return url_decode_path(dv_relative_path(add.deletion_vector.storage_type,
                                                add.deletion_vector.path_or_inline_dv))

    purged, kept = dv_key(live["6"]), dv_key(live["8"])
    assert purged != kept
    metrics = purge(table, spark, where="part = 6")
    assert metrics.num_removed_files == 1
    expected = rows(uri, metrics.version)
    kernel_expected = kernel_rows(uri)
    assert kernel_expected == kernel_rows(uri, version=metrics.version - 1)

    # inside the retention nothing the purge replaced is deleted: old readers still need it
    vacuum(table, retention_hours=168)
    assert os.path.exists(os.path.join(uri, purged))
    assert os.path.exists(os.path.join(uri, url_decode_path(live["6"].path)))

    old = vacuum(table, retention_hours=0, force=True)
    assert not os.path.exists(os.path.join(uri, purged)), "the purged file's vector outlived the retention"
    assert not os.path.exists(os.path.join(uri, url_decode_path(live["6"].path)))
    assert os.path.exists(os.path.join(uri, kept)), "a vector a live file references was deleted"
    assert os.path.exists(os.path.join(uri, url_decode_path(live["8"].path)))
    listed = {p for p, _ in listing(uri)}
    referenced = {dv_key(a) for a in table.snapshot().add_actions() if a.deletion_vector is not None}
    assert {p for p in listed if os.path.basename(p).startswith("deletion_vector_")} == referenced
    assert old.num_deleted_files >= 2
    assert rows(uri, table.latest_version()) == expected
    assert kernel_rows(uri) == kernel_expected


def test_purge_on_s3(spark, s3_table_uri, s3_storage_options, deltalake_s3_options):
    """The same rewrite over s3fs (moto): vectors read, files written and the commit put through
    the table's storage, executors included. delta-rs's query engine cannot fetch from the moto
    server (and its ``DeltaTable`` refuses the protocol), so the rows before come from the same
    table on local disk and the purged files, which have no vectors left, are read on S3 as plain
    Parquet; delta-kernel-rs reads the table on S3 before and after."""
    import pyarrow as pa
    import s3fs

    source = MODERN / "krs-with-short-dv"
    s3fs.S3FileSystem(**s3_storage_options).put(str(source) + "/", s3_table_uri.removeprefix("s3://"), recursive=True)
    table = DeltaTable(s3_table_uri, s3_storage_options)
    version = table.latest_version()
    before = rows(str(source), version)
    kernel_before = kernel_rows_elsewhere(s3_table_uri, storage_options=deltalake_s3_options)
    assert kernel_before == kernel_rows(str(source))
    metrics = purge(table, spark)
    assert metrics.version == version + 1 and metrics.num_deletion_vectors_removed == 1
    assert not [a for a in table.snapshot().add_actions() if a.deletion_vector is not None]
    after = pa.concat_tables(read_data_file(table.storage, a.path, table.snapshot().metadata)
                             for a in table.snapshot().add_actions())
    assert collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in after.to_pylist()) == before
    assert kernel_rows_elsewhere(s3_table_uri, storage_options=deltalake_s3_options) == kernel_before


def test_purge_removes_a_file_whose_rows_are_all_deleted_without_adding_an_empty_one(spark, tmp_path):
    from tests.dv_files import commit_deletion_vector
    from tests.maintenance.conftest import make_table

    uri = str(tmp_path / "t")
    table = make_table(uri, appends=2, properties={"delta.enableDeletionVectors": "true"})
    gone, partly = sorted(table.snapshot().file_paths)[:2]  # both in region=eu
    commit_deletion_vector(table, gone, list(range(20)))  # each file holds 20 rows
    commit_deletion_vector(table, partly, [0, 5])
    before = rows(uri, table.latest_version())
    kernel_before = kernel_rows(uri)
    assert sum(before.values()) == kernel_before.num_rows == 80 - 22

    metrics = purge(table, spark)

    assert (metrics.num_removed_files, metrics.num_added_files, metrics.files_with_deletion_vectors) == (2, 1, 2)
    info = commit_info(table, metrics.version)
    assert info["operationMetrics"]["numAddedFiles"] == "1" and info["operationMetrics"]["numRemovedFiles"] == "2"
    snapshot = table.snapshot()
    assert gone not in snapshot.file_paths and partly not in snapshot.file_paths
    assert all(json.loads(a.stats)["numRecords"] > 0 for a in snapshot.add_actions())  # no empty file
    assert rows(uri, metrics.version) == before
    assert kernel_rows(uri) == kernel_before
    new_files = {p for p, _ in listing(uri) if p.endswith(".parquet")} - {url_decode_path(p) for p in [gone, partly]}
    assert len(new_files) == snapshot.num_files  # the task left no 0-row file behind on storage either
