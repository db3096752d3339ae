"""A writer killed at each step leaves a table every reader (ours, delta-rs) opens at the
right version."""

from __future__ import annotations

import multiprocessing
import os

import pyarrow as pa

from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table
from tests.core_write import workers

SPAWN = multiprocessing.get_context("spawn")


def _table(table_dir: str, n: int = 7) -> DeltaTable:
    t = create_table(table_dir, workers.SCHEMA, partition_columns=["p"],
                     properties={"delta.checkpointInterval": "1000"})
    for i in range(n):
        append(t, workers.rows([i], 0, "a" if i % 2 else "b"))
    return t


def _kill_at(table_dir: str, step: str) -> None:
    proc = SPAWN.Process(target=workers.die_during, args=(table_dir, step))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 17, f"the writer was meant to die at {step}"


def _readers_agree(table_dir: str, version: int, rows: int) -> None:
    import deltalake

    ours = DeltaTable(table_dir).snapshot()
    assert ours.version == version and ours.num_records == rows
    dl = deltalake.DeltaTable(table_dir)
    assert dl.version() == version
    assert pa.table(dl.to_pyarrow_table()).num_rows == rows


def test_killed_after_writing_data_before_commit(table_dir):
    _table(table_dir)
    before = {f for _, _, fs in os.walk(table_dir) for f in fs if f.endswith(".parquet")}
    _kill_at(table_dir, "before_commit")
    after = {f for _, _, fs in os.walk(table_dir) for f in fs if f.endswith(".parquet")}
    assert len(after - before) == 1  # an orphan data file: harmless, vacuum's job
    _readers_agree(table_dir, 7, 7)
    append(DeltaTable(table_dir), workers.rows([99], 0))  # and the table takes the next commit
    _readers_agree(table_dir, 8, 8)


def test_killed_right_after_commit(table_dir):
    _table(table_dir)
    _kill_at(table_dir, "after_commit")
    _readers_agree(table_dir, 8, 8)


def test_killed_with_checkpoint_half_written(table_dir):
    t = _table(table_dir)
    write_checkpoint(t, version=3)  # an older complete checkpoint for readers to fall back on
    _kill_at(table_dir, "checkpoint_half")
    log_dir = os.path.join(table_dir, "_delta_log")
    parts = [n for n in os.listdir(log_dir) if n.startswith(f"{7:020d}.checkpoint.")]
    assert len(parts) == 1  # part 1 of several: incomplete
    _readers_agree(table_dir, 7, 7)
    assert DeltaTable(table_dir).snapshot().log_segment.checkpoint_version == 3
    # a later complete checkpoint at the same version repairs it
    res = write_checkpoint(DeltaTable(table_dir))
    assert DeltaTable(table_dir).snapshot().log_segment.checkpoint_version == 7 == res.version
    _readers_agree(table_dir, 7, 7)


def test_killed_before_last_checkpoint_update(table_dir):
    t = _table(table_dir)
    write_checkpoint(t, version=3)
    _kill_at(table_dir, "before_last_checkpoint")
    import json

    last = json.loads(open(os.path.join(table_dir, "_delta_log", "_last_checkpoint")).read())
    assert last["version"] == 3  # stale hint
    _readers_agree(table_dir, 7, 7)
    assert DeltaTable(table_dir).snapshot().log_segment.checkpoint_version == 7
