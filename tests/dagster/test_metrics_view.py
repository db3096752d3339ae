"""One view serves every operation's report in the UI: the common fields under the same keys for
all of them, then each record's own values, and the summary line every surface shows first
(records from real runs that found nothing to rewrite, so no Spark)."""

from __future__ import annotations

from assets.metrics_view import BYTES_REMOVED_KEY, report_json, report_lines, report_values
from delta_core.maintenance.report import summary_line
from delta_core.maintenance.rewrite_metrics import ClusterMetrics, CompactionMetrics, PurgeMetrics, ZOrderMetrics
from tests.maintenance.test_rewrite_driver import idle_rewrites

COMMON = {"committed_version", "files_removed", "files_added", BYTES_REMOVED_KEY, "bytes_added", "duration_seconds",
          "batches_aborted"}


def test_one_view_for_every_rewrite(tmp_path):
    records = {record: metrics for record, (metrics, _) in idle_rewrites(tmp_path).items()}
    for record, metrics in records.items():
        values = report_values(metrics)
        assert COMMON <= set(values), record.__name__
        assert values["files_removed"] == 0 and values["committed_version"] == metrics.version
        assert values["duration_seconds"] == metrics.duration_seconds
        lines = report_lines("Rewrite", metrics)
        assert lines[0] == summary_line("Rewrite", metrics)
        assert lines[0].startswith("Rewrite: " + ("nothing to commit" if metrics.version is None
                                                  else f"committed version {metrics.version}"))
        assert "; 0 files (0 B) removed, 0 files (0 B) added; " in lines[0]
        assert report_json(metrics) == metrics.to_dict()  # nothing long to shorten
    # own fields under their own names; short lists joined
    assert report_values(records[CompactionMetrics])["partitions_compacted"] == 0
    zorder = report_values(records[ZOrderMetrics])
    assert zorder["columns"] == "id, x" and zorder["predicate"] == "region = 'nowhere'"
    assert report_values(records[PurgeMetrics])["deleted_rows"] == 0
    cluster = records[ClusterMetrics]
    assert report_values(cluster)["unclustered_files"] == 0 and report_values(cluster)["columns"] == "id"
    assert "clustering columns set at version 1" in report_lines("Clustering", cluster)
    assert "0 file(s) with deletion vectors (0 deleted rows), 0 with dropped columns" in \
        report_lines("Purge", records[PurgeMetrics])
