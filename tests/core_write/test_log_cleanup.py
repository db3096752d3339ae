"""Log cleanup honours delta.logRetentionDuration and keeps every version inside the window
reconstructable (clock injected, file ages set on disk)."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from delta_core.errors import DeltaError
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append, create_table, set_properties
from tests.core_write import workers
from tests.core_write.conftest import listing
from tests.multipart import write_multipart_checkpoint

DAY = 86400.0


def _table(table_dir: str, commits: int = 12, *, hint_10: bool = True) -> DeltaTable:
    t = create_table(table_dir, workers.SCHEMA, partition_columns=["p"],
                     properties={"delta.checkpointInterval": "1000"})
    for i in range(commits):
        append(t, workers.rows([i], 0))
    write_checkpoint(t, version=5)
    write_multipart_checkpoint(t, version=10, parts=3, update_last_checkpoint=hint_10)
    return t


def _age(table_dir: str, versions: range, days: float) -> None:
    """Make every log file of ``versions`` look ``days`` old (commits and checkpoints)."""
    log_dir = os.path.join(table_dir, "_delta_log")
    when = time.time() - days * DAY
    for name in os.listdir(log_dir):
        if name[:20].isdigit() and int(name[:20]) in versions:
            os.utime(os.path.join(log_dir, name), (when, when))


def _names(table_dir: str) -> list[str]:
    return sorted(n for n in os.listdir(os.path.join(table_dir, "_delta_log")) if n[:1].isdigit())


def _readable(table_dir: str, version: int) -> int:
    import deltalake

    ours = DeltaTable(table_dir).snapshot(version).num_records
    theirs = pa.table(deltalake.DeltaTable(table_dir, version=version).to_pyarrow_table()).num_rows
    assert ours == theirs
    return ours


def test_nothing_expired_nothing_deleted(table_dir):
    t = _table(table_dir)
    before = _names(table_dir)
    res = cleanup_log(t)
    assert res.files_deleted == 0 and res.checkpoint_version is None and _names(table_dir) == before


def test_everything_expired_keeps_newest_checkpoint_onwards(table_dir):
    t = _table(table_dir)
    res = cleanup_log(t, clock=lambda: int((time.time() + 31 * DAY) * 1000))
    assert res.checkpoint_version == 10
    names = _names(table_dir)
    assert min(int(n[:20]) for n in names) == 10
    assert f"{10:020d}.json" in names and f"{5:020d}.checkpoint.parquet" not in names
    for v in (10, 11, 12):
        assert _readable(table_dir, v) == v
    with pytest.raises(DeltaError):
        DeltaTable(table_dir).snapshot(9)


def test_time_travel_inside_window_survives(table_dir):
    t = _table(table_dir)
    _age(table_dir, range(0, 8), 40)   # versions 0-7 older than 30 days
    _age(table_dir, range(8, 13), 1)   # 8-12 recent (the checkpoint at 10 too)
    res = cleanup_log(t)
    # newest expired version is 7, so the newest complete checkpoint at or before it (5) stays
    assert res.checkpoint_version == 5
    # each expired commit goes with its version checksum
    assert sorted(os.path.basename(k) for k in res.deleted) == sorted(
        [f"{v:020d}.json" for v in range(5)] + [f"{v:020d}.crc" for v in range(5)])
    for v in range(5, 13):
        assert _readable(table_dir, v) == v
    assert DeltaTable(table_dir).snapshot().version == 12


def test_incomplete_checkpoint_is_not_a_start(table_dir):
    # the writer of checkpoint 10 died after part 1: _last_checkpoint still says 5
    t = _table(table_dir, hint_10=False)
    log_dir = os.path.join(table_dir, "_delta_log")
    part = next(n for n in os.listdir(log_dir) if n.startswith(f"{10:020d}.checkpoint.0000000002"))
    os.unlink(os.path.join(log_dir, part))
    res = cleanup_log(t, clock=lambda: int((dt.datetime.now(dt.UTC) + dt.timedelta(days=31)).timestamp() * 1000))
    assert res.checkpoint_version == 5
    for v in range(5, 13):
        assert _readable(table_dir, v) == v


def test_dry_run_lists_only(table_dir):
    t = _table(table_dir)
    before = _names(table_dir)
    res = cleanup_log(t, clock=lambda: int((time.time() + 31 * DAY) * 1000), dry_run=True)
    assert res.dry_run and res.files_deleted > 0 and _names(table_dir) == before
    d = res.to_dict()
    assert d["checkpoint_version"] == 10 and d["files_deleted"] == len(d["deleted"])


def test_retention_property_is_honoured(table_dir):
    t = create_table(table_dir, workers.SCHEMA, properties={"delta.logRetentionDuration": "interval 2 days",
                                                           "delta.checkpointInterval": "1000"})
    for i in range(4):
        append(t, workers.rows([i], 0))
    write_checkpoint(t)
    assert cleanup_log(t, clock=lambda: int((time.time() + 1 * DAY) * 1000)).files_deleted == 0
    res = cleanup_log(t, clock=lambda: int((time.time() + 3 * DAY) * 1000))
    assert res.checkpoint_version == 4 and res.files_deleted == 8  # 4 commits and their .crc
    assert _readable(table_dir, 4) == 4


def _cleanup_turned_off(table_dir: str) -> DeltaTable:
    """The owner sets delta.enableExpiredLogCleanup=false (version 13) after 12 appends."""
    t = _table(table_dir)
    set_properties(t, {"delta.enableExpiredLogCleanup": "false"})
    return t


@pytest.mark.parametrize("retention", [None, dt.timedelta(0)])
def test_log_cleanup_turned_off_deletes_nothing_and_says_why(table_dir, retention):
    t = _cleanup_turned_off(table_dir)
    before = listing(table_dir)
    res = cleanup_log(t, clock=lambda: int((time.time() + 31 * DAY) * 1000), retention=retention)
    assert listing(table_dir) == before
    assert res.files_deleted == 0 and res.checkpoint_version is None
    assert "delta.enableExpiredLogCleanup=false" in res.skipped_reason
    assert res.to_dict()["skipped_reason"] == res.skipped_reason


def test_log_cleanup_turned_off_deletes_only_with_the_explicit_override(table_dir):
    t = _cleanup_turned_off(table_dir)
    res = cleanup_log(t, clock=lambda: int((time.time() + 31 * DAY) * 1000), ignore_log_cleanup_disabled=True)
    assert res.skipped_reason is None and res.checkpoint_version == 10
    assert min(int(n[:20]) for n in _names(table_dir)) == 10
    assert _readable(table_dir, 13) == 12


def test_cli_cleanup_log_honours_the_property_unless_overridden(table_dir):
    t = _cleanup_turned_off(table_dir)
    _age(table_dir, range(0, 14), 40)
    before = listing(table_dir)
    proc = subprocess.run([sys.executable, "-m", "delta_core", "cleanup-log", t.uri, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["files_deleted"] == 0 and "delta.enableExpiredLogCleanup=false" in out["skipped_reason"]
    assert listing(table_dir) == before
    proc = subprocess.run([sys.executable, "-m", "delta_core", "cleanup-log", t.uri, "--json",
                           "--ignore-log-cleanup-disabled"], capture_output=True, text=True, timeout=120)
    out = json.loads(proc.stdout)
    assert proc.returncode == 0 and out["skipped_reason"] is None
    # Every version is expired: the log now starts at the newest checkpoint, 10.
    assert out["checkpoint_version"] == 10 and out["files_deleted"] > 0
    assert min(int(n[:20]) for n in _names(table_dir)) == 10
