"""The payloads Spark tasks receive are frozen dataclasses that survive pickling (the trip to an
executor) and carry the table's ``Storage`` as is: run here, without Spark, on real tables."""

from __future__ import annotations

import dataclasses
import json
import math
import pickle

import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file, rewrite_output_key
from delta_core.maintenance.ipc_chunks import unpack
from delta_core.maintenance.spark.bin_rewrite import BinTask, rewrite_bin
from delta_core.maintenance.spark.curve_rewrite import (
    FILE_COL,
    KEY_COL,
    PART_COL,
    ROWS_COL,
    SUMMARY_COL,
    ZOrderFileTask,
    _keyed_reader,
    _sample_file,
    layout_from_sample,
)
from delta_core.maintenance.spark.tasks import add_from_json
from delta_core.maintenance.spark.vacuum import DeleteChunkTask, _delete_chunk
from delta_core.model.actions import Add
from delta_core.model.partition_values import url_decode_path
from delta_core.write.rewrite_proof import InputSummary
from tests.maintenance.conftest import make_table, multiset


def num_records(stats: str | None) -> int:
    return json.loads(stats or "{}")["numRecords"]


def shipped(task):
    """The task as an executor sees it: pickled and unpickled."""
    return pickle.loads(pickle.dumps(task))


def test_bin_task_rewrites_its_group_after_the_trip(table_uri):
    table = make_table(table_uri, appends=2, rows=10)
    snap = table.snapshot()
    eu = [a for a in snap.add_actions() if a.partition_values == {"region": "eu"}]
    key = rewrite_output_key(snap.metadata, {"region": "eu"})
    task = BinTask(storage=table.storage, metadata=snap.metadata, paths=tuple(a.path for a in eu),
                   sizes=tuple(a.size for a in eu), partition_values={"region": "eu"}, key=key,
                   summarise=(eu[0].path,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.key = "elsewhere.parquet"  # type: ignore[misc]
    results = rewrite_bin(shipped(task))
    add = add_from_json(results[0])
    assert url_decode_path(add.path) == key and table.storage.exists(key)
    assert add.partition_values == {"region": "eu"}
    assert num_records(add.stats) == sum(num_records(a.stats) for a in eu) == 10
    summaries = [InputSummary.from_json(r) for r in results[1:]]
    # only the input asked for is summarised, with the rows it holds
    assert [(s.path, num_records(s.stats)) for s in summaries] == [(eu[0].path, num_records(eu[0].stats))]


def one_file_task(table_uri: str, *, rows: int, part: int, fraction: float,
                  summarise: bool) -> tuple[DeltaTable, Add, ZOrderFileTask]:
    """A table of one file of ``rows`` rows, its ``add``, and the Z-order task over that file
    (columns ``x``, ``id``)."""
    table = make_table(table_uri, appends=1, rows=rows)
    snap = table.snapshot()
    add = next(snap.add_actions())
    task = ZOrderFileTask(storage=table.storage, metadata=snap.metadata, path=add.path, size=add.size, part=part,
                          columns=("x", "id"), fraction=fraction, summarise=summarise)
    return table, add, task


def test_zorder_file_task_samples_its_file_after_the_trip(table_uri):
    _, add, task = one_file_task(table_uri, rows=20, part=3, fraction=0.5, summarise=True)
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


def test_zorder_key_task_packs_each_output_files_rows_in_key_order(table_uri):
    table, add, task = one_file_task(table_uri, rows=60, part=0, fraction=1.0, summarise=False)
    sample = pa.Table.from_batches(list(_sample_file(task))).drop_columns([SUMMARY_COL])
    layout = layout_from_sample(sample, columns=("x", "id"), curve="zorder", bits=8, files_per_partition=[3])
    batches = list(_keyed_reader(layout)(shipped(task)))
    # One Arrow batch for the whole file, one packed run per output file, in file order.
    assert len(batches) == 1
    file_ids = batches[0].column(FILE_COL).to_pylist()
    assert file_ids == sorted(set(file_ids)) and len(file_ids) == 3
    runs = [unpack([chunk]) for chunk in batches[0].column(ROWS_COL).to_pylist()]
    for file_id, run in zip(file_ids, runs):
        keys = run.column(KEY_COL).to_numpy()
        assert keys.tolist() == sorted(keys.tolist())  # sorted by curve key within the run
        assert set(layout.file_ids(0, keys.astype("uint64")).tolist()) == {file_id}
    # Together the runs hold exactly the file's rows.
    rows = pa.concat_tables(runs).drop_columns([KEY_COL])
    assert multiset(rows) == multiset(read_data_file(table.storage, add.path, table.snapshot().metadata))


def test_delete_chunk_task_deletes_exactly_its_keys_after_the_trip(table_uri):
    table = make_table(table_uri, appends=1, rows=4)
    for key in ("region=eu/orphan-1.parquet", "region=eu/orphan-2.parquet", "keep.parquet"):
        table.storage.write(key, b"PAR1")
    task = DeleteChunkTask(table.storage, ("region=eu/orphan-1.parquet", "region=eu/orphan-2.parquet",
                                           "region=eu/gone.parquet"), (4, 4, 9))
    # deleted, their bytes, already gone, failed, first failure
    assert _delete_chunk(shipped(task)) == ["2", "8", "1", "0", ""]
    assert not table.storage.exists("region=eu/orphan-1.parquet")
    assert not table.storage.exists("region=eu/orphan-2.parquet")
    assert table.storage.exists("keep.parquet")
    assert table.snapshot().num_files == 2  # live files untouched
