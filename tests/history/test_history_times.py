"""A history row's start and end times are its table's clock (the time of its commits), so a
table on a simulated clock records its runs at the simulated time."""

from __future__ import annotations

import datetime as dt
import pathlib

import pyarrow as pa
from deltalake import write_deltalake

from delta_core.log.table import DeltaTable
from delta_core.maintenance.history_records import HistoryLocation
from delta_core.maintenance.history_table import read_rows
from delta_core.maintenance.operations import CHECKPOINT
from delta_core.maintenance.options import CheckpointOptions
from delta_core.maintenance.recorded_run import RunOrigin, run_recorded

AT = dt.datetime(2026, 3, 4, 6, 30, tzinfo=dt.UTC)


def test_a_rows_times_are_its_tables_clock(tmp_path: pathlib.Path) -> None:
    uri = str(tmp_path / "events")
    write_deltalake(uri, pa.table({"id": pa.array([1, 2], pa.int64())}))
    table = DeltaTable(uri, clock=lambda: int(AT.timestamp() * 1000))
    history = HistoryLocation(str(tmp_path / "history"))
    run_recorded(CHECKPOINT, table, CheckpointOptions(force=True), None, origin=RunOrigin("cli", history))
    (row,) = read_rows(history)
    assert (row.operation, row.status, row.start_time, row.end_time) == ("checkpoint", "SUCCEEDED", AT, AT)
