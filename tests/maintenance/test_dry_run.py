"""``--dry-run`` on every rewrite (issue 27): the plan without Spark and without a commit, in the
keys the run reports; on the unchanged table the run then commits exactly those numbers."""

from __future__ import annotations

import json

import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.operations import CLUSTER, COMPACT, PURGE, ZORDER
from tests.core_write.conftest import listing
from tests.dv_files import commit_deletion_vector
from tests.maintenance.conftest import make_table

pytestmark = pytest.mark.spark

PLANNED = ("num_removed_files", "removed_bytes", "num_batches", "num_deletion_vectors_removed")


def no_spark():
    raise AssertionError("a dry run must not start Spark")


def _table(uri: str, op: str) -> DeltaTable:
    if op == "cluster":
        table = make_table(uri, appends=4, partition_columns=())
        cluster_by(table, ["id"])
        return DeltaTable(uri)
    table = make_table(uri, appends=4, properties={"delta.enableDeletionVectors": "true"})
    if op == "purge":
        for path in sorted(table.snapshot().file_paths)[:3]:
            commit_deletion_vector(table, path, [0, 1])
    return DeltaTable(uri)


@pytest.mark.parametrize(("op", "options"), [
    (COMPACT, {"min_input_files": 4}), (ZORDER, {"columns": ("id",)}), (PURGE, {}), (CLUSTER, {}),
])
def test_dry_run_plans_without_spark_and_the_run_commits_the_same(spark, tmp_path, op, options):
    uri = str(tmp_path / "t")
    table = _table(uri, op.name)
    before, version = listing(uri), table.latest_version()
    dry = op.run(table, op.options_type(**options, dry_run=True), no_spark)
    assert dry.dry_run is True and dry.version is None and dry.versions == ()
    assert dry.num_removed_files > 0 and dry.removed_bytes > 0 and dry.num_batches >= 1
    assert listing(uri) == before and DeltaTable(uri).latest_version() == version
    done = op.run(DeltaTable(uri), op.options_type(**options), lambda: spark)
    assert done.dry_run is False and done.version is not None
    assert {k: getattr(done, k) for k in PLANNED} == {k: getattr(dry, k) for k in PLANNED}


def test_cli_dry_run_prints_the_runs_keys(tmp_path, capsys):
    uri = str(tmp_path / "t")
    _table(uri, "compact")
    before = listing(uri)
    assert main(["compact", uri, "--min-input-files", "4", "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] is True and out["version"] is None
    assert out["num_removed_files"] == 8 and out["num_batches"] == 1 and out["removed_bytes"] > 0
    assert listing(uri) == before


def test_cluster_dry_run_refuses_columns_the_table_lacks(tmp_path):
    from delta_core.errors import ConfigError

    uri = str(tmp_path / "t")
    table = _table(uri, "cluster")
    before = listing(uri)
    with pytest.raises(ConfigError, match="cannot plan on clustering columns the table does not have yet"):
        CLUSTER.run(table, CLUSTER.options_type(columns=("x",), dry_run=True), no_spark)
    assert listing(uri) == before
