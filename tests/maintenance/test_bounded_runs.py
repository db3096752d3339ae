"""Bounded rewrites (issue 30): caps, order, max_duration, quiet partitions and re-planned retries,
on real tables. What a run leaves is reported and committed by the next run; a batch that loses a
conflict to a real concurrent commit (made by the test between the batch's rewrite and its
commit) is re-planned on the new snapshot and retried."""

from __future__ import annotations

import time

import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.options import RewriteBounds
from delta_core.maintenance.rewrite_metrics import CompactionMetrics, RewriteMetrics
from delta_core.maintenance.spark.bin_rewrite import BinRewrite
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.driver import Rewrite, run_rewrite
from delta_core.maintenance.spark.purge import purge
from delta_core.model.actions import Add, Remove
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, create_table, delete_files
from tests.core_write.conftest import listing
from tests.dv_files import commit_deletion_vector, rows_applying_dvs
from tests.maintenance.conftest import SCHEMA, batch, deltars_rows, make_table, multiset


def no_spark():
    raise AssertionError("a dry run asked for Spark")


def regions_table(uri: str, files: dict[str, tuple[int, int]], *, properties: dict[str, str] | None = None,
                  partitioned: bool = True) -> DeltaTable:
    """A table with ``files[region] = (number of files, rows per file)``, one append per file."""
    create_table(uri, SCHEMA, partition_columns=("region",) if partitioned else (), properties=properties)
    table = DeltaTable(uri)
    start = 0
    for region, (count, rows) in files.items():
        for _ in range(count):
            append(table, batch(start, rows, regions=(region,)))
            start += rows
    return DeltaTable(uri)


def partition_totals(table: DeltaTable) -> dict[str, tuple[int, int]]:
    """region -> (files, bytes) of the live files."""
    out: dict[str, tuple[int, int]] = {}
    for a in table.snapshot().add_actions():
        files, size = out.get(a.partition_values["region"], (0, 0))
        out[a.partition_values["region"]] = (files + 1, size + a.size)
    return out


def removed_regions(table: DeltaTable, version: int) -> set[str]:
    return {a.partition_values["region"] for a in table.commit_actions(version) if isinstance(a, Remove)}


def test_order_smallest_or_benefit_decides_what_a_capped_run_takes(tmp_path):
    # "few": 2 larger files (fewer bytes in all, fewer files per byte); "many": 6 tiny files
    table = regions_table(str(tmp_path / "t"), {"few": (2, 100), "many": (6, 2)})
    totals = partition_totals(table)
    (few_files, few_bytes), (many_files, many_bytes) = totals["few"], totals["many"]
    assert few_bytes < many_bytes and few_files / few_bytes < many_files / many_bytes  # the premise

    smallest = compact(table, no_spark, dry_run=True, bounds=RewriteBounds(max_files=2, order="smallest"), min_input_files=2)
    assert (smallest.num_removed_files, smallest.removed_bytes) == (2, few_bytes)
    assert (smallest.groups_left, smallest.files_left, smallest.bytes_left, smallest.stopped_by) == \
        (1, 6, many_bytes, "max_files")
    # benefit: "many" first; alone it passes the cap, but the first group always runs
    benefit = compact(table, no_spark, dry_run=True, bounds=RewriteBounds(max_files=2, order="benefit"), min_input_files=2)
    assert (benefit.num_removed_files, benefit.removed_bytes) == (6, many_bytes)
    assert (benefit.groups_left, benefit.files_left, benefit.stopped_by) == (1, 2, "max_files")
    bytes_capped = compact(table, no_spark, dry_run=True,
                           bounds=RewriteBounds(max_bytes=few_bytes + many_bytes - 1, order="benefit"), min_input_files=2)
    assert (bytes_capped.num_removed_files, bytes_capped.stopped_by) == (6, "max_bytes")
    uncapped = compact(table, no_spark, dry_run=True, min_input_files=2)
    assert (uncapped.num_removed_files, uncapped.groups_left, uncapped.stopped_by) == (8, 0, None)
    assert table.latest_version() == 8  # dry runs commit nothing


