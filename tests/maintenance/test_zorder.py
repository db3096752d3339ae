"""Z-order / Hilbert clustering on Spark over real tables."""

from __future__ import annotations

import json

import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.zorder import zorder
from delta_core.maintenance.zorder_plan import plan_zorder
from tests.maintenance.conftest import (
    assert_versions_readable,
    commit_info,
    deltars_rows,
    file_actions,
    make_deltars_table,
    make_table,
    multiset,
    rows_kept,
)

pytestmark = pytest.mark.spark


def check(table, metrics, *, columns, curve="zorder"):
    adds, removes = file_actions(table, metrics.version)
    assert len(removes) == metrics.num_removed_files and len(adds) == metrics.num_added_files
    assert all(a["dataChange"] is False for a in adds + removes)
    assert all(json.loads(a["stats"])["numRecords"] > 0 for a in adds)
    info = commit_info(table, metrics.version)
    assert info["operation"] == "OPTIMIZE"
    assert json.loads(info["operationParameters"]["zOrderBy"]) == columns
    assert info["operationParameters"]["curve"] == curve


def test_zorder_rewrites_partitions_into_target_sized_files(spark, table_uri):
    table = make_table(table_uri, appends=6, rows=50)
    snap = table.snapshot()
    target = snap.size_in_bytes // 6
    expected_files = plan_zorder(snap, ["x", "id"], target_size=target).output_files()
    with rows_kept(table_uri):
        metrics = zorder(table, spark, ["x", "id"], target_size=target)
    assert metrics.num_removed_files == 12 and metrics.batches_committed == 1
    assert expected_files <= metrics.num_added_files <= expected_files + 2  # +1 per partition boundary
    check(table, metrics, columns=["x", "id"])
    # files within a partition cover disjoint stretches of the curve: x ranges barely overlap
    stats = table.snapshot().file_stats()
    assert stats.num_rows == metrics.num_added_files
    assert_versions_readable(table_uri, range(metrics.version + 1))


def test_hilbert_on_deltars_table_with_string_and_date_columns(spark, table_uri):
    make_deltars_table(table_uri, appends=4)
    table = DeltaTable(table_uri)
    with rows_kept(table_uri):
        metrics = zorder(table, spark, ["name", "day"], curve="hilbert", where="region = 'eu'")
    assert metrics.num_removed_files == 4 and metrics.num_added_files == 1
    check(table, metrics, columns=["name", "day"], curve="hilbert")
    eu = [a for a in table.snapshot().add_actions() if a.partition_values["region"] == "eu"]
    assert len(eu) == 1


def test_clustering_improves_skipping(spark, table_uri):
    import numpy as np

    table = make_table(table_uri, appends=8, rows=100, partition_columns=())
    target = table.snapshot().size_in_bytes // 8
    metrics = zorder(table, spark, ["x", "id"], target_size=target)
    stats = table.snapshot().file_stats()
    lo, hi = np.array(stats.column("min.x").to_pylist()), np.array(stats.column("max.x").to_pylist())
    probes = np.linspace(0, 99.9, 50)
    skipped = np.mean([[(p < a or p > b) for a, b in zip(lo, hi)] for p in probes])
    assert metrics.num_added_files >= 4 and skipped > 0.3


@pytest.mark.s3
def test_on_s3(spark, s3_table_uri, s3_storage_options, deltalake_s3_options):
    table = make_table(s3_table_uri, appends=3, storage_options=s3_storage_options)
    before = multiset(deltars_rows(s3_table_uri, storage_options=deltalake_s3_options))
    metrics = zorder(table, spark, ["id"])
    check(table, metrics, columns=["id"])
    assert multiset(deltars_rows(s3_table_uri, storage_options=deltalake_s3_options)) == before


def cube_tags(table) -> dict[str, tuple[str, str]]:
    """Per live file, its (ZCUBE_ID, ZCUBE_ZORDER_BY); no file carries ``clusteringProvider``."""
    snapshot = table.snapshot()
    files = snapshot.files_of(snapshot.file_paths, ["path", "tags", "clustering_provider"]).to_pylist()
    assert all(f["clustering_provider"] is None for f in files)
    tags = {f["path"]: dict(f["tags"] or []) for f in files}
    return {p: (t.get("ZCUBE_ID"), t.get("ZCUBE_ZORDER_BY")) for p, t in tags.items()}


def test_second_zorder_on_unchanged_data_commits_nothing(spark, table_uri):
    table = make_table(table_uri, appends=6, rows=50, partition_columns=())
    target = table.snapshot().size_in_bytes // 3
    first = zorder(table, spark, ["x", "id"], target_size=target)
    assert first.num_removed_files == 6 and first.num_added_files >= 2
    tags = cube_tags(table)
    assert len({cube for cube, _ in tags.values()}) == 1  # one new ZCube for the partition
    assert {by for _, by in tags.values()} == {'["x","id"]'}
    version = table.snapshot().version
    assert plan_zorder(table.snapshot(), ["x", "id"], target_size=target).is_empty
    second = zorder(table, spark, ["x", "id"], target_size=target)
    assert second.num_removed_files == 0 and second.versions == ()
    assert table.snapshot().version == version
    # other columns: the cube does not count as Z-ordered on them
    assert plan_zorder(table.snapshot(), ["id"], target_size=target).num_input_files == len(tags)


def test_after_an_append_only_new_files_and_small_cubes_are_rewritten(spark, table_uri):
    from delta_core.write.table_writes import append
    from tests.kernel_oracle import kernel_rows
    from tests.maintenance.conftest import batch

    table = make_table(table_uri, appends=6, rows=50)  # partitioned by region: eu and us
    target = table.snapshot().size_in_bytes // 8
    zorder(table, spark, ["x", "id"], target_size=target)  # each region: one cube of ~4 targets
    big = cube_tags(table)
    append(table, batch(1000, 50))  # one new file per region
    table = DeltaTable(table_uri)
    new = set(cube_tags(table)) - set(big)
    before = multiset(deltars_rows(table_uri))
    metrics = zorder(table, spark, ["x", "id"], target_size=target)
    adds, removes = file_actions(table, metrics.version)
    assert {r["path"] for r in removes} == new  # the large cubes stay as they were
    after = cube_tags(table)
    assert all(after[p] == big[p] for p in big)
    assert len({after[a["path"]][0] for a in adds} - {c for c, _ in big.values()}) == 2  # a new cube per region
    assert multiset(deltars_rows(table_uri)) == before == multiset(kernel_rows(table_uri))
    check(table, metrics, columns=["x", "id"])


def test_small_cubes_merge_with_new_data_then_rest(spark, table_uri):
    from delta_core.write.table_writes import append
    from tests.maintenance.conftest import batch

    table = make_table(table_uri, appends=3, rows=50, partition_columns=())
    zorder(table, spark, ["x", "id"])  # default target: one small cube
    small = cube_tags(table)
    append(table, batch(1000, 50))
    table = DeltaTable(table_uri)
    live = set(cube_tags(table))
    assert len(live - set(small)) == 1
    with rows_kept(table_uri):
        metrics = zorder(table, spark, ["x", "id"])
    _, removes = file_actions(table, metrics.version)
    assert {r["path"] for r in removes} == live  # the new file and the small cube
    assert len({c for c, _ in cube_tags(table).values()}) == 1
    # one small cube and nothing new: nothing to merge it with
    assert zorder(table, spark, ["x", "id"]).versions == ()
