"""Health in the Dagster UI (issue 13 items 4, 5, 6, 10) on real tables and a real instance:
observations carry plotted health figures, maintenance materializations carry health before and
after, maintenance does not make anything unsynced, and runs with nothing to do write nothing and
start no JVM."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
from dagster import AssetKey, DagsterInstance, instance_for_test, materialize
from dagster._core.definitions.observe import observe
from dagster._utils.test.data_versions import get_stale_status_resolver

from definitions import build_definitions, build_resources
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append
from demo.data import event_batch
from resources.config import MaintenanceConfig
from tests.core_write.conftest import listing
from tests.dagster.conftest import REPO_ROOT

TABLE_KEY = AssetKey(["events", "delta_table"])
PLOTTED = ("health_score", "health_num_files", "health_small_file_ratio", "health_deleted_rows_ratio",
           "health_versions_since_checkpoint", "health_skip_ratio")


def _yaml(uri: pathlib.Path, *, target: str = "64KB", interval: int = 5) -> str:
    return f"""
tables:
  events:
    uri: {uri}
    compact: {{target_size: {target}}}
    zorder: {{columns: [user_id, amount], target_size: 12KB}}
    checkpoint: {{interval: {interval}}}
    downstream: {{daily_summary: {{date_column: event_date}}}}
