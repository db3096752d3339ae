"""Vacuum with a Spark session plans on the executors: each top-level directory is listed and
anti-joined against the fingerprints of the referenced keys below it by a Spark task, which
returns only its deletion candidates and counts (issue 31: the driver never holds the listing).
The plan equals the local one, a shared fingerprint still only keeps a file, and only the
unreferenced old files go."""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid

import pyarrow as pa
import pytest

from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.key_fingerprints import KeySet
from delta_core.maintenance.spark.vacuum import (
    PlanDirectoryTask,
    list_table_files,
    plan_on_spark,
    referenced_keys,
    vacuum,
)
from delta_core.maintenance.vacuum_plan import VacuumPlan, VacuumRules, plan_vacuum
from delta_core.model.actions import Add, DeletionVectorDescriptor, encode_actions
from delta_core.model.partition_values import url_decode_path
from delta_core.model.string_hashes import string_hashes
from tests.dv_files import z85_encode
from tests.maintenance.conftest import all_files, make_table, touch

pytestmark = pytest.mark.spark

NOW = time.time()
OLD = NOW - 30 * 86400


def _plans(table: DeltaTable, spark, now_s: float) -> tuple[VacuumPlan, VacuumPlan]:
    """The plan made on Spark and the plan made locally from the thread pool's listing."""
    snapshot = table.snapshot()
    retention = snapshot.properties.deleted_file_retention
    now_ms = int(now_s * 1000)
    cutoff = now_ms - int(retention.total_seconds() * 1000)
    referenced = referenced_keys(snapshot, cutoff, table.storage.root, [])
    rules = VacuumRules.of(snapshot.partition_columns, now_ms=now_ms, retention=retention)
    on_spark = plan_on_spark(table.storage, lambda: spark, referenced=referenced, rules=rules)  # a factory, as the CLI passes
    local = plan_vacuum(list_table_files(table.storage, snapshot.partition_columns), referenced=referenced,
                        partition_columns=snapshot.partition_columns, now_ms=now_ms, retention=retention)
    return on_spark, local


def _with_deletion_vectors(uri: str) -> dict[str, str]:
    """A partitioned table whose two live files have deletion vectors, one DV file under a
    top-level directory of its own (``ab/``), one at the root; stale DV files beside both."""
    table = make_table(uri, appends=3, properties={"delta.enableDeletionVectors": "true"})
    snap = table.snapshot()
    victims = list(snap.add_actions())[-2:]
    kept_dv, root_dv = uuid.uuid4(), uuid.uuid4()
    actions = []
    for victim, dv in zip(victims, (DeletionVectorDescriptor("u", "ab" + z85_encode(kept_dv.bytes), 40, 1, offset=1),
                                    DeletionVectorDescriptor("u", z85_encode(root_dv.bytes), 40, 1, offset=1))):
        actions += [victim.to_remove(int(NOW * 1000), data_change=True),
                    Add(victim.path, victim.partition_values, victim.size, victim.modification_time, True,
                        victim.stats, deletion_vector=dv)]
    table.storage.put_if_absent(commit_key(snap.version + 1), encode_actions(actions))
    return {
        "dv_in_dir": touch(uri, f"ab/deletion_vector_{kept_dv}.bin", mtime=OLD),
        "dv_at_root": touch(uri, f"deletion_vector_{root_dv}.bin", mtime=OLD),
        "stale_dv_in_dir": touch(uri, f"ab/deletion_vector_{uuid.uuid4()}.bin", mtime=OLD),
        "stale_dv_at_root": touch(uri, f"deletion_vector_{uuid.uuid4()}.bin", mtime=OLD),
    }


def test_the_plan_on_spark_equals_the_local_plan(spark, scene, table_uri, tmp_path):
    table, removed, extra, now = scene  # live files, tombstones of now, orphans old and young, hidden files
    touch(table_uri, "region=us/deep/er/orphan.parquet", mtime=OLD)
    touch(table_uri, "stray-2.parquet", mtime=now + 9 * 86400)  # at the root, young at now + 10 days
    later, soon = now + 10 * 86400, now + 86400  # tombstones of now: past the retention, then inside it
    plans = {}
    for now_s in (later, soon):
        on_spark, local = _plans(table, spark, now_s)
        assert on_spark == local
        assert on_spark.hidden_skipped >= 2 and on_spark.young_kept >= 2 and on_spark.referenced_kept >= 4
        plans[now_s] = on_spark
    expired, inside = plans[later], plans[soon]
    assert set(removed) <= set(expired.to_delete) and not set(removed) & set(inside.to_delete)
    assert {extra["orphan_root"], extra["gone_partition"], "region=us/deep/er/orphan.parquet"} <= set(inside.to_delete)
    assert extra["young"] not in expired.to_delete and "stray-2.parquet" not in expired.to_delete

    dv_uri = str(tmp_path / "dv")
    dv = _with_deletion_vectors(dv_uri)
    on_spark, local = _plans(DeltaTable(dv_uri), spark, NOW + 10 * 86400)
    assert on_spark == local
    assert {dv["stale_dv_in_dir"], dv["stale_dv_at_root"]} <= set(on_spark.to_delete)
    assert not {dv["dv_in_dir"], dv["dv_at_root"]} & set(on_spark.to_delete)

    flat_uri = str(tmp_path / "flat")
    flat = make_table(flat_uri, appends=3, partition_columns=())
    orphans = {touch(flat_uri, "orphan.parquet", mtime=OLD), touch(flat_uri, "sub/orphan.parquet", mtime=OLD)}
    for key in all_files(flat_uri):
        os.utime(os.path.join(flat_uri, key), (OLD, OLD))
    on_spark, local = _plans(flat, spark, NOW)
    assert on_spark == local and set(on_spark.to_delete) == orphans
    assert on_spark.files_listed == on_spark.referenced_kept + len(orphans) == 3 + len(orphans)


