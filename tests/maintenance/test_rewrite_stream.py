"""The compaction rewrite path: streamed output, and stats that are exactly those of the data."""

from __future__ import annotations

import json
import multiprocessing
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import logical_partition_values, rewrite_files
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.tasks import add_from_json
from delta_core.model.partition_values import url_decode_path
from delta_core.model.stats_collect import stats_json
from delta_core.model.table_properties import TableProperties
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import append, create_table
from tests.maintenance.conftest import make_table, rows_kept
from tests.maintenance.rewrite_worker import rewrite_in_fresh_process


def stats_from_file(table: DeltaTable, add, *, stats_columns=None) -> str:
    """The stats ``stats_collect`` computes from the rows of ``add``'s file (physical names)."""
    data = pq.read_table(table.storage.local_path(url_decode_path(add.path)))
    props = TableProperties(table.snapshot().metadata.configuration)
    return stats_json(data, num_indexed_cols=props.num_indexed_cols, stats_columns=stats_columns)


@pytest.mark.spark
@pytest.mark.parametrize("properties", [None, {"delta.columnMapping.mode": "name"}])
def test_compacted_file_stats_are_the_stats_of_its_rows(spark, table_uri, properties):
    table = make_table(table_uri, appends=5, rows=300, properties=properties)
    with rows_kept(table_uri):
        metrics = compact(table, spark)
    assert metrics.num_added_files == 2
    snap = table.snapshot()
    for add in snap.add_actions():
        assert add.stats == stats_from_file(table, add)
        assert json.loads(add.stats)["nullCount"]  # the name column has nulls: counted, not guessed


def _wide_rows(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    ids = np.arange(start, start + n, dtype=np.int64)
    return pa.table({
        "id": pa.array(ids),
        "x": pa.array(rng.random(n)),
        # strings longer than the 32-character stats prefix, nulls, and a max that must be cut
        "name": pa.array([None if i % 13 == 0 else f"{'z' if i == start + 7 else 'n'}{i:08d}" + "q" * 40
                          for i in ids.tolist()], pa.string()),
        "st": pa.array([None if i % 17 == 0 else {"k": int(i % 1000)} for i in ids.tolist()],
                       pa.struct([("k", pa.int32())])),
    })


def test_rewrite_streams_with_a_small_memory_budget(tmp_path):
    uri = str(tmp_path / "t")
    create_table(uri, _wide_rows(0, 1).schema)
    table = DeltaTable(uri)
    parts = [_wide_rows(i * 10_000, 10_000) for i in range(48)]
    for part in parts:
        append(table, part)
    data = pa.concat_tables(parts)
    budget = 1 << 20
    assert data.nbytes > 16 * budget

    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        out = pool.apply(rewrite_in_fresh_process, (uri, budget))
    add = add_from_json(out["add"])
    # Peak Arrow memory of the whole rewrite (reads ahead, one row group, encoder and output
    # buffers) is a few budgets, well below the bin: the old rewrite held all of it, twice.
    assert out["peak_bytes"] < data.nbytes / 2, (out["peak_bytes"], data.nbytes)

    path = table.storage.local_path(url_decode_path(add.path))
    meta = pq.read_metadata(path)
    assert meta.num_row_groups > 4 and meta.num_rows == data.num_rows
    written = pq.read_table(path)
    assert written.equals(data.select(written.column_names))  # row order follows the input files
    assert add.stats == stats_from_file(table, add)
    # ... and equals what the one-shot writer records for the same rows.
    one_shot = write_data_file(table.storage, data, metadata=table.snapshot().metadata, partition_values={})
    assert add.stats == one_shot.stats
    assert add.data_change is False and add.size == os.path.getsize(path)


def test_rewrite_keeps_partition_values_and_stats_columns(tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=4, rows=200,
                       properties={"delta.dataSkippingStatsColumns": "name,ts"})
    snap = table.snapshot()
    adds = [a for a in snap.add_actions() if a.partition_values == {"region": "eu"}]
    add = rewrite_files(table.storage, [a.path for a in adds], metadata=snap.metadata,
                        partition_values=adds[0].partition_values, sizes=[a.size for a in adds])
    assert add.partition_values == {"region": "eu"}
    assert set(json.loads(add.stats)["nullCount"]) == {"name", "ts"}
    assert add.stats == stats_from_file(table, add, stats_columns=["name", "ts"])
    assert logical_partition_values(snap.metadata, add.partition_values) == {"region": "eu"}
