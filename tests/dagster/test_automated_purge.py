"""A purge that automation starts rewrites only the files whose own deleted-row share is over the
policy's ratio (0.05, as OPTIMIZE's maxDeletedRowsRatio); one started by hand keeps REORG ...
APPLY (PURGE)'s meaning and rewrites every file with a deleted row. Real tables with deletion
vectors, the purge asset materialized on a real Dagster instance; rows read back by delta-rs.
Compaction follows the same split: a run by hand bin-packs any two small files, one by automation
takes automated selection with the policy's ``min_input_files`` (5)."""

from __future__ import annotations

import pytest
from dagster import AssetKey, instance_for_test, materialize

from assets.automation import TRIGGER_TAG
from definitions import build_definitions, build_resources
from delta_core.config.automated_runs import run_options
from delta_core.log.table import DeltaTable
from delta_core.maintenance.options import AUTOMATED, DEFAULT_MIN_INPUT_FILES, CompactOptions, PurgeOptions
from delta_core.model.actions import Remove
from resources.config import load_config
from tests.dagster.conftest import write_yaml
from tests.dv_files import commit_deletion_vector, rows_applying_dvs
from tests.maintenance.conftest import make_table


def _table(uri: str) -> tuple[str, str]:
    """Two files of 40 rows: ``light`` with 1 row deleted (2.5%), ``heavy`` with 20 (50%)."""
    table = make_table(uri, appends=2, partition_columns=(), properties={"delta.enableDeletionVectors": "true"})
    light, heavy = table.snapshot().file_paths
    commit_deletion_vector(table, light, [0])
    commit_deletion_vector(table, heavy, list(range(20)))
    return light, heavy


def _purge(tmp_path, name: str, tags: dict[str, str]) -> tuple[set[str], str, str]:
    uri = str(tmp_path / name)
    light, heavy = _table(uri)
    before = sorted(rows_applying_dvs(uri).to_pylist(), key=lambda r: r["id"])
    cfg = load_config(write_yaml(tmp_path / f"{name}.yaml", f"tables:\n  t: {{uri: {uri}, purge: true}}\n"))
    with instance_for_test() as instance:
        result = materialize(build_definitions(cfg).assets, selection=[AssetKey(["t", "purge"])],
                             resources=build_resources(cfg), instance=instance, tags=tags)
    assert result.success
    table = DeltaTable(uri)
    removed = {a.path for a in table.commit_actions(table.latest_version()) if isinstance(a, Remove)}
    assert sorted(rows_applying_dvs(uri).to_pylist(), key=lambda r: r["id"]) == before
    return removed, light, heavy


@pytest.mark.spark
def test_automation_purges_only_the_files_over_the_ratio(spark, tmp_path):
    removed, _, heavy = _purge(tmp_path, "auto", {TRIGGER_TAG: "automation"})
    assert removed == {heavy}


@pytest.mark.spark
def test_a_purge_started_by_hand_rewrites_every_file_with_a_deleted_row(spark, tmp_path):
    removed, light, heavy = _purge(tmp_path, "hand", {})
    assert removed == {light, heavy}


def test_run_options_fill_the_ratio_for_automation_only(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", """
tables:
  a: {uri: /a, purge: true, advisor: {purge_deleted_rows_ratio: 0.1}}
  b: {uri: /b, purge: {max_deleted_rows_ratio: 0.0}}
"""))
    a, b = cfg.table("a"), cfg.table("b")
    given = a.options(PurgeOptions)
    assert given.max_deleted_rows_ratio is None
    for trigger in ("schedule", "automation", "advisor", "sensor"):
        assert run_options(a, given, trigger=trigger).max_deleted_rows_ratio == 0.1
    for trigger in ("cli", "job"):
        assert run_options(a, given, trigger=trigger) == given  # REORG: every file with a deleted row
    # a ratio written in the purge section holds for every run, and health predicts with it
    assert run_options(b, b.options(PurgeOptions), trigger="automation").max_deleted_rows_ratio == 0.0
    assert (a.advisor.health.purge_file_ratio, b.advisor.health.purge_file_ratio) == (0.1, 0.0)


def test_run_options_fill_the_selection_and_min_input_files_for_automation_only(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", """
tables:
  a: {uri: /a}
  b: {uri: /b, compact: {min_input_files: 3}}
"""))
    a, b = cfg.table("a"), cfg.table("b")
    given = a.options(CompactOptions)
    assert given.min_input_files is None and given.selection is None  # by hand: bin-pack any two, as OPTIMIZE
    for trigger in ("schedule", "automation", "advisor", "sensor"):
        automated = run_options(a, given, trigger=trigger)
        assert (automated.selection, automated.min_input_files) == (AUTOMATED, DEFAULT_MIN_INPUT_FILES)
    for trigger in ("cli", "job"):
        assert run_options(a, given, trigger=trigger) == given
    # a value written in the compact section holds for every run, and health predicts with it
    automated = run_options(b, b.options(CompactOptions), trigger="automation")
    assert (automated.selection, automated.min_input_files) == (AUTOMATED, 3)
    assert (a.advisor.health.min_input_files, b.advisor.health.min_input_files) == (5, 3)
