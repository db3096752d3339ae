"""Rewrites racing other writers: concurrent appends never lose or duplicate rows, a concurrent
delete of an input abandons the batch cleanly."""

from __future__ import annotations

import multiprocessing as mp
import os

import pytest

from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.data_io import rewrite_files
from delta_core.maintenance.options import RewriteBounds
from delta_core.maintenance.rewrite_commit import commit_rewrite
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, delete_files
from tests.maintenance.appender import append_until
from tests.maintenance.conftest import assert_versions_readable, batch, deltars_rows, make_table, multiset


def _rewrite_first_bin(table, snapshot):
    plan = plan_compaction(snapshot, min_input_files=2)
    b = plan.bins[0]
    add = rewrite_files(table.storage, b.paths, metadata=snapshot.metadata, partition_values=b.partition_dict)
    return b, add


@pytest.mark.spark
@pytest.mark.slow
def test_concurrent_append_from_another_process(spark, table_uri):
    table = make_table(table_uri, appends=4, rows=30, partition_columns=("region", "day"))
    before = multiset(deltars_rows(table_uri))
    ctx = mp.get_context("spawn")
    stop, started, result = ctx.Event(), ctx.Event(), ctx.Queue()
    proc = ctx.Process(target=append_until, args=(table_uri, 100_000, 7, stop, started, 40, result))
    proc.start()
    try:
        assert started.wait(60)
        metrics = compact(table, spark, bounds=RewriteBounds(batch_size=1), min_input_files=4)
    finally:
        stop.set()
        appended = result.get(timeout=120)
        proc.join(60)
    assert proc.exitcode == 0 and appended > 0
    writes = [r.version for r in table.history() if r.commit_info.get("operation") == "WRITE"]
    # the race really happened: appends landed between the compaction's batch commits
    assert any(metrics.versions[0] < v < metrics.versions[-1] for v in writes)
    assert metrics.batches_aborted == 0 and metrics.batches_committed == metrics.num_bins == 10
    expected = before + multiset(batch_rows(appended))
    assert multiset(deltars_rows(table_uri)) == expected
    assert_versions_readable(table_uri, range(table.latest_version() + 1))


def batch_rows(n: int):
    import pyarrow as pa

    return pa.concat_tables([batch(100_000 + i * 7, 7) for i in range(n)])


def test_concurrent_delete_of_an_input_abandons_the_batch(table_uri):
    table = make_table(table_uri, appends=3)
    stale = table.snapshot()
    b, add = _rewrite_first_bin(table, stale)
    new_file = table.storage.local_path(url_decode_path(add.path))
    assert os.path.exists(new_file)
    delete_files(table, [b.paths[0]])
    before = multiset(deltars_rows(table_uri))
    version = table.latest_version()
    outcome = commit_rewrite(table, stale, input_paths=b.paths, adds=[add],
                             operation_parameters={}, operation_metrics={})
    assert outcome.version is None and outcome.status == "aborted"
    assert table.latest_version() == version
    assert not os.path.exists(new_file)  # the batch's output is cleaned up
    assert multiset(deltars_rows(table_uri)) == before


def test_stale_snapshot_with_concurrent_append_still_commits(table_uri):
    table = make_table(table_uri, appends=3)
    stale = table.snapshot()
    b, add = _rewrite_first_bin(table, stale)
    append(table, batch(5000, 10))
    before = multiset(deltars_rows(table_uri))
    outcome = commit_rewrite(table, stale, input_paths=b.paths, adds=[add],
                             operation_parameters={}, operation_metrics={})
    assert outcome.status == "committed" and outcome.version == stale.version + 2
    assert multiset(deltars_rows(table_uri)) == before
    live = set(table.snapshot().file_paths)
    assert add.path in live and not live & set(b.paths)
