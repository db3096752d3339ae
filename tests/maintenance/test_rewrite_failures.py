"""Rewrite batches that cannot finish leave nothing behind, and no batch brings deleted rows back.

- A batch that fails (an input file gone from storage, a failed Spark task, a commit refused by a
  conflicting writer) deletes every data file it wrote; a missing input is named.
- Every batch reads its inputs with the deletion vectors of the snapshot it commits against: a
  vector that another engine committed between two batches is applied by the later batch (the
  deleted rows never reappear).

The hooks between a batch's rewrite and its commit are the ``rewrite`` callable of
``run_rewrite_batches``, wrapping the operations' real task executors: the other writer commits
real actions through ``delta_core`` at that moment.
"""

from __future__ import annotations

import collections
import os
import pathlib
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import (
    ConcurrentDeleteReadError,
    MaintenanceError,
    MissingDataFileError,
    RewriteTaskError,
)
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.rewrite_commit import InputWatch, run_rewrite_batches
from delta_core.maintenance.spark.bin_rewrite import BinRewrite
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.curve_rewrite import CurveRewrite
from delta_core.maintenance.spark.tasks import run_tasks, settled_on_failure
from delta_core.maintenance.spark.zorder import zorder
from delta_core.maintenance.zorder_plan import plan_zorder
from delta_core.model.actions import Add, Remove
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, create_table, delete_files
from tests.core_write.conftest import listing
from tests.dv_files import commit_deletion_vector, inline_dv, rows_applying_dvs
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import SCHEMA, batch, deltars_rows, make_table, multiset

pytestmark = pytest.mark.spark

def data_files(root: str) -> list[tuple[str, int]]:
    return [(p, size) for p, size in listing(root) if p.endswith(".parquet")]


def ever_added(table: DeltaTable) -> set[str]:
    return {url_decode_path(a.path) for v in range(table.latest_version() + 1)
            for a in table.commit_actions(v) if isinstance(a, Add)}


def test_zorder_batch_applies_a_deletion_vector_committed_after_the_plan(spark, table_uri):
    table = make_table(table_uri, appends=2, properties={"delta.enableDeletionVectors": "true"})
    snap = table.snapshot()
    plan = plan_zorder(snap, ["id"])
    batches = plan.batches(1)  # one partition per batch
    assert len(batches) == 2
    victim = batches[1][0].files[0].path
    victim_ids = pq.read_table(os.path.join(table_uri, url_decode_path(victim))).column("id").to_pylist()
    deleted = [victim_ids[0], victim_ids[3]]
    dv_versions = []

    def rewrite(current, batch, label, outputs):
        output = CurveRewrite(plan, sample_rows=1000).rewrite(spark, table, current, batch, label=label,
                                                              outputs=outputs)
        if not dv_versions:  # between batch 1's rewrite and batch 2: another engine deletes 2 rows
            dv_versions.append(commit_deletion_vector(table, victim, [0, 3]))
        return output

    before = multiset(rows_applying_dvs(table_uri))
    tally = run_rewrite_batches(table, snap, batches, rewrite=rewrite,
                                operation_parameters=plan.operation_parameters(), scan=None, label="zorder")
    # batch 1 committed after the DELETE; batch 2 read the victim with its new vector
    assert tally.versions == (dv_versions[0] + 1, dv_versions[0] + 2) and tally.batches_aborted == 0
    assert tally.num_deletion_vectors_removed == 1
    removed = [a for a in table.commit_actions(tally.versions[1]) if isinstance(a, Remove)]
    assert [r.deletion_vector for r in removed if r.path == victim] == [inline_dv([0, 3])]
    live = list(table.snapshot().add_actions())
    assert victim not in {a.path for a in live} and all(a.deletion_vector is None for a in live)
    after = rows_applying_dvs(table_uri)
    assert not set(deleted) & set(after.column("id").to_pylist())
    assert multiset(after) == before - multiset(pa.Table.from_pylist(
        [r for r in rows_applying_dvs(table_uri, snap.version).to_pylist() if r["id"] in deleted]))
    assert kernel_rows(table_uri) == kernel_rows(table_uri, version=dv_versions[0])  # the DELETE's rows
    assert {p for p, _ in data_files(table_uri)} <= ever_added(table)


