"""``delta-core set-properties``: turning on in-commit timestamps on a table with history records
the enablement version and timestamp (PROTOCOL.md "In-Commit Timestamps", writer rules 4-5);
bad properties are refused with exit 2 and nothing written."""

from __future__ import annotations

import json
import os

import deltalake
import pyarrow as pa

from delta_core.cli.main import main
from delta_core.log.history import ICT_ENABLEMENT_TIMESTAMP, ICT_ENABLEMENT_VERSION, read_commit_info
from delta_core.log.table import DeltaTable
from delta_core.model.clock import iso_time
from tests.core_write.conftest import listing


def _delta_rs_table(root: str) -> None:
    for ids in ([1, 2], [3]):
        deltalake.write_deltalake(root, pa.table({"id": ids}), mode="append")


def test_set_properties_turns_on_ict_with_enablement_info(tmp_path, capsys):
    root = str(tmp_path / "t")
    _delta_rs_table(root)
    assert main(["set-properties", root, "delta.enableInCommitTimestamps=true", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 2 and "inCommitTimestamp" in out["writer_features"]
    ict = read_commit_info(DeltaTable(root).storage, 2)["inCommitTimestamp"]
    assert out["configuration"][ICT_ENABLEMENT_VERSION] == "2"
    assert out["configuration"][ICT_ENABLEMENT_TIMESTAMP] == str(ict)
    previous = os.path.getmtime(os.path.join(root, "_delta_log", f"{1:020d}.json"))
    assert ict > int(previous * 1000)
    assert main(["history", root, "--json"]) == 0
    history = json.loads(capsys.readouterr().out)
    assert history[0]["version"] == 2 and history[0]["timestamp"] == iso_time(ict)
    assert deltalake.DeltaTable(root).to_pyarrow_table().num_rows == 3


def test_set_properties_refuses_managed_and_malformed_properties(tmp_path, capsys):
    root = str(tmp_path / "t")
    _delta_rs_table(root)
    before = listing(root)
    for bad, kind in (([f"{ICT_ENABLEMENT_VERSION}=1"], "config"), (["no-equals-sign"], "usage"),
                      (["delta.enableInCommitTimestamps=maybe"], "config")):
        assert main(["set-properties", root, *bad, "--json"]) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["kind"] == kind and error["message"]
    assert listing(root) == before
