"""A health check whose target no run can reach (skipping the planned layout cannot raise, small
files no compaction can merge) passes with ``reachable: false`` and its reason, so neither the
automation conditions nor the fleet advisor request a run; a reachable one
requests its operation, and once that operation has run, neither requests it again while no
writer changes the table. Evaluated with ``dagster.evaluate_automation_conditions`` and the
advisor sensor's tick on a real instance over a real table."""

from __future__ import annotations

import datetime
import pathlib

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    DagsterInstance,
    Definitions,
    build_sensor_context,
    evaluate_automation_conditions,
    instance_for_test,
)

from definitions import build_definitions
from sensors.advisor import FLEET_ADVISOR_SENSOR

ZORDER = AssetKey(["events", "zorder"])
COMPACT = AssetKey(["events", "compact"])
DAY = datetime.datetime(2026, 3, 4, tzinfo=datetime.UTC)


def _yaml(uri: pathlib.Path, zorder_target: str) -> str:
    # compaction's thresholds out of reach: only the skipping check can ask for a run
    return f"""
tables:
  events:
    uri: {uri}
    compact: {{target_size: 128KB}}
    zorder: {{columns: [user_id, amount], target_size: {zorder_target}}}
    advisor: {{mode: auto, compact_small_file_ratio: 1.0, compact_min_small_files: 1000}}
"""


def _evaluation(defs: Definitions, instance: DagsterInstance, check: str) -> AssetCheckEvaluation:
    """The ``check`` evaluation of a run of the table's checks."""
    result = defs.resolve_job_def("events_checks").execute_in_process(instance=instance)
    assert result.success
    return next(e for e in result.get_asset_check_evaluations() if e.check_name == check)


def _skipping(defs: Definitions, instance: DagsterInstance) -> AssetCheckEvaluation:
    return _evaluation(defs, instance, "data_skipping")


def _automation_requests(defs: Definitions, instance: DagsterInstance, when: datetime.datetime) -> set[AssetKey]:
    requested = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=when)
    return {key for key in (ZORDER, COMPACT) if requested.get_requested_partitions(key)}


def _advisor_jobs(defs: Definitions, instance: DagsterInstance) -> set[str]:
    sensor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    with build_sensor_context(instance=instance, definitions=defs, resources=resources) as context:
        return {r.job_name for r in sensor.evaluate_tick(context).run_requests}


def checked_and_requested(defs: Definitions, check: str) -> tuple[AssetCheckEvaluation, set[AssetKey]]:
    """The table's ``check`` evaluated on a real instance, and the assets its automation
    conditions then request."""
    with instance_for_test() as instance:
        return _evaluation(defs, instance, check), _automation_requests(defs, instance, DAY)


@pytest.mark.parametrize(("zorder_target", "reachable"), [("128MB", False), ("4KB", True)])
def test_an_unreachable_skipping_target_requests_no_run(make_events_table, tables_yaml, zorder_target, reachable):
    events = pathlib.Path(make_events_table(rows=1200).uri)  # 32 small files, user ids all over
    defs = build_definitions(tables_yaml(_yaml(events, zorder_target)))
    with instance_for_test() as instance:
        skipping = _skipping(defs, instance)
        requested = _automation_requests(defs, instance, DAY)
        advised = _advisor_jobs(defs, instance)
    assert COMPACT not in requested and "events_compact" not in advised
    if reachable:  # files of 4KB: the plan predicts the floor is reached
        assert not skipping.passed and ZORDER in requested and "events_zorder" in advised
        assert "reachable" not in skipping.metadata
    else:  # 128MB: one file per partition, which skips nothing more
        assert skipping.passed and ZORDER not in requested and "events_zorder" not in advised
        assert skipping.metadata["reachable"].value is False
        assert "would skip" in skipping.metadata["unreachable_reason"].value


@pytest.mark.spark
def test_after_the_advised_zorder_neither_automation_nor_the_advisor_asks_again(
        spark, make_events_table, tables_yaml):
    events = make_events_table(rows=1200)
    defs = build_definitions(tables_yaml(_yaml(pathlib.Path(events.uri), "4KB")))
    with instance_for_test() as instance:
        assert not _skipping(defs, instance).passed
        assert ZORDER in _automation_requests(defs, instance, DAY)
        assert defs.resolve_job_def("events_zorder").execute_in_process(instance=instance).success
        version = events.latest_version()

        # the run reached the floor; with no writer since, its plan would keep every ZCube anyway
        skipping = _skipping(defs, instance)
        assert skipping.passed and skipping.metadata["skip_ratio"].value >= skipping.metadata["skip_ratio_floor"].value
        later = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=1)  # past every cool-down
        assert _automation_requests(defs, instance, later) == set()
        assert "events_zorder" not in _advisor_jobs(defs, instance)
        assert events.latest_version() == version


def test_small_files_no_compaction_can_merge_request_no_run(tables_yaml, tmp_path):
    import pyarrow as pa
    from deltalake import write_deltalake

    events = tmp_path / "events"  # one small file in each of three partitions: all small, none to merge
    write_deltalake(str(events), pa.table({"day": ["a", "b", "c"], "id": pa.array([1, 2, 3], pa.int64())}),
                    partition_by=["day"])
    defs = build_definitions(tables_yaml(f"tables:\n  events:\n    uri: {events}\n    advisor: {{mode: auto}}\n"))
    with instance_for_test() as instance:
        result = defs.resolve_job_def("events_checks").execute_in_process(instance=instance)
        small = next(e for e in result.get_asset_check_evaluations() if e.check_name == "small_files")
        requested = _automation_requests(defs, instance, DAY)
        advised = _advisor_jobs(defs, instance)
    assert small.passed and small.metadata["small_file_ratio"].value == 1.0
    assert small.metadata["reachable"].value is False
    assert "compaction would merge nothing" in small.metadata["unreachable_reason"].value
    assert COMPACT not in requested and "events_compact" not in advised
