"""The fleet advisor (``advisor: {mode: auto}``) on one real table with known health: it requests
exactly the runs the thresholds call for, none the second tick, holds back an operation whose
run is in progress or cooling down (vacuum at most daily), and tags its runs so Dagster's run
queue enforces the global and per-operation limits."""

from __future__ import annotations

import pathlib
import time

import pytest
from dagster import DagsterRun, DagsterRunStatus, build_sensor_context, instance_for_test

from definitions import build_definitions
from delta_core.errors import ConfigError
from fleet.usage import ESTIMATED_BYTES_TAG
from sensors.advisor import (
    ADVISOR_TAG,
    FLEET_ADVISOR_SENSOR,
    GAIN_TAG,
    HEALTH_TAG_PREFIX,
    POINTS_TAG,
    REASON_TAG,
    TABLE_OPERATION_TAG,
    advisor_run_limits,
    parse_advisor_cursor,
)

SENSOR = FLEET_ADVISOR_SENSOR


@pytest.fixture()
def known_table(make_events_table):
    """8 files of ~1-2 KB in 2 partitions (all small against 64KB), 2 of them removed (their
    retention is 1 second), versions 0..6 and no checkpoint."""
    table = make_events_table(rows=300, appends=4, days=2, delete_fraction=0.25,
                              properties={"delta.checkpointInterval": "1000",
                                          "delta.deletedFileRetentionDuration": "interval 1 second"})
    time.sleep(1.1)  # the removed files pass their retention
    return table


def _config(uri: str, advisor: str = "") -> str:
    # three small files a day: merged by bins of two or more
    return (f"tables:\n  events:\n    uri: {uri}\n    compact: {{target_size: 64KB, min_input_files: 2}}\n"
            f"    checkpoint: {{interval: 3}}\n    sensor: false\n"
            f"    advisor: {{mode: auto{', ' + advisor if advisor else ''}}}\n")


def _tick(defs, instance, cursor):
    sensor = defs.resolve_sensor_def(SENSOR)
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    with build_sensor_context(cursor=cursor, instance=instance, definitions=defs, resources=resources) as context:
        return sensor.evaluate_tick(context)


def _jobs(data) -> list[str]:
    return sorted(r.job_name for r in data.run_requests)


def _live_files(table) -> list[pathlib.Path]:
    root = pathlib.Path(table.uri)
    return [root / p for p in table.snapshot().file_paths]


def _unreferenced_bytes(table) -> int:
    """Bytes of the data files on disk that the latest version no longer references."""
    root = pathlib.Path(table.uri)
    live = {root / p for p in table.snapshot().file_paths}
    return sum(f.stat().st_size for f in root.rglob("*.parquet") if f not in live)


def _add_run(instance, job_name: str, status: DagsterRunStatus) -> None:
    instance.add_run(DagsterRun(job_name=job_name, status=status))


def test_advisor_requests_what_pays_off_and_none_the_second_tick(known_table, tables_yaml):
    defs = build_definitions(tables_yaml(_config(known_table.uri)))
    with instance_for_test() as instance:
        first = _tick(defs, instance, None)
        # 6 small files packable into 2, 8070 reclaimable bytes, 7 commits without a checkpoint
        assert _jobs(first) == ["events_checkpoint", "events_compact", "events_vacuum"]
        by_job = {r.job_name: r for r in first.run_requests}
        compact = by_job["events_compact"]
        assert compact.run_key == "events:advisor:compact:v6"
        assert compact.tags[REASON_TAG].startswith("6 of 6 files (100%) are under 48 KB")
        assert compact.tags[GAIN_TAG] == "4 files"
        assert compact.tags[f"{HEALTH_TAG_PREFIX}num_files"] == "6"
        assert compact.tags[f"{HEALTH_TAG_PREFIX}small_file_ratio"] == "1"
        assert compact.tags[f"{HEALTH_TAG_PREFIX}versions_since_checkpoint"] == "6"  # commits after v0
        assert compact.tags[TABLE_OPERATION_TAG] == "events.compact" and compact.tags[ADVISOR_TAG] == "true"
        assert int(compact.tags[ESTIMATED_BYTES_TAG]) == sum(f.stat().st_size for f in _live_files(known_table))
        assert float(compact.tags[POINTS_TAG]) > 0
        assert by_job["events_vacuum"].tags[ESTIMATED_BYTES_TAG] == "0"  # deletes, rewrites nothing
        assert compact.run_config["ops"]["events__compact"]["config"]["target_size"] == 64000
        assert by_job["events_vacuum"].tags[GAIN_TAG] == f"{_unreferenced_bytes(known_table)} bytes"
        assert parse_advisor_cursor(first.cursor) == {"events": {"checkpoint": 6, "compact": 6, "vacuum": 6}}

        second = _tick(defs, instance, first.cursor)
        assert second.run_requests == []
        assert second.skip_message == ("events.compact: already requested at version 6; events.vacuum: already "
                                       "requested at version 6; events.checkpoint: already requested at version 6")
        assert second.cursor == first.cursor


