"""Log cleanup and checkpoint sidecars (PROTOCOL.md "Metadata Cleanup" steps 4-5): a sidecar is
deleted only when no remaining checkpoint references it and it is more than a day old as of
midnight UTC. delta-kernel-rs reads the same rows after the cleanup as before."""

from __future__ import annotations

import os
import shutil
import time

import pyarrow as pa
import pytest

from delta_core.errors import CorruptLogError
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Protocol
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.sidecar_cleanup import sidecar_cutoff_ms
from delta_core.write.table_writes import append, create_table
from delta_core.write.transaction import Transaction
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows

DAY = 86400.0
SIDECAR_FIXTURE = MODERN_DIR / "krs-v2-checkpoints-parquet-with-sidecars"


def _age_all(table_dir: str, days: float) -> None:
    """Every file under _delta_log (sidecars included) looks ``days`` old."""
    when = time.time() - days * DAY
    for dirpath, _, files in os.walk(os.path.join(table_dir, "_delta_log")):
        for name in files:
            os.utime(os.path.join(dirpath, name), (when, when))


def _sidecars(table_dir: str) -> set[str]:
    d = os.path.join(table_dir, "_delta_log", "_sidecars")
    return set(os.listdir(d)) if os.path.isdir(d) else set()


def _orphan(table_dir: str, name: str, mtime: float) -> str:
    """An unreferenced sidecar (a copy of a real one), as a writer that died would leave."""
    d = os.path.join(table_dir, "_delta_log", "_sidecars")
    src = os.path.join(d, sorted(os.listdir(d))[0])
    dst = os.path.join(d, name)
    shutil.copyfile(src, dst)
    os.utime(dst, (mtime, mtime))
    return name


def _v2_table(table_dir: str) -> tuple[DeltaTable, set[str], set[str]]:
    """Sidecar checkpoints at versions 3 and 6; returns the table and each one's sidecars."""
    t = create_table(table_dir, pa.schema([("id", pa.int64())]), properties={"delta.checkpointInterval": "1000"})
    txn = Transaction(t, operation="UPGRADE PROTOCOL")
    txn.add_action(Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint")))
    txn.commit()
    append(t, pa.table({"id": [1]}))
    append(t, pa.table({"id": [2]}))
    write_checkpoint(t, sidecar_threshold=1)
    first = _sidecars(table_dir)
    for i in range(3, 6):
        append(t, pa.table({"id": [i]}))
    write_checkpoint(t, sidecar_threshold=2)
    return t, first, _sidecars(table_dir) - first


def test_sidecars_of_deleted_checkpoints_go_referenced_and_young_stay(table_dir):
    t, first, second = _v2_table(table_dir)
    assert len(first) == 2 and len(second) == 3
    append(t, pa.table({"id": [6]}))
    _age_all(table_dir, 40)
    old_orphan = _orphan(table_dir, "old-orphan.parquet", time.time() - 40 * DAY)
    young_orphan = _orphan(table_dir, "young-orphan.parquet", time.time() - 2 * 3600)
    res = cleanup_log(t)
    assert res.checkpoint_version == 6
    deleted = {k.rsplit("/", 1)[-1] for k in res.deleted if "/_sidecars/" in k}
    assert deleted == first | {old_orphan}
    assert _sidecars(table_dir) == second | {young_orphan}
    # sidecars go after the log files they belonged to
    assert all("/_sidecars/" not in k for k in res.deleted[:len(res.deleted) - len(deleted)])
    snap = DeltaTable(table_dir).snapshot()
    assert snap.version == 7 and snap.log_segment.checkpoint_version == 6 and snap.num_records == 6


def test_unreferenced_sidecar_younger_than_a_day_survives(table_dir):
    t, first, second = _v2_table(table_dir)
    _age_all(table_dir, 40)
    young = _orphan(table_dir, "in-flight.parquet", time.time() - 3600)
    res = cleanup_log(t)
    assert res.checkpoint_version == 6
    assert young in _sidecars(table_dir)
    assert not any(k.endswith(young) for k in res.deleted)


def test_day_is_counted_from_midnight_utc(table_dir):
    t, _, _ = _v2_table(table_dir)
    _age_all(table_dir, 40)
    midnight = (int(time.time()) // 86400) * 86400.0  # today's midnight UTC
    now_ms = int((midnight + 3600) * 1000)  # 01:00 UTC
    assert sidecar_cutoff_ms(now_ms) == int((midnight - DAY) * 1000)
    # 24.5 h old at "now" but younger than a day as of midnight: kept; 25 h before midnight: gone
    kept = _orphan(table_dir, "kept.parquet", midnight - DAY + 1800)
    gone = _orphan(table_dir, "gone.parquet", midnight - DAY - 60)
    cleanup_log(t, clock=lambda: now_ms)
    names = _sidecars(table_dir)
    assert kept in names and gone not in names


def test_dry_run_lists_sidecars_and_deletes_nothing(table_dir):
    t, first, _ = _v2_table(table_dir)
    _age_all(table_dir, 40)
    before = listing(table_dir)
    res = cleanup_log(t, dry_run=True)
    assert {k.rsplit("/", 1)[-1] for k in res.deleted if "/_sidecars/" in k} == first
    assert listing(table_dir) == before


def test_unreadable_remaining_checkpoint_deletes_nothing(table_dir):
    t, _, _ = _v2_table(table_dir)
    _age_all(table_dir, 40)
    log_dir = os.path.join(table_dir, "_delta_log")
    top = next(n for n in os.listdir(log_dir) if n.startswith(f"{6:020d}.checkpoint."))
    with open(os.path.join(log_dir, top), "wb") as fh:
        fh.write(b"not parquet")
    before = listing(table_dir)
    with pytest.raises(CorruptLogError) as err:
        cleanup_log(t)
    assert err.value.version == 6 and top in str(err.value)
    assert listing(table_dir) == before


def test_sidecar_fixture_cleanup(tmp_path):
    """Kernel-rs fixture: checkpoints 1-5 and their sidecars expire; checkpoint 6's stay."""
    table_dir = str(tmp_path / "t")
    shutil.copytree(SIDECAR_FIXTURE, table_dir)
    before = DeltaTable(table_dir).snapshot()
    kernel_before = kernel_rows(table_dir)
    _age_all(table_dir, 40)
    res = cleanup_log(DeltaTable(table_dir))
    assert res.checkpoint_version == 6
    assert _sidecars(table_dir) == {n for n in os.listdir(SIDECAR_FIXTURE / "_delta_log" / "_sidecars")
                                    if n.startswith(f"{6:020d}.")}
    after = DeltaTable(table_dir).snapshot()
    assert after.num_files == before.num_files == 101
    assert sorted(after.file_paths) == sorted(before.file_paths)
    assert kernel_rows(table_dir) == kernel_before
