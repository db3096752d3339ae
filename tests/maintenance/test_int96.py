"""Rewrites of files holding Parquet INT96 timestamps (Spark's default for years): read at
microseconds, so years 1 and 9999 survive, and written back as the protocol's ``timestamp``
(INT64 micros, ``isAdjustedToUTC``)."""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import Add
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import create_table
from delta_core.write.transaction import Transaction
from tests.maintenance.conftest import deltars_rows

pytestmark = pytest.mark.spark

UTC = dt.UTC
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
EDGES = [
    dt.datetime(1, 1, 1, tzinfo=UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(2024, 2, 29, 12, 30, 0, 123456, tzinfo=UTC),
    None,
]


def int96_table(uri: str, *, files: int = 2) -> DeltaTable:
    """A table whose ``timestamp`` column lives in INT96 data files (written as Spark did), with
    hand-made ``add`` actions: the files are what another engine left, not what we write."""
    create_table(uri, SCHEMA, partition_columns=())
    table = DeltaTable(uri)
    adds = []
    for i in range(files):
        rows = pa.table({"id": pa.array(range(i * 10, i * 10 + len(EDGES)), pa.int64()),
                         "ts": pa.array(EDGES, pa.timestamp("us", tz="UTC"))})
        name = f"part-0000{i}-int96.snappy.parquet"
        pq.write_table(rows, os.path.join(uri, name), use_deprecated_int96_timestamps=True)
        assert pq.ParquetFile(os.path.join(uri, name)).schema.column(1).physical_type == "INT96"
        adds.append(Add(name, {}, os.path.getsize(os.path.join(uri, name)), 1_700_000_000_000, True,
                        json.dumps({"numRecords": rows.num_rows})))
    txn = Transaction(table, operation="WRITE", operation_parameters={"mode": "Append"})
    with txn:
        txn.add_actions(adds)
        txn.commit()
    return DeltaTable(uri)


def expected_rows(files: int = 2) -> list[tuple[int, dt.datetime | None]]:
    return sorted(((i * 10 + k, ts) for i in range(files) for k, ts in enumerate(EDGES)))


def check_output(table: DeltaTable) -> None:
    snap = table.snapshot()
    adds = list(snap.add_actions())
    assert len(adds) == 1
    path = table.storage.local_path(url_decode_path(adds[0].path))
    pf = pq.ParquetFile(path)
    column = pf.schema.column(pf.schema_arrow.get_field_index("ts"))
    assert column.physical_type == "INT64"
    logical = json.loads(column.logical_type.to_json())
    assert (logical["Type"], logical["isAdjustedToUTC"], logical["timeUnit"]) == ("Timestamp", True, "microseconds")
    stats = json.loads(adds[0].stats)
    assert stats["numRecords"] == 8 and stats["nullCount"]["ts"] == 2
    assert stats["minValues"]["ts"] == "0001-01-01T00:00:00.000Z"
    assert stats["maxValues"]["ts"] == "9999-12-31T23:59:59.999Z"
    # values kept to the microsecond, as pyarrow and delta-rs read the new file
    data = pq.read_table(path)
    assert sorted(zip(data["id"].to_pylist(), data["ts"].to_pylist())) == expected_rows()
    rows = deltars_rows(table.uri)
    assert sorted(zip(rows["id"].to_pylist(), rows["ts"].to_pylist())) == expected_rows()


def test_compaction_reads_int96_years_1_and_9999(spark, tmp_path):
    table = int96_table(str(tmp_path / "t"))
    metrics = compact(table, spark)
    assert (metrics.num_removed_files, metrics.num_added_files) == (2, 1)
    check_output(table)


def test_zorder_reads_int96_years_1_and_9999(spark, tmp_path):
    table = int96_table(str(tmp_path / "t"))
    metrics = zorder(table, spark, ["ts"])
    assert (metrics.num_removed_files, metrics.num_added_files) == (2, 1)
    check_output(table)
