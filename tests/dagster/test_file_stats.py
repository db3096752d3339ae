"""``FileStats`` counts a table's partitions by its partition columns' values (the demo's
before/after line): not one per file, and 0/1 for an empty or unpartitioned table."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from assets.metadata import FileStats
from delta_core.log.table import DeltaTable
from demo.table import build_demo_table


def test_demo_table_partitions_are_its_days(tmp_path) -> None:
    table = build_demo_table(tmp_path / "events", rows=600, appends=6, days=3, delete_fraction=0.0)
    stats = FileStats.of(table.snapshot())
    assert stats.num_files > 3 and stats.num_partitions == 3


def test_two_partition_columns_and_none(tmp_path) -> None:
    data = pa.table({"a": [1, 1, 2, 2], "b": ["x", "y", "x", "x"], "v": [1, 2, 3, 4]})
    for _ in range(2):  # two files per partition
        write_deltalake(str(tmp_path / "two"), data, partition_by=["a", "b"], mode="append")
        write_deltalake(str(tmp_path / "none"), data, mode="append")
    assert FileStats.of(DeltaTable(str(tmp_path / "two")).snapshot()).num_partitions == 3
    assert FileStats.of(DeltaTable(str(tmp_path / "none")).snapshot()).num_partitions == 1
