"""Table health as asset checks (issue 29 item 1) in a real Dagster instance on real tables: the
eight named checks on ``<table>/delta_table``, WARN/ERROR with figures and the recommended
operation, passing after the maintenance that fixes them (checks run last in a maintenance run),
and the log sensor requesting them once per new version, from its first tick."""

from __future__ import annotations

import json
import pathlib
import shutil
import time

import pytest
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DefaultSensorStatus,
    build_sensor_context,
    instance_for_test,
)

from definitions import build_definitions
from delta_core.health.check_names import CHECK_REMEDIES
from delta_core.log.table import DeltaTable
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing

TABLE_KEY = AssetKey(["events", "delta_table"])


def _yaml(uri, extra: str = "") -> str:
    return f"tables:\n  events:\n    uri: {uri}\n{extra}"


def _run(defs, instance, job: str, run_config: dict | None = None):
    result = defs.resolve_job_def(job).execute_in_process(instance=instance, run_config=run_config or {})
    assert result.success
    return result


def _checks(result) -> dict[str, tuple[bool, AssetCheckSeverity, dict]]:
    """Each check evaluation of the run: passed, severity, metadata values."""
    out = {}
    for evaluation in result.get_asset_check_evaluations():
        assert evaluation.asset_key == TABLE_KEY
        out[evaluation.check_name] = (evaluation.passed, evaluation.severity,
                                      {k: v.value for k, v in evaluation.metadata.items()})
    return out


def _status(checks: dict) -> dict[str, str]:
    return {name: "pass" if passed else severity.value.lower() for name, (passed, severity, _) in checks.items()}


def test_every_table_asset_carries_the_eight_named_checks(tables_yaml, tmp_path):
    config = tables_yaml(_yaml(tmp_path / "a") + f"  orders:\n    uri: {tmp_path / 'b'}\n")
    graph = build_definitions(config).resolve_asset_graph()
    for table in ("events", "orders"):
        assert {key.name for key in graph.asset_check_keys if key.asset_key == AssetKey([table, "delta_table"])} \
            == set(CHECK_REMEDIES)


@pytest.mark.spark
def test_small_files_fail_then_pass_after_compaction_in_the_same_run(make_events_table, tables_yaml, spark):
    # 200 tiny appends, one file each (one day); the writer's own checkpoints every 50 commits
    table = make_events_table(rows=2000, appends=200, days=1, delete_fraction=0,
                              properties={"delta.checkpointInterval": "50"})
    config = tables_yaml(_yaml(table.uri, "    compact: {target_size: 1MB}\n    checkpoint: false\n"))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        before = _checks(_run(defs, instance, "events_checks"))
        assert set(before) == set(CHECK_REMEDIES)  # one run, all eight
        passed, severity, meta = before["small_files"]
        assert not passed and severity == AssetCheckSeverity.ERROR  # 200 of 200 small: >= twice 0.3
        assert (meta["small_files"], meta["num_files"], meta["small_file_ratio"]) == (200, 200, 1.0)
        assert (meta["compact_small_file_ratio"], meta["compact_min_small_files"]) == (0.3, 100)
        assert meta["recommended_operation"] == "compact" and meta["remedies"] == "compact"
        assert "| threshold | compact_small_file_ratio | 30.0% |" in meta["figures"]
        assert "| figure | min_file_size | 750 KB |" in meta["figures"]  # 3/4 of the 1 MB target
        assert "200 of 200 files (100%) are under 750 KB" in meta["description"]
        assert meta["delta_version"] == table.latest_version()
        assert before["protocol_supported"][0] and before["data_skipping"][2]["skipped_reason"].startswith("the table")

        # The compact job runs the checks after the compaction: they judge the compacted table.
        result = _run(defs, instance, "events_compact")
        order = [e.event_type_value for e in result.all_events
                 if e.event_type_value in ("ASSET_MATERIALIZATION", "ASSET_CHECK_EVALUATION")]
        assert order[0] == "ASSET_MATERIALIZATION" and set(order[1:]) == {"ASSET_CHECK_EVALUATION"}
        after = _checks(result)
        assert after["small_files"][0] and after["small_files"][2]["num_files"] == 1
        assert after["small_files"][2]["recommended_operation"] == "none"
        assert after["small_files"][2]["delta_version"] == table.latest_version() == 201
        latest = instance.get_latest_asset_check_evaluation_record(AssetCheckKey(TABLE_KEY, "small_files"))
        assert latest is not None and latest.run_id == result.run_id  # the catalog shows the passing verdict
        assert latest.event.dagster_event.event_specific_data.passed


def test_checkpoint_due_errors_then_passes_after_the_checkpoint_run(make_events_table, tables_yaml):
    table = make_events_table(rows=300, appends=12, days=1, delete_fraction=0,
                              properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_yaml(table.uri, "    checkpoint: {interval: 5}\n"))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        passed, severity, meta = _checks(_run(defs, instance, "events_checks"))["checkpoint_due"]
        assert not passed and severity == AssetCheckSeverity.ERROR  # 12 commits >= twice the interval 5
        assert (meta["versions_since_checkpoint"], meta["checkpoint_interval"]) == (12, 5)
        assert meta["recommended_operation"] == "checkpoint"
        after = _checks(_run(defs, instance, "events_checkpoint"))["checkpoint_due"]
        assert after[0] and after[2]["checkpoint_version"] == table.last_checkpoint_version() == 12


