"""Liquid clustering without Spark: clustering columns from the domain, cluster-by, the
incremental plan, and the refusals (issue 18 items 1, 3, 4, 5 and 6)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import pyarrow as pa
import pytest

from delta_core.errors import (
    ConfigError,
    CorruptLogError,
    UnsupportedTableForOperationError,
    UnsupportedWriterFeatureError,
)
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.cluster_plan import clustering_bounds, plan_clustering
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import DomainMetadata
from delta_core.model.clustering import clustering_columns
from delta_core.model.schema import StructType
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import create_table, set_properties
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import SCHEMA, batch, commit_info, commit_lines, deltars_rows, make_table, multiset


def _no_spark():
    raise AssertionError("Spark must not start")


# --- item 1: clustering columns ------------------------------------------------------------

MAPPED = StructType.from_json(json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True,
     "metadata": {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}},
    {"name": "s", "type": {"type": "struct", "fields": [
        {"name": "b", "type": "string", "nullable": True,
         "metadata": {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "col-3"}}]},
     "nullable": True, "metadata": {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-2"}},
]}))


def _domain(config: object) -> dict[str, DomainMetadata]:
    return {"delta.clustering": DomainMetadata("delta.clustering", json.dumps(config))}


@pytest.mark.parametrize("recorded", [
    [["col-1"], ["col-2", "col-3"]],  # Delta Spark: name parts, physical
    ["col-1", ["col-2", "col-3"]],  # a plain name beside name parts
    [["id"], ["s", "b"]],  # logical names from a writer that ignored column mapping
])
def test_clustering_columns_accept_name_parts_and_plain_names(recorded):
    cols = clustering_columns(_domain({"clusteringColumns": recorded}), MAPPED)
    assert [c.logical for c in cols] == [("id",), ("s", "b")]
    assert [c.physical for c in cols] == [("col-1",), ("col-2", "col-3")]
    assert [c.name for c in cols] == ["id", "s.b"]


def test_zcube_tags_spell_names_as_delta_spark():
    from delta_core.model.clustering import ClusteringColumn, zcube_tags

    cols = [ClusteringColumn(("a b",), ("col-1",)), ClusteringColumn(("s", "b"), ("col-2", "col-3")),
            ClusteringColumn(("2024",), ("col-4",))]
    assert zcube_tags("cube", cols) == {"ZCUBE_ID": "cube", "ZCUBE_ZORDER_BY": '["`a b`","s.b","`2024`"]'}


def test_clustering_columns_empty_missing_and_corrupt():
    assert clustering_columns({}, MAPPED) == ()
    assert clustering_columns(_domain({"clusteringColumns": []}), MAPPED) == ()  # CLUSTER BY NONE
    for bad in ({"clusteringColumns": "id"}, {"clusteringColumns": [["nope"]]}, {"clusteringColumns": [[]]}):
        with pytest.raises(CorruptLogError, match="delta.clustering") as ei:
            clustering_columns(_domain(bad), MAPPED, path="/t", version=3)
        assert (ei.value.path, ei.value.version) == ("/t", 3)


# --- item 4: cluster-by ----------------------------------------------------------------------


def test_cluster_by_sets_changes_and_clears_the_columns(table_uri):
    table = make_table(table_uri, appends=2, partition_columns=())
    before = multiset(deltars_rows(table_uri))
    kernel_before = kernel_rows(table_uri)
    start = table.latest_version()

    result = cluster_by(table, ["X", "id"])  # names resolve case-insensitively, as Delta Spark's
    assert result.version == start + 1 and result.protocol_upgraded and result.new_columns == ("x", "id")
    lines = commit_lines(table, result.version)
    assert not any("add" in a or "remove" in a for a in lines)
    domain = next(a["domainMetadata"] for a in lines if "domainMetadata" in a)
    assert domain == {"domain": "delta.clustering", "configuration": '{"clusteringColumns":[["x"],["id"]]}',
                      "removed": False}
    protocol = table.snapshot().protocol
    assert protocol.min_writer_version == 7 and {"clustering", "domainMetadata"} <= set(protocol.writer_features)
    info = commit_info(table, result.version)
    assert info["operation"] == "CLUSTER BY"
    assert info["operationParameters"] == {"oldClusteringColumns": "", "newClusteringColumns": "x,id"}

    assert cluster_by(table, ["x", "id"]).version is None  # nothing to change, nothing committed
    assert table.latest_version() == result.version

    changed = cluster_by(table, ["name"])
    assert not changed.protocol_upgraded and changed.old_columns == ("x", "id")
    assert [c.name for c in clustering_columns(table.snapshot().domain_metadata, table.snapshot().schema)] == ["name"]

    cleared = cluster_by(table, None)  # --none: an empty list; the table stays a clustered table
    assert cleared.version == changed.version + 1 and cleared.new_columns == ()
    snap = table.snapshot()
    assert snap.domain_metadata["delta.clustering"].configuration == '{"clusteringColumns":[]}'
    assert "clustering" in snap.protocol.writer_features
    for v in range(start, cleared.version + 1):  # delta-rs and kernel-rs read every version, same rows
        assert multiset(deltars_rows(table_uri, version=v)) == before
        assert kernel_rows(table_uri, version=v) == kernel_before


def test_cluster_by_column_mapping_records_physical_names(table_uri):
    create_table(table_uri, SCHEMA, properties={"delta.columnMapping.mode": "name"})
    table = DeltaTable(table_uri)
    cluster_by(table, ["x"])
    snap = table.snapshot()
    physical = snap.schema.get("x").physical_name
    assert physical.startswith("col-")
    assert json.loads(snap.domain_metadata["delta.clustering"].configuration) == {"clusteringColumns": [[physical]]}
    assert snap.protocol.min_reader_version == 2 and "columnMapping" in snap.protocol.writer_features  # kept


def test_cluster_by_none_on_an_unclustered_table_commits_nothing(table_uri):
    table = make_table(table_uri, appends=1, partition_columns=())
    before = listing(table_uri)
    assert cluster_by(table, None).version is None
    assert listing(table_uri) == before


@pytest.mark.parametrize(("columns", "props", "error", "words"), [
    (["x"], None, UnsupportedTableForOperationError, "partitioned"),
    (["nope"], {}, ConfigError, "not in the table schema"),
    (["id", "x", "name", "day", "ts"], {}, ConfigError, "at most 4"),
    (["x"], {"delta.dataSkippingNumIndexedCols": "1"}, ConfigError, "no statistics"),
])
def test_cluster_by_refusals_write_nothing(table_uri, columns, props, error, words):
    partitioned = props is None
    table = make_table(table_uri, appends=1, partition_columns=("region",) if partitioned else (),
                       properties=props or None)
    before = listing(table_uri)
    with pytest.raises(error, match=words) as ei:
        cluster_by(table, columns)
    assert ei.value.path == table_uri and ei.value.version == table.latest_version()
    assert listing(table_uri) == before


def test_cluster_by_refuses_a_column_some_files_have_no_stats_for(table_uri):
    table = make_table(table_uri, appends=2, partition_columns=(), properties={"delta.dataSkippingNumIndexedCols": "1"})
    set_properties(table, {"delta.dataSkippingNumIndexedCols": "6"})  # new files would have x stats; old ones lack them
    before = listing(table_uri)
    with pytest.raises(ConfigError, match="2 of 2 live file.*no statistics for column 'x'"):
        cluster_by(table, ["x"])
    assert listing(table_uri) == before
    assert cluster_by(table, ["id"]).version is not None  # id has stats everywhere


def test_set_properties_keeps_stats_on_clustering_columns(table_uri):
    table = make_table(table_uri, appends=1, partition_columns=())
    cluster_by(table, ["x"])
    before = listing(table_uri)
    with pytest.raises(ConfigError, match="clustering column.*x"):
        set_properties(table, {"delta.dataSkippingStatsColumns": "id"})
    assert listing(table_uri) == before
    set_properties(table, {"delta.dataSkippingStatsColumns": "id,x"})  # x keeps its stats: allowed


# --- item 5 and 6: refusals ------------------------------------------------------------------


def test_zorder_on_a_clustered_table_is_refused(table_uri):
    table = make_table(table_uri, appends=2, partition_columns=())
    cluster_by(table, ["x"])
    before = listing(table_uri)
    with pytest.raises(UnsupportedTableForOperationError, match="clustered") as ei:
        zorder(table, _no_spark, ["id"])
    assert ei.value.version == table.latest_version()
    assert listing(table_uri) == before


def test_compact_where_and_full_refusals(table_uri):
    table = make_table(table_uri, appends=2, partition_columns=())
    before = listing(table_uri)
    with pytest.raises(ConfigError, match="--full reclusters a clustered table"):
        compact(table, _no_spark, full=True)
    assert listing(table_uri) == before
    cluster_by(table, ["x"])
    before = listing(table_uri)
    with pytest.raises(ConfigError, match="no partitions"):
        compact(table, _no_spark, where="region = 'eu'")
    assert listing(table_uri) == before


def test_liquid_spelled_feature_falls_under_the_unsupported_feature_refusal(conformance_dir, tmp_path):
    uri = str(tmp_path / "liquid")
    shutil.copytree(conformance_dir / "rs-table_with_liquid_clustering", uri)
    table = DeltaTable(uri)
    snap = table.snapshot()
    assert "delta.liquid" in snap.domain_metadata and "delta.clustering" not in snap.domain_metadata
    before = listing(uri)
    for run in (lambda: cluster_by(table, ["id"]), lambda: compact(table, _no_spark),
                lambda: plan_clustering(snap)):
        with pytest.raises((UnsupportedWriterFeatureError, ConfigError), match="liquid|not clustered"):
            run()
    assert listing(uri) == before


# --- item 3: the incremental plan ------------------------------------------------------------


def _add_files(table, tables, *, provider=None, tags=None):
    """Commit data files written by delta_core, tagged as another engine would have tagged them."""
    snap = table.snapshot()
    txn = Transaction(table, operation="WRITE")
    for data in tables:
        add = write_data_file(table.storage, data, metadata=snap.metadata, partition_values={}, tags=tags)
        txn.add_written_files([replace(add, clustering_provider=provider)])
    txn.commit()


def _rows(lo, hi, n=20):
    step = (hi - lo) / n
    return pa.table({c: batch(0, n).column(c) for c in SCHEMA.names}).set_column(
        1, "x", pa.array([lo + i * step for i in range(n)], pa.float64()))


def _clustered_table(uri):
    create_table(uri, SCHEMA)
    table = DeltaTable(uri)
    cluster_by(table, ["x"])
    for lo in range(0, 100, 10):  # ten clustered files covering x in [lo, lo+9.5]
        _add_files(table, [_rows(lo, lo + 10)], provider="liquid")
    return table


def test_files_clustered_by_delta_spark_count_as_clustered_and_other_providers_stay(table_uri):
    create_table(table_uri, SCHEMA)
    table = DeltaTable(table_uri)
    cluster_by(table, ["x"])
    cube = {"ZCUBE_ID": "7c0c9f9e-0000-4000-8000-000000000001"}
    _add_files(table, [_rows(0, 50, n=3000)], tags={**cube, "ZCUBE_ZORDER_BY": '["x"]'})  # Delta Spark's, our columns
    _add_files(table, [_rows(0, 50, n=3)], tags={**cube, "ZCUBE_ZORDER_BY": '["id"]'})  # Z-ordered on other columns
    _add_files(table, [_rows(50, 100)], provider="someOtherClusterer")
    _add_files(table, [_rows(50, 100, n=3)])  # plain new data
    plan = plan_clustering(table.snapshot())
    # the two small unclustered files are too few bytes to merge the big clustered file with
    assert (plan.unclustered_files, plan.clustered_files_kept, plan.other_provider_files) == (2, 2, 1)
    assert plan.clustered_files_rewritten == 0 and plan.rewrite.num_input_files == 2
    assert plan.rewrite.curve == "hilbert" and plan.rewrite.columns == ("x",)
    full = plan_clustering(table.snapshot(), full=True)  # OPTIMIZE FULL takes every file
    assert full.rewrite.num_input_files == 4 and full.operation_parameters().to_commit_info()["isFull"] is True


def test_narrow_append_merges_only_the_clustered_files_it_overlaps(table_uri):
    table = _clustered_table(table_uri)
    assert plan_clustering(table.snapshot()).is_empty  # all clustered: a run rewrites nothing
    _add_files(table, [_rows(92, 99, n=40)])  # new rows inside the last file's range only
    snap = table.snapshot()
    plan = plan_clustering(snap)
    taken = {f.path for f in plan.rewrite.partitions[0].files}
    clustered = {a.path for a in snap.add_actions() if a.clustering_provider == "liquid"}
    ranges = {r["path"]: (r["min.x"], r["max.x"]) for r in snap.file_stats().to_pylist()}
    assert plan.unclustered_files == 1 and len(taken - clustered) == 1
    # merged: only the clustered file whose range the new rows fall in
    assert [ranges[p] for p in taken & clustered] == [(90.0, 99.5)]
    assert plan.clustered_files_rewritten == 1 and plan.clustered_files_kept == 9


def test_wide_append_rewrites_at_most_twice_its_bytes(table_uri):
    table = _clustered_table(table_uri)
    _add_files(table, [_rows(0, 100, n=45)])  # spread over every clustered file's range
    snap = table.snapshot()
    plan = plan_clustering(snap)
    new_bytes = sum(a.size for a in snap.add_actions() if a.clustering_provider is None)
    assert plan.unclustered_files == 1 and 1 <= plan.clustered_files_rewritten < 10
    assert plan.rewrite.input_bytes <= 2 * new_bytes
    assert plan.clustered_files_kept == 10 - plan.clustered_files_rewritten


def test_plan_on_bounds_parsed_once_equals_the_plan_parsing_its_own(table_uri):
    """A run parses the clustering columns' bounds once for the plan and the skipped-file ratio
    (``clustering_bounds``): the plan given them is the plan that parses them itself."""
    table = _clustered_table(table_uri)
    _add_files(table, [_rows(0, 100, n=45)])  # spread over every clustered file's range: the merge rule runs
    snap = table.snapshot()
    bounds = clustering_bounds(snap)
    assert bounds.column_names == ["min.x", "max.x"] and bounds.num_rows == snap.num_files
    for full in (False, True):
        plans = [plan_clustering(snap, full=full), plan_clustering(snap, full=full, bounds=bounds)]
        counts = [(p.unclustered_files, p.clustered_files_rewritten, p.clustered_files_kept, p.other_provider_files,
                   p.rewrite.input_bytes) for p in plans]
        assert counts[0] == counts[1]
        assert counts[0][1] == 10 if full else 1 <= counts[0][1] < 10  # merged with the new file: some, or all
        assert [g.paths for g in plans[0].groups] == [g.paths for g in plans[1].groups]


def test_cluster_dry_run_does_not_import_pandas(table_uri):
    """The dry run's skipped-file probes are built without ``pa.array`` (whose pandas probe
    imports pandas: seconds per process under load)."""
    table = _clustered_table(table_uri)
    _add_files(table, [_rows(0, 100, n=45)])
    script = (
        "import sys\n"
        "from delta_core.log.table import DeltaTable\n"
        "from delta_core.maintenance.spark.cluster import cluster\n"
        "metrics = cluster(DeltaTable(sys.argv[1]), lambda: None, dry_run=True)\n"
        "assert metrics.unclustered_files == 1 and metrics.skipped_file_ratio_before is not None, metrics\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, table_uri], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_hand_written_clustering_on_a_delta_rs_table_is_read_planned_and_checkpointed(table_uri):
    import deltalake

    from delta_core.log.log_path import commit_key
    from delta_core.model.table_features import writer_features

    for i in range(3):
        deltalake.write_deltalake(table_uri, batch(i * 40, 40), mode="append")
    table = DeltaTable(table_uri)
    version = table.latest_version() + 1
    features = sorted(writer_features(table.snapshot().protocol) | {"clustering", "domainMetadata"})
    lines = [  # what a Delta Spark ALTER TABLE CLUSTER BY commits, with a plain column name
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CLUSTER BY"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": features}},
        {"domainMetadata": {"domain": "delta.clustering", "configuration": '{"clusteringColumns":["x"]}',
                            "removed": False}},
    ]
    table.storage.put_if_absent(commit_key(version), "\n".join(json.dumps(line) for line in lines).encode())
    plan = plan_clustering(table.snapshot())
    assert plan.names == ("x",) and plan.unclustered_files == 3 and plan.rewrite.num_input_files == 3
    kernel_before = kernel_rows(table_uri)

    write_checkpoint(table)  # the checkpoint keeps the domain: a reader starting there still sees the columns
    snap = DeltaTable(table_uri).snapshot()
    assert snap.log_segment.checkpoint_version == version
    assert [c.name for c in clustering_columns(snap.domain_metadata, snap.schema)] == ["x"]
    assert multiset(deltars_rows(table_uri)) == multiset(pa.concat_tables([batch(i * 40, 40) for i in range(3)]))
    for v in range(version):  # a reader starting at the checkpoint, with no commit before it
        table.storage.delete(commit_key(v))
    assert kernel_rows(table_uri) == kernel_before


def test_zcube_tags_of_checkpoint_rows_plan_as_those_of_the_commits(table_uri, tmp_path):
    """The plan reads the ZCube tags of a snapshot from a checkpoint a piece at a time (the
    snapshot holds none of them): its plan equals that of the same log replayed from its commits,
    merge rule and cube sizes included."""
    create_table(table_uri, SCHEMA)
    table = DeltaTable(table_uri)
    cluster_by(table, ["x"])
    for i, lo in enumerate(range(0, 100, 10)):  # ten files in five of Delta Spark's cubes, on our columns
        _add_files(table, [_rows(lo, lo + 10, n=20 + 5 * i)],
                   tags={"ZCUBE_ID": f"7c0c9f9e-0000-4000-8000-00000000000{i // 2}", "ZCUBE_ZORDER_BY": '["x"]'})
    write_checkpoint(table)
    _add_files(table, [_rows(0, 100, n=45)])  # spread over every cube's range
    commits_only = tmp_path / "commits-only"
    shutil.copytree(table_uri, commits_only)
    for f in (commits_only / "_delta_log").iterdir():
        if ".checkpoint." in f.name or f.name == "_last_checkpoint":
            f.unlink()
    snapshot = table.snapshot()
    assert snapshot.log_segment.checkpoint_version is not None
    assert snapshot.replay_state.rows["tags"].null_count == snapshot.num_files  # read by the plan alone
    plans = [plan_clustering(s) for s in (snapshot, DeltaTable(str(commits_only)).snapshot())]
    assert DeltaTable(str(commits_only)).snapshot().log_segment.checkpoint_version is None
    counts = [(p.unclustered_files, p.clustered_files_rewritten, p.clustered_files_kept, p.other_provider_files)
              for p in plans]
    assert counts[0] == counts[1] and counts[0][0] == 1 and 1 <= counts[0][1] < 10
    assert [g.paths for g in plans[0].groups] == [g.paths for g in plans[1].groups]
