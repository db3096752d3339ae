"""drop-feature from the command line (``drop-feature TABLE FEATURE``), and from tables.yaml as
a Dagster one-off launched with the feature in its config: never in a full run or a schedule."""

from __future__ import annotations

import json
import shutil

from dagster import AssetKey, materialize

from definitions import build_definitions, build_resources
from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.model.table_features import writer_features
from tests.conftest import MODERN_DIR


def ict_table(tmp_path) -> str:
    uri = str(tmp_path / "t")
    shutil.copytree(MODERN_DIR / "rs-cdc_ict_table", uri)
    return uri


def test_drop_feature_from_the_command_line(tmp_path, capsys):
    uri = ict_table(tmp_path)
    assert main(["drop-feature", uri, "inCommitTimestamp", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feature"] == "inCommitTimestamp" and out["version"] == DeltaTable(uri).latest_version()
    assert "inCommitTimestamp" not in writer_features(DeltaTable(uri).snapshot().protocol)
    latest = DeltaTable(uri).latest_version()
    assert main(["drop-feature", uri, "inCommitTimestamp", "--json"]) == 2  # gone now
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "feature_not_present"
    assert main(["drop-feature", uri, "variantType", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "feature_not_droppable"
    assert DeltaTable(uri).latest_version() == latest


def test_drop_feature_in_dagster_is_a_one_off_launched_with_its_feature(tmp_path, tables_yaml):
    uri = ict_table(tmp_path)
    config = tables_yaml(f"tables:\n  events:\n    uri: {uri}\n    drop_feature: true\n")
    defs = build_definitions(config)
    repo = defs.get_repository_def()
    assert "events_drop_feature" in {j.name for j in repo.get_all_jobs()}
    assert "drop_feature" not in config.table("events").operations  # never part of a full run
    assert not any("drop_feature" in s.job_name for s in repo.schedule_defs)
    dropped = materialize(defs.assets, selection=[AssetKey(["events", "drop_feature"])],
                          resources=build_resources(config),
                          run_config={"ops": {"events__drop_feature": {"config": {"feature": "inCommitTimestamp"}}}})
    assert dropped.success
    table = DeltaTable(uri)
    assert "inCommitTimestamp" not in writer_features(table.snapshot().protocol)
    assert table.history(limit=1)[0].commit_info["operation"] == "DROP FEATURE"
