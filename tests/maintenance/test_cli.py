"""The maintenance subcommands of ``delta-core`` (in-process, real tables)."""

from __future__ import annotations

import json

import pytest

from delta_core.cli.main import main
from tests.maintenance.conftest import make_table


def run(capsys, *argv: str) -> tuple[int, dict]:
    status = main(list(argv))
    out = capsys.readouterr().out
    return status, json.loads(out)


@pytest.mark.spark
def test_compact_and_zorder(spark, capsys, table_uri):
    make_table(table_uri, appends=3)
    status, out = run(capsys, "compact", table_uri, "--json", "--spark-master", "local[2]",
                      "--where", "region = 'eu'", "--target-size", "10000000", "--min-input-files", "3")
    assert status == 0 and out["version"] == 4 and out["num_removed_files"] == 3 and out["num_added_files"] == 1
    assert out["removed_bytes"] > 0 and out["added_bytes"] > 0
    status, out = run(capsys, "compact", table_uri, "--json", "--spark-master", "local[2]", "--where", "region = 'eu'")
    assert status == 0 and out["version"] is None
    status, out = run(capsys, "zorder", table_uri, "--columns", "x,id", "--curve", "hilbert", "--json",
                      "--spark-master", "local[2]")
    assert status == 0 and out["version"] == 5 and out["columns"] == ["x", "id"] and out["curve"] == "hilbert"


def test_errors_are_json(capsys, table_uri):
    make_table(table_uri, appends=1)
    status, out = run(capsys, "compact", table_uri, "--json", "--where", "id > 3")
    assert status == 2 and out["error"]["kind"] == "config"
    status, out = run(capsys, "vacuum", table_uri, "--json", "--retention-hours", "1")
    assert status == 2 and out["error"]["kind"] == "retention_too_short"


def test_vacuum_and_manifest(capsys, table_uri):
    make_table(table_uri, appends=2)
    status, out = run(capsys, "vacuum", table_uri, "--json", "--dry-run", "--retention-hours", "0", "--force")
    assert status == 0 and out["version"] is None and out["dry_run"] is True and out["paths"] == []
    status, out = run(capsys, "vacuum", table_uri, "--json")
    assert status == 0 and out["version"] == 4 and out["num_deleted_files"] == 0
    status, out = run(capsys, "manifest", table_uri, "--json")
    assert status == 0 and out["manifests_written"] == 2 and out["mode"] == "full"
    status, out = run(capsys, "manifest", table_uri, "--incremental", "--json")
    assert status == 0 and out["mode"] == "up_to_date" and out["manifests_written"] == 0
