"""Tables delta-rs 1.6.6 creates with deletion vectors on: their protocol lists ``variantType`` (a
reader and a writer feature) though no column is a variant. Every command works on them.

The tables are written and changed by delta-rs (``write_deltalake``, ``DeltaTable.delete``, which
in 1.6.6 rewrites files rather than writing vectors); deletion vectors are then added as Delta
Spark's DELETE leaves them (``tests.dv_files``). After every command delta-rs (``QueryBuilder``,
which applies the vectors) and delta-kernel-rs (``polars_deltalake``) read the rows they read
before, and delta-rs keeps writing to the table.
"""

from __future__ import annotations

import json
from typing import Any

import deltalake
import pytest

from delta_core.cli.main import main
from delta_core.health.checks import evaluate_checks
from delta_core.health.policy import HealthPolicy
from delta_core.log.table import DeltaTable
from delta_core.maintenance.restore import restore
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.purge import purge
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.maintenance.spark.zorder import zorder
from tests.dv_files import commit_deletion_vector
from tests.maintenance.conftest import batch
from tests.maintenance.test_analyze import strip_stats
from tests.variant_rows import deltars_rows, kernel_rows

FEATURES = ["appendOnly", "deletionVectors", "invariants", "variantType"]


def make_table(uri: str) -> DeltaTable:
    """Four delta-rs appends in two partitions, a delta-rs DELETE, then two deletion vectors."""
    for i in range(4):
        deltalake.write_deltalake(uri, batch(i * 40, 40), partition_by=["region"], mode="append",
                                  configuration={"delta.enableDeletionVectors": "true"} if i == 0 else None)
    deltalake.DeltaTable(uri).delete("id % 7 = 0")
    table = DeltaTable(uri)
    for path in sorted(a.path for a in table.snapshot().add_actions())[:2]:
        commit_deletion_vector(table, path, [0, 2, 5, 7, 9, 11, 13])
    protocol = table.snapshot().protocol
    assert sorted(protocol.writer_features or ()) == FEATURES
    assert sorted(protocol.reader_features or ()) == ["deletionVectors", "variantType"]
    assert "variant" not in table.snapshot().metadata.schema_string
    return table


def rows(uri: str) -> dict[str, Any]:
    return {"deltars": deltars_rows(uri), "kernel": kernel_rows(uri)}


def assert_deltars_keeps_writing(uri: str, before: dict[str, Any]) -> None:
    deltalake.write_deltalake(uri, batch(1000, 3), mode="append")
    after = deltars_rows(uri)
    assert not before["deltars"] - after and sum(after.values()) == sum(before["deltars"].values()) + 3


def test_log_commands_and_health(tmp_path, capsys):
    uri = str(tmp_path / "t")
    make_table(uri)
    before = rows(uri)

    def run(command: str, *argv: str) -> tuple[int, Any]:
        status = main([command, uri, *argv, "--json"])
        return status, json.loads(capsys.readouterr().out)

    assert run("describe")[1]["table_features"] == FEATURES
    assert run("history")[0] == 0
    checks = {c.name: c for c in evaluate_checks(DeltaTable(uri), policy=HealthPolicy()).checks}
    assert checks["protocol_supported"].passed
    assert checks["deleted_rows"].operation == "purge"
    status, out = run("checkpoint", "--force")
    assert status == 0 and out["checkpoint_version"] == DeltaTable(uri).latest_version()
    assert run("compact-log", "--min-commits", "2")[0] == 0
    assert run("cleanup-log")[0] == 0
    assert run("vacuum", "--dry-run")[0] == 0
    status, out = run("manifest")  # Hive readers cannot apply deletion vectors: refused, as for Spark tables
    assert status == 2 and "deletion vector" in out["error"]["message"]
    assert rows(uri) == before
    assert_deltars_keeps_writing(uri, before)


@pytest.mark.spark
def test_rewrites_restore_and_vacuum(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri)
    first = rows(uri)

    compacted = compact(table, spark, max_deleted_rows_ratio=0.01)
    assert compacted.num_removed_files > 0 and rows(uri) == first
    deltalake.DeltaTable(uri).delete("id = 41")  # delta-rs deletes again, after our rewrite
    commit_deletion_vector(table, sorted(a.path for a in table.snapshot().add_actions())[0], [1])
    second = rows(uri)
    assert sum(second["deltars"].values()) < sum(first["deltars"].values())

    assert purge(table, spark).num_deletion_vectors_removed == 1 and rows(uri) == second
    assert zorder(table, spark, ["id", "x"]).version is not None and rows(uri) == second
    strip_stats(uri)
    assert analyze(table, spark).version is not None and rows(uri) == second
    assert restore(table, version=compacted.version).version is not None and rows(uri) == first
    vacuumed = vacuum(table, spark=spark, retention_hours=0, force=True)
    assert vacuumed.num_deleted_files > 0 and rows(uri) == first
    assert_deltars_keeps_writing(uri, first)
