"""The table log sensor over a real sequence of commits: appends, a compaction
(dataChange=false), a checkpoint falling due, manifests on, a delete, a log gap."""

from __future__ import annotations

import pathlib

import pytest
from dagster import AssetKey, build_sensor_context, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.errors import ConfigError
from delta_core.write.checkpoint_cadence import checkpoint_due, versions_since_checkpoint
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, delete_files
from demo.data import event_batch
from sensors import parse_cursor

TABLE_KEY = AssetKey(["events", "delta_table"])


def _config_text(uri: pathlib.Path, *, manifest: bool = True, summary: bool = True) -> str:
    downstream = "    downstream: {daily_summary: {date_column: event_date}}\n" if summary else ""
    return (f"tables:\n  events:\n    uri: {uri}\n    compact: {{target_size: 64KB, min_input_files: 2}}\n"
            f"    checkpoint: {{interval: 5}}\n    manifest: {str(manifest).lower()}\n{downstream}")


def _tick(defs, instance, cursor):
    """One evaluation, with the sensor's resources as the daemon provides them."""
    sensor = defs.resolve_sensor_def("events_delta_log_sensor")
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    with build_sensor_context(cursor=cursor, instance=instance, definitions=defs,
                              resources=resources) as context:
        return sensor.evaluate_tick(context)


def _requests(data) -> list[tuple[str, str]]:
    return sorted((r.job_name, r.run_key) for r in data.run_requests)


def _observed_version(data) -> str:
    (event,) = data.asset_events
    assert event.asset_key == TABLE_KEY
    return event.data_version


@pytest.mark.spark
def test_sensor_over_a_sequence_of_commits(make_events_table, tables_yaml, spark):
    # version 0 = create, 1..3 = appends; writers' own checkpoints are pushed out of the way
    table = make_events_table(rows=600, appends=3, days=2, delete_fraction=0,
                              properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_config_text(pathlib.Path(table.uri)))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        # first tick: no cursor -> start watching at the latest version: observed and checked, nothing due yet
        first = _tick(defs, instance, None)
        assert first.cursor == "3" and _observed_version(first) == "3"
        assert _requests(first) == [("events_checks", "events:checks:v3")]

        # an append (dataChange=true): manifest refresh + downstream refresh
        append(table, event_batch(50, days=2, seed=100))
        tick = _tick(defs, instance, first.cursor)
        assert tick.cursor == "4"
        assert _requests(tick) == [("events_checks", "events:checks:v4"),
                                   ("events_downstream_refresh", "events:downstream:v4"),
                                   ("events_manifest", "events:manifest:v4")]
        assert _observed_version(tick) == "4"
        manifest_request = next(r for r in tick.run_requests if r.job_name == "events_manifest")
        assert manifest_request.run_config == {"ops": {"events__manifest": {"config": {"incremental": False}}}}
        assert manifest_request.tags["delta_maintenance/trigger"] == "files_changed"
        # the requested runs do what they are for: the daily summary sees the appended rows
        for request in tick.run_requests:
            run = defs.resolve_job_def(request.job_name).execute_in_process(
                run_config=request.run_config, tags=request.tags, instance=instance)
            assert run.success
            if request.job_name == "events_downstream_refresh":
                (mat,) = run.asset_materializations_for_node("events__daily_summary")
                assert mat.metadata["total_rows"].value == table.snapshot().num_records == 650
                assert mat.metadata["source_delta_version"].value == 4

        # compaction commits dataChange=false: no downstream refresh; 5 versions since 0 -> checkpoint
        result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", "compact"])],
                             resources=build_resources(config), instance=instance)
        assert result.success and table.latest_version() == 5
        tick = _tick(defs, instance, "4")
        assert tick.cursor == "5"
        assert _requests(tick) == [("events_checkpoint", "events:checkpoint:v5"),
                                   ("events_checks", "events:checks:v5"),
                                   ("events_manifest", "events:manifest:v5")]
        # the compaction moved the Delta version, not the data version (nothing shows unsynced)
        assert _observed_version(tick) == "4"
        assert tick.asset_events[0].metadata["delta_version"].value == 5

        # the same tick evaluated again asks for the very same runs (run keys dedupe them)
        again = _tick(defs, instance, "4")
        assert _requests(again) == _requests(tick) and again.cursor == "5"

        # no new commits: no runs, cursor unchanged, nothing observed
        idle = _tick(defs, instance, "5")
        assert idle.run_requests == [] and idle.cursor == "5" and idle.asset_events == []
        assert idle.skip_message == "no commits after version 5"

        # checkpoint written at 5; a DELETE (dataChange=true) at 6: downstream + manifest only
        write_checkpoint(table)
        delete_files(table, table.snapshot().file_paths[:1])
        tick = _tick(defs, instance, "5")
        assert tick.cursor == "6"
        assert _requests(tick) == [("events_checks", "events:checks:v6"),
                                   ("events_downstream_refresh", "events:downstream:v6"),
                                   ("events_manifest", "events:manifest:v6")]


