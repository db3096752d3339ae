"""The health model on tables built to have known figures (PROTOCOL.md "Per-file Statistics",
"Deletion Vectors", "Checkpoints"): each metric, the score's parts, and recommendations that
appear only when they pay off."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.health.overlap import overlap_depth
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from delta_core.maintenance.manifest import generate_manifests
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from tests.health.conftest import DV_PROTOCOL, T0, add, listing, remove, write_log

KB = 1024
MB = 1024 * 1024
DAY_MS = 24 * 3600 * 1000


def _ops(report):
    return {r.operation: r for r in report.recommendations}


def test_small_files_compact_only_where_a_partition_has_enough(tmp_path):
    # Partition a: five 1 MB files (one bin of min_input_files, 5 -> 1); b: one 1 MB file and d:
    # four (too few to merge); c: one 120 MB file (not small at the 128 MiB target).
    root = str(tmp_path / "t")
    write_log(root, [[*(add(f"p=a/{i}.parquet", MB, part="a") for i in range(5)), add("p=b/1.parquet", MB, part="b"),
                      *(add(f"p=d/{i}.parquet", MB, part="d") for i in range(4)),
                      add("p=c/1.parquet", 120 * MB, part="c")]], partitioned=True)
    before = listing(root)
    report = table_health(DeltaTable(root))
    m = report.metrics
    assert (m.num_files, m.small_files, m.small_file_bytes) == (11, 10, 10 * MB)
    assert m.small_file_ratio == round(10 / 11, 6)
    assert (m.compactable_files, m.compaction_output_files, m.compactable_bytes) == (5, 1, 5 * MB)
    # the output is still small: 6 of 7 files are left small, but five files merge (min_input_files)
    assert (m.compaction_small_inputs, m.compaction_small_outputs) == (5, 1)
    # Histogram: 10 files under target/64 = 2 MiB, one in [target*3/4, 2*target).
    assert [(b.lower, b.files) for b in m.size_histogram if b.files] == [(0, 10), (96 * MB, 1)]
    assert sum(b.bytes for b in m.size_histogram) == m.total_bytes == 130 * MB
    compact = _ops(report)["compact"]
    assert (compact.estimated_gain, compact.unit) == (4.0, "files")
    assert listing(root) == before  # health writes nothing


def test_one_small_file_per_partition_is_not_worth_compacting(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"p={p}/1.parquet", MB, part=p) for p in "abcd"]], partitioned=True)
    report = table_health(DeltaTable(root))
    assert report.metrics.small_file_ratio == 1.0  # above the 0.3 threshold ...
    assert report.metrics.compactable_files == 0
    assert "compact" not in _ops(report)  # ... but compaction would change nothing
    assert [p.score for p in report.parts if p.name == "file_sizes"] == [1.0]


def test_small_file_count_threshold_triggers_compaction_below_the_ratio(tmp_path):
    # 6 small files among 30 (ratio 0.2 < 0.3); a policy asking for compaction from 3 small files.
    root = str(tmp_path / "t")
    write_log(root, [[add(f"s{i}.parquet", MB) for i in range(6)]
                     + [add(f"big{i}.parquet", 128 * MB) for i in range(24)]])
    table = DeltaTable(root)
    assert "compact" not in _ops(table_health(table))
    report = table_health(table, policy=HealthPolicy(compact_min_small_files=3))
    assert _ops(report)["compact"].estimated_gain == 5.0  # one small file left: within 3


def test_deleted_rows_ratio_from_deletion_vector_cardinalities(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB, records=100, dv_cardinality=30),
                      add("b.parquet", 128 * MB, records=100),
                      add("c.parquet", 128 * MB, records=None)]],  # no stats: no denominator
              protocol=DV_PROTOCOL, configuration={"delta.enableDeletionVectors": "true"})
    report = table_health(DeltaTable(root))
    m = report.metrics
    assert (m.deleted_rows, m.num_records, m.files_with_deletion_vectors) == (30, 200, 1)
    assert m.deletion_vector_file_bytes == 128 * MB  # a.parquet, what a purge would rewrite
    assert m.deleted_rows_ratio == 0.15
    assert (m.files_without_stats, m.files_without_stats_ratio) == (1, round(1 / 3, 6))
    purge = _ops(report)["purge"]
    assert (purge.estimated_gain, purge.unit) == (30.0, "rows")
    # At 0.15 = 3x the 0.05 threshold the part scores 0. Two of the three files have stats, but
    # only for x: none covers p, which the (unpartitioned) table indexes too.
    parts = {p.name: p for p in report.parts}
    assert parts["deleted_rows"].score == 0.0
    assert (parts["stats_coverage"].value, parts["stats_coverage"].score) == (0.0, 0.0)


def test_deleted_rows_at_the_threshold_ask_for_no_purge(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB, records=100, dv_cardinality=10),
                      add("b.parquet", 128 * MB, records=100)]], protocol=DV_PROTOCOL)
    report = table_health(DeltaTable(root))
    assert report.metrics.deleted_rows_ratio == 0.05
    assert "purge" not in _ops(report)
    assert {p.name: p.score for p in report.parts}["deleted_rows"] == 0.5


def test_checkpoint_recommended_until_a_fresh_one_exists(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{v}.parquet", 128 * MB)] for v in range(12)])
    table = DeltaTable(root)
    report = table_health(table)
    m = report.metrics
    sizes = sum(os.path.getsize(os.path.join(root, "_delta_log", f"{v:020d}.json")) for v in range(12))
    assert (m.checkpoint_version, m.versions_since_checkpoint, m.log_bytes_since_checkpoint) == (None, 11, sizes)  # commits after version 0
    assert _ops(report)["checkpoint"].estimated_gain == 11.0

    write_checkpoint(table)
    fresh = table_health(table)
    assert (fresh.metrics.checkpoint_version, fresh.metrics.versions_since_checkpoint) == (11, 0)
    assert "checkpoint" not in _ops(fresh)
    assert {p.name: p.score for p in fresh.parts}["checkpoint"] == 1.0


def test_checkpoint_interval_from_the_table_or_the_policy(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{v}.parquet", 128 * MB)] for v in range(4)],
              configuration={"delta.checkpointInterval": "3"})
    table = DeltaTable(root)
    assert table_health(table).metrics.checkpoint_interval == 3
    assert "checkpoint" in _ops(table_health(table))
    assert "checkpoint" not in _ops(table_health(table, policy=HealthPolicy(checkpoint_interval=5)))


def test_tombstones_become_reclaimable_after_the_retention(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB), add("b.parquet", 5000), add("c.parquet", 7000)],
                     [remove("b.parquet", 5000, when=T0), remove("c.parquet", 7000, when=T0 + 3 * DAY_MS)]])
    now = DeltaTable(root, clock=lambda: T0 + 4 * DAY_MS)
    m = table_health(now).metrics
    assert (m.num_tombstones, m.tombstone_bytes, m.reclaimable_bytes) == (2, 12000, 0)
    assert "vacuum" not in _ops(table_health(now))

    # 8 days after the first removal, only it is past the 7-day delta.deletedFileRetentionDuration.
    later = table_health(DeltaTable(root, clock=lambda: T0 + 8 * DAY_MS))
    assert (later.metrics.reclaimable_tombstones, later.metrics.reclaimable_bytes) == (1, 5000)
    assert _ops(later)["vacuum"].estimated_gain == 5000.0


def test_overlap_depth_counts_intersecting_ranges():
    disjoint = overlap_depth(pa.chunked_array([[0, 10, 20, 30]]), pa.chunked_array([[9, 19, 29, 39]]))
    same = overlap_depth(pa.chunked_array([[0, 0, 0, 0]]), pa.chunked_array([[39, 39, 39, 39]]))
    # [0,15] meets [10,25]; [10,25] meets both others; [20,30] meets [10,25]: (2+3+2)/3.
    chain = overlap_depth(pa.chunked_array([[0, 10, 20]]), pa.chunked_array([[15, 25, 30]]))
    strings = overlap_depth(pa.chunked_array([["a", "m", None]]), pa.chunked_array([["l", "z", "q"]]))
    assert (disjoint, same, chain, strings) == (1.0, 4.0, round(7 / 3, 4), 1.0)


def test_clustering_quality_and_zorder_advice(tmp_path):
    sorted_root, mixed_root = str(tmp_path / "sorted"), str(tmp_path / "mixed")
    write_log(sorted_root, [[add(f"f{i}.parquet", 128 * MB, lo=i * 100, hi=i * 100 + 99) for i in range(4)]])
    write_log(mixed_root, [[add(f"f{i}.parquet", 128 * MB, lo=0, hi=399) for i in range(4)]])
    good = table_health(DeltaTable(sorted_root), columns=["x"])
    bad = table_health(DeltaTable(mixed_root), columns=["x"])
    # Each probe value falls in exactly one of 4 disjoint files: 3 of 4 skipped.
    assert (good.metrics.skip_ratio, good.metrics.overlap_depth) == (0.75, 1.0)
    assert (bad.metrics.skip_ratio, bad.metrics.overlap_depth) == (0.0, 4.0)
    assert "zorder" not in _ops(good)
    zorder = _ops(bad)["zorder"]
    assert (zorder.estimated_gain, zorder.unit) == (0.75, "skip ratio")  # 4 disjoint files, as planned
    assert {p.name: p.score for p in bad.parts}["skipping"] == 0.0
    assert "skipping" not in {p.name for p in table_health(DeltaTable(mixed_root)).parts}  # no columns


def test_one_file_cannot_be_clustered_better(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("f.parquet", 128 * MB, lo=0, hi=399)]])
    report = table_health(DeltaTable(root), columns=["x"])
    assert report.metrics.skip_ratio == 0.0
    assert "zorder" not in _ops(report)


def test_liquid_clustering_columns_come_from_the_domain(tmp_path):
    root = str(tmp_path / "t")
    domain = {"domainMetadata": {"domain": "delta.clustering",
                                 "configuration": '{"clusteringColumns":[["x"]]}', "removed": False}}
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["clustering", "domainMetadata"]}
    write_log(root, [[domain] + [add(f"f{i}.parquet", 128 * MB, lo=0, hi=399) for i in range(4)]],
              protocol=protocol)
    report = table_health(DeltaTable(root))
    assert report.metrics.columns == ("x",)
    assert _ops(report)["cluster"].estimated_gain == 0.75


def test_last_optimize_version_and_time(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", MB)], [add("b.parquet", MB)], [], [add("c.parquet", MB)]],
              operations={2: "OPTIMIZE"})
    table = DeltaTable(root)
    m = table_health(table).metrics
    mtime = table.storage.head("_delta_log/00000000000000000002.json").modification_time
    assert (m.last_optimize_version, m.last_optimize_timestamp) == (2, mtime)
    # Beyond the lookback, it is not searched.
    assert table_health(table, policy=HealthPolicy(optimize_lookback=1)).metrics.last_optimize_version is None


def test_last_optimize_time_is_the_in_commit_timestamp_when_enabled(tmp_path):
    stamps = {v: T0 + 1000 * v for v in range(3)}
    on, off = str(tmp_path / "on"), str(tmp_path / "off")
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]}
    write_log(on, [[add("a.parquet", MB)], [add("b.parquet", MB)], []], operations={2: "OPTIMIZE"},
              ict=stamps, protocol=protocol, configuration={"delta.enableInCommitTimestamps": "true"})
    write_log(off, [[add("a.parquet", MB)], [add("b.parquet", MB)], []], operations={2: "OPTIMIZE"}, ict=stamps)
    assert table_health(DeltaTable(on)).metrics.last_optimize_timestamp == T0 + 2000
    # Not enabled: a stray inCommitTimestamp is not the commit time; the file time is.
    table = DeltaTable(off)
    mtime = table.storage.head("_delta_log/00000000000000000002.json").modification_time
    assert table_health(table).metrics.last_optimize_timestamp == mtime != T0 + 2000


def test_manifest_staleness_only_when_asked(tmp_path):
    root = str(tmp_path / "t")
    table = create_table(root, pa.schema([("x", pa.int64())]))
    append(table, pa.table({"x": [1, 2]}))
    assert table_health(table).metrics.manifest_versions_behind is None
    assert table_health(table, manifests=True).metrics.manifest_versions_behind == 2  # never generated
    generate_manifests(table)
    assert "manifest" not in _ops(table_health(table, manifests=True))
    append(table, pa.table({"x": [3]}))
    report = table_health(table, manifests=True)
    assert (report.metrics.manifest_version, report.metrics.manifest_versions_behind) == (1, 1)
    assert _ops(report)["manifest"].estimated_gain == 1.0


def test_manifests_on_a_table_they_cannot_serve_are_not_recommended(tmp_path):
    # Manifests refuse deletion vectors; the property asks for them, but the lag is not judged.
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB, dv_cardinality=1)]], protocol=DV_PROTOCOL,
              configuration={"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    report = table_health(DeltaTable(root), manifests=True)
    assert report.metrics.manifest_versions_behind is None
    assert "manifest" not in _ops(report)


def test_manifest_property_turns_the_staleness_check_on(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("a.parquet", 128 * MB)]],
              configuration={"delta.compatibility.symlinkFormatManifest.enabled": "true"})
    report = table_health(DeltaTable(root))
    assert report.metrics.manifest_versions_behind == 1
    assert _ops(report)["manifest"].unit == "versions"


def test_log_cleanup_counted_only_with_a_listing(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{v}.parquet", 128 * MB)] for v in range(3)])
    write_checkpoint(DeltaTable(root))
    far = DeltaTable(root, clock=lambda: dt.datetime.now(dt.UTC).timestamp() * 1000 + 40 * DAY_MS)
    assert table_health(far).metrics.expired_log_files is None
    before = listing(root)
    report = table_health(far, log_listing=True)
    # Commits 0 and 1 precede the checkpoint at 2 and are past the 30-day log retention.
    assert report.metrics.expired_log_files == 2
    assert _ops(report)["cleanup_log"].estimated_gain == 2.0
    assert listing(root) == before


def test_score_is_the_weighted_mean_of_named_parts(tmp_path):
    root = str(tmp_path / "t")
    table = create_table(root, pa.schema([("x", pa.int64())]))
    append(table, pa.table({"x": [1, 2, 3]}))
    write_checkpoint(table)
    healthy = table_health(table)
    assert healthy.score == 100 and healthy.recommendations == ()
    assert [p.name for p in healthy.parts] == ["file_sizes", "deleted_rows", "checkpoint", "tombstones",
                                                "stats_coverage"]

    # Two more small files in the one partition: 3 of 3 compactable (bins of two files and more
    # by this policy), 2 commits since checkpoint.
    append(table, pa.table({"x": [4]}))
    append(table, pa.table({"x": [5]}))
    delete_files(table, [table.snapshot().file_paths[0]])
    report = table_health(table, policy=HealthPolicy(min_input_files=2))
    parts = {p.name: p for p in report.parts}
    assert parts["file_sizes"].value == 1.0 and parts["file_sizes"].score == 0.0
    assert parts["checkpoint"].value == 3 and parts["checkpoint"].score == 0.85
    weighted = sum(p.weight * p.score for p in report.parts) / sum(p.weight for p in report.parts)
    assert report.score == round(100 * weighted) < 100
    assert report.headline() == {
        "score": report.score, "num_files": 2, "small_file_ratio": 1.0, "deleted_rows_ratio": 0.0,
        "versions_since_checkpoint": 3, "tombstone_bytes": report.metrics.tombstone_bytes, "skip_ratio": None}
    assert report.metrics.tombstone_bytes > 0


def test_unknown_or_partition_column_is_refused_and_nothing_written(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add("p=a/1.parquet", MB, part="a")]], partitioned=True)
    before = listing(root)
    with pytest.raises(ConfigError, match="not in the schema") as err:
        table_health(DeltaTable(root), columns=["nope"])
    assert err.value.version == 0 and err.value.path
    with pytest.raises(ConfigError, match="partition column"):
        table_health(DeltaTable(root), columns=["p"])
    assert listing(root) == before


@pytest.mark.parametrize("kwargs", [{"compact_small_file_ratio": 1.5}, {"target_file_size": 0},
                                    {"optimize_lookback": -1}, {"stats_coverage_floor": -0.1}])
def test_bad_policy_is_a_config_error(kwargs):
    with pytest.raises(ConfigError, match="health policy"):
        HealthPolicy(**kwargs)


def test_a_table_written_and_optimized_by_delta_rs(tmp_path):
    import deltalake

    root = str(tmp_path / "rs")
    for i in range(12):
        deltalake.write_deltalake(root, pa.table({"x": pa.array([i, i + 10], pa.int64())}), mode="append")
    before = table_health(DeltaTable(root))
    assert (before.metrics.compactable_files, before.metrics.compaction_output_files) == (12, 1)
    assert _ops(before)["compact"].estimated_gain == 11.0
    assert before.metrics.last_optimize_version is None

    deltalake.DeltaTable(root).optimize.compact()
    after = table_health(DeltaTable(root))
    assert after.metrics.last_optimize_version == 12  # delta-rs's OPTIMIZE commit
    assert (after.metrics.num_files, after.metrics.compactable_files) == (1, 0)
    assert "compact" not in _ops(after)
    # The twelve files it replaced are tombstones now (not yet past the retention).
    assert (after.metrics.num_tombstones, after.metrics.reclaimable_tombstones) == (12, 0)
    assert after.metrics.tombstone_bytes == before.metrics.total_bytes
