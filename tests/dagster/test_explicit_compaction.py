"""A compaction a person starts bin-packs as OPTIMIZE does: any two small files of a partition merge,
however different their sizes; one automation starts keeps its waiting rules (a merged file waits
until about as much new data has come), and the health advice, which predicts automation's run,
asks for none. One real table, a large fragment (a merged output) and a small new file: merged by
``delta-core compact``, the library's ``compact()`` and the compact asset launched by hand on a
real Dagster instance; left alone by the same asset run by automation or a schedule."""

from __future__ import annotations

import json
import pathlib

import pytest
from dagster import AssetKey, instance_for_test, materialize

from assets.automation import TRIGGER_TAG
from definitions import build_definitions, build_resources
from delta_core import compact
from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.options import BIN_PACK, EXPLICIT_MIN_INPUT_FILES
from delta_core.model.actions import Add, Remove
from delta_core.write.table_writes import append, create_table
from resources.config import load_config
from tests.dagster.conftest import write_yaml
from tests.dagster.test_unreachable_checks import COMPACT, checked_and_requested
from tests.maintenance.conftest import SCHEMA, batch, deltars_rows, multiset

TARGET = 4 * 1024 * 1024  # fragments: under 512 KiB; small: under 3 MiB


def _table(uri: str) -> tuple[str, str]:
    """A large fragment (30,000 rows, ~320 KB) and a small new file (20 rows, ~2 KB): paths."""
    create_table(uri, SCHEMA, partition_columns=(), properties={"delta.targetFileSize": str(TARGET)})
    table = DeltaTable(uri)
    append(table, batch(0, 30_000))
    append(table, batch(30_000, 20))
    large, small = sorted(DeltaTable(uri).snapshot().file_columns("path", "size").to_pylist(),
                          key=lambda f: -f["size"])
    assert large["size"] < TARGET / 8 and large["size"] > 100 * small["size"]
    return large["path"], small["path"]


def _merged(uri: str, before) -> set[str]:
    """The files the last commit removed, after checking it kept every row in one file."""
    table = DeltaTable(uri)
    actions = table.commit_actions(table.latest_version())
    assert multiset(deltars_rows(uri)) == before and sum(isinstance(a, Add) for a in actions) == 1
    return {a.path for a in actions if isinstance(a, Remove)}


def _yaml(tmp_path: pathlib.Path, uri: str) -> pathlib.Path:
    return write_yaml(tmp_path / "tables.yaml", f"tables:\n  events: {{uri: {uri}, compact: true}}\n")


def test_the_plans_differ_only_in_their_selection(tmp_path):
    uri = str(tmp_path / "t")
    large, small = _table(uri)
    snapshot = DeltaTable(uri).snapshot()
    # automation's rule waits, even for two files: the large one is a merged output, the small one little new data
    assert plan_compaction(snapshot, min_input_files=EXPLICIT_MIN_INPUT_FILES).is_empty
    plan = plan_compaction(snapshot, min_input_files=EXPLICIT_MIN_INPUT_FILES, selection=BIN_PACK)
    assert [sorted(b.paths) for b in plan.bins] == [sorted([large, small])] and plan.selection == BIN_PACK


@pytest.mark.spark
def test_delta_core_compact_merges_them(spark, capsys, tmp_path):
    uri = str(tmp_path / "t")
    files = set(_table(uri))
    before = multiset(deltars_rows(uri))
    assert main(["compact", uri, "--json", "--spark-master", "local[2]"]) == 0
    assert json.loads(capsys.readouterr().out)["num_removed_files"] == 2
    assert _merged(uri, before) == files
    # asked for automation's selection by hand, the same table waits
    uri = str(tmp_path / "u")
    _table(uri)
    assert main(["compact", uri, "--json", "--selection", "automated", "--dry-run"]) == 0
    assert json.loads(capsys.readouterr().out)["num_removed_files"] == 0


@pytest.mark.spark
def test_the_library_compact_merges_them(spark, tmp_path):
    uri = str(tmp_path / "t")
    files = set(_table(uri))
    before = multiset(deltars_rows(uri))
    metrics = compact(DeltaTable(uri), spark)
    assert (metrics.num_removed_files, metrics.num_added_files) == (2, 1)
    assert _merged(uri, before) == files


@pytest.mark.spark
@pytest.mark.parametrize(("tags", "merges"), [
    ({}, True),  # launched by hand: a job, the UI, materialize
    ({TRIGGER_TAG: "automation"}, False),
    ({"dagster/schedule_name": "events_compact_schedule"}, False),
])
def test_the_compact_asset_merges_them_only_when_started_by_hand(spark, tmp_path, tags, merges):
    uri = str(tmp_path / "t")
    files = set(_table(uri))
    before = multiset(deltars_rows(uri))
    cfg = load_config(_yaml(tmp_path, uri))
    with instance_for_test() as instance:
        result = materialize(build_definitions(cfg).assets, selection=[AssetKey(["events", "compact"])],
                             resources=build_resources(cfg), instance=instance, tags=tags)
    assert result.success
    if merges:
        assert _merged(uri, before) == files
    else:
        assert DeltaTable(uri).latest_version() == 2 and multiset(deltars_rows(uri)) == before


def test_the_health_advice_asks_automation_for_no_run(tmp_path):
    uri = str(tmp_path / "t")
    _table(uri)
    defs = build_definitions(load_config(write_yaml(tmp_path / "tables.yaml", f"""
tables:
  events:
    uri: {uri}
    compact: true
    advisor: {{mode: auto}}
""")))
    small, requested = checked_and_requested(defs, "small_files")
    assert small.passed and COMPACT not in requested
    assert small.metadata["reachable"].value is False
