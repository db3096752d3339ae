"""Schedules evaluate to run requests carrying the table's policy; jobs select by group/kind;
resources take secrets from the environment; Definitions load and validate."""

from __future__ import annotations

import datetime as dt
import pathlib
import subprocess
import sys

import pytest
from dagster import AssetKey, DagsterInstance, DagsterResourceFunctionError, build_schedule_context
from dagster import build_resources as dagster_build_resources

from definitions import build_definitions, build_resources
from delta_core.errors import ConfigError
from fleet.report import FLEET_REPORT_SCHEDULE
from resources import DeltaTableResource, SparkResource
from tests.dagster.conftest import REPO_ROOT

TWO_TABLES = """
spark:
  master: local[1]
  conf:
    spark.sql.shuffle.partitions: "3"
tables:
  events:
    uri: ROOT/events
    compact:
      target_size: 32MB
      where: "event_date >= '2024-03-02'"
    zorder:
      columns: [user_id]
      curve: hilbert
      cron: "15 5 * * 6"
    vacuum:
      retention_hours: 200
      dry_run: true
    manifest: true
  orders:
    uri: ROOT/orders
    compact:
      cron: "0 1 * * *"
    vacuum:
      cron: "0 4 1 * *"
    checkpoint: false
"""


@pytest.fixture()
def defs(tables_yaml, tmp_path):
    return build_definitions(tables_yaml(TWO_TABLES.replace("ROOT", str(tmp_path))))


# The rewrites' bounded-run defaults (issue 30), spelled out with the rest of the policy.
BOUNDED = {"order": "smallest", "max_batch_retries": 2}


def test_schedules_carry_policy_config(defs):
    when = dt.datetime(2024, 3, 3, 2, 0, tzinfo=dt.UTC)
    with DagsterInstance.ephemeral() as instance:
        # compaction's min_input_files is unset: a scheduled run is automation's, which takes the policy's at run time
        expected = {
            "events_compact_schedule": ("0 2 * * *", "events_compact", "events__compact",
                                        {"target_size": 32_000_000, "where": "event_date >= '2024-03-02'",
                                         "max_deleted_rows_ratio": 0.05, **BOUNDED}),
            "events_vacuum_schedule": ("0 3 * * 0", "events_vacuum", "events__vacuum",
                                       {"retention_hours": 200.0, "dry_run": True, "force": False, "mode": "full"}),
            "events_zorder_schedule": ("15 5 * * 6", "events_zorder", "events__zorder",
                                       {"columns": ["user_id"], "curve": "hilbert", **BOUNDED}),
            "orders_compact_schedule": ("0 1 * * *", "orders_compact", "orders__compact",
                                        {"max_deleted_rows_ratio": 0.05, **BOUNDED}),
            "orders_vacuum_schedule": ("0 4 1 * *", "orders_vacuum", "orders__vacuum",
                                       {"dry_run": False, "force": False, "mode": "full"}),
        }
        schedules = {s.name: s for s in defs.get_repository_def().schedule_defs}
        assert set(schedules) == set(expected) | {FLEET_REPORT_SCHEDULE}  # and the fleet report's (test_fleet)
        for name, (cron, job, node, config) in expected.items():
            schedule = defs.resolve_schedule_def(name)
            assert schedule.cron_schedule == cron and schedule.job_name == job
            assert schedule.execution_timezone == "UTC"
            context = build_schedule_context(instance=instance, scheduled_execution_time=when)
            data = schedule.evaluate_tick(context)
            (request,) = data.run_requests
            assert request.run_config == {"ops": {node: {"config": config}}}
            assert request.tags["delta_maintenance/table"] == name.split("_")[0]
            # the config is valid for the job it launches
            assert defs.resolve_job_def(job).run_config_schema.config_type is not None


def test_jobs_select_by_group_and_kind(defs):
    def keys(job_name: str) -> set[str]:
        job = defs.resolve_job_def(job_name)
        return {k.to_user_string() for k in job.asset_layer.selected_asset_keys}

    assert keys("events_maintenance") == {"events/compact", "events/zorder", "events/vacuum",
                                          "events/checkpoint", "events/manifest"}
    assert keys("orders_maintenance") == {"orders/compact", "orders/vacuum"}
    assert keys("all_tables_maintenance") == keys("events_maintenance") | keys("orders_maintenance")
    assert keys("all_tables_compact") == {"events/compact", "orders/compact"}
    assert keys("all_tables_checkpoint") == {"events/checkpoint"}
    assert keys("orders_vacuum") == {"orders/vacuum"}
    assert keys("events_observe") == {"events/delta_table"}  # an observation, nothing materialized
    for name in ("events_maintenance", "all_tables_maintenance", "orders_compact"):
        # Run config may choose multiprocess (tests/dagster/test_executors.py runs both).
        assert defs.resolve_job_def(name).executor_def.name == "multi_or_in_process_executor"
    graph = defs.resolve_asset_graph()
    assert graph.get(AssetKey(["events", "compact"])).group_name == "events"
    assert AssetKey(["events", "delta_table"]) in graph.get(AssetKey(["events", "compact"])).parent_keys


def test_resources_resolve_env_secrets(tables_yaml, tmp_path, monkeypatch):
    config = tables_yaml("""
spark: {master: {env: DM_TEST_MASTER}}
tables:
  s3t:
    uri: s3://bucket/t
    storage_options:
      key: {env: DM_TEST_KEY}
      secret: {env: DM_TEST_SECRET}
      anon: false
      client_kwargs: {endpoint_url: "http://127.0.0.1:9"}
""")
    resources = build_resources(config)
    # the secret is an EnvVar reference, not a value, until run time
    assert "DM_TEST_SECRET" in repr(DeltaTableResource.from_table_config(config.table("s3t")).storage_options["secret"])
    with pytest.raises(DagsterResourceFunctionError) as unset:
        with dagster_build_resources({"delta_s3t": resources["delta_s3t"]}):
            pass
    assert isinstance(unset.value.__cause__, ConfigError)
    assert "DM_TEST_KEY is not set where this run or sensor executes" in str(unset.value.__cause__)
    monkeypatch.setenv("DM_TEST_KEY", "AKIA-test")
    monkeypatch.setenv("DM_TEST_SECRET", "s3cr3t")
    monkeypatch.setenv("DM_TEST_MASTER", "local[1]")
    with dagster_build_resources({"delta_s3t": resources["delta_s3t"]}) as initialized:
        live: DeltaTableResource = initialized.delta_s3t
        assert live.fsspec_options() == {"key": "AKIA-test", "secret": "s3cr3t", "anon": False,
                                         "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    with resources["spark"].process_config_and_initialize_cm() as spark:
        assert isinstance(spark, SparkResource) and spark.master == "local[1]"
        assert not spark.owns_session  # nothing created until a step asks for the session


def test_definitions_validate_with_the_cli(tmp_path):
    env = {"DAGSTER_HOME": str(tmp_path), "PATH": "/usr/bin:/bin",
           "DELTA_MAINTENANCE_TABLES": str(REPO_ROOT / "tables.yaml")}
    (tmp_path / "dagster.yaml").touch()
    out = subprocess.run([str(pathlib.Path(sys.executable).parent / "dagster"), "definitions", "validate",
                          "-w", str(REPO_ROOT / "workspace.yaml")],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "All code locations passed validation" in out.stdout + out.stderr

