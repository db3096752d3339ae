"""``bench_driver_scale``'s real partition inside a generated log: its files are real Parquet
files of the log's columns with delta_core's stats, committed after the generated commits, and a
kept table is reset to them after a compaction."""

from __future__ import annotations

import json
import pathlib

import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.bench_checkpoint import generate_log
from benchmarks.bench_driver_scale import REAL_DAY, REAL_FILE_ROWS, add_real_partition, reset_real_partition
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append


def test_real_partition_is_readable_and_a_kept_table_is_reset_to_it(tmp_path: pathlib.Path) -> None:
    path = str(tmp_path / "t")
    removed = generate_log(path, 300, 5, removes=30)
    version = add_real_partition(path, 4)
    assert version == 6
    write_checkpoint(DeltaTable(path))
    snapshot = DeltaTable(path).snapshot()
    real = snapshot.files.filter(pc.equal(snapshot.partition_values_typed()["day"], REAL_DAY))
    assert snapshot.num_files == 300 - removed + 4 and real.num_rows == 4
    for add in snapshot.files_of(real["path"].to_pylist()).to_pylist():
        assert json.loads(add["stats"])["numRecords"] == REAL_FILE_ROWS
        data = pq.read_table(tmp_path / "t" / add["path"])
        assert data.num_rows == REAL_FILE_ROWS and data.column_names == ["id", "name", "value"]
    # What a compaction leaves: a commit, a file in the partition, a checkpoint named as latest.
    table = DeltaTable(path)
    append(table, pq.read_table(tmp_path / "t" / real["path"][0].as_py()).append_column(
        "day", [[REAL_DAY] * REAL_FILE_ROWS]))
    write_checkpoint(table)
    assert table.latest_version() == version + 1
    assert reset_real_partition(path)  # the checkpoint of the real version is still there
    again = DeltaTable(path).snapshot()
    assert again.version == version and again.files.equals(snapshot.files)
    assert again.log_segment.checkpoint_version == version
    assert len(list((tmp_path / "t" / f"day={REAL_DAY}").iterdir())) == 4
    # A later checkpoint step replaced the real version's checkpoint by the latest one: the
    # reset says so, and its caller writes it again.
    append(table, pq.read_table(tmp_path / "t" / real["path"][0].as_py()).append_column(
        "day", [[REAL_DAY] * REAL_FILE_ROWS]))
    log_dir = tmp_path / "t" / "_delta_log"
    (log_dir / f"{version:020d}.checkpoint.parquet").unlink()
    write_checkpoint(table)
    assert not reset_real_partition(path)
    assert sorted(DeltaTable(path).snapshot().file_paths) == sorted(snapshot.file_paths)
