"""One full maintenance run (the table's ``<table>_maintenance`` job, whose last step runs the
table's health checks) leaves every named check passing, or passing with ``reachable: false`` and
its reason, on an unpartitioned table, a partitioned one and the demo table; a second full run on
the unchanged table rewrites nothing."""

from __future__ import annotations

import pathlib

import pytest
from dagster import instance_for_test

from definitions import build_definitions
from delta_core.health.check_names import CHECK_REMEDIES, DATA_SKIPPING, SMALL_FILES
from delta_core.log.table import DeltaTable
from delta_core.model.delta_operations import OPTIMIZE, REORG

pytestmark = pytest.mark.spark


def _policy(uri: pathlib.Path, size: str) -> str:
    # the demo's own policy in tables.yaml, at the table's size
    return f"""
tables:
  events:
    uri: {uri}
    compact: {{target_size: {size}}}
    zorder: {{columns: [user_id, amount], target_size: {size}}}
    vacuum: {{retention_hours: 168}}
    checkpoint: {{interval: 10}}
    manifest: {{enabled: true}}
"""


def _delta_rs_appends(path: pathlib.Path, *, partitioned: bool) -> None:
    import deltalake

    from demo.data import event_batch

    for i in range(30):
        deltalake.write_deltalake(str(path), event_batch(300, days=3, first_id=i * 300, seed=i), mode="append",
                                  partition_by=["event_date"] if partitioned else None)


def _build(kind: str, path: pathlib.Path) -> str:
    """The table of ``kind`` at ``path``; its target file size."""
    if kind == "demo":
        from demo.table import build_demo_table

        build_demo_table(path, rows=40_000, appends=60, days=5, delete_fraction=0.1)  # the demo's defaults
        return "128KB"
    _delta_rs_appends(path, partitioned=kind == "partitioned")
    return "64KB"


@pytest.mark.parametrize("kind", ["unpartitioned", "partitioned", "demo"])
def test_one_full_run_leaves_every_check_passing_or_unreachable(spark, tables_yaml, tmp_path, kind):
    path = tmp_path / "events"
    defs = build_definitions(tables_yaml(_policy(path, _build(kind, path))))
    table = DeltaTable(str(path))
    with instance_for_test() as instance:
        before = defs.resolve_job_def("events_checks").execute_in_process(instance=instance)
        assert not next(e for e in before.get_asset_check_evaluations() if e.check_name == SMALL_FILES).passed
        first = table.latest_version()
        job = defs.resolve_job_def("events_maintenance")
        result = job.execute_in_process(instance=instance)
        assert result.success
        assert any(c.commit_info.get("operation") == OPTIMIZE for c in table.history() if c.version > first)
        checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
        assert set(checks) == set(CHECK_REMEDIES)
        failing = {name: e.metadata for name, e in checks.items() if not e.passed}
        assert not failing, failing
        skipping = checks[DATA_SKIPPING].metadata
        if "reachable" in skipping:  # passes because no run can reach its floor: it says why
            assert skipping["reachable"].value is False and skipping["unreachable_reason"].value

        version = table.latest_version()
        assert job.execute_in_process(instance=instance).success
        rewrites = [c.version for c in table.history() if c.version > version
                    and c.commit_info.get("operation") in (OPTIMIZE, REORG)]
        assert rewrites == []
