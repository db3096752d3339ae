"""The history table is maintained like any other table of tables.yaml: compacting, checkpointing
and vacuuming it adds no row to it, and delta-rs and delta-kernel-rs read the same rows after
each. A run's row is readable by delta-rs as soon as the run returns, its end time seconds old."""

from __future__ import annotations

import collections
import datetime as dt
import json
import pathlib

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from delta_core.cli.main import main
from tests.kernel_oracle import kernel_rows_elsewhere

pytestmark = pytest.mark.spark

CONFIG = """\
history: {uri: runs}
tables:
  events: {uri: events}
  runs:
    uri: runs
    compact: {target_size: 1MB, min_input_files: 2}
"""


def _rows(history: pathlib.Path) -> collections.Counter:
    return collections.Counter(json.dumps(r, sort_keys=True, default=str)
                               for r in RsTable(str(history)).to_pyarrow_table().to_pylist())


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_maintaining_the_history_adds_no_row(spark, capsys, tmp_path: pathlib.Path, monkeypatch) -> None:
    monkeypatch.delenv("DELTA_MAINTENANCE_HISTORY", raising=False)
    for i in range(3):
        write_deltalake(str(tmp_path / "events"), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    config = tmp_path / "tables.yaml"
    config.write_text(CONFIG, encoding="utf-8")
    history = tmp_path / "runs"
    events = ("--config", str(config), "--table", "events")
    runs = ("--config", str(config), "--table", "runs")

    for n in range(1, 5):  # one row, one commit, one small file per run
        _run(capsys, "checkpoint", *events, "--force")
        returned = dt.datetime.now(dt.UTC)
        newest = max(RsTable(str(history)).to_pyarrow_table().to_pylist(), key=lambda r: r["end_time"])
        assert RsTable(str(history)).to_pyarrow_table().num_rows == n
        assert dt.timedelta(0) <= returned - newest["end_time"] < dt.timedelta(seconds=5)
    rows, files = _rows(history), len(RsTable(str(history)).file_uris())
    assert files == 4

    compacted = _run(capsys, "compact", *runs, "--spark-master", "local[2]")
    assert (compacted["num_removed_files"], compacted["num_added_files"]) == (4, 1)
    assert RsTable(str(history)).version() == compacted["version"]  # its own commit, no row after it
    assert _rows(history) == rows and len(RsTable(str(history)).file_uris()) == 1

    _run(capsys, "checkpoint", *runs, "--force")
    vacuumed = _run(capsys, "vacuum", *runs, "--retention-hours", "0", "--force")
    assert vacuumed["num_removed_files"] == 4
    assert _rows(history) == rows
    kernel = kernel_rows_elsewhere(str(history))
    assert kernel.num_rows == 4 and set(kernel.column("operation").to_pylist()) == {"checkpoint"}
    assert [r["trigger"] for r in RsTable(str(history)).to_pyarrow_table().to_pylist()] == ["cli"] * 4
