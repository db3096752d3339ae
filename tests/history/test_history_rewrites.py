"""Every rewrite records the files and bytes it read and wrote: for compact, zorder, cluster and
purge run from the command line, the run's report, its commit's ``operationMetrics`` and its
history row agree with the sizes of the files that commit removed and added. Analyze re-adds the
files it read in place: its row writes no data file."""

from __future__ import annotations

import json
import pathlib

import pytest
from deltalake import DeltaTable as RsTable

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from tests.dv_files import commit_deletion_vector
from tests.maintenance.conftest import commit_info, file_actions, make_table
from tests.maintenance.test_analyze import strip_stats

pytestmark = pytest.mark.spark


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    assert main([*argv, "--json", "--spark-master", "local[2]"]) == 0
    return json.loads(capsys.readouterr().out)


def _rows(history: pathlib.Path) -> list[dict]:
    return RsTable(str(history)).to_pyarrow_table().sort_by("end_time").to_pylist()


def _assert_recorded(table: DeltaTable, report: dict, row: dict, operation: str) -> None:
    """The report, the commit and the history row say the same files and bytes."""
    adds, removes = file_actions(table, report["version"])
    read, written = sum(r["size"] for r in removes), sum(a["size"] for a in adds)
    assert (report["num_removed_files"], report["removed_bytes"]) == (len(removes), read) and read > 0
    assert (report["num_added_files"], report["added_bytes"]) == (len(adds), written) and written > 0
    metrics = commit_info(table, report["version"])["operationMetrics"]
    assert (metrics["numRemovedBytes"], metrics["numAddedBytes"]) == (str(read), str(written))
    assert (row["operation"], row["status"], row["version"]) == (operation, "SUCCEEDED", report["version"])
    assert (row["files_read"], row["bytes_read"]) == (len(removes), read)
    assert (row["files_written"], row["bytes_written"]) == (len(adds), written)
    recorded = dict(row["operation_metrics"])
    assert (recorded["removed_bytes"], recorded["added_bytes"]) == (str(read), str(written))


def test_each_rewrite_records_the_bytes_it_read_and_wrote(spark, capsys, tmp_path, monkeypatch) -> None:
    history = tmp_path / "history"
    monkeypatch.setenv("DELTA_MAINTENANCE_HISTORY", str(history))
    uri = str(tmp_path / "t")
    make_table(uri, appends=6, rows=40, partition_columns=(),
               properties={"delta.enableDeletionVectors": "true"})

    reports = [("compact", _run(capsys, "compact", uri, "--target-size", "1MB"))]
    reports.append(("zorder", _run(capsys, "zorder", uri, "--columns", "id,x", "--target-size", "2KB")))
    victim = sorted(DeltaTable(uri).snapshot().file_paths)[0]
    commit_deletion_vector(DeltaTable(uri), victim, [0, 1])
    reports.append(("purge", _run(capsys, "purge", uri)))
    cluster_by(DeltaTable(uri), ["x"])
    reports.append(("cluster", _run(capsys, "cluster", uri, "--full")))

    rows = _rows(history)
    assert [r["operation"] for r in rows] == [op for op, _ in reports]
    for (operation, report), row in zip(reports, rows):
        _assert_recorded(DeltaTable(uri), report, row, operation)


def test_analyze_reads_files_and_writes_none(spark, capsys, tmp_path, monkeypatch) -> None:
    history = tmp_path / "history"
    monkeypatch.setenv("DELTA_MAINTENANCE_HISTORY", str(history))
    uri = str(tmp_path / "t")
    make_table(uri, appends=2, rows=20)
    strip_stats(uri)
    report = _run(capsys, "analyze", uri)
    assert report["files_analyzed"] == 4 and report["bytes_analyzed"] > 0
    (row,) = _rows(history)
    assert (row["operation"], row["files_written"], row["bytes_written"]) == ("analyze", 0, 0)
    assert dict(row["operation_metrics"])["bytes_analyzed"] == str(report["bytes_analyzed"])
