"""A health check whose target no run can reach passes with ``reachable: false`` and its reason,
so the automation conditions request no run; a reachable one requests its operation. Evaluated
with ``dagster.evaluate_automation_conditions`` on a real instance over a real table."""

from __future__ import annotations

import datetime
import pathlib

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetKey,
    Definitions,
    evaluate_automation_conditions,
    instance_for_test,
)

from definitions import build_definitions

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


def checked_and_requested(defs: Definitions, check: str) -> tuple[AssetCheckEvaluation, set[AssetKey]]:
    """The table's ``check`` evaluated on a real instance, and the assets its automation
    conditions then request."""
    with instance_for_test() as instance:
        result = defs.resolve_job_def("events_checks").execute_in_process(instance=instance)
        assert result.success
        evaluation = next(e for e in result.get_asset_check_evaluations() if e.check_name == check)
        requested = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=DAY)
        return evaluation, {key for key in (ZORDER, COMPACT) if requested.get_requested_partitions(key)}


@pytest.mark.parametrize(("zorder_target", "reachable"), [("128MB", False), ("4KB", True)])
def test_an_unreachable_skipping_target_requests_no_run(make_events_table, tables_yaml, zorder_target, reachable):
    events = pathlib.Path(make_events_table(rows=1200).uri)  # 32 small files, user ids all over
    skipping, requested = checked_and_requested(build_definitions(tables_yaml(_yaml(events, zorder_target))),
                                                "data_skipping")
    zorder_requested = ZORDER in requested
    assert COMPACT not in requested
    if reachable:  # files of 4KB: the plan predicts the floor is reached
        assert not skipping.passed and zorder_requested
        assert "reachable" not in skipping.metadata
    else:  # 128MB: one file per partition, which skips nothing more
        assert skipping.passed and not zorder_requested
        assert skipping.metadata["reachable"].value is False
        assert "would skip" in skipping.metadata["unreachable_reason"].value
