"""The demo command end to end on a temporary folder (small size), then its Dagster instance read
back: the runs it says it started are the runs it started, the table asset is observed, the
maintenance job wrote a checkpoint, and the downstream summary stays in sync."""

from __future__ import annotations

import os
import subprocess
import sys

import deltalake
import pytest

from tests.dagster.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark]

SCREEN_LINES = 60
RUNS = ("events_observe", "events_checks", "events_downstream_refresh", "events_maintenance", "events_observe")
LAKE = ("area0__customers", "area0__orders", "area1__clicks")
# each discovered table is a partition: its checks, then its full maintenance, a run each
LAKE_RUNS = (*("discovered_checks", "discovered_maintenance") * len(LAKE), "fleet_report")


def test_demo_command_prints_before_after_summary(tmp_path):
    from dagster import AssetKey, DagsterInstance, DagsterRunStatus
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    from assets.discovered import PARTITION_TAG
    from definitions import build_definitions
    from delta_core.config.generated_names import DISCOVERED_PARTITIONS
    from delta_core.log.table import DeltaTable
    from resources.config import load_config

    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "DELTA_MAINTENANCE_TABLES")}
    env.update(PYTHONPATH=str(REPO_ROOT), SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER="local[1]",
               JAVA_HOME=os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
    out = subprocess.run(
        [sys.executable, "-m", "demo", "--root", str(tmp_path), "--rows", "3000", "--appends", "15",
         "--days", "3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert len(text.splitlines()) <= SCREEN_LINES, text  # one screen
    assert "Delta maintenance of 'events' — before / after" in text
    for label in ("Delta version", "live files", "total size", "median file size", "partitions"):
        assert label in text
    # its vacuum retention (0 hours) is below the table's 168: the demo says so (issue 13 §14)
    assert "SHORT retention (0 hours, below the table's 168 hours)" in text
    for step in ("compact", "zorder", "vacuum", "checkpoint", "manifest"):
        assert f"  {step} " in text
    assert "source .venv/bin/activate; DAGSTER_HOME=" in text and "  dg dev -h 127.0.0.1 -p 3000" in text
    # Health checks fail before maintenance and pass after it (the maintenance run checks last).
    assert "Health checks of events/delta_table, before -> after events_maintenance:" in text
    small = next(line.split() for line in text.splitlines() if line.startswith("  small_files "))
    assert small[1] in ("WARN", "ERROR") and small[2:] == ["->", "pass", "(compact)"]
    checkpoint = next(line.split() for line in text.splitlines() if line.startswith("  checkpoint_due "))
    assert checkpoint[2:] == ["->", "pass", "(checkpoint)"]
    # Z-order would leave one file per partition: its plan predicts nothing to gain, so skipping
    # passes before and after (its target is out of reach) and is not among the changed checks
    assert not any(line.startswith("  data_skipping ") for line in text.splitlines())
    # The discovered tables fail small_files before their maintenance and pass after it, and the
    # fleet report lists every table with no failing check left.
    assert f"discovered_tables_sensor   tick: 3 partitions added, now {', '.join(LAKE)}" in text
    for name in LAKE:
        line = next(line.split() for line in text.splitlines() if line.startswith(f"    {name} "))
        assert line[1:5] == ["small_files", "ERROR", "->", "pass;"]
    report = text[text.index("Fleet report (asset fleet/report):"):].splitlines()[3:7]
    assert sorted(row.split(" | ")[0].lstrip("| ") for row in report) == sorted(["events", *LAKE])
    assert all(row.split(" | ")[2] == "none" for row in report)

    # the table has 3 partitions (days) before and after, whatever its files
    partitions = next(line.split() for line in text.splitlines() if line.startswith("  partitions "))
    assert partitions[1:] == ["3", "->", "3"]
    # every run of the demo is a row of its maintenance history, readable by delta-rs
    history = deltalake.DeltaTable(str(tmp_path / "demo_data" / "_maintenance_history")).to_pyarrow_table()
    mine = [r for r in history.to_pylist() if r["table_name"] == "events"]
    assert sorted(r["operation"] for r in mine) == sorted(load_config(tmp_path / "tables.yaml").table("events").operations)
    assert {(r["status"], r["trigger"]) for r in history.to_pylist()} == {("SUCCEEDED", "job")}
    assert set(history.column("table_name").to_pylist()) == {"events", *LAKE}

    table = DeltaTable(str(tmp_path / "demo_data" / "events"))
    snap = table.snapshot()
    assert snap.num_records == 3000 - _deleted_rows(table)
    files_line = next(line for line in text.splitlines() if "live files" in line)
    before, after = (int(x) for x in files_line.split()[2:5:2])
    assert after < before
    # The table's writer left checkpoints to maintenance: the job's checkpoint step found one due
    # (tables.yaml's interval 10) and wrote it at the latest version.
    assert table.last_checkpoint_version() == snap.version
    # each step's line is the one summary line the command line prints first
    assert f"  checkpoint  Checkpoint: checkpoint written at version {snap.version} (" in text
    assert "no checkpoint written" not in text
    compact = next(line for line in text.splitlines() if line.startswith("  compact "))
    assert compact.split(None, 1)[1].startswith("Compaction: committed version ") and "removed, " in compact

    # The runs it names, in order, are the runs the instance holds, all succeeded.
    printed = [line.split()[:3] for line in text.splitlines()
               if line.startswith(("  events_", "  discovered_checks ", "  discovered_maintenance ", "  fleet_report"))]
    assert [job for job, _, _ in printed] == [*RUNS, *LAKE_RUNS]
    assert all(outcome == "succeeded" for _, _, outcome in printed)
    home = tmp_path / ".dagster_home"
    assert (home / "dagster.yaml").exists()
    data_version = str(_last_data_change(table))
    with DagsterInstance.from_config(str(home)) as instance:
        runs = list(reversed(instance.get_runs()))  # newest first, as stored
        assert [run.job_name for run in runs] == [*RUNS, *LAKE_RUNS]
        assert [run.run_id[:8] for run in runs] == [run_id for _, run_id, _ in printed]
        assert all(run.status == DagsterRunStatus.SUCCESS for run in runs)
        # a discovered table's runs are of its partition alone, the partitions the discovery tick added
        assert [run.tags.get(PARTITION_TAG) for run in runs if run.job_name.startswith("discovered_")] == [
            name for name in LAKE for _ in range(2)]
        assert sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == list(LAKE)
        # Its Spark steps ran in the pool, one slot at a time (the instance's default pool limit).
        assert instance.event_log_storage.get_concurrency_info("delta_spark").slot_count == 1

        # The table asset is observed (the UI no longer says "Never observed"): at the latest
        # version, with the data version of the last data change (maintenance changed no data).
        record = instance.get_latest_data_version_record(AssetKey(["events", "delta_table"]))
        assert record is not None and record.asset_observation is not None
        assert record.asset_observation.metadata["delta_version"].value == snap.version
        assert record.asset_observation.data_version == data_version
        assert (f"events/delta_table at version {snap.version}, data version still {data_version}: "
                "daily_summary in sync") in text
        # ... which Dagster agrees with: the summary refreshed before maintenance is not unsynced.
        defs = build_definitions(load_config(tmp_path / "tables.yaml"))
        resolver = get_stale_status_resolver(instance, defs.resolve_asset_graph().assets_defs)
        assert resolver.get_status(AssetKey(["events", "daily_summary"])) == StaleStatus.FRESH
        assert resolver.get_status(AssetKey(["events", "compact"])) == StaleStatus.FRESH


def _deleted_rows(table) -> int:
    return sum(int(c.commit_info.get("operationMetrics", {}).get("numDeletedRows", 0))
               for c in table.history() if c.commit_info.get("operation") == "DELETE")


def _last_data_change(table) -> int:
    """The demo's last data-changing commit: its second DELETE (maintenance follows it)."""
    return max(c.version for c in table.history() if c.commit_info.get("operation") == "DELETE")
