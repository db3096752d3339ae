"""One renderer serves the four rewrites' records in the UI: the shared fields under the same
keys for all of them, then each record's own fields and facts (records from real runs that
found nothing to rewrite, so no Spark)."""

from __future__ import annotations

from assets.metrics_view import describe
from delta_core.maintenance.rewrite_metrics import ClusterMetrics, CompactionMetrics, PurgeMetrics, ZOrderMetrics
from tests.maintenance.test_rewrite_driver import idle_rewrites

COMMON = {"committed_version", "files_removed", "files_added", "bytes_removed", "bytes_added", "commits",
          "batches_aborted"}


def test_one_view_for_every_rewrite(tmp_path):
    records = {record: metrics for record, (metrics, _) in idle_rewrites(tmp_path).items()}
    views = {record: describe(metrics) for record, metrics in records.items()}
    for record, view in views.items():
        assert COMMON <= set(view.values), record.__name__
        assert view.values["commits"] == 0 and view.values["files_removed"] == 0
        assert view.headline[:2] == [
            "nothing to commit" if records[record].version is None else f"committed version {records[record].version}",
            "0 files (0 B) replaced by 0 files (0 B)"]
        assert view.duration_seconds == records[record].duration_seconds
    # own fields, under the names the UI has always plotted
    assert views[CompactionMetrics].values["partitions_touched"] == views[CompactionMetrics].partitions_touched == 0
    assert views[ZOrderMetrics].values["columns"] == "id, x" and views[ZOrderMetrics].values["predicate"] == \
        "region = 'nowhere'"
    assert views[PurgeMetrics].values["deleted_rows_purged"] == 0
    cluster = views[ClusterMetrics]
    assert cluster.values["unclustered_files"] == 0 and cluster.values["columns"] == "id"
    assert "clustering columns set at version 1" in cluster.headline
    assert "0 file(s) with deletion vectors (0 deleted rows), 0 with dropped columns" in views[PurgeMetrics].headline