def test_compaction_names_an_input_missing_from_storage_and_leaves_nothing(spark, table_uri):
    table = make_table(table_uri, appends=3)  # two partitions: two bins in one batch
    snap = table.snapshot()
    gone = next(a.path for a in snap.add_actions() if a.partition_values["region"] == "eu")
    os.remove(os.path.join(table_uri, url_decode_path(gone)))
    before = listing(table_uri)
    with pytest.raises(MissingDataFileError, match="FSCK REPAIR TABLE") as info:
        compact(table, spark, min_input_files=2)
    assert info.value.path == table.storage.uri(url_decode_path(gone)) and gone in str(info.value)
    assert info.value.version == snap.version
    assert listing(table_uri) == before  # the other bin's new file is gone too


def test_zorder_names_an_input_missing_from_storage_and_leaves_nothing(spark, table_uri):
    table = make_table(table_uri, appends=2)
    snap = table.snapshot()
    gone = next(a.path for a in snap.add_actions() if a.partition_values["region"] == "us")
    os.remove(os.path.join(table_uri, url_decode_path(gone)))
    before = listing(table_uri)
    with pytest.raises(MissingDataFileError) as info:
        zorder(table, spark, ["id", "x"])
    assert info.value.path == table.storage.uri(url_decode_path(gone)) and info.value.version == snap.version
    assert listing(table_uri) == before


def test_failed_task_deletes_the_files_other_tasks_wrote(spark, table_uri):
    create_table(table_uri, SCHEMA, partition_columns=("region",))
    table = DeltaTable(table_uri)
    for i in range(3):
        append(table, batch(i * 30, 30, regions=("a", "b", "c")))
    snap = table.snapshot()
    # One task per bin, largest first, two at a time (local[2]): the last bin's task starts only
    # once another has written its file, and then fails on an input that is no longer Parquet.
    last = sorted(plan_compaction(snap, min_input_files=2).bins, key=lambda b: -b.total_size)[-1]
    broken = next(a for a in snap.add_actions() if a.path == last.paths[0])
    with open(os.path.join(table_uri, url_decode_path(broken.path)), "r+b") as fh:
        fh.write(b"\0" * broken.size)
    before = listing(table_uri)
    with pytest.raises(RewriteTaskError, match="failed in a Spark task.*ArrowInvalid"):
        compact(table, spark, min_input_files=2)  # a task failure, not a missing input: the file is there
    assert listing(table_uri) == before
    assert table.latest_version() == snap.version


def test_refused_commit_deletes_the_batch_files(spark, table_uri):
    table = make_table(table_uri, appends=3)
    snap = table.snapshot()
    plan = plan_compaction(snap, min_input_files=2)
    written: list[str] = []

    def rewrite(current, batch, label, outputs):
        output = BinRewrite().rewrite(spark, table, current, batch, label=label, outputs=outputs)
        written.extend(url_decode_path(a.path) for a in output.adds)
        assert all(os.path.exists(os.path.join(table_uri, p)) for p in written)
        delete_files(table, [batch[0].paths[0]])  # another writer removes an input before the commit
        return output

    before = data_files(table_uri)
    tally = run_rewrite_batches(table, snap, plan.batches(), rewrite=rewrite, max_batch_retries=0,
                                operation_parameters=plan.operation_parameters(), scan=None, label="compaction")
    assert tally.versions == () and tally.batches_aborted == 1 and len(written) == 2
    assert tally.abandoned_reasons == ("batch 1/1: concurrent_delete_read",)
    assert data_files(table_uri) == before
    assert table.latest_version() == snap.version + 1  # only the other writer's DELETE
    assert collections.Counter(a.path for a in table.snapshot().add_actions()) == collections.Counter(
        a.path for a in snap.add_actions() if a.path != plan.batches()[0][0].paths[0])


def _slow_or_failing_task(payload: dict) -> list[str]:
    """Spark task: fails (leaving a sign that it did), or writes a file 1.2 s after the other task
    failed, as a long bin still being written when the job fails: the driver hears of the failure
    well before (0.1-0.8 s measured here), and Spark kills a Python task's worker only 2 s or
    more after (spark.python.task.killTimeout)."""
    failed = pathlib.Path(payload["failed"])
    if payload["fail"]:
        failed.write_text("failed")
        raise OSError("this input cannot be read")
    deadline = time.monotonic() + 60
    while not failed.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.2)
    pathlib.Path(payload["late_file"]).write_text("written after the job had failed")
    return ["written"]


