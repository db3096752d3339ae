"""Maintenance assets append one history row per run, whoever started it: a job launched by hand
(``materialize``), the run requests of a schedule, the log sensor and the fleet advisor (their
tags), and a run the automation conditions request (the automation sensor's tags). delta-rs and delta-kernel-rs read the rows; runs on the history
table itself, managed like any other table, add none."""

from __future__ import annotations

import datetime
import pathlib

import pyarrow as pa
from dagster import (
    AssetKey,
    build_schedule_context,
    build_sensor_context,
    evaluate_automation_conditions,
    instance_for_test,
    materialize,
)
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from assets.automation import DEFAULT_SENSOR_NAME
from definitions import build_definitions, build_resources
from sensors.advisor import FLEET_ADVISOR_SENSOR
from tests.dagster.conftest import write_yaml
from tests.kernel_oracle import kernel_rows_elsewhere

CONFIG = """\
history: {uri: runs}
tables:
  events:
    uri: events
    vacuum: {cron: "0 3 * * 0", dry_run: true}
    checkpoint: {interval: 2}
    manifest: false
  advised:
    uri: advised
    compact: false
    vacuum: false
    checkpoint: {interval: 2}
    sensor: false
    advisor: {mode: auto}
  runs:
    uri: runs
    checkpoint: {interval: 2}
"""


def _append(path: pathlib.Path, i: int) -> None:
    write_deltalake(str(path), pa.table({"id": pa.array([i, i + 100], pa.int64())}), mode="append")


def _rows(history: pathlib.Path) -> list[dict]:
    return RsTable(str(history)).to_pyarrow_table().sort_by("end_time").to_pylist()


def test_every_trigger_appends_a_row(tmp_path: pathlib.Path) -> None:
    from resources.config import load_config

    for i in range(3):
        _append(tmp_path / "events", i)
    config = load_config(write_yaml(tmp_path / "tables.yaml", CONFIG))
    defs = build_definitions(config)
    history = tmp_path / "runs"
    with instance_for_test() as instance:
        # by hand: materialize, no trigger tag
        by_hand = materialize(build_definitions(config).assets, selection=[AssetKey(["events", "checkpoint"])],
                              resources=build_resources(config), instance=instance)
        assert by_hand.success

        # a schedule's run request, executed with its config and tags
        schedule = defs.resolve_schedule_def("events_vacuum_schedule")
        (request,) = schedule.evaluate_tick(build_schedule_context(instance=instance)).run_requests
        job = defs.resolve_job_def(schedule.job_name)
        assert job.execute_in_process(instance=instance, run_config=request.run_config, tags=request.tags).success

        # the log sensor's request for a checkpoint that fell due
        sensor = defs.resolve_sensor_def("events_delta_log_sensor")

        def tick(sensor, cursor: str | None):  # noqa: ANN001, ANN202
            resources = {k: defs.get_repository_def().get_top_level_resources()[k]
                         for k in sensor.required_resource_keys}
            with build_sensor_context(cursor=cursor, instance=instance, definitions=defs, resources=resources) as ctx:
                return sensor.evaluate_tick(ctx)

        cursor = tick(sensor, None).cursor
        for i in range(3, 5):
            _append(tmp_path / "events", i)
        checkpoint = next(r for r in tick(sensor, cursor).run_requests if r.job_name == "events_checkpoint")
        assert defs.resolve_job_def("events_checkpoint").execute_in_process(
            instance=instance, run_config=checkpoint.run_config, tags=checkpoint.tags).success

        # the advisor's request for the advised table's due checkpoint, run with its tags
        for i in range(3):
            _append(tmp_path / "advised", i)
        advisor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
        (advised,) = tick(advisor, None).run_requests
        assert advised.job_name == "advised_checkpoint"
        assert defs.resolve_job_def(advised.job_name).execute_in_process(
            instance=instance, run_config=advised.run_config, tags=advised.tags).success

        # automation: the checkpoint_due check fails on new commits, its condition requests the
        # checkpoint, and the automation sensor's runs carry that sensor's tags
        for i in range(3, 6):
            _append(tmp_path / "advised", i)
        assert defs.resolve_job_def("advised_checks").execute_in_process(instance=instance).success
        later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)  # past the advised run's cool-down
        requested = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=later)
        assert requested.get_requested_partitions(AssetKey(["advised", "checkpoint"]))
        automation = defs.resolve_sensor_def(DEFAULT_SENSOR_NAME)
        assert defs.resolve_job_def("advised_checkpoint").execute_in_process(
            instance=instance, tags=automation.run_tags).success

        # the history table's own maintenance: recorded in its log, not as rows
        version = RsTable(str(history)).version()
        assert materialize(build_definitions(config).assets, selection=[AssetKey(["runs", "checkpoint"])],
                           resources=build_resources(config), instance=instance).success
        assert RsTable(str(history)).version() == version

    rows = _rows(history)
    assert [(r["operation"], r["trigger"], r["status"]) for r in rows] == [
        ("checkpoint", "job", "SUCCEEDED"), ("vacuum", "schedule", "SUCCEEDED"), ("checkpoint", "sensor", "SUCCEEDED"),
        ("checkpoint", "advisor", "SUCCEEDED"), ("checkpoint", "automation", "SUCCEEDED")]
    assert rows[0]["dagster_run_id"] == by_hand.run_id
    assert [r["table_name"] for r in rows] == ["events"] * 3 + ["advised"] * 2
    assert all(r["health_before"] is not None and r["health_after"] is not None for r in rows)
    kernel = kernel_rows_elsewhere(str(history))
    assert sorted(kernel.column("trigger").to_pylist()) == ["advisor", "automation", "job", "schedule", "sensor"]