def test_thresholds_from_tables_yaml_decide(known_table, tables_yaml):
    # a small-file ratio that cannot be exceeded, more small files than the table has, and
    # more reclaimable bytes than it holds: only the checkpoint (interval 3) remains due
    text = _config(known_table.uri, "compact_small_file_ratio: 1.0, compact_min_small_files: 6, "
                                    "vacuum_min_reclaimable_bytes: 1MB")
    defs = build_definitions(tables_yaml(text))
    with instance_for_test() as instance:
        assert _jobs(_tick(defs, instance, None)) == ["events_checkpoint"]


def test_checkpoint_follows_the_tables_interval_when_tables_yaml_gives_none(known_table, tables_yaml):
    # no checkpoint.interval in tables.yaml: delta.checkpointInterval (1000) rules, not due
    text = _config(known_table.uri).replace("    checkpoint: {interval: 3}\n", "")
    defs = build_definitions(tables_yaml(text))
    with instance_for_test() as instance:
        assert _jobs(_tick(defs, instance, None)) == ["events_compact", "events_vacuum"]


def test_one_run_at_a_time_and_cool_down(known_table, tables_yaml):
    defs = build_definitions(tables_yaml(_config(known_table.uri, "cooldown_minutes: 0")))
    with instance_for_test() as instance:
        _add_run(instance, "events_compact", DagsterRunStatus.STARTED)  # in progress
        _add_run(instance, "events_checkpoint", DagsterRunStatus.SUCCESS)  # just ended, cool-down 0
        _add_run(instance, "events_vacuum", DagsterRunStatus.SUCCESS)  # just ended: at most daily
        tick = _tick(defs, instance, None)
        assert _jobs(tick) == ["events_checkpoint"]
        assert parse_advisor_cursor(tick.cursor) == {"events": {"checkpoint": 6}}  # the others: asked again later

    defs = build_definitions(tables_yaml(_config(known_table.uri, "cooldown_minutes: 30, "
                                                                   "vacuum_min_interval_hours: 0")))
    with instance_for_test() as instance:
        _add_run(instance, "events_checkpoint", DagsterRunStatus.FAILURE)  # ended now: cooling down
        assert _jobs(_tick(defs, instance, None)) == ["events_compact", "events_vacuum"]


def test_checkpoints_are_left_to_the_log_sensor_when_it_is_on(known_table, tables_yaml):
    text = _config(known_table.uri).replace("    sensor: false\n", "")
    defs = build_definitions(tables_yaml(text))
    with instance_for_test() as instance:
        tick = _tick(defs, instance, None)
        assert _jobs(tick) == ["events_compact", "events_vacuum"]
        assert "checkpoint" not in parse_advisor_cursor(tick.cursor)["events"]


def test_manual_mode_builds_no_advisor(known_table, tables_yaml):
    text = _config(known_table.uri).replace("advisor: {mode: auto}", "advisor: {mode: schedule}")
    defs = build_definitions(tables_yaml(text))
    assert all(s.name != SENSOR for s in defs.sensors)


def test_the_run_queue_limits_advised_runs(known_table, tables_yaml):
    """Dagster's run queue, configured by ``advisor_run_limits``, admits at most 2 advised runs
    at a time and one per table and operation."""
    # What the queue daemon consults (private: Dagster has no public way to ask the queue).
    from dagster._utils.tags import TagConcurrencyLimitsCounter

    defs = build_definitions(tables_yaml(_config(known_table.uri)))
    with instance_for_test(overrides={"concurrency": advisor_run_limits(max_concurrent_runs=2)}) as instance:
        requests = _tick(defs, instance, None).run_requests
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        queued = [DagsterRun(job_name=r.job_name, tags=r.tags) for r in requests]
        twin = DagsterRun(job_name=queued[0].job_name, tags=queued[0].tags)  # same table and operation
        counter = TagConcurrencyLimitsCounter(limits, [twin])
        admitted = []
        for run in queued:
            if not counter.is_blocked(run):
                counter.update_counters_with_launched_item(run)
                admitted.append(run.job_name)
        # the twin holds the first operation's slot and one of two global slots
        assert admitted == [queued[1].job_name]


def test_bad_cursor_and_limit_are_refused():
    with pytest.raises(ConfigError, match="clear the sensor's cursor"):
        parse_advisor_cursor("7")
    with pytest.raises(ConfigError, match="clear the sensor's cursor"):
        parse_advisor_cursor('{"compact": 6}')  # the per-table advisor's cursor, before the fleet's
    with pytest.raises(ConfigError, match="must be positive"):
        advisor_run_limits(max_concurrent_runs=0)


def test_the_demo_instance_bounds_advised_runs(tmp_path, monkeypatch):
    from dagster import DagsterInstance

    from demo.__main__ import DEMO_MAX_ADVISED_RUNS, _ensure_instance

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))  # restored after the test
    _ensure_instance(tmp_path / "home")
    with DagsterInstance.from_config(str(tmp_path / "home")) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {"key": ADVISOR_TAG, "limit": DEMO_MAX_ADVISED_RUNS} in limits
    assert {"key": TABLE_OPERATION_TAG, "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
