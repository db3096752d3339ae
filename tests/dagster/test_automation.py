"""Declarative automation (issue 29): the maintenance assets' conditions request exactly the runs
their table's policy allows, evaluated with ``dagster.evaluate_automation_conditions`` on a real
instance over real tables in tmp dirs.

The failing checks are the code location's own (``events_checks`` runs the eight health checks
on ``events/delta_table``); a table of 32 small files fails ``small_files``.
"""

from __future__ import annotations

import datetime
import pathlib

import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    evaluate_automation_conditions,
    instance_for_test,
    materialize,
)

from assets.automation import DEFAULT_SENSOR_NAME
from definitions import build_definitions, build_resources
from resources.config import MaintenanceConfig

COMPACT = AssetKey(["events", "compact"])
VACUUM = AssetKey(["events", "vacuum"])
HEALTH_JOB = "events_checks"  # the table's eight health checks
DAY = datetime.datetime(2026, 3, 4, tzinfo=datetime.UTC)


def _yaml(uri: pathlib.Path, *, advisor: str = "{mode: auto, cooldown_minutes: 60}",
          compact: str = "{target_size: 128KB}") -> str:
    return f"""
tables:
  events:
    uri: {uri}
    compact: {compact}
    vacuum: {{retention_hours: 168}}
    advisor: {advisor}
"""


def _definitions(config: MaintenanceConfig) -> Definitions:
    return build_definitions(config)


def _run_checks(defs: Definitions, instance: DagsterInstance) -> None:
    assert defs.resolve_job_def(HEALTH_JOB).execute_in_process(instance=instance).success


def _requested(defs: Definitions, instance: DagsterInstance, at: datetime.datetime, cursor=None):
    result = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=at, cursor=cursor)
    return {key for key in (COMPACT, VACUUM) if result.get_requested_partitions(key)}, result.cursor


@pytest.fixture()
def events(make_events_table):
    return pathlib.Path(make_events_table(rows=1200).uri)  # 32 small files: health recommends compaction


@pytest.fixture()
def instance():
    with instance_for_test() as inst:
        yield inst


def test_a_failing_check_requests_its_operation_only(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events)))
    _run_checks(defs, instance)
    requested, _ = _requested(defs, instance, DAY)
    assert requested == {COMPACT}  # vacuum's check (vacuum_due) is not the failing one


def test_a_passing_check_requests_nothing(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(
        events, advisor="{mode: auto, compact_small_file_ratio: 1.0, compact_min_small_files: 1000}")))
    _run_checks(defs, instance)
    requested, _ = _requested(defs, instance, DAY)
    assert requested == set()


def test_schedule_mode_ignores_failing_checks(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events, advisor="{mode: schedule}")))
    _run_checks(defs, instance)
    assert _requested(defs, instance, DAY)[0] == set()


def test_cool_down_holds_back_until_it_has_passed(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events)))
    _run_checks(defs, instance)
    # A materialization of compact (reported as the run's event would be) 10 minutes before the
    # evaluation; the table still has its small files, so the check keeps failing.
    instance.report_runless_asset_event(AssetMaterialization(asset_key=COMPACT))
    ran_at = datetime.datetime.fromtimestamp(instance.get_latest_materialization_event(COMPACT).timestamp,
                                             tz=datetime.UTC)
    assert _requested(defs, instance, ran_at + datetime.timedelta(minutes=10))[0] == set()
    assert _requested(defs, instance, ran_at + datetime.timedelta(minutes=61))[0] == {COMPACT}


def test_a_failed_run_cools_down_too(events, tables_yaml, instance):
    """A run that fails (here: the table is gone) starts the cool-down as a success does, so a
    check that keeps failing does not launch a failing run every tick."""
    config = tables_yaml(_yaml(events))
    defs = _definitions(config)
    _run_checks(defs, instance)
    events.rename(events.with_name("moved_away"))
    result = materialize(defs.assets, selection=[COMPACT], resources=build_resources(config),
                         instance=instance, raise_on_error=False)
    assert not result.success
    assert instance.get_latest_materialization_event(COMPACT) is None
    failed_at = datetime.datetime.fromtimestamp(instance.get_run_record_by_id(result.run_id).end_time,
                                                tz=datetime.UTC)
    assert _requested(defs, instance, failed_at + datetime.timedelta(minutes=10))[0] == set()
    assert _requested(defs, instance, failed_at + datetime.timedelta(minutes=61))[0] == {COMPACT}


def test_outside_the_windows_nothing_is_requested(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events, advisor='{mode: auto, windows: ["22:00-06:00"]}')))
    _run_checks(defs, instance)
    assert _requested(defs, instance, DAY.replace(hour=12))[0] == set()
    assert _requested(defs, instance, DAY.replace(hour=23, minute=30))[0] == {COMPACT}
    assert _requested(defs, instance, DAY.replace(hour=5, minute=59))[0] == {COMPACT}  # wraps past midnight


