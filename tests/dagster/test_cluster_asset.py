"""The ``cluster`` asset (tables.yaml ``cluster: {columns: [...]}``) on a real unpartitioned
table with the real local Spark session: it sets the configured columns, clusters, reports the
skipped-file ratio like the Z-order asset, and a second run commits nothing."""

from __future__ import annotations

import pytest
from dagster import AssetKey, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.model.clustering import clustering_columns
from tests.maintenance.conftest import make_table

pytestmark = pytest.mark.spark


def test_cluster_asset_sets_columns_clusters_and_is_incremental(tables_yaml, tmp_path, spark):
    table = make_table(str(tmp_path / "t"), appends=4, rows=50, partition_columns=())
    rows = table.snapshot().num_records
    config = tables_yaml(f"tables:\n  t:\n    uri: {table.uri}\n    cluster: {{columns: [x], target_size: 6KB}}\n")
    defs = build_definitions(config)

    def run() -> dict:
        with instance_for_test() as instance:
            result = materialize(defs.assets, selection=[AssetKey(["t", "cluster"])],
                                 resources=build_resources(config), instance=instance)
        assert result.success
        (mat,) = result.asset_materializations_for_node("t__cluster")
        return {k: v.value for k, v in mat.metadata.items()}

    meta = run()
    snap = table.snapshot()
    assert [c.name for c in clustering_columns(snap.domain_metadata, snap.schema)] == ["x"]
    assert meta["columns"] == "x" and meta["files_removed"] == 4 and meta["unclustered_files"] == 4
    assert meta["skipped_file_ratio_after"] > meta["skipped_file_ratio_before"]
    assert "skipped-file ratio" in meta["summary"] and "clustering columns set at version" in meta["summary"]
    assert {a.clustering_provider for a in snap.add_actions()} == {"liquid"}
    assert snap.num_records == rows

    again = run()
    assert again["files_removed"] == 0 and again["unclustered_files"] == 0
    assert table.latest_version() == snap.version
