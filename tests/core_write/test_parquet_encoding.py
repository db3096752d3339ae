"""The encodings ``ParquetStream`` picks per leaf column (``dictionary_columns``): plain where
values hardly repeat (ids, paths, bounds, also inside structs: a checkpoint's ``add.path`` and
``add.stats_parsed`` bounds), a dictionary where they do; the rows read back unchanged."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.storage import open_storage
from delta_core.write.parquet_stream import ParquetStream, dictionary_columns

ROWS = 50_000


def _table() -> pa.Table:
    rng = random.Random(3)
    ids = list(range(ROWS))
    rng.shuffle(ids)
    days = [f"2024-01-{1 + i % 28:02d}" for i in range(ROWS)]
    inner = pa.StructArray.from_arrays(
        [pa.array([i * 10 for i in ids], pa.int64()), pa.array([i % 7 for i in ids], pa.int64()),
         pa.array([f"s{i:09d}" for i in ids])], names=["bound", "count", "text"])
    return pa.table({
        "id": pa.array(ids, pa.int64()), "day": days, "path": [f"part-{i:08d}-{i * 7919 % 100003}.parquet" for i in ids],
        "flag": [i % 2 == 0 for i in ids], "add": pa.StructArray.from_arrays(
            [pa.array(days), inner, pa.array([rng.random() for _ in ids], pa.float64())],
            names=["day", "stats", "value"]),
    })


def _dictionary_encoded(meta: pq.FileMetaData) -> dict[str, bool]:
    group = meta.row_group(0)
    return {group.column(i).path_in_schema: any("DICTIONARY" in e for e in group.column(i).encodings)
            for i in range(group.num_columns)}


def test_values_that_hardly_repeat_are_written_plain_and_read_back(tmp_path):
    table = _table()
    storage = open_storage(str(tmp_path))
    stream = ParquetStream(storage, "f.parquet", table.schema)
    stream.write(table)
    stream.close()
    written = str(tmp_path / "f.parquet")
    assert pq.read_table(written).equals(table)
    encoded = _dictionary_encoded(pq.read_metadata(written))
    plain = {"id", "path", "add.stats.bound", "add.stats.text", "add.value"}
    dictionary = {"day", "add.day", "add.stats.count"}
    assert {c for c in plain | dictionary if encoded[c]} == dictionary


def test_a_small_group_keeps_the_default():
    assert dictionary_columns(_table().slice(0, 1000)) is True