@pytest.mark.spark
def test_caps_are_honoured_and_the_next_run_commits_the_leftovers(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = regions_table(uri, {"a": (4, 20), "b": (2, 20), "c": (3, 20)})
    before = multiset(deltars_rows(uri))
    first = compact(table, spark, bounds=RewriteBounds(max_files=5, batch_size=1), min_input_files=2)
    assert isinstance(first, CompactionMetrics)
    # smallest first: b (2 files) and c (3) fit 5 files, a (4) is left
    assert first.batches_committed == 2 and first.num_removed_files == 5
    assert set().union(*(removed_regions(table, v) for v in first.versions)) == {"b", "c"}
    assert (first.groups_left, first.files_left, first.stopped_by) == (1, 4, "max_files")
    assert first.bytes_left == partition_totals(DeltaTable(uri))["a"][1]
    second = compact(table, spark, min_input_files=2)
    assert removed_regions(table, second.version) == {"a"} and second.num_removed_files == 4
    assert (second.groups_left, second.stopped_by) == (0, None)
    assert {r: f for r, (f, _) in partition_totals(DeltaTable(uri)).items()} == {"a": 1, "b": 1, "c": 1}
    assert multiset(deltars_rows(uri)) == before


@pytest.mark.spark
def test_no_batch_starts_after_max_duration(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = regions_table(uri, {"a": (2, 20), "b": (2, 20), "c": (2, 20)})
    before = multiset(deltars_rows(uri))
    # each bin its own batch; the budget is gone once the first batch ran (which always runs)
    first = compact(table, spark, bounds=RewriteBounds(batch_size=1, max_duration=1e-6), min_input_files=2)
    assert (first.num_batches, first.batches_committed) == (3, 1)
    assert (first.groups_left, first.files_left, first.stopped_by) == (2, 4, "max_duration")
    second = compact(table, spark, bounds=RewriteBounds(batch_size=1, max_duration=60), min_input_files=2)
    assert (second.batches_committed, second.groups_left, second.stopped_by) == (2, 0, None)
    assert DeltaTable(uri).snapshot().num_files == 3 and multiset(deltars_rows(uri)) == before


class InterferingRewrite:
    """The bin executor, and another writer's real commit after each of its first ``times``
    rewrites (before the batch's commit)."""

    def __init__(self, interfere, times: int = 1) -> None:
        self.inner = BinRewrite()
        self.interfere = interfere
        self.times = times
        self.rewrites = 0

    @property
    def preserves_insertion_order(self) -> bool:
        return self.inner.preserves_insertion_order

    def rewrite(self, spark, table, snapshot, batch, *, label, outputs):
        output = self.inner.rewrite(spark, table, snapshot, batch, label=label, outputs=outputs)
        self.rewrites += 1
        if self.rewrites <= self.times:
            self.interfere(table, batch)
        return output


def run_compaction(spark, table: DeltaTable, executor: InterferingRewrite, bounds: RewriteBounds) -> RewriteMetrics:
    snapshot = table.snapshot()
    plan = plan_compaction(snapshot, min_input_files=2)
    run = run_rewrite(table, spark, snapshot, Rewrite(plan, executor, "compaction"), bounds=bounds, watch=Stopwatch())
    return run.metrics(RewriteMetrics)


@pytest.mark.spark
def test_a_batch_that_loses_to_a_deletion_vector_is_replanned_and_commits(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3, properties={"delta.enableDeletionVectors": "true"})
    dv_versions: list[int] = []

    def delete_two_rows(table, batch):
        dv_versions.append(commit_deletion_vector(table, batch[0].paths[0], [0, 1]))

    executor = InterferingRewrite(delete_two_rows)
    metrics = run_compaction(spark, table, executor, RewriteBounds())
    assert executor.rewrites == 2 and len(dv_versions) == 1
    assert (metrics.batches_committed, metrics.batches_retried, metrics.batches_aborted) == (1, 1, 0)
    assert metrics.abandoned_reasons == () and metrics.versions == (dv_versions[0] + 1,)
    assert metrics.num_deletion_vectors_removed == 1  # the retry read the victim with its new vector
    live = list(DeltaTable(uri).snapshot().add_actions())
    assert len(live) == 2 and all(a.deletion_vector is None for a in live)
    assert multiset(rows_applying_dvs(uri)) == multiset(rows_applying_dvs(uri, version=dv_versions[0]))
    ever = {url_decode_path(a.path) for v in range(table.latest_version() + 1) for a in table.commit_actions(v)
            if isinstance(a, Add)}
    assert {p for p, _ in listing(uri) if p.endswith(".parquet")} <= ever  # the abandoned attempt left nothing


@pytest.mark.spark
def test_a_replanned_batch_goes_on_with_the_live_inputs_of_each_group(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3)  # eu and us: two bins of 3 files in one batch
    gone: list[str] = []

    def delete_an_eu_input(table, batch):
        gone.append(next(g for g in batch if dict(g.partition_values)["region"] == "eu").paths[0])
        delete_files(table, gone)

    before = multiset(deltars_rows(uri))
    metrics = run_compaction(spark, table, InterferingRewrite(delete_an_eu_input), RewriteBounds())
    # the retry rewrote us whole and eu's two inputs still live; the removed one stays removed
    assert (metrics.batches_committed, metrics.batches_retried, metrics.batches_aborted) == (1, 1, 0)
    assert removed_regions(table, metrics.version) == {"eu", "us"} and metrics.num_removed_files == 5
    live = list(DeltaTable(uri).snapshot().add_actions())
    assert gone[0] not in {a.path for a in live} and len(live) == 2
    gone_rows = multiset(deltars_rows(uri, version=metrics.version - 2)) - multiset(deltars_rows(uri, version=metrics.version - 1))
    assert multiset(deltars_rows(uri)) == before - gone_rows


@pytest.mark.spark
def test_a_replanned_batch_drops_a_group_left_with_one_input(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = regions_table(uri, {"eu": (2, 20), "us": (3, 20)})
    gone: list[str] = []

    def delete_an_eu_input(table, batch):
        gone.append(next(g for g in batch if dict(g.partition_values)["region"] == "eu").paths[0])
        delete_files(table, gone)

    metrics = run_compaction(spark, table, InterferingRewrite(delete_an_eu_input), RewriteBounds())
    # compacting eu's one file left alone gains nothing: only us is rewritten
    assert (metrics.batches_committed, metrics.batches_retried, metrics.batches_aborted) == (1, 1, 0)
    assert removed_regions(table, metrics.version) == {"us"} and metrics.num_removed_files == 3


@pytest.mark.spark
def test_a_group_whose_input_went_after_planning_is_narrowed_before_any_task_writes(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3)  # eu and us: two bins in one batch
    planned_on = table.snapshot()
    plan = plan_compaction(planned_on, min_input_files=2)
    eu_input = next(g for g in plan.groups if dict(g.partition_values)["region"] == "eu").paths[0]
    delete_files(table, [eu_input])  # a writer's commit between planning and the first batch
    executor = InterferingRewrite(lambda table, batch: None, times=0)
    run = run_rewrite(table, spark, planned_on, Rewrite(plan, executor, "compaction"), bounds=RewriteBounds(),
                      watch=Stopwatch())
    metrics = run.metrics(RewriteMetrics)
    # one rewrite, of us and of eu's two live inputs: nothing was written to lose a conflict
    assert executor.rewrites == 1
    assert (metrics.batches_committed, metrics.batches_retried, metrics.batches_aborted) == (1, 0, 0)
    assert removed_regions(table, metrics.version) == {"eu", "us"} and metrics.num_removed_files == 5
    assert eu_input not in {r.path for r in table.commit_actions(metrics.version) if isinstance(r, Remove)}
    ever = {url_decode_path(a.path) for v in range(table.latest_version() + 1) for a in table.commit_actions(v)
            if isinstance(a, Add)}
    assert {p for p, _ in listing(uri) if p.endswith(".parquet")} <= ever


@pytest.mark.spark
def test_a_batch_that_keeps_losing_is_abandoned_with_its_reason(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3, partition_columns=(), properties={"delta.enableDeletionVectors": "true"})
    before_files = {p for p, _ in listing(uri) if p.endswith(".parquet")}
    victims = iter(range(10))

    def delete_a_row(table, batch):
        commit_deletion_vector(table, batch[0].paths[0], [next(victims)])

    executor = InterferingRewrite(delete_a_row, times=2)
    metrics = run_compaction(spark, table, executor, RewriteBounds(max_batch_retries=1))
    assert executor.rewrites == 2
    assert (metrics.batches_committed, metrics.batches_retried, metrics.batches_aborted) == (0, 1, 1)
    assert len(metrics.abandoned_reasons) == 1 and metrics.abandoned_reasons[0].startswith("batch 1/1: ")
    assert {p for p, _ in listing(uri) if p.endswith(".parquet")} == before_files  # no orphan


def test_quiet_minutes_skips_busy_partitions(tmp_path):
    uri = str(tmp_path / "t")
    table = regions_table(uri, {"old": (3, 20)})
    time.sleep(4)
    for i in range(2):
        append(table, batch(1000 + i * 20, 20, regions=("busy",)))
    dry = compact(DeltaTable(uri), no_spark, dry_run=True, bounds=RewriteBounds(quiet_minutes=3 / 60), min_input_files=2)
    assert (dry.num_removed_files, dry.partitions_skipped_busy, dry.files_skipped_busy) == (3, 1, 2)
    off = compact(DeltaTable(uri), no_spark, dry_run=True, min_input_files=2)
    assert (off.num_removed_files, off.partitions_skipped_busy, off.files_skipped_busy) == (5, 0, 0)


def test_quiet_minutes_skips_recent_files_of_an_unpartitioned_table(tmp_path):
    uri = str(tmp_path / "t")
    table = regions_table(uri, {"eu": (3, 20)}, partitioned=False, properties={"delta.enableDeletionVectors": "true"})
    time.sleep(4)
    append(table, batch(1000, 20))
    dry = compact(DeltaTable(uri), no_spark, dry_run=True, bounds=RewriteBounds(quiet_minutes=3 / 60), min_input_files=2)
    assert (dry.num_removed_files, dry.partitions_skipped_busy, dry.files_skipped_busy) == (3, 0, 1)
    # purge: the one file with a deletion vector is recent, so nothing is left to purge
    recent = max(DeltaTable(uri).snapshot().add_actions(), key=lambda a: a.modification_time)
    commit_deletion_vector(DeltaTable(uri), recent.path, [0])
    purged = purge(DeltaTable(uri), no_spark, dry_run=True, bounds=RewriteBounds(quiet_minutes=3 / 60))
    assert (purged.num_removed_files, purged.files_skipped_busy) == (0, 1)
