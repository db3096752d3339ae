"""restore and analyze, built only in the registry's shape (issue 27): from the command line,
tables.yaml and Dagster with no code of their own beyond their options record, their run and
their registry entry."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, materialize

from definitions import build_definitions, build_resources
from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from tests.maintenance.conftest import deltars_rows, make_table, multiset
from tests.maintenance.test_analyze import strip_stats


def test_restore_from_the_command_line(tmp_path, capsys):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3)
    at_one = multiset(deltars_rows(uri, version=1))
    assert main(["restore", uri, "--version", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 4 and DeltaTable(uri).latest_version() == 4
    assert multiset(deltars_rows(uri)) == at_one
    assert table.history(limit=1)[0].commit_info["operation"] == "RESTORE"
    assert main(["restore", uri, "--json"]) == 2  # neither --version nor --timestamp
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "config"


@pytest.mark.spark
def test_restore_and_analyze_from_tables_yaml_in_dagster(spark, tmp_path, tables_yaml):
    uri = str(tmp_path / "t")
    make_table(uri, appends=3)
    at_one = multiset(deltars_rows(uri, version=1))
    strip_stats(uri)
    config = tables_yaml(f"tables:\n  events:\n    uri: {uri}\n    restore: true\n    analyze: true\n")
    defs = build_definitions(config)
    jobs = {j.name for j in defs.get_repository_def().get_all_jobs()}
    assert {"events_restore", "events_analyze"} <= jobs
    assert "restore" not in config.table("events").operations  # never part of a full run
    analyzed = materialize(defs.assets, selection=[AssetKey(["events", "analyze"])],
                           resources=build_resources(config))
    assert analyzed.success
    assert DeltaTable(uri).history(limit=1)[0].commit_info["operation"] == "COMPUTE STATS"
    assert all(json.loads(a.stats)["numRecords"] > 0 for a in DeltaTable(uri).snapshot().add_actions())
    restored = materialize(defs.assets, selection=[AssetKey(["events", "restore"])], resources=build_resources(config),
                           run_config={"ops": {"events__restore": {"config": {"version": 1}}}})
    assert restored.success
    assert multiset(deltars_rows(uri)) == at_one
