"""Command-line runs append one row each to the maintenance history (``$DELTA_MAINTENANCE_HISTORY``
or tables.yaml ``history``), failed runs too; delta-rs and delta-kernel-rs read the rows back;
runs on the history table itself and runs with no history configured add none."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pyarrow as pa
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from tests.kernel_oracle import kernel_rows_elsewhere

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def delta_core(*args: str, history: pathlib.Path | str | None = None, cwd: pathlib.Path | None = None
               ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DELTA_MAINTENANCE_HISTORY", "DELTA_MAINTENANCE_TABLES")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    if history is not None:
        env["DELTA_MAINTENANCE_HISTORY"] = str(history)
    return subprocess.run([sys.executable, "-m", "delta_core", *args], capture_output=True, text=True,
                          timeout=180, env=env, cwd=cwd)


def _table(path: pathlib.Path, appends: int = 3) -> pathlib.Path:
    for i in range(appends):
        write_deltalake(str(path), pa.table({"id": pa.array([i, i + 100], pa.int64())}), mode="append")
    return path


def test_cli_runs_are_rows_readable_by_delta_rs_and_kernel(tmp_path: pathlib.Path) -> None:
    table, history = _table(tmp_path / "events"), tmp_path / "history"
    ok = delta_core("checkpoint", str(table), "--force", history=history)
    assert ok.returncode == 0, ok.stderr
    failed = delta_core("restore", str(table), "--version", "99", history=history)
    assert failed.returncode == 2  # the run's own outcome, unchanged by recording it

    read = RsTable(str(history)).to_pyarrow_table()
    # Predictive Optimization's columns, then what the platform knows beside them
    assert read.column_names == [
        "start_time", "end_time", "table_name", "table_uri", "operation", "status", "trigger", "dagster_run_id",
        "version", "files_read", "bytes_read", "files_written", "bytes_written", "health_before", "health_after",
        "health_note", "error_kind", "error_message", "core_seconds", "operation_metrics"]
    rows = read.sort_by("end_time").to_pylist()
    assert [(r["operation"], r["status"], r["trigger"]) for r in rows] == [
        ("checkpoint", "SUCCEEDED", "cli"), ("restore", "FAILED", "cli")]
    done, refused = rows
    assert done["table_uri"] == str(table) and done["table_name"] is None
    assert done["files_written"] == 1 and done["bytes_written"] > 0 and done["files_read"] == 0
    assert done["health_before"] is not None and done["health_after"] is not None
    assert done["start_time"] <= done["end_time"] and done["core_seconds"] >= 0
    assert dict(done["operation_metrics"])["checkpoint_version"] == "2"
    assert refused["error_kind"] == "version_not_found" and refused["error_message"]
    assert refused["health_after"] is None and "failed" in refused["health_note"]

    kernel = kernel_rows_elsewhere(str(history))
    assert sorted(kernel.column("operation").to_pylist()) == ["checkpoint", "restore"]
    assert sorted(kernel.column("status").to_pylist()) == ["FAILED", "SUCCEEDED"]

    listed = delta_core("maintenance-history", "--json", "--limit", "1", history=history)
    assert listed.returncode == 0, listed.stderr
    doc = json.loads(listed.stdout)
    assert [r["operation"] for r in doc["runs"]] == ["restore"]  # newest first


def test_runs_on_the_history_table_itself_add_no_row(tmp_path: pathlib.Path) -> None:
    table, history = _table(tmp_path / "events"), tmp_path / "history"
    assert delta_core("checkpoint", str(table), "--force", history=history).returncode == 0
    version = RsTable(str(history)).version()
    # the history table spelled another way (a trailing slash): still itself
    assert delta_core("checkpoint", f"{history}/", "--force", history=history).returncode == 0
    assert RsTable(str(history)).version() == version
    assert [r["operation"] for r in RsTable(str(history)).to_pyarrow_table().to_pylist()] == ["checkpoint"]


def test_without_a_history_nothing_is_recorded(tmp_path: pathlib.Path) -> None:
    table = _table(tmp_path / "events")
    assert delta_core("checkpoint", str(table), "--force", cwd=tmp_path).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events"]


def test_config_history_names_the_table(tmp_path: pathlib.Path) -> None:
    _table(tmp_path / "events")
    config = tmp_path / "tables.yaml"
    config.write_text("history: {uri: runs}\ntables:\n  events: {uri: events}\n", encoding="utf-8")
    ran = delta_core("checkpoint", "--config", str(config), "--table", "events", "--force")
    assert ran.returncode == 0, ran.stderr
    rows = RsTable(str(tmp_path / "runs")).to_pyarrow_table().to_pylist()
    assert [(r["table_name"], r["operation"], r["trigger"]) for r in rows] == [("events", "checkpoint", "cli")]
    listed = delta_core("maintenance-history", "--config", str(config), "--table", "events")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[0].startswith("1 run")


def test_a_history_that_cannot_be_written_changes_no_outcome(tmp_path: pathlib.Path) -> None:
    table = _table(tmp_path / "events")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a folder", encoding="utf-8")
    for history in (str(blocker / "history"), "nosuchscheme://bucket/history"):
        ok = delta_core("checkpoint", str(table), "--force", "--json", history=history)
        assert ok.returncode == 0 and json.loads(ok.stdout)["checkpoint_written"] is True
        assert "maintenance history" in ok.stderr and "could not record checkpoint" in ok.stderr
        failed = delta_core("restore", str(table), "--version", "99", history=history)
        assert failed.returncode == 2 and "error (version_not_found)" in failed.stderr  # its own error, first
        assert "could not record restore" in failed.stderr
