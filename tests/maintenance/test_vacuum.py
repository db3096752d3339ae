"""Vacuum over real tables: exactly the expected files go; live, in-retention and young stay."""

from __future__ import annotations

import datetime as dt
import os
import threading
import time

import pytest

from delta_core.errors import RetentionTooShortError
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.vacuum import list_table_files, vacuum
from delta_core.model.actions import Add, encode_actions
from delta_core.model.partition_values import url_decode_path
from delta_core.storage.base import Storage
from delta_core.write.table_writes import delete_files
from tests.maintenance.conftest import DAY, all_files, commit_info, deltars_rows, make_table, multiset, touch


def test_dry_run_then_vacuum_delete_exactly_the_expected_set(scene, table_uri):
    table, removed, extra, now = scene
    later = dt.datetime.fromtimestamp(now, dt.UTC) + 10 * DAY
    live = {url_decode_path(p) for p in table.snapshot().file_paths}
    expected = sorted(removed + [extra["orphan_old"], extra["orphan_root"], extra["gone_partition"]])
    before_files = all_files(table_uri)
    dry = vacuum(table, dry_run=True, clock=lambda: int(later.timestamp() * 1000))
    assert dry.version is None and dry.num_files_to_delete == len(expected)
    assert sorted(dry.paths) == sorted(table.storage.uri(k) for k in expected)
    assert all_files(table_uri) == before_files
    rows = multiset(deltars_rows(table_uri))
    metrics = vacuum(table, clock=lambda: int(later.timestamp() * 1000))
    assert metrics.num_deleted_files == len(expected)
    assert all_files(table_uri) == before_files - set(expected)
    assert live <= all_files(table_uri) and extra["young"] in all_files(table_uri)
    assert not os.path.exists(os.path.join(table_uri, "region=zz"))  # empty directory removed
    assert metrics.num_vacuumed_directories >= 1  # region=zz
    assert extra["cdc_old"] in all_files(table_uri)  # never under a "_" directory
    assert multiset(deltars_rows(table_uri)) == rows
    start, end = commit_info(table, metrics.start_version), commit_info(table, metrics.version)
    assert start["operation"] == "VACUUM START" and end["operation"] == "VACUUM END"
    assert start["operationParameters"]["retentionCheckEnabled"] == "true"
    assert start["operationParameters"]["defaultRetentionMillis"] == str(7 * 86_400_000)
    assert start["operationMetrics"]["numFilesToDelete"] == str(len(expected))
    assert end["operationMetrics"]["numDeletedFiles"] == str(len(expected))
    assert end["operationParameters"]["status"] == "COMPLETED"


class ContractOnlyStorage:
    """A real store seen only through the ``Storage`` contract: any other attribute (``fs``,
    ``local_path``, ...) does not exist. Records the directories listed recursively."""

    CONTRACT = frozenset(n for n in vars(Storage) if not n.startswith("_"))

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self.recursive: list[str] = []

    def list_recursive(self, directory: str = ""):
        self.recursive.append(directory)
        return self._inner.list_recursive(directory)

    def __getattr__(self, name: str):
        if name not in self.CONTRACT:
            raise AttributeError(f"{name!r} is not part of the Storage contract")
        return getattr(self._inner, name)


def test_vacuum_uses_only_the_storage_contract(scene, table_uri):
    table, removed, extra, now = scene
    later = dt.datetime.fromtimestamp(now, dt.UTC) + 10 * DAY
    expected = sorted(removed + [extra["orphan_old"], extra["orphan_root"], extra["gone_partition"]])
    storage = ContractOnlyStorage(table.storage)
    before = all_files(table_uri)
    metrics = vacuum(DeltaTable(storage=storage), clock=lambda: int(later.timestamp() * 1000))
    assert metrics.num_deleted_files == len(expected)
    assert all_files(table_uri) == before - set(expected)
    assert not os.path.exists(os.path.join(table_uri, "region=zz"))  # emptied, then removed
    assert metrics.num_vacuumed_directories >= 1
    # only the non-hidden top-level directories were walked; never _delta_log or "_"/"." ones
    assert sorted(storage.recursive) == ["region=eu", "region=us", "region=zz"]


def test_the_listing_comes_directory_by_directory_and_stops_cleanly(table_uri):
    table = make_table(table_uri, appends=1)
    old = time.time() - 30 * 86400
    orphans = {touch(table_uri, f"region=p{i:03d}/orphan.parquet", mtime=old) for i in range(100)}
    touch(table_uri, "region=p000/.x.crc", mtime=old)
    batches = list(list_table_files(table.storage, ["region"], threads=4))
    listed = [k for b in batches for k in b.column("key").to_pylist()]
    assert sorted(listed) == sorted(all_files(table_uri))  # hidden files below a directory too: the plan skips them
    assert orphans <= set(listed) and len(batches) >= 100  # a batch per directory at least
    # A consumer that stops early: the listing threads, some waiting on the full queue (more
    # directories than it holds), are let through and finish.
    before = threading.active_count()
    stream = list_table_files(table.storage, ["region"], threads=8)
    assert next(stream).num_rows >= 1
    closing = threading.Thread(target=stream.close)
    closing.start()
    closing.join(timeout=60)
    assert not closing.is_alive()
    deadline = time.monotonic() + 30
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= before


