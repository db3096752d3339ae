"""Maintenance on in-commit-timestamp tables (PROTOCOL.md "In-Commit Timestamps"): compaction,
Z-order, vacuum, checkpoint and log cleanup run on a copy of delta-rs's ``cdc_ict_table`` and on
an ICT table we create; every commit keeps strictly increasing in-commit timestamps and a
``.crc`` that agrees with replay, and delta-rs reads every version with the same rows (and
delta-kernel-rs every version after the rewrites)."""

from __future__ import annotations

import os
import shutil
import time

import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.log.version_checksum import read_version_checksum, verify_version_checksum
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.maintenance.spark.zorder import zorder
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info, deltars_rows, make_table, multiset

pytestmark = pytest.mark.spark

ICT_TABLE = MODERN_DIR / "rs-cdc_ict_table"


def _delta_rs_table(uri: str) -> tuple[DeltaTable, str, int]:
    shutil.copytree(ICT_TABLE, uri)
    for dirpath, _, _ in os.walk(uri):  # a read-only checkout gives read-only copies
        os.chmod(dirpath, 0o755)
    t = DeltaTable(uri)
    schema = t.snapshot().arrow_schema
    for name, age in (("Ann", 40), ("Bob", 39)):  # more small files in partition 1986
        append(t, pa.table({"name": [name], "birthyear": [1986], "age": [age]}, schema=schema))
    return t, "age", 4


def _our_table(uri: str) -> tuple[DeltaTable, str, int]:
    return make_table(uri, appends=3, rows=8, properties={"delta.enableInCommitTimestamps": "true"}), "x", 0


@pytest.mark.parametrize("source", ["rs-cdc_ict_table", "ours"])
def test_maintenance_keeps_ict_and_crc_and_delta_rs_reads_every_version(spark, tmp_path, source):
    uri = str(tmp_path / "t")
    table, column, ours_from = (_delta_rs_table if source == "rs-cdc_ict_table" else _our_table)(uri)
    rows = multiset(deltars_rows(uri))
    kernel_before = kernel_rows(uri)
    before = table.latest_version()
    assert compact(table, spark).version is not None
    assert zorder(table, spark, [column]).version is not None
    latest = table.latest_version()
    assert latest >= before + 2
    icts = [commit_info(table, v)["inCommitTimestamp"] for v in range(latest + 1)]
    # ours follow the previous commit's strictly (delta-rs's v1 carries a deliberately odd one)
    mine = icts[max(0, ours_from - 1):]
    assert mine == sorted(mine) and len(set(mine)) == len(mine)
    for v in range(latest + 1):
        their_rows = deltars_rows(uri, version=v)
        snapshot = table.snapshot(v)
        assert their_rows.num_rows == snapshot.num_records
        crc = read_version_checksum(table.storage, v)
        assert crc is not None
        if v >= ours_from:
            assert verify_version_checksum(snapshot).status == "ok"
            assert crc.in_commit_timestamp == icts[v]
        if v >= before:
            assert multiset(their_rows) == rows  # rewrites keep the rows
            assert kernel_rows(uri, version=v) == kernel_before
    # Vacuum (commits VACUUM START/END), a checkpoint and log cleanup keep all of that.
    assert vacuum(table, retention_hours=0, force=True).num_deleted_files > 0
    assert write_checkpoint(table).version == table.latest_version()
    future = int(time.time() * 1000) + 40 * 86_400_000
    assert cleanup_log(table, clock=lambda: future).checkpoint_version == table.latest_version()
    fresh = DeltaTable(uri)
    last = fresh.latest_version()
    assert fresh.snapshot().timestamp == commit_info(fresh, last)["inCommitTimestamp"] > icts[-1]
    assert verify_version_checksum(fresh.snapshot()).status == "ok"
    assert multiset(deltars_rows(uri)) == rows
    assert kernel_rows(uri) == kernel_before
