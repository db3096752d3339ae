"""Discovered tables as partitions (``fleet: {discovered_as: partitions}``): the definitions do not
grow with the tables, the discovery sensor adds and removes partitions, and a partition keeps what
a table's own assets do: one run maintains one table with its root's policy, eight health checks
per table, automation per partition (crons, windows, cool-downs, failing checks, the fleet
budget), on a real Dagster instance over real tables written by our writer in tmp dirs."""

from __future__ import annotations

import datetime
import pathlib

import pyarrow as pa
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    build_sensor_context,
    evaluate_automation_conditions,
    instance_for_test,
)

from assets.discovered import DISCOVERED_TABLE_KEY, discovered_asset_key, discovered_check_keys, partition_tags
from definitions import build_definitions
from delta_core.config.generated_names import DISCOVERED_PARTITIONS
from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from resources.config import MaintenanceConfig
from sensors.discovery import DISCOVERY_SENSOR
from tests.dagster.conftest import write_yaml

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
COMPACT, VACUUM = discovered_asset_key("compact"), discovered_asset_key("vacuum")
DAY = datetime.datetime(2026, 3, 4, tzinfo=datetime.UTC)


def make_table(path: pathlib.Path, *, appends: int = 1) -> DeltaTable:
    table = create_table(str(path), SCHEMA)
    for i in range(appends):
        append(table, pa.table({"id": [i], "day": ["2024-01-01"]}))
    return table


def yaml_text(*, hot: str = "", cold: str = "", fleet: str = "") -> str:
    return f"""\
fleet: {{discovered_as: partitions{fleet}}}
discover:
  - root: lake/hot
    defaults:
      compact: {{target_size: 64KiB{hot}}}
      vacuum: {{retention_hours: 200}}
      advisor: {{mode: auto, cooldown_minutes: 60, windows: ["22:00-06:00"]}}
  - root: lake/cold
    defaults:
      compact: {{target_size: 64KiB{cold}}}
      advisor: {{mode: schedule}}
"""


@pytest.fixture()
def lake(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "lake"
    for i in range(3):
        make_table(root / "hot" / f"h{i}", appends=12)  # 12 small files: small_files fails
        make_table(root / "cold" / f"c{i}")
    return root


@pytest.fixture()
def instance():
    with instance_for_test() as inst:
        yield inst


def load(lake: pathlib.Path, text: str) -> MaintenanceConfig:
    from resources.config import load_config

    return load_config(write_yaml(lake.parent / "tables.yaml", text))


def discover(defs: Definitions, instance: DagsterInstance) -> None:
    """One tick of the discovery sensor, its partition requests applied as the daemon does."""
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    top = defs.get_repository_def().get_top_level_resources()
    with build_sensor_context(instance=instance, definitions=defs,
                              resources={k: top[k] for k in sensor.required_resource_keys}) as context:
        result = sensor.evaluate_tick(context)
    for request in result.dynamic_partitions_requests or ():
        if hasattr(request, "partition_keys") and type(request).__name__.startswith("Add"):
            instance.add_dynamic_partitions(DISCOVERED_PARTITIONS, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(DISCOVERED_PARTITIONS, key)


def requested(defs: Definitions, instance: DagsterInstance, at: datetime.datetime, cursor=None):
    result = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=at, cursor=cursor)
    return ({(key.path[-1], p) for key in (COMPACT, VACUUM) for p in result.get_requested_partitions(key)},
            result.cursor)


def run_checks(defs: Definitions, instance: DagsterInstance, table: str) -> None:
    job = defs.resolve_job_def("discovered_checks")
    assert job.execute_in_process(instance=instance, tags=partition_tags(table)).success


def test_the_definitions_do_not_grow_with_the_tables(tmp_path: pathlib.Path, lake: pathlib.Path) -> None:
    small = build_definitions(load(lake, yaml_text()))
    for i in range(3, 40):
        make_table(lake / "cold" / f"c{i}")
    big = build_definitions(load(lake, yaml_text()))
    for defs in (small, big):
        graph = defs.resolve_asset_graph()
        assert {k for k in graph.get_all_asset_keys()} == {DISCOVERED_TABLE_KEY, COMPACT, VACUUM,
                                                            discovered_asset_key("checkpoint"),
                                                            AssetKey(["fleet", "report"])}
        assert set(graph.asset_check_keys) == set(discovered_check_keys())
    assert {j.name for j in small.resolve_all_job_defs()} == {j.name for j in big.resolve_all_job_defs()}
    assert len(list(small.resolve_all_job_defs())) == len(list(big.resolve_all_job_defs()))


def test_the_discovery_sensor_adds_and_removes_partitions(lake: pathlib.Path, instance: DagsterInstance) -> None:
    defs = build_definitions(load(lake, yaml_text()))
    discover(defs, instance)
    assert sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == ["c0", "c1", "c2", "h0", "h1", "h2"]
    make_table(lake / "cold" / "c9")  # a new table, no reload: the next tick adds it
    (lake / "hot" / "h2" / "_delta_log").rename(lake / "hot" / "h2" / "old_log")  # h2 is no table any more
    discover(defs, instance)
    assert sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == ["c0", "c1", "c2", "c9", "h0", "h1"]