def _colliding_names(prefix: str) -> tuple[str, str, str]:
    """Two distinct keys below ``prefix`` whose 64-bit fingerprints are equal, and a third that
    differs from the second by one character and has its own fingerprint. At every other
    character the Thue-Morse sequence and its complement: their polynomial hashes agree modulo
    2^64 for every odd base (1,024 terms are enough), and so for every odd power of the hash's
    base, so the characters between them may be anything both keys share: here ``x`` and a
    ``/`` every 100 characters, so that no path component passes a file system's 255 bytes."""
    bits = [bin(i).count("1") % 2 for i in range(1024)]
    filler = ["/" if (i + 1) % 50 == 0 else "x" for i in range(1024)]

    def name(letters: str) -> str:
        return prefix + "".join(letters[b] + f for b, f in zip(bits, filler)) + ".parquet"

    referenced, orphan = name("ab"), name("ba")
    control = orphan[:-9] + "y.parquet"  # the last filler character changed
    return referenced, orphan, control


def test_a_fingerprint_shared_with_a_referenced_key_keeps_the_orphan(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=1)
    referenced, orphan, control = _colliding_names("region=eu/")
    hashes = string_hashes(pa.array([referenced, orphan, control]))
    assert hashes is not None and referenced != orphan and hashes[0] == hashes[1] != hashes[2]
    for key in (referenced, orphan, control):
        touch(uri, key, mtime=OLD)
    version = table.latest_version()
    table.storage.put_if_absent(commit_key(version + 1), encode_actions([
        Add(referenced, {"region": "eu"}, 10, int(OLD * 1000), True)]))
    for key in all_files(uri):
        os.utime(os.path.join(uri, key), (OLD, OLD))
    on_spark, local = _plans(DeltaTable(uri), spark, NOW)
    assert on_spark == local and on_spark.to_delete == (control,)  # the orphan stays: it may be the live file
    dry = vacuum(DeltaTable(uri), dry_run=True, spark=spark)
    assert dry.paths == (table.storage.uri(control),)


def test_dry_run_deletes_nothing_and_the_run_deletes_the_orphans(spark, table_uri):
    table = make_table(table_uri, appends=3, rows=10)
    orphans = ["region=eu/orphan-1.parquet", "region=us/deep/orphan-2.parquet", "region=us/orphan-3.parquet",
               "stray.parquet"]
    for key in orphans:
        touch(table_uri, key, mtime=OLD)
    before = all_files(table_uri)
    live = {url_decode_path(p) for p in table.snapshot().file_paths}
    dry = vacuum(table, dry_run=True, spark=spark)
    assert all_files(table_uri) == before and dry.version is None
    assert sorted(dry.paths) == sorted(table.storage.uri(k) for k in orphans)
    assert dry.files_listed == len(before) and dry.num_files_to_delete == len(orphans)
    metrics = vacuum(table, spark=lambda: spark)
    assert metrics.num_deleted_files == len(orphans)
    assert all_files(table_uri) == before - set(orphans) and live <= all_files(table_uri)


@pytest.mark.s3
def test_on_s3_the_tasks_plan_without_credentials_in_their_payloads(spark, s3_table_uri, s3_storage_options):
    # The executors authenticate from their environment (tests/conftest.py sets moto's there):
    # the pickled store in each task carries no key or secret.
    import pickle

    import s3fs

    table = make_table(s3_table_uri, appends=2, storage_options=s3_storage_options)
    fs = s3fs.S3FileSystem(**s3_storage_options)
    root = s3_table_uri.removeprefix("s3://")
    for key in ("region=eu/orphan.parquet", "stray.parquet", "_hidden/keep.parquet"):
        fs.pipe(f"{root}/{key}", b"PAR1")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=10)
    rules = VacuumRules.of(["region"], now_ms=0, retention=dt.timedelta(days=7))
    payload = pickle.dumps(PlanDirectoryTask(table.storage, "region=eu", KeySet(pa.array(["region=eu/a"])), rules))
    assert s3_storage_options["secret"].encode() not in payload
    on_spark, local = _plans(table, spark, later.timestamp())
    assert on_spark == local
    assert on_spark.to_delete == ("region=eu/orphan.parquet", "stray.parquet")
    dry = vacuum(table, dry_run=True, spark=spark, clock=lambda: int(later.timestamp() * 1000))
    assert sorted(dry.paths) == sorted(table.storage.uri(k) for k in on_spark.to_delete)
    assert fs.exists(f"{root}/region=eu/orphan.parquet")