def test_sensor_without_manifest_or_downstream_only_checkpoints(make_events_table, tables_yaml):
    table = make_events_table(rows=300, appends=3, days=1, delete_fraction=0,
                              properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_config_text(pathlib.Path(table.uri), manifest=False, summary=False))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        cursor = _tick(defs, instance, None).cursor
        for i in range(2):
            append(table, event_batch(10, days=1, seed=200 + i))
        tick = _tick(defs, instance, cursor)  # versions 4, 5: 5 >= interval 5
        assert tick.cursor == "5"
        assert _requests(tick) == [("events_checkpoint", "events:checkpoint:v5"), ("events_checks", "events:checks:v5")]
        # due by the sensor's interval: the run it requests writes the checkpoint (force)
        assert tick.run_requests[0].run_config == {
            "ops": {"events__checkpoint": {"config": {"cleanup_log": False, "interval": 5, "force": True}}}}


def test_sensor_resynchronises_after_a_log_gap(make_events_table, tables_yaml):
    table = make_events_table(rows=300, appends=4, days=1, delete_fraction=0,
                              properties={"delta.checkpointInterval": "1000"})
    write_checkpoint(table)  # at 4, so the table stays readable without commit 2
    (pathlib.Path(table.uri) / "_delta_log" / f"{2:020d}.json").unlink()
    config = tables_yaml(_config_text(pathlib.Path(table.uri)))
    defs = build_definitions(config)
    with instance_for_test() as instance:
        tick = _tick(defs, instance, "1")
        assert tick.cursor == "4" and _observed_version(tick) == "4"
        assert ("events_downstream_refresh", "events:downstream:v4") in _requests(tick)


def test_sensor_skips_while_the_table_does_not_exist(tables_yaml, tmp_path):
    config = tables_yaml(_config_text(tmp_path / "not_yet"))
    with instance_for_test() as instance:
        tick = _tick(build_definitions(config), instance, None)
    assert tick.run_requests == [] and tick.cursor is None
    assert "events" in tick.skip_message and "_delta_log" in tick.skip_message


def test_sensor_with_no_maintenance_to_start_still_records_and_checks_versions(make_events_table, tables_yaml):
    table = make_events_table(rows=100, appends=2, days=1, delete_fraction=0)
    config = tables_yaml(f"tables:\n  events:\n    uri: {table.uri}\n    checkpoint: false\n")
    with instance_for_test() as instance:
        tick = _tick(build_definitions(config), instance, "0")
    assert _requests(tick) == [("events_checks", "events:checks:v2")]
    assert tick.cursor == "2" and _observed_version(tick) == "2"


def test_sensor_is_not_built_when_disabled(tables_yaml, tmp_path):
    config = tables_yaml(f"tables:\n  events:\n    uri: {tmp_path}/t\n    sensor: false\n")
    names = [s.name for s in build_definitions(config).get_repository_def().sensor_defs]
    assert names == ["default_automation_condition_sensor"]  # no log sensor; the automation sensor stays


def test_cursor_and_due_rules():
    assert parse_cursor(None) is None and parse_cursor("") is None and parse_cursor("12") == 12
    with pytest.raises(ConfigError, match="reset the sensor's cursor"):
        parse_cursor("v12")
    def due(version: int, checkpoint: int | None, interval: int) -> bool:
        return checkpoint_due(versions_since_checkpoint(version, checkpoint), interval)

    assert not due(9, None, 10) and due(10, None, 10)
    assert not due(19, 10, 10) and due(20, 10, 10)
    assert not due(0, None, 1) and not due(10, 10, 10)  # nothing since the checkpoint (or creation)
