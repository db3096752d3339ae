"""The bounded-run options (``RewriteBounds``) reach every surface generated from the options
records: the command line's flags and ``--json``, tables.yaml sections (read by the command line
and by the code location) and a Dagster launch's run config, whose metadata shows what was left."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, materialize

from definitions import build_definitions, build_resources
from delta_core.cli.main import main
from delta_core.errors import ConfigError
from delta_core.log.table import DeltaTable
from tests.dagster.conftest import write_yaml
from tests.maintenance.conftest import deltars_rows, make_table, multiset

pytestmark = pytest.mark.spark


def test_compact_with_max_files_from_the_command_line(spark, tmp_path, capsys):
    uri = str(tmp_path / "t")
    make_table(uri, appends=3)  # eu and us: 3 files each, one bin each
    before = multiset(deltars_rows(uri))
    assert main(["compact", uri, "--min-input-files", "2", "--max-files", "3", "--batch-size", "1KB",
                 "--max-batch-retries", "1",
                 "--order", "benefit", "--quiet-minutes", "0", "--max-duration", "10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["num_removed_files"], out["groups_left"], out["files_left"], out["stopped_by"]) == (3, 1, 3, "max_files")
    assert (out["batches_retried"], out["abandoned_reasons"], out["files_skipped_busy"]) == (0, [], 0)
    assert main(["compact", uri, "--max-files", "0", "--json"]) == 2  # below the minimum: refused
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"
    policy = write_yaml(tmp_path / "tables.yaml", f"tables:\n  events:\n    uri: {uri}\n    compact:\n"
                                                   "      max_files: 3\n      max_duration: 5 minutes\n"
                                                   "      min_input_files: 2\n")
    assert main(["compact", "--config", str(policy), "--table", "events", "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert (second["num_removed_files"], second["groups_left"], second["stopped_by"]) == (3, 0, None)
    assert DeltaTable(uri).snapshot().num_files == 2 and multiset(deltars_rows(uri)) == before


def test_bounded_options_from_tables_yaml_and_a_dagster_launch(spark, tmp_path, tables_yaml):
    uri = str(tmp_path / "t")
    make_table(uri, appends=3)
    config = tables_yaml(f"tables:\n  events:\n    uri: {uri}\n    compact: {{max_files: 2, order: benefit, "
                         "min_input_files: 2}\n")
    options = config.table("events").policies["compact"].options
    assert (options.max_files, options.order, options.max_batch_retries) == (2, "benefit", 2)
    assert config.table("events").policies["compact"].options.quiet_minutes is None
    defs = build_definitions(config)
    # the launch's config wins over the file's: one partition's bin is rewritten, the other left
    result = materialize(defs.assets, selection=[AssetKey(["events", "compact"])], resources=build_resources(config),
                         run_config={"ops": {"events__compact": {"config": {
                             "max_files": 3, "quiet_minutes": 0.0, "batch_size": 1024, "max_batch_retries": 1}}}})
    assert result.success
    (mat,) = result.asset_materializations_for_node("events__compact")
    metadata = {k: v.value for k, v in mat.metadata.items()}
    assert (metadata["files_removed"], metadata["files_left"], metadata["stopped_by"]) == (3, 3, "max_files")
    assert (metadata["batches_committed"], metadata["batches_retried"], metadata["abandoned_reasons"]) == (1, 0, "")
    with pytest.raises(ConfigError, match="compact.max_files': 0 is out of range"):
        tables_yaml(f"tables:\n  events:\n    uri: {uri}\n    compact: {{max_files: 0}}\n")


def test_the_zorder_asset_runs_within_the_policys_bounds(spark, tmp_path, tables_yaml):
    # The Z-order asset hands the policy's bounds and the launch's to the rewrite.
    uri = str(tmp_path / "t")
    make_table(uri, appends=3)  # eu and us: 3 files each
    before = multiset(deltars_rows(uri))
    config = tables_yaml(f"tables:\n  events:\n    uri: {uri}\n"
                         "    zorder: {columns: [id, x], batch_size: 1KB, max_batch_retries: 1}\n")
    defs = build_definitions(config)
    key = AssetKey(["events", "zorder"])
    # one batch per partition, as batch_size asks; the launch's max_files leaves the second partition
    capped = materialize(defs.assets, selection=[key], resources=build_resources(config),
                         run_config={"ops": {"events__zorder": {"config": {"max_files": 3}}}})
    (mat,) = capped.asset_materializations_for_node("events__zorder")
    metadata = {k: v.value for k, v in mat.metadata.items()}
    assert (metadata["files_removed"], metadata["files_left"], metadata["stopped_by"]) == (3, 3, "max_files")
    result = materialize(defs.assets, selection=[key], resources=build_resources(config))
    (mat,) = result.asset_materializations_for_node("events__zorder")
    metadata = {k: v.value for k, v in mat.metadata.items()}
    # Z-order is incremental: the partition the capped run Z-ordered is left alone, the other done
    assert (metadata["batches_committed"], metadata["files_removed"], metadata["files_left"]) == (1, 3, 0)
    assert multiset(deltars_rows(uri)) == before
