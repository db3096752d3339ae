"""One injected clock (``delta_core.model.clock``): the time source given to ``DeltaTable``
decides every "now" of the protocol — commitInfo ``timestamp`` and ``inCommitTimestamp``,
``txn.lastUpdated`` and its expiry (``delta.setTransactionRetentionDuration``), a remove's
``deletionTimestamp`` and its expiry in checkpoints, log cleanup's cutoff and vacuum retention.

The clock starts years in the past, so a result that read the wall clock instead would differ.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append, create_table, delete_files
from delta_core.write.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64())])
DAY_MS = 86_400_000
START_MS = 1_500_000_000_000  # July 2017


class SteppedClock:
    """A clock the test moves by hand (epoch ms)."""

    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


def _commit(t: DeltaTable, version: int) -> dict:
    return {k: v for line in t.storage.read(commit_key(version)).splitlines()
            for k, v in json.loads(line).items()}


def test_the_table_clock_decides_every_now(tmp_path):
    clock = SteppedClock(START_MS)
    root = str(tmp_path / "t")
    t = create_table(root, SCHEMA, clock=clock, properties={
        "delta.enableInCommitTimestamps": "true", "delta.setTransactionRetentionDuration": "interval 1 days"})
    assert t.clock is clock
    assert _commit(t, 0)["metaData"]["createdTime"] == START_MS

    clock.now_ms += 1000
    append(t, pa.table({"id": [1]}))
    clock.now_ms += 1000
    txn = Transaction(t, operation="WRITE")
    txn.set_app_transaction("app", 1)
    txn.commit()
    commit = _commit(t, 2)
    assert commit["commitInfo"]["timestamp"] == commit["commitInfo"]["inCommitTimestamp"] == START_MS + 2000
    assert commit["txn"]["lastUpdated"] == START_MS + 2000
    assert t.snapshot().txns["app"].version == 1

    [victim] = t.snapshot().file_paths
    # Vacuum also reads file ages from storage: the file was written in the clock's world.
    os.utime(os.path.join(root, victim), (START_MS / 1000, START_MS / 1000))
    delete_files(t, [victim])
    assert _commit(t, 3)["remove"]["deletionTimestamp"] == START_MS + 2000

    # Eight days on: the txn (1 day retention) and the tombstone (7 days default) expired.
    clock.now_ms += 8 * DAY_MS
    assert t.snapshot().txns == {}
    cp = write_checkpoint(t)
    rows = pq.read_table(os.path.join(root, "_delta_log", f"{cp.version:020d}.checkpoint.parquet"))
    assert rows.column("remove").drop_null().to_pylist() == []
    assert rows.column("txn").drop_null().to_pylist() == []
    metrics = vacuum(t)
    assert metrics.num_deleted_files == 1 and not os.path.exists(os.path.join(root, victim))
    assert cleanup_log(t, dry_run=True).cutoff_ms == clock.now_ms - 30 * DAY_MS
