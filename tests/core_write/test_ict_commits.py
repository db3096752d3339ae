"""In-commit timestamps on the commit path (PROTOCOL.md "In-Commit Timestamps", writer rules
3-5) and log cleanup of in-commit-timestamp tables ("Metadata Cleanup": the commit JSON at the
kept checkpoint stays, since checkpoints hold no ``commitInfo``); delta-kernel-rs reads the same
rows after the cleanup."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace

import deltalake
import pyarrow as pa

from delta_core.log.history import ICT_ENABLEMENT_VERSION, read_commit_info
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Protocol
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append, create_table
from delta_core.write.transaction import Transaction
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows

ICT_TABLE = MODERN_DIR / "rs-cdc_ict_table"
SCHEMA = pa.schema([("id", pa.int64())])
DAY_MS = 86_400_000


def test_enabling_after_a_lost_race_is_later_than_the_winners_file_time(table_dir):
    t = create_table(table_dir, SCHEMA)
    append(t, pa.table({"id": [1]}, schema=SCHEMA))
    snap = t.snapshot()
    txn = Transaction(t, read_snapshot=snap, operation="SET TBLPROPERTIES")
    txn.add_action(replace(snap.metadata, configuration={"delta.enableInCommitTimestamps": "true"}))
    txn.add_action(Protocol(1, 7, None, ("appendOnly", "inCommitTimestamp", "invariants")))
    append(DeltaTable(table_dir), pa.table({"id": [2]}, schema=SCHEMA))  # wins version 2
    # The winner's writer had a clock an hour ahead: its file time is in our future.
    ahead = time.time() + 3600
    os.utime(os.path.join(table_dir, "_delta_log", f"{2:020d}.json"), (ahead, ahead))
    assert txn.commit().version == 3
    info = read_commit_info(t.storage, 3)
    assert info["inCommitTimestamp"] > int(ahead * 1000)
    assert t.snapshot().configuration[ICT_ENABLEMENT_VERSION] == "3"
    # history and time travel stay strictly increasing across the enablement
    times = [r.timestamp for r in reversed(t.history())]
    assert times == sorted(times) and len(set(times)) == len(times)
    assert t.snapshot(timestamp=info["inCommitTimestamp"]).version == 3


def test_log_cleanup_keeps_the_commit_at_the_kept_checkpoint_of_an_ict_table(tmp_path):
    root = tmp_path / "t"
    shutil.copytree(ICT_TABLE, root)
    os.chmod(root / "_delta_log", 0o755)
    t = DeltaTable(str(root))
    schema = t.snapshot().arrow_schema
    result = append(t, pa.table({"name": ["Ann"], "birthyear": [1990], "age": [35]}, schema=schema))
    assert result.version == 4
    kernel_before = kernel_rows(str(root))
    assert write_checkpoint(t).version == 4
    ict = read_commit_info(t.storage, 4)["inCommitTimestamp"]
    future = int(time.time() * 1000) + 40 * DAY_MS
    cleaned = cleanup_log(t, clock=lambda: future)
    assert cleaned.checkpoint_version == 4
    left = sorted(os.listdir(root / "_delta_log"))
    assert f"{4:020d}.json" in left and f"{4:020d}.checkpoint.parquet" in left
    assert not any(n[:20].isdigit() and int(n[:20]) < 4 for n in left)
    # The snapshot at the checkpoint still knows its in-commit timestamp, from the kept JSON.
    fresh = DeltaTable(str(root))
    assert fresh.snapshot().timestamp == ict
    assert [(r.version, r.timestamp) for r in fresh.history()] == [(4, ict)]
    assert fresh.snapshot(timestamp=ict).version == 4
    assert kernel_rows(str(root)) == kernel_before
    theirs = deltalake.DeltaTable(str(root)).to_pyarrow_table()
    assert sorted(theirs["name"].to_pylist()) == sorted(["Ann", "Kate", "Steve"])