def test_vacuum_due_when_removed_files_pass_the_retention(make_events_table, tables_yaml):
    table = make_events_table(rows=600, appends=6, days=2, delete_fraction=0.5,
                              properties={"delta.deletedFileRetentionDuration": "interval 1 seconds"})
    time.sleep(1.1)
    config = tables_yaml(_yaml(table.uri))
    with instance_for_test() as instance:
        passed, severity, meta = _checks(_run(build_definitions(config), instance, "events_checks"))["vacuum_due"]
    tombstones = table.snapshot().tombstones
    assert not passed and meta["recommended_operation"] == "vacuum"
    assert meta["reclaimable_files"] == tombstones.num_rows > 0
    assert meta["reclaimable_bytes"] == sum(tombstones.column("size").to_pylist())
    # half the files were deleted: the bytes held for nothing are about the live table's size
    expected = AssetCheckSeverity.ERROR if meta["reclaimable_bytes"] >= meta["total_bytes"] else AssetCheckSeverity.WARN
    assert severity == expected


@pytest.mark.parametrize(("fixture", "severity", "deleted", "records"), [
    ("krs-with-short-dv", AssetCheckSeverity.ERROR, 3, 10),  # 30%: over twice the 5% threshold
    ("golden-dv-partitioned-with-checkpoint", AssetCheckSeverity.WARN, 2, 37),  # 5.4%: just past it
])
def test_deleted_rows_on_deletion_vector_tables(tables_yaml, tmp_path, fixture, severity, deleted, records):
    root = tmp_path / fixture
    shutil.copytree(MODERN_DIR / fixture, root)
    before = listing(str(root))
    config = tables_yaml(_yaml(root))
    with instance_for_test() as instance:
        passed, got, meta = _checks(_run(build_definitions(config), instance, "events_checks"))["deleted_rows"]
    assert not passed and got == severity
    assert (meta["deleted_rows"], meta["num_records"]) == (deleted, records)
    assert meta["recommended_operation"] == "purge" and meta["purge_deleted_rows_ratio"] == 0.05
    assert listing(str(root)) == before  # checks write nothing


def test_protocol_supported_errors_on_an_unknown_writer_feature(make_events_table, tables_yaml):
    table = make_events_table(rows=60, appends=2, days=1, delete_fraction=0)
    version = table.latest_version() + 1
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "fooBarWriter"]}
    (pathlib.Path(table.uri) / "_delta_log" / f"{version:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": int(time.time() * 1000)}}) + "\n"
        + json.dumps({"protocol": protocol}) + "\n", encoding="utf-8")
    config = tables_yaml(_yaml(table.uri))
    with instance_for_test() as instance:
        checks = _checks(_run(build_definitions(config), instance, "events_checks"))
    passed, severity, meta = checks["protocol_supported"]
    assert not passed and severity == AssetCheckSeverity.ERROR
    assert "fooBarWriter" in meta["description"] and meta["min_writer_version"] == 7
    assert meta["recommended_operation"] == "none" and meta["remedies"] == "none: maintenance is blocked"
    assert set(checks) == set(CHECK_REMEDIES)  # the others are still judged from the readable log


def _tick(defs, instance, cursor):
    sensor = defs.resolve_sensor_def("events_delta_log_sensor")
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    with build_sensor_context(cursor=cursor, instance=instance, definitions=defs, resources=resources) as context:
        return sensor.evaluate_tick(context)


def test_log_sensor_observes_and_requests_checks_once_per_version_from_its_first_tick(make_events_table, tables_yaml):
    from delta_core.write.table_writes import append
    from demo.data import event_batch

    table = make_events_table(rows=200, appends=4, days=1, delete_fraction=0)
    config = tables_yaml(_yaml(table.uri, "    checkpoint: false\n    compact: {min_input_files: 2}\n"))
    defs = build_definitions(config)
    assert defs.resolve_sensor_def("events_delta_log_sensor").default_status == DefaultSensorStatus.RUNNING
    with instance_for_test() as instance:
        first = _tick(defs, instance, None)  # a new deployment: no cursor yet
        (request,) = first.run_requests
        assert (request.job_name, request.run_key) == ("events_checks", "events:checks:v4")
        assert first.asset_events[0].asset_key == TABLE_KEY
        assert _status(_checks(_run(defs, instance, request.job_name)))["small_files"] == "error"  # 4 of 4 small

        idle = _tick(defs, instance, first.cursor)  # same version: nothing requested again
        assert idle.run_requests == [] and idle.skip_message == "no commits after version 4"

        append(table, event_batch(10, days=1, seed=50))
        tick = _tick(defs, instance, first.cursor)
        assert [(r.job_name, r.run_key) for r in tick.run_requests] == [("events_checks", "events:checks:v5")]
        assert tick.run_requests[0].tags["delta_maintenance/version"] == "5"
    assert DeltaTable(table.uri).latest_version() == 5