"""


def _observe(config: MaintenanceConfig, instance: DagsterInstance) -> dict:
    source = [a for a in build_definitions(config).assets if getattr(a, "key", None) == TABLE_KEY]
    assert observe(source, instance=instance, resources=build_resources(config)).success
    record = instance.get_latest_data_version_record(TABLE_KEY)
    return {"data_version": record.asset_observation.data_version,
            **{k: v.value for k, v in record.asset_observation.metadata.items()}}


def _materialize(config: MaintenanceConfig, instance: DagsterInstance, op: str, run_config=None) -> dict:
    result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", op])],
                         resources=build_resources(config), instance=instance, run_config=run_config or {})
    assert result.success
    (mat,) = result.asset_materializations_for_node(f"events__{op}")
    return {k: v.value for k, v in mat.metadata.items()}


def test_observation_reports_health_on_each_new_version_only(make_events_table, tables_yaml):
    table = make_events_table(rows=600, appends=6, days=2, properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    snapshot = table.snapshot()
    with instance_for_test() as instance:
        meta = _observe(config, instance)
        assert set(PLOTTED) <= set(meta)
        assert meta["health_num_files"] == snapshot.num_files
        assert meta["health_versions_since_checkpoint"] == snapshot.version  # no checkpoint yet: commits after v0
        assert 0 <= meta["health_small_file_ratio"] <= 1 and 0 <= meta["health_score"] <= 100
        assert meta["health_deleted_rows_ratio"] == 0.0  # the demo table deletes whole files, no DVs
        # the recommendations table names what the thresholds call for: many small files, 7 commits >= 5
        recs = meta["health_recommendations"]
        assert "| compact |" in recs and "| checkpoint |" in recs

        # the same version observed again: no health figures (nothing to recompute)
        again = _observe(config, instance)
        assert again["delta_version"] == snapshot.version and "health_score" not in again

        write_checkpoint(table)  # not a commit: same version, so still nothing new
        append(table, event_batch(20, days=2, seed=7))
        later = _observe(config, instance)
        assert later["delta_version"] == snapshot.version + 1
        assert later["health_num_files"] == table.snapshot().num_files
        assert later["health_versions_since_checkpoint"] == 1
        assert "| checkpoint |" not in later["health_recommendations"]


@pytest.mark.spark
def test_compaction_shows_health_and_leaves_nothing_unsynced(make_events_table, tables_yaml, spark):
    from dagster._core.definitions.data_version import StaleStatus

    table = make_events_table(rows=600, appends=6, days=2, properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    defs = build_definitions(config)
    compact_key, summary_key = AssetKey(["events", "compact"]), AssetKey(["events", "daily_summary"])
    with instance_for_test() as instance:
        first = _observe(config, instance)
        assert first["data_version"] == str(table.latest_version())
        assert defs.resolve_job_def("events_downstream_refresh").execute_in_process(instance=instance).success
        before = table.snapshot()
        meta = _materialize(config, instance, "compact")
        after = table.snapshot()
        assert after.version == before.version + 1 and after.num_files < before.num_files
        # item 5: health before and after, as the health model computes it on each snapshot
        assert (meta["health_num_files_before"], meta["health_num_files_after"]) == (before.num_files, after.num_files)
        assert meta["health_versions_since_checkpoint_after"] == meta["health_versions_since_checkpoint_before"] + 1
        assert "| compact |" in meta["health_recommendations_before"]
        assert "| compact |" not in meta["health_recommendations_after"]

        # item 6: the OPTIMIZE commit (dataChange=false) does not move the data version
        observed = _observe(config, instance)
        assert observed["delta_version"] == after.version
        assert observed["data_version"] == first["data_version"]
        # Dagster's own staleness resolver: the UI's "Unsynced" is StaleStatus.STALE
        resolver = get_stale_status_resolver(instance, defs.assets)
        assert resolver.get_status(compact_key) == StaleStatus.FRESH
        assert resolver.get_status(summary_key) == StaleStatus.FRESH

        # an append changes data: the data version moves and both become unsynced
        append(table, event_batch(20, days=2, seed=8))
        observed = _observe(config, instance)
        assert observed["data_version"] == str(table.latest_version())
        resolver = get_stale_status_resolver(instance, defs.assets)
        assert resolver.get_status(compact_key) == StaleStatus.STALE
        assert resolver.get_status(summary_key) == StaleStatus.STALE


def test_checkpoint_asset_honours_the_interval(make_events_table, tables_yaml):
    table = make_events_table(rows=300, appends=2, days=2, properties={"delta.checkpointInterval": "1000"})
    write_checkpoint(table)
    append(table, event_batch(20, days=2, seed=9))  # 1 commit after the checkpoint, interval 5
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    root = pathlib.Path(table.uri)
    with instance_for_test() as instance:
        files = listing(str(root))
        meta = _materialize(config, instance, "checkpoint")
        assert listing(str(root)) == files  # nothing written
        assert meta["checkpoint_written"] is False
        assert "fewer than the interval 5" in meta["checkpoint_skipped_reason"]
        assert "run with force to write one anyway" in meta["checkpoint_skipped_reason"]
        assert table.last_checkpoint_version() == table.latest_version() - 1

        forced = _materialize(config, instance, "checkpoint",
                              {"ops": {"events__checkpoint": {"config": {"force": True}}}})
        assert forced["checkpoint_written"] is True
        assert table.last_checkpoint_version() == table.latest_version() == forced["checkpoint_version"]
        assert forced["health_versions_since_checkpoint_after"] == 0


_NO_WORK_SCRIPT = """
import json, sys, time
from dagster import AssetKey, instance_for_test, materialize
from definitions import build_definitions, build_resources
from resources.config import load_config
config = load_config(sys.argv[1])
started = time.monotonic()
with instance_for_test() as instance:
    result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", "compact"])],
                         resources=build_resources(config), instance=instance)
    (mat,) = result.asset_materializations_for_node("events__compact")
seconds = time.monotonic() - started
import pyspark
print(json.dumps({"success": result.success, "jvm": pyspark.SparkContext._gateway is not None,
                  "files_removed": mat.metadata["files_removed"].value, "seconds": seconds}))
"""


def test_compact_asset_with_nothing_to_do_starts_no_jvm(make_events_table, tmp_path):
    # every file is larger than 3/4 of a 1 KB target: no bin to pack
    table = make_events_table(rows=300, appends=2, days=2)
    config = tmp_path / "tables.yaml"
    config.write_text(_yaml(pathlib.Path(table.uri), target="1KB"), encoding="utf-8")
    root = pathlib.Path(table.uri)
    files = listing(str(root))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SPARK_MASTER": "local[1]"}
    done = subprocess.run([sys.executable, "-c", _NO_WORK_SCRIPT, str(config)], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["success"] and report["files_removed"] == 0
    assert report["jvm"] is False  # Spark never started: the plan found nothing to do
    assert listing(str(root)) == files
    assert DeltaTable(table.uri).latest_version() == table.latest_version()
