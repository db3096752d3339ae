"""Jobs run on the in-process executor by default, and on the multiprocess executor when run
config chooses it (issue 14): each step then runs in a process of its own."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from dagster import DagsterEventType, execute_job, instance_for_test, reconstructable

from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from tests.dagster.conftest import write_yaml
from tests.dagster.multiprocess_jobs import all_tables_maintenance

TWO_TABLES = """
tables:
  left:
    uri: ROOT/left
    compact: false
    vacuum: false
    checkpoint: {interval: 1}
  right:
    uri: ROOT/right
    compact: false
    vacuum: false
    checkpoint: {interval: 1}
"""


@pytest.fixture()
def two_tables(tmp_path, monkeypatch):
    for name in ("left", "right"):
        create_table(str(tmp_path / name), pa.schema([("id", pa.int64())]))
        append(DeltaTable(str(tmp_path / name)), pa.table({"id": [1, 2, 3]}))
    config = write_yaml(tmp_path / "tables.yaml", TWO_TABLES.replace("ROOT", str(tmp_path)))
    monkeypatch.setenv("DELTA_MAINTENANCE_TABLES", str(config))
    return tmp_path


def _step_pids(result) -> dict[str, int]:
    return {e.step_key: e.pid for e in result.all_events if e.event_type == DagsterEventType.STEP_SUCCESS}


def test_multiprocess_executor_chosen_in_run_config(two_tables):
    with instance_for_test() as instance:
        result = execute_job(reconstructable(all_tables_maintenance), instance=instance,
                             run_config={"execution": {"config": {"multiprocess": {"max_concurrent": 2}}}})
        assert result.success
        pids = _step_pids(result)
    # each table's health checks run after its maintenance (assets.health_checks)
    assert set(pids) == {"left__checkpoint", "right__checkpoint", "left_health_checks", "right_health_checks"}
    assert os.getpid() not in pids.values() and len(set(pids.values())) == 4  # one process per step
    assert all(DeltaTable(str(two_tables / t)).last_checkpoint_version() == 1 for t in ("left", "right"))


def test_in_process_executor_by_default(two_tables):
    with instance_for_test() as instance:
        result = execute_job(reconstructable(all_tables_maintenance), instance=instance)
        assert result.success
        pids = _step_pids(result)
    # execute_job launches the run in a child process; without run config its steps share it.
    assert len(pids) == 4 and len(set(pids.values())) == 1
