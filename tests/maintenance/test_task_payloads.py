"""The payloads Spark tasks receive are frozen dataclasses that survive pickling (the trip to an
executor) and carry the table's ``Storage`` as is: run here, without Spark, on real tables."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import pyarrow as pa
import pytest

from delta_core.maintenance.data_io import rewrite_output_key
from delta_core.maintenance.spark.compaction import CompactBinTask, _compact_bin
from delta_core.maintenance.spark.tasks import add_from_json
from delta_core.maintenance.spark.vacuum import DeleteChunkTask, _delete_chunk
from delta_core.maintenance.spark.zorder import PART_COL, SUMMARY_COL, ZOrderFileTask, _sample_file
from delta_core.model.partition_values import url_decode_path
from delta_core.write.rewrite_proof import InputSummary
from tests.maintenance.conftest import make_table


def num_records(stats: str | None) -> int:
    return json.loads(stats or "{}")["numRecords"]


def shipped(task):
    """The task as an executor sees it: pickled and unpickled."""
    return pickle.loads(pickle.dumps(task))


def test_compact_bin_task_rewrites_its_bin_after_the_trip(table_uri):
    table = make_table(table_uri, appends=2, rows=10)
    snap = table.snapshot()
    eu = [a for a in snap.add_actions() if a.partition_values == {"region": "eu"}]
    key = rewrite_output_key(snap.metadata, {"region": "eu"})
    task = CompactBinTask(storage=table.storage, metadata=snap.metadata, paths=tuple(a.path for a in eu),
                          sizes=tuple(a.size for a in eu), partition_values={"region": "eu"}, key=key,
                          summarise=(eu[0].path,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.key = "elsewhere.parquet"  # type: ignore[misc]
    results = _compact_bin(shipped(task))
    add = add_from_json(results[0])
    assert url_decode_path(add.path) == key and table.storage.exists(key)
    assert add.partition_values == {"region": "eu"}
    assert num_records(add.stats) == sum(num_records(a.stats) for a in eu) == 10
    summaries = [InputSummary.from_json(r) for r in results[1:]]
    # only the input asked for is summarised, with the rows it holds
    assert [(s.path, num_records(s.stats)) for s in summaries] == [(eu[0].path, num_records(eu[0].stats))]


def test_zorder_file_task_samples_its_file_after_the_trip(table_uri):
    table = make_table(table_uri, appends=1, rows=20)
    snap = table.snapshot()
    add = next(snap.add_actions())
    task = ZOrderFileTask(storage=table.storage, metadata=snap.metadata, path=add.path, size=add.size, part=3,
                          columns=("x", "id"), fraction=0.5, summarise=True)
    sample = pa.Table.from_batches(list(_sample_file(shipped(task))))
    rows = sample.filter(sample.column(SUMMARY_COL).is_null())
    assert rows.num_rows == math.ceil(num_records(add.stats) * 0.5)
    assert set(rows.column(PART_COL).to_pylist()) == {3}
    assert rows.column_names[:2] == ["x", "id"]
    summaries = sample.filter(sample.column(SUMMARY_COL).is_valid()).column(SUMMARY_COL).to_pylist()
    assert len(summaries) == 1
    summary = InputSummary.from_json(summaries[0])
    assert summary is not None and summary.path == add.path
    assert num_records(summary.stats) == num_records(add.stats)


def test_delete_chunk_task_deletes_exactly_its_keys_after_the_trip(table_uri):
    table = make_table(table_uri, appends=1, rows=4)
    for key in ("region=eu/orphan-1.parquet", "region=eu/orphan-2.parquet", "keep.parquet"):
        table.storage.write(key, b"PAR1")
    task = DeleteChunkTask(table.storage, ("region=eu/orphan-1.parquet", "region=eu/orphan-2.parquet"))
    assert _delete_chunk(shipped(task)) == ["2"]
    assert not table.storage.exists("region=eu/orphan-1.parquet")
    assert not table.storage.exists("region=eu/orphan-2.parquet")
    assert table.storage.exists("keep.parquet")
    assert table.snapshot().num_files == 2  # live files untouched
