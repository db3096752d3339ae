"""``describe`` answers what DESCRIBE DETAIL does (issue 28): location, creation and modification
times, size, file count, partition and clustering columns, properties, protocol versions and the
features in effect, checked against the log and delta-rs; the file list only with ``--files``.
``history`` as text shows each commit's operation metrics, user and engine."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.model.clock import iso_time
from delta_core.model.sizes import format_size
from tests.maintenance.conftest import make_table

deltalake = pytest.importorskip("deltalake")


def _describe(capsys, *argv: str) -> dict:
    assert main(["describe", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _text(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


@pytest.fixture()
def rs_table(tmp_path) -> pathlib.Path:
    """Two commits by delta-rs, partitioned, with a name and a description."""
    root = tmp_path / "events"
    deltalake.write_deltalake(str(root), pa.table({"id": [1, 2, 3], "part": ["a", "b", "a"]}), partition_by=["part"],
                              name="events", description="demo events", configuration={"delta.appendOnly": "true"})
    deltalake.write_deltalake(str(root), pa.table({"id": [4], "part": ["c"]}), mode="append")
    return root


def test_describe_json_has_describe_detail_fields(capsys, rs_table):
    rs = deltalake.DeltaTable(str(rs_table))
    adds = pa.table(rs.get_add_actions(flatten=True))
    first = [json.loads(line) for line in (rs_table / "_delta_log" / f"{0:020d}.json").read_text().splitlines()]
    created = next(a["metaData"]["createdTime"] for a in first if "metaData" in a)
    commit_mtime = os.stat(rs_table / "_delta_log" / f"{1:020d}.json").st_mtime
    out = _describe(capsys, str(rs_table))
    assert out["format"] == "delta" and out["location"] == f"file://{rs_table.resolve()}"
    assert (out["id"], out["name"], out["description"]) == (rs.metadata().id, "events", "demo events")
    assert out["created_time"] == iso_time(created)  # ISO 8601, never epoch ms
    assert abs(dt.datetime.fromisoformat(out["last_modified"]).timestamp() - commit_mtime) <= 0.001
    assert out["version"] == 1 and out["num_files"] == adds.num_rows == 3
    assert out["size_in_bytes"] == sum(adds["size_bytes"].to_pylist())
    assert out["partition_columns"] == ["part"] and out["clustering_columns"] == []
    assert out["configuration"] == {"delta.appendOnly": "true"}
    assert (out["min_reader_version"], out["min_writer_version"]) == (1, 2)
    # a legacy protocol lists no features; those its versions imply are in effect
    assert out["reader_features"] is None and out["table_features"] == ["appendOnly", "invariants"]
    assert "files" not in out
    listed = _describe(capsys, str(rs_table), "--files")
    assert listed["files"] == sorted(adds["path"].to_pylist())
    assert {k: v for k, v in listed.items() if k != "files"} == out


def test_describe_shows_clustering_columns_and_listed_features(capsys, tmp_path):
    table = make_table(str(tmp_path / "t"), appends=1, partition_columns=())
    cluster_by(table, ["x", "id"])
    out = _describe(capsys, table.uri)
    assert out["clustering_columns"] == ["x", "id"] and out["min_writer_version"] == 7
    assert {"clustering", "domainMetadata"} <= set(out["table_features"]) <= set(out["writer_features"]) | set(
        out["reader_features"] or [])
    assert "Clustered:   x, id" in _text(capsys, "describe", table.uri)


def test_describe_text_shows_the_detail_and_paths_only_with_files(capsys, rs_table):
    out = _describe(capsys, str(rs_table))
    text = _text(capsys, "describe", str(rs_table))
    lines = text.splitlines()
    assert f"Location:    file://{rs_table.resolve()}" in lines
    assert f"Id:          {out['id']}, name 'events', description 'demo events'" in lines
    assert any(line.startswith("Created:     20") for line in lines)
    assert "Features:    appendOnly, invariants" in lines
    assert f"Files:       3 ({format_size(out['size_in_bytes'])}), records: 4" in lines
    assert "Partitioned: part" in lines and "Clustered:   no" in lines
    assert "File paths:" not in text and ".parquet" not in text
    with_files = _text(capsys, "describe", str(rs_table), "--files").splitlines()
    paths = with_files[with_files.index("File paths:") + 1:]
    adds = pa.table(deltalake.DeltaTable(str(rs_table)).get_add_actions(flatten=True))
    assert paths == [f"  {p}" for p in sorted(adds["path"].to_pylist())]


def test_history_text_shows_metrics_user_and_engine(capsys, conformance_dir):
    table = conformance_dir / "rs-simple_table_with_cdc"  # written by Databricks Runtime 11.3
    info = json.loads((table / "_delta_log" / f"{2:020d}.json").read_text().splitlines()[0])["commitInfo"]
    lines = _text(capsys, "history", str(table), "--limit", "1").splitlines()
    assert lines[0].startswith(f"{table}: 1 commit, versions 2 (") and lines[1].startswith("VERSION")
    assert lines[2].split()[0] == "2" and lines[2].endswith("UPDATE  predicate=(id#1188678 = 0)")
    assert lines[3] == "         metrics: " + ", ".join(f"{k}={v}" for k, v in info["operationMetrics"].items())
    assert lines[4] == ("         by: user xxxx@gmail.com (id 722754018832045), "
                        "engine Databricks-Runtime/11.3.x-scala2.12")
    assert len(lines) == 5


def test_history_text_writes_values_as_the_log_does(capsys, tmp_path):
    root = tmp_path / "t"
    deltalake.write_deltalake(str(root), pa.table({"id": [1]}))
    deltalake.write_deltalake(str(root), pa.table({"id": [2]}), mode="append")
    deltalake.DeltaTable(str(root)).optimize.compact()
    info = json.loads((root / "_delta_log" / f"{2:020d}.json").read_text().splitlines()[0])["commitInfo"]
    lines = _text(capsys, "history", str(root)).splitlines()
    versions = [line for line in lines[2:] if not line.startswith(" " * 9)]
    assert [line.split()[0] for line in versions] == ["2", "1", "0"]
    metrics = lines[3]
    assert metrics.startswith("         metrics: numFilesAdded=1, numFilesRemoved=2, filesAdded={")
    assert "preserveInsertionOrder=true" in metrics and "True" not in metrics  # JSON's spelling
    assert lines[4] == f"         by: engine {info['engineInfo']}"
    out = json.loads(_text(capsys, "history", str(root), "--json"))
    assert out[0]["operation_metrics"] == info["operationMetrics"] and out[0]["commit_info"] == info
