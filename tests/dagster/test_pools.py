"""Concurrency pools (issue 29): every Spark step runs in the pool of tables.yaml's ``spark.pool``
(default ``delta_spark``), the other steps in none; a run in an instance whose ``dagster.yaml``
limits pools to one slot runs, its Spark step claiming a slot of the pool."""

from __future__ import annotations

import pathlib

import pytest
from dagster import AssetKey, AssetsDefinition, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.config.records import DEFAULT_SPARK_POOL
from delta_core.maintenance.operations import operation


def _yaml(uri: pathlib.Path, spark: str = "") -> str:
    return f"""
{spark}
tables:
  events:
    uri: {uri}
    compact: {{target_size: 64KB}}
    zorder: {{columns: [user_id]}}
    vacuum: {{retention_hours: 168}}
    purge: true
"""


def _pools(defs) -> dict[str, str | None]:
    return {a.key.path[-1]: a.op.pool for a in defs.assets
            if isinstance(a, AssetsDefinition) and a.key.path[0] == "events"}


def test_spark_steps_run_in_the_configured_pool_others_in_none(make_events_table, tables_yaml):
    uri = pathlib.Path(make_events_table().uri)
    pools = _pools(build_definitions(tables_yaml(_yaml(uri, "spark: {pool: spark_cluster}"))))
    assert {"compact", "zorder", "purge", "vacuum", "checkpoint"} <= set(pools)
    for name, pool in pools.items():
        assert pool == ("spark_cluster" if operation(name).uses_spark else None), name


def test_the_default_pool_is_delta_spark(make_events_table, tables_yaml):
    pools = _pools(build_definitions(tables_yaml(_yaml(pathlib.Path(make_events_table().uri)))))
    assert pools["compact"] == pools["zorder"] == DEFAULT_SPARK_POOL == "delta_spark"


@pytest.mark.spark
def test_a_run_in_an_instance_with_a_pool_limit_is_accepted(make_events_table, tables_yaml, spark):
    table = make_events_table(rows=1200)
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    files_before = table.snapshot().num_files
    with instance_for_test(overrides={"concurrency": {"pools": {"default_limit": 1}}}) as instance:
        result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", "compact"])],
                             resources=build_resources(config), instance=instance)
        assert result.success
        assert table.snapshot().num_files < files_before
        # The step claimed a slot of the pool: its limit came from the instance's default, and
        # the slot is free again once the step is done.
        info = instance.event_log_storage.get_concurrency_info(DEFAULT_SPARK_POOL)
        assert info.slot_count == 1 and info.active_slot_count == 0 and info.pending_step_count == 0