def test_in_progress_holds_back(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events)))
    _run_checks(defs, instance)
    # A run of compact started by another trigger (a schedule, the advisor, a person): its planned
    # materialization is recorded when the run is created.
    job = defs.resolve_job_def("events_compact")
    instance.create_run_for_job(job_def=job, asset_selection=frozenset({COMPACT}), status=DagsterRunStatus.STARTED)
    assert _requested(defs, instance, DAY)[0] == set()


def test_cron_tick_requests_once(events, tables_yaml, instance):
    defs = _definitions(tables_yaml(_yaml(events, advisor="{mode: schedule}",
                                          compact='{target_size: 128KB, cron: "0 2 * * *"}')))
    requested, cursor = _requested(defs, instance, DAY.replace(hour=1, minute=59))
    assert requested == set()  # before the tick
    requested, cursor = _requested(defs, instance, DAY.replace(hour=2, minute=1), cursor)
    assert requested == {COMPACT}
    requested, cursor = _requested(defs, instance, DAY.replace(hour=2, minute=3), cursor)
    assert requested == set()  # handled: the next tick is tomorrow's


def test_the_fleet_budget_holds_automation_back(events, tables_yaml, instance):
    """The fleet section's limits hold automated runs as they hold advised ones: a maintenance
    run in progress (another operation's) fills max_concurrent_runs 1, and outside the fleet's
    windows nothing starts; the hour's byte budget, once spent, holds rewrites but not vacuum."""
    def fleet_defs(fleet: str, advisor: str = "{mode: auto, cooldown_minutes: 60}"):
        return _definitions(tables_yaml(f"fleet: {fleet}\n" + _yaml(events, advisor=advisor)))

    defs = fleet_defs("{max_concurrent_runs: 1}")
    _run_checks(defs, instance)
    assert _requested(defs, instance, DAY)[0] == {COMPACT}
    instance.create_run_for_job(job_def=defs.resolve_job_def("events_vacuum"), asset_selection=frozenset({VACUUM}),
                                status=DagsterRunStatus.STARTED)
    assert _requested(defs, instance, DAY)[0] == set()

    with instance_for_test() as fresh:
        defs = fleet_defs("{windows: ['22:00-06:00']}")
        _run_checks(defs, fresh)
        assert _requested(defs, fresh, DAY.replace(hour=12))[0] == set()
        assert _requested(defs, fresh, DAY.replace(hour=23))[0] == {COMPACT}

    with instance_for_test() as fresh:
        defs = fleet_defs("{max_bytes_per_hour: 1MB}", advisor="{mode: auto, cooldown_minutes: 0}")
        _run_checks(defs, fresh)
        fresh.report_runless_asset_event(AssetMaterialization(asset_key=COMPACT, metadata={"bytes_removed": 2_000_000}))
        spent_at = datetime.datetime.fromtimestamp(fresh.get_latest_materialization_event(COMPACT).timestamp,
                                                   tz=datetime.UTC)
        assert _requested(defs, fresh, spent_at + datetime.timedelta(minutes=5))[0] == set()  # the hour is spent
        assert _requested(defs, fresh, spent_at + datetime.timedelta(minutes=61))[0] == {COMPACT}


def test_the_code_location_has_the_automation_sensor_stopped(events, tables_yaml):
    from dagster import DefaultSensorStatus

    defs = build_definitions(tables_yaml(_yaml(events)))
    sensor = defs.resolve_sensor_def(DEFAULT_SENSOR_NAME)
    assert sensor.default_status is DefaultSensorStatus.STOPPED
    # compact and vacuum have their default crons and health checks; zorder is not enabled
    assert sensor.asset_selection.resolve(defs.resolve_asset_graph()) == {COMPACT, VACUUM}


@pytest.mark.parametrize(("window", "message"), [
    ("25:00-06:00", "must look like '22:00-06:00'"),
    ("22:00-22:00", "is empty"),
])
def test_a_bad_window_is_refused_at_load_naming_table_and_field(tmp_path, tables_yaml, window, message):
    from resources.config import TableConfigError

    with pytest.raises(TableConfigError, match=message) as refused:
        tables_yaml(_yaml(tmp_path / "t", advisor=f'{{windows: ["{window}"]}}'))
    assert refused.value.table == "events" and refused.value.field == "advisor.windows.0"


def test_the_sensor_tick_requests_the_run_in_the_code_server(events, tables_yaml, instance):
    """The sensor itself (evaluated as the code server does, the Python conditions included)
    requests what the conditions say, tagged as automation."""
    from dagster import build_sensor_context

    defs = _definitions(tables_yaml(_yaml(events)))
    _run_checks(defs, instance)
    repository = defs.get_repository_def()
    sensor = repository.get_sensor_def(DEFAULT_SENSOR_NAME)
    tick = sensor.evaluate_tick(build_sensor_context(instance=instance, repository_def=repository))
    assert [(r.asset_selection, r.tags.get("delta_maintenance/trigger")) for r in tick.run_requests] == [
        ([COMPACT], "automation")]
