"""Checkpoints whose ``stats_parsed`` holds INT96 timestamps (Spark's default encoding, and Delta
Spark does not override it for checkpoints): read at microseconds, so min/max of years 1 and 9999
stay exact instead of wrapping around the nanosecond range (1677-2262)."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.log.log_path import checkpoint_key
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table

UTC = dt.UTC


def test_int96_stats_parsed_keeps_years_1_and_9999(tmp_path):
    uri = str(tmp_path / "t")
    create_table(uri, pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))]), properties={
        "delta.checkpoint.writeStatsAsStruct": "true", "delta.checkpoint.writeStatsAsJson": "false"})
    table = DeltaTable(uri)
    edges = [dt.datetime(1, 1, 1, tzinfo=UTC), dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)]
    append(table, pa.table({"id": [1, 2], "ts": pa.array(edges, pa.timestamp("us", tz="UTC"))}))
    version = write_checkpoint(table).version
    # Re-encode the checkpoint's timestamps (stats_parsed.minValues.ts, maxValues.ts) as Spark writes them.
    path = table.storage.local_path(checkpoint_key(version))
    pq.write_table(pq.read_table(path), path, use_deprecated_int96_timestamps=True)
    leaves = {c.path: c.physical_type for c in pq.ParquetFile(path).schema}
    assert leaves["add.stats_parsed.minValues.ts"] == "INT96"

    snap = DeltaTable(uri).snapshot()
    assert snap.log_segment.checkpoint_version == version
    stats = json.loads(snap.files.column("stats")[0].as_py())
    assert stats["minValues"]["ts"].startswith("0001-01-01T00:00:00.000")
    assert stats["maxValues"]["ts"].startswith("9999-12-31T23:59:59.999")