def test_tombstones_inside_retention_are_kept(scene, table_uri):
    table, removed, extra, now = scene
    soon = dt.datetime.fromtimestamp(now, dt.UTC) + DAY
    metrics = vacuum(table, clock=lambda: int(soon.timestamp() * 1000), dry_run=True)
    deleted = {k.split(table.storage.root + "/", 1)[1] for k in metrics.paths}
    assert not deleted & set(removed)
    assert extra["orphan_old"] in deleted


def test_short_retention_refused_unless_forced(scene, table_uri):
    table, removed, extra, now = scene
    with pytest.raises(RetentionTooShortError, match="deletedFileRetentionDuration"):
        vacuum(table, retention_hours=1)
    metrics = vacuum(table, retention_hours=0, force=True, dry_run=True, clock=lambda: int((now + 60) * 1000))
    deleted = {k.split(table.storage.root + "/", 1)[1] for k in metrics.paths}
    assert set(removed) <= deleted and extra["young"] not in deleted
    assert metrics.retention_check_enabled is False


def test_paths_outside_the_root_in_the_log_are_ignored(tmp_path, caplog):
    uri = str(tmp_path / "t")
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(b"precious")
    table = make_table(uri, appends=1)
    v = table.latest_version()
    table.storage.put_if_absent(commit_key(v + 1), encode_actions([
        Add("file://" + str(outside), {"region": "eu"}, 8, 0, True),
        Add(str(tmp_path / "elsewhere.parquet"), {"region": "eu"}, 8, 0, True),
    ]))
    metrics = vacuum(table, clock=lambda: int(time.time() * 1000) + 30 * 86_400_000)
    assert metrics.ignored_log_paths == 2 and outside.read_bytes() == b"precious"
    assert "outside the table root" in caplog.text


@pytest.mark.s3
def test_on_s3(s3_table_uri, s3_storage_options):
    import s3fs

    table = make_table(s3_table_uri, appends=2, storage_options=s3_storage_options)
    snap = table.snapshot()
    delete_files(table, snap.file_paths[:1])
    fs = s3fs.S3FileSystem(**s3_storage_options)
    bucket_path = s3_table_uri[len("s3://"):]
    fs.pipe(f"{bucket_path}/region=eu/orphan.parquet", b"x")
    fs.pipe(f"{bucket_path}/_hidden/keep.parquet", b"x")
    later = int(time.time() * 1000) + 10 * 86_400_000
    dry = vacuum(table, dry_run=True, clock=lambda: later)
    expected = sorted([table.storage.uri(url_decode_path(snap.file_paths[0])),
                       table.storage.uri("region=eu/orphan.parquet")])
    assert sorted(dry.paths) == expected
    metrics = vacuum(table, clock=lambda: later)
    assert metrics.num_deleted_files == 2
    assert not fs.exists(f"{bucket_path}/region=eu/orphan.parquet")
    assert fs.exists(f"{bucket_path}/_hidden/keep.parquet")
    assert all(fs.exists(f"{bucket_path}/{url_decode_path(p)}") for p in table.snapshot().file_paths)


def test_deletion_vector_files_of_live_files_are_kept(tmp_path):
    import uuid

    from tests.dv_files import z85_encode

    uri = str(tmp_path / "t")
    table = make_table(uri, appends=1, properties={"delta.enableDeletionVectors": "true"})
    snap = table.snapshot()
    victim = next(snap.add_actions())
    u = uuid.uuid4()
    old = time.time() - 30 * 86400
    dv_key = touch(uri, f"ab/deletion_vector_{u}.bin", mtime=old)
    stale_dv = touch(uri, f"deletion_vector_{uuid.uuid4()}.bin", mtime=old)
    from delta_core.model.actions import DeletionVectorDescriptor

    dv = DeletionVectorDescriptor("u", "ab" + z85_encode(u.bytes), 40, 1, offset=1)
    table.storage.put_if_absent(commit_key(snap.version + 1), encode_actions([
        victim.to_remove(int(time.time() * 1000), data_change=True),
        Add(victim.path, victim.partition_values, victim.size, victim.modification_time, True, victim.stats,
            deletion_vector=dv),
    ]))
    for key in all_files(uri):
        os.utime(os.path.join(uri, key), (old, old))
    metrics = vacuum(table, dry_run=True, clock=lambda: int((time.time() + 10 * 86400) * 1000))
    deleted = {p.split(table.storage.root + "/", 1)[1] for p in metrics.paths}
    assert deleted == {stale_dv} and dv_key not in deleted


@pytest.mark.spark
def test_deletes_as_spark_tasks(spark, scene, table_uri):
    table, removed, extra, now = scene
    later = dt.datetime.fromtimestamp(now, dt.UTC) + 10 * DAY
    metrics = vacuum(table, clock=lambda: int(later.timestamp() * 1000), spark=spark)
    assert metrics.num_deleted_files == len(removed) + 3  # the three old orphans outside "_" paths
    assert not any(os.path.exists(os.path.join(table_uri, k)) for k in removed)
