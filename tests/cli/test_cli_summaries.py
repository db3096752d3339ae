"""The commands that are not registry operations open their text output with one summary line
(what, files and bytes, how long where it applies), and no output of theirs, text or JSON,
gives a time in epoch milliseconds: times are ISO 8601."""

from __future__ import annotations

import datetime as dt
import json
import re

import deltalake
import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.model.clock import iso_time
from delta_core.model.sizes import format_size

EPOCH_MS = re.compile(r"\b1\d{12}\b")  # a 2001-2033 time in epoch milliseconds


@pytest.fixture()
def table(tmp_path) -> str:
    """Three delta-rs commits, the last an OPTIMIZE (health reports when it ran)."""
    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, pa.table({"id": [1], "x": ["a"]}))
    deltalake.write_deltalake(root, pa.table({"id": [2], "x": ["b"]}), mode="append")
    deltalake.DeltaTable(root).optimize.compact()
    return root


def _out(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_describe_opens_with_a_summary_and_shows_times_in_iso(capsys, table):
    snapshot = DeltaTable(table).snapshot()
    text = _out(capsys, "describe", table)
    assert snapshot.num_files == 1  # the OPTIMIZE left one
    assert text.splitlines()[0] == (f"{table}: version 2 committed {iso_time(snapshot.timestamp)}; "
                                    f"1 file, {format_size(snapshot.size_in_bytes)}, 2 records")
    record = json.loads(_out(capsys, "describe", table, "--json"))
    assert record["last_modified"] == iso_time(snapshot.timestamp)
    assert dt.datetime.fromisoformat(record["created_time"]).tzinfo is not None
    assert not EPOCH_MS.search(text) and not EPOCH_MS.search(json.dumps(record))


def test_history_opens_with_a_summary_and_gives_iso_times(capsys, table):
    times = [iso_time(r.timestamp) for r in DeltaTable(table).history()]
    text = _out(capsys, "history", table)
    assert text.splitlines()[0] == f"{table}: 3 commits, versions 2 ({times[0]}) back to 0 ({times[2]})"
    records = json.loads(_out(capsys, "history", table, "--json"))
    assert [r["timestamp"] for r in records] == times
    # commit_info is the log's own action, as written; everything else has no epoch ms
    assert not EPOCH_MS.search(text) and not EPOCH_MS.search(json.dumps([
        {k: v for k, v in r.items() if k != "commit_info"} for r in records]))


def test_health_opens_with_a_summary_and_gives_the_last_optimize_in_iso(capsys, table, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no tables.yaml here, none named: the default policy, said first
    monkeypatch.delenv("DELTA_MAINTENANCE_TABLES", raising=False)
    optimized = iso_time(DeltaTable(table).history(1)[0].timestamp)
    policy, first = _out(capsys, "health", table).splitlines()[:2]
    assert policy.startswith("default policy: ")
    assert re.fullmatch(rf"{re.escape(table)} at version 2: health \d+/100; 1 file, [\d.]+ \w*B; "
                        r"recommended: [\w, ]+ \([\d.]+ seconds\)", first), first
    report = json.loads(_out(capsys, "health", table, "--json"))
    assert report["metrics"]["last_optimize_timestamp"] == optimized
    assert f"last OPTIMIZE    version 2 at {optimized}" in _out(capsys, "health", table)


def test_set_properties_and_cluster_by_open_with_a_summary(capsys, tmp_path):
    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, pa.table({"id": [1], "x": ["a"]}))
    first = _out(capsys, "set-properties", root, "delta.appendOnly=false").splitlines()[0]
    assert re.fullmatch(rf"set-properties {re.escape(root)}: 1 property \(delta\.appendOnly\) committed as "
                        r"version 1, protocol reader 1 writer 2, 0 data files rewritten \([\d.]+ seconds\)", first)
    first = _out(capsys, "cluster-by", root, "--columns", "x").splitlines()[0]
    assert re.fullmatch(r"Cluster by: clustering columns none -> x, committed version 2 \(protocol upgraded\); "
                        r"0 files \(0 B\) removed, 0 files \(0 B\) added; [\d.]+ seconds?", first), first
    again = _out(capsys, "cluster-by", root, "--columns", "x").splitlines()[0]
    assert again.startswith("Cluster by: clustering columns already x: nothing to commit; ")
    assert json.loads(_out(capsys, "cluster-by", root, "--none", "--json"))["version"] == 3  # JSON: the record only