def test_failed_job_returns_only_once_its_other_tasks_stopped(spark, tmp_path):
    late_file, failed = tmp_path / "late.parquet", str(tmp_path / "failed")
    payloads = [{"fail": False, "late_file": str(late_file), "failed": failed}, {"fail": True, "failed": failed}]
    with pytest.raises(MaintenanceError, match="this input cannot be read"):
        with settled_on_failure(spark):
            run_tasks(spark, _slow_or_failing_task, payloads)
    # The slow task's file is there by now, where the caller's clean-up finds it; nothing appears
    # after the failure was raised.
    assert late_file.exists()
    assert not any(t.startswith("delta-maintenance-") for t in spark.getTags())


def test_a_zorder_batch_whose_input_goes_while_it_samples_writes_nothing(spark, table_uri):
    table = make_table(table_uri, appends=2)
    snap = table.snapshot()
    plan = plan_zorder(snap, ["id"])
    batches = plan.batches(1)  # eu, then us
    eu_input = batches[0][0].paths[0]
    asked: list[list[str]] = []  # each call's output keys, as the executor chose them

    def rewrite(current, batch, label, outputs):
        asked.append(outputs)
        if len(asked) == 1:  # a writer removes an eu input while the batch reads its sample
            delete_files(table, [eu_input])
        return CurveRewrite(plan, sample_rows=1000).rewrite(spark, table, current, batch, label=label,
                                                            outputs=outputs)

    before = set(data_files(table_uri))
    tally = run_rewrite_batches(table, snap, batches, rewrite=rewrite,
                                operation_parameters=plan.operation_parameters(), scan=None, label="zorder")
    # the eu batch stopped after its sample, before choosing or writing any file; re-planned, its
    # group was dropped (an input is gone); the us batch committed
    assert len(asked) == 2 and asked[0] == [] and asked[1]
    assert (len(tally.versions), tally.batches_retried, tally.batches_aborted) == (1, 1, 1)
    assert tally.abandoned_reasons == ("batch 1/2: every input changed",)
    assert {dict(r.partition_values)["region"] for r in table.commit_actions(tally.versions[0])
            if isinstance(r, Remove)} == {"us"}
    assert set(data_files(table_uri)) - before <= {(p, s) for p, s in data_files(table_uri)
                                                   if p in ever_added(table)}


def test_the_input_watch_of_a_batchs_writers_stops_at_a_removed_input(table_uri):
    table = make_table(table_uri, appends=2)
    snap = table.snapshot()
    eu, us = (sorted(a.path for a in snap.add_actions() if a.partition_values["region"] == r) for r in ("eu", "us"))
    watch = InputWatch(table.storage, snap.version, frozenset(eu))
    append(table, batch(1000, 10))  # a blind append takes nothing a rewrite read
    delete_files(table, [us[0]])  # nor does removing a file outside the batch
    watch.check()
    assert watch.version == table.latest_version()  # read once: the next check reads only newer commits
    delete_files(table, [eu[1]])
    with pytest.raises(ConcurrentDeleteReadError) as info:
        watch.check()
    assert info.value.version == table.latest_version()


def test_a_task_that_fails_on_an_input_a_writer_removed_is_a_conflict_and_replanned(spark, table_uri):
    table = make_table(table_uri, appends=3)  # eu and us: two bins in one batch
    snap = table.snapshot()
    plan = plan_compaction(snap, min_input_files=2)
    gone = next(g for g in plan.groups if dict(g.partition_values)["region"] == "eu").paths[0]
    calls = []

    def rewrite(current, batch, label, outputs):
        calls.append(label)
        if len(calls) == 1:  # a writer removes an eu input mid-batch, and vacuum deletes the file
            delete_files(table, [gone])
            os.remove(os.path.join(table_uri, url_decode_path(gone)))
        return BinRewrite().rewrite(spark, table, current, batch, label=label, outputs=outputs)

    tally = run_rewrite_batches(table, snap, plan.batches(), rewrite=rewrite,
                                operation_parameters=plan.operation_parameters(), scan=None, label="compaction")
    # not a missing file to repair: the batch was re-planned on eu's two live inputs and us
    assert len(calls) == 2 and (len(tally.versions), tally.batches_retried, tally.batches_aborted) == (1, 1, 0)
    assert tally.num_removed_files == 5 and tally.versions == (snap.version + 2,)
    assert multiset(deltars_rows(table_uri)) == multiset(deltars_rows(table_uri, version=snap.version + 1))
    assert {p for p, _ in data_files(table_uri)} <= ever_added(table)
