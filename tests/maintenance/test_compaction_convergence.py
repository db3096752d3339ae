"""Compaction advice settles after one compaction: ``delta-core health`` asks for ``compact``
on a table of small appends, a run with automation's selection follows the plan the advice
predicted, and afterwards the ``small_files`` check passes (or says why no run can do better) and
no compaction is advised, on an unpartitioned and a partitioned table; a run started by hand
(bin-packing every small file, as OPTIMIZE) settles it as well, with no more files than predicted.
The rows are those the writers wrote."""

from __future__ import annotations

import json

import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from tests.maintenance.conftest import deltars_rows, multiset
from tests.maintenance.test_convergence import _appends

pytestmark = pytest.mark.spark


def _health(capsys, config: str) -> dict:
    assert main(["health", "--config", config, "--table", "events", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _small_files(doc: dict) -> dict:
    return next(c for c in doc["checks"] if c["name"] == "small_files")


@pytest.mark.parametrize(("partitioned", "selection"), [(False, ["--selection", "automated"]),
                                                        (True, ["--selection", "automated"]), (True, [])],
                         ids=["unpartitioned", "partitioned", "partitioned-by-hand"])
def test_one_compaction_settles_the_small_files_check(spark, capsys, tmp_path, partitioned, selection):
    uri = str(tmp_path / "events")
    _appends(uri, appends=30, rows=300, partitioned=partitioned)
    before = multiset(deltars_rows(uri))
    config = tmp_path / "tables.yaml"
    config.write_text(f"tables:\n  events:\n    uri: {uri}\n    compact: {{target_size: 64KB, min_input_files: 5}}\n", encoding="utf-8")
    doc = _health(capsys, str(config))
    check = _small_files(doc)
    assert check["status"] != "pass" and check["operation"] == "compact"
    predicted = {f["name"]: f["value"] for f in check["figures"]}["predicted_num_files"]

    assert main(["compact", "--config", str(config), "--table", "events", "--spark-master", "local[2]",
                 *selection]) == 0
    capsys.readouterr()
    after = _health(capsys, str(config))
    check = _small_files(after)
    assert check["status"] == "pass" and (check["reachable"] or check["unreachable_reason"]), check
    assert "compact" not in {r["operation"] for r in after["recommendations"]}
    if selection:  # the run did what the advice predicted
        assert after["metrics"]["num_files"] == predicted
    else:  # bin-packing merged what automation would have, and the larger small files it leaves to wait
        assert after["metrics"]["num_files"] < predicted
    assert multiset(deltars_rows(uri)) == before
    assert DeltaTable(uri).latest_version() == 30  # appends 0-29, then one compaction commit
