"""The ``purge`` section of tables.yaml, its schedule, and the purge asset on a real table."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest
from dagster import AssetKey, build_schedule_context, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.config.records import OperationPolicy, TableConfigError
from delta_core.errors import ConfigError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.operations import PURGE
from delta_core.maintenance.options import PurgeOptions
from resources.config import load_config
from tests.dagster.conftest import write_yaml
from tests.maintenance.test_purge_plan import CONFORMANCE, drop_columns


def test_purge_section_parses_into_its_policy(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", """
tables:
  a: {uri: /a}
  b: {uri: /b, purge: true}
  c:
    uri: /c
    purge: {max_deleted_rows_ratio: 0.05, where: "region = 'eu'", cron: "0 4 * * *"}
  d: {uri: /d, purge: {enabled: false, max_deleted_rows_ratio: 0}}
"""))
    assert cfg.table("a").policies[PURGE.name] == OperationPolicy.default(PURGE) and "purge" not in cfg.table("a").operations  # off unless given
    assert cfg.table("b").policies[PURGE.name] == OperationPolicy(enabled=True, options=PurgeOptions()) and "purge" in cfg.table("b").operations
    assert cfg.table("c").policies[PURGE.name] == OperationPolicy(enabled=True, cron="0 4 * * *", options=PurgeOptions(
        where="region = 'eu'", max_deleted_rows_ratio=0.05))
    assert "purge" not in cfg.table("d").operations
    ops = cfg.table("b").operations  # purge rewrites before vacuum deletes and the checkpoint sums up
    assert ops.index("purge") < ops.index("checkpoint")


@pytest.mark.parametrize("value, words", [
    ("{max_deleted_rows_ratio: 1.5}", "1.5 is out of range: give a share from 0 to 1"),
    ("{max_deleted_rows_ratio: -0.1}", "-0.1 is out of range: give a share from 0 to 1"),
    ("{max_deleted_rows_ratio: '0.1'}", "must be a share from 0 to 1 (e.g. 0.05), got '0.1'"),
    ("{where: 'region ='}", "region"),
    ("{ratio: 0.1}", "ratio"),
])
def test_bad_purge_section_names_the_field(tmp_path, value, words):
    path = write_yaml(tmp_path / "tables.yaml", f"tables:\n  t: {{uri: /x, purge: {value}}}\n")
    with pytest.raises(TableConfigError) as err:
        load_config(path)
    assert isinstance(err.value, ConfigError) and err.value.table == "t"
    assert err.value.field is not None and err.value.field.startswith("purge")
    assert words in str(err.value)


def test_purge_where_on_a_data_column_is_rejected_by_definitions(tmp_path):
    """A purge predicate must name partition columns: checked against the table when the
    definitions load, as compact.where and zorder.where are."""
    uri = str(tmp_path / "t")
    shutil.copytree(CONFORMANCE / "rs-table_with_column_mapping", uri)
    cfg = load_config(write_yaml(tmp_path / "tables.yaml",
                                 f"tables:\n  t: {{uri: {uri}, purge: {{where: \"`Super Name` = 'x'\"}}}}\n"))
    with pytest.raises(TableConfigError) as err:
        build_definitions(cfg)
    assert (err.value.table, err.value.field) == ("t", "purge.where")
    assert "not a partition column" in str(err.value)
    ok = load_config(write_yaml(tmp_path / "ok.yaml",
                                f"tables:\n  t: {{uri: {uri}, purge: {{where: \"`Company Very Short` = 'BMS'\"}}}}\n"))
    assert build_definitions(ok) is not None


def test_purge_is_scheduled_only_with_a_cron(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", f"""
tables:
  a: {{uri: {tmp_path / 'a'}, purge: {{max_deleted_rows_ratio: 0.1, cron: "30 1 * * *"}}}}
  b: {{uri: {tmp_path / 'b'}, purge: true}}
"""))
    defs = build_definitions(cfg)
    names = {s.name for s in defs.get_repository_def().schedule_defs}
    assert "a_purge_schedule" in names and "b_purge_schedule" not in names
    schedule = defs.resolve_schedule_def("a_purge_schedule")
    assert schedule.cron_schedule == "30 1 * * *" and schedule.job_name == "a_purge"
    with instance_for_test() as instance:
        data = schedule.evaluate_tick(build_schedule_context(
            instance=instance, scheduled_execution_time=dt.datetime(2026, 1, 1, 1, 30, tzinfo=dt.UTC)))
    (request,) = data.run_requests
    config = request.run_config["ops"]["a__purge"]["config"]
    # None (the policy default) is left out; the bounded-run defaults are spelled out
    assert config == {"max_deleted_rows_ratio": 0.1, "order": "smallest", "max_batch_retries": 2}


@pytest.mark.spark
def test_purge_asset_rewrites_and_reports(tmp_path, spark):
    root = tmp_path / "t"
    shutil.copytree(CONFORMANCE / "golden-table-with-columnmapping-mode-name", root)
    drop_columns(root, top="StringType")
    read_version = DeltaTable(str(root)).latest_version()
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", f"tables:\n  t: {{uri: {root}, purge: true}}\n"))
    with instance_for_test() as instance:
        result = materialize(build_definitions(cfg).assets, selection=[AssetKey(["t", "purge"])],
                             resources=build_resources(cfg), instance=instance)
    assert result.success
    (mat,) = result.asset_materializations_for_node("t__purge")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["committed_version"] == read_version + 1
    assert meta["files_with_dropped_columns"] == 2 and meta["files_removed"] == meta["files_added"] == 2
    assert "2 with dropped columns" in meta["summary"]
    assert DeltaTable(str(root)).history(1)[0].commit_info["operation"] == "REORG"
