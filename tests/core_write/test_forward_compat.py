"""Issue 9 §3, forward compatibility: logs written by a newer writer read as the protocol says.

Real delta-rs tables whose commit lines are edited by hand the way a future writer could write
them: an unknown key beside a known action (``{"add": {...}, "someFutureKey": {...}}``), a line
holding only an unknown action, unknown fields inside ``protocol``/``metaData``/``add``. They are
described (API and CLI), checkpointed, re-propertied and rewritten; what we copy keeps the unknown
fields the protocol lets it keep, and lines that are not one action are still refused.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.errors import CorruptLogError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import commit_rewrite, set_properties
from tests.conftest import CONFORMANCE_DIR
from tests.core_write.conftest import listing

REPO = pathlib.Path(__file__).resolve().parents[2]
FUTURE = {"someFutureKey": {"since": "v9", "n": [1, 2]}}


def _edit_lines(path: pathlib.Path, edit) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = []
    for obj in lines:
        out.extend(edit(obj))
    path.write_text("".join(json.dumps(o, separators=(",", ":")) + "\n" for o in out))


def _future_writer(obj: dict) -> list[dict]:
    """What a newer writer could put in a commit: unknown fields and keys everywhere."""
    (key, body), = obj.items()
    if key == "protocol":
        body = {**body, "minWriterVersion": 1, "futureProtocolField": "p1"}
    elif key == "metaData":
        body = {**body, "futureMetaField": {"level": 3}}
    elif key == "add":
        body = {**body, "tags": {"origin": "future"}, "futureAddField": 7}
    return [{key: body, **FUTURE}] + ([{"futureAction": {"k": 1}}] if key == "commitInfo" else [])


@pytest.fixture()
def future_table(tmp_path) -> str:
    import deltalake

    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, pa.table({"id": [1, 2], "part": ["a", "b"]}), partition_by=["part"])
    deltalake.write_deltalake(root, pa.table({"id": [3], "part": ["a"]}), mode="append")
    for v in (0, 1):
        _edit_lines(pathlib.Path(root, "_delta_log", f"{v:020d}.json"), _future_writer)
    return root


def _deltars_ids(root: str) -> list[int]:
    import deltalake

    return sorted(pa.table(deltalake.DeltaTable(root).to_pyarrow_table()).column("id").to_pylist())


def test_describe_reads_unknown_keys_and_unknown_actions(future_table, capsys):
    import deltalake

    snap = DeltaTable(future_table).snapshot()
    want = sorted(a["path"] for a in pa.table(deltalake.DeltaTable(future_table).get_add_actions()).to_pylist())
    assert snap.version == 1 and sorted(snap.file_paths) == want and snap.num_records == 3
    assert snap.metadata.extra == {"futureMetaField": {"level": 3}}
    assert snap.protocol.extra == {"futureProtocolField": "p1"}
    assert main(["describe", future_table, "--json", "--files"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["files"] == want and record["num_records"] == 3
    proc = subprocess.run([sys.executable, "-m", "delta_core", "describe", future_table],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "Files:       3" in proc.stdout


def test_a_line_holding_only_an_unknown_action_is_ignored(tmp_path):
    """Already worked before the issue: pinned."""
    import deltalake

    root = str(tmp_path / "t")
    deltalake.write_deltalake(root, pa.table({"id": [1]}))
    log = pathlib.Path(root, "_delta_log", f"{0:020d}.json")
    log.write_text(log.read_text().rstrip("\n") + "\n" + '{"futureAction":{"anything":[1,{"x":null}]}}\n')
    snap = DeltaTable(root).snapshot()
    assert snap.num_files == 1 and snap.num_records == 1


def test_json_v2_checkpoint_with_unknown_keys(tmp_path):
    src = CONFORMANCE_DIR / "golden-v2-checkpoint-json"
    root = tmp_path / "t"
    shutil.copytree(src, root)
    cp = next((root / "_delta_log").glob("*.checkpoint.*.json"))
    _edit_lines(cp, lambda obj: [{**obj, **FUTURE}, {"futureAction": 1}])
    want = json.loads((src / "expected.json").read_text())["latest"]
    snap = DeltaTable(str(root)).snapshot()
    assert snap.log_segment.checkpoint_version == 2
    assert sorted(snap.file_paths) == want["files"] and snap.protocol.min_writer_version == 7


@pytest.mark.parametrize("line", [
    '["add"]',                                                                  # not an object
    '{"add":{"path":"x.parquet","size":1},"remove":{"path":"y.parquet"}}',     # two known actions
    '{"someFutureKey":1,"txn":{"appId":"a","version":1},"add":{"path":"x"}}',  # two known, not first
])
def test_lines_that_are_not_one_action_are_still_refused(future_table, line, capsys):
    log = pathlib.Path(future_table, "_delta_log", f"{1:020d}.json")
    log.write_text(log.read_text().rstrip("\n") + "\n" + line + "\n")
    before = listing(future_table)
    with pytest.raises(CorruptLogError) as err:
        DeltaTable(future_table).snapshot()
    assert err.value.version == 1 and "not a single action object" in str(err.value)
    assert main(["checkpoint", future_table, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "corrupt_log"
    assert listing(future_table) == before


def test_checkpoint_keeps_unknown_protocol_and_metadata_fields(future_table, tmp_path):
    t = DeltaTable(future_table)
    res = write_checkpoint(t)
    cp = pq.read_table(os.path.join(future_table, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    assert [p for p in cp.column("protocol").to_pylist() if p][0]["futureProtocolField"] == "p1"
    assert [m for m in cp.column("metaData").to_pylist() if m][0]["futureMetaField"] == {"level": 3}
    copy = str(tmp_path / "copy")
    shutil.copytree(future_table, copy)
    for v in range(res.version + 1):
        os.unlink(os.path.join(copy, "_delta_log", f"{v:020d}.json"))
    snap = DeltaTable(copy).snapshot()  # from the checkpoint alone
    assert snap.metadata.extra == {"futureMetaField": {"level": 3}}
    assert snap.protocol.extra == {"futureProtocolField": "p1"}
    assert _deltars_ids(copy) == [1, 2, 3]


def test_set_properties_keeps_unknown_fields_of_metadata_and_protocol(future_table):
    t = DeltaTable(future_table)
    version = set_properties(t, {"delta.appendOnly": "true"}).version
    written = [json.loads(x) for x in pathlib.Path(future_table, "_delta_log", f"{version:020d}.json")
               .read_text().splitlines()]
    meta = next(o["metaData"] for o in written if "metaData" in o)
    proto = next(o["protocol"] for o in written if "protocol" in o)
    assert meta["futureMetaField"] == {"level": 3} and meta["configuration"]["delta.appendOnly"] == "true"
    assert proto["minWriterVersion"] == 2 and proto["futureProtocolField"] == "p1"
    assert _deltars_ids(future_table) == [1, 2, 3]


def test_rewrite_removes_keep_what_the_remove_action_may_carry(future_table):
    t = DeltaTable(future_table)
    snap = t.snapshot()
    inputs = [a for a in snap.add_actions() if a.partition_values == {"part": "a"}]
    assert len(inputs) == 2 and all(a.tags == {"origin": "future"} for a in inputs)
    data = pa.table({"id": [1, 3]})
    out = write_data_file(t.storage, data, metadata=snap.metadata, partition_values={"part": "a"},
                          data_change=False)
    version = commit_rewrite(t, removed=inputs, added=[out], read_snapshot=snap).version
    written = [json.loads(x) for x in pathlib.Path(future_table, "_delta_log", f"{version:020d}.json")
               .read_text().splitlines()]
    removes = {o["remove"]["path"]: o["remove"] for o in written if "remove" in o}
    assert set(removes) == {a.path for a in inputs}
    for a in inputs:
        r = removes[a.path]
        # PROTOCOL.md "Add File and Remove File": remove has its own fields; the add's
        # unknown ones (futureAddField) are not remove fields and are not carried over.
        assert r["dataChange"] is False and r["extendedFileMetadata"] is True
        assert (r["partitionValues"], r["size"], r["tags"], r["stats"]) == (
            a.partition_values, a.size, {"origin": "future"}, a.stats)
        assert "futureAddField" not in r
    assert _deltars_ids(future_table) == [1, 2, 3]
    assert DeltaTable(future_table).snapshot().metadata.extra == {"futureMetaField": {"level": 3}}


@pytest.mark.spark
def test_compaction_runs_on_a_future_writers_log(future_table, spark):
    table = DeltaTable(future_table)
    metrics = compact(table, spark, min_input_files=2)
    assert metrics.num_removed_files == 2 and metrics.num_added_files == 1  # partition "a"
    written = [json.loads(x) for x in pathlib.Path(future_table, "_delta_log", f"{metrics.version:020d}.json")
               .read_text().splitlines()]
    removes = [o["remove"] for o in written if "remove" in o]
    assert len(removes) == 2 and all(r["tags"] == {"origin": "future"} for r in removes)
    assert all("futureAddField" not in r and r["dataChange"] is False for r in removes)
    snap = table.snapshot()
    assert snap.metadata.extra == {"futureMetaField": {"level": 3}} and snap.num_files == 2
    assert _deltars_ids(future_table) == [1, 2, 3]


def test_unknown_fields_parquet_cannot_hold_are_left_out_of_checkpoints(future_table, caplog):
    def edit(obj: dict) -> list[dict]:
        if "metaData" in obj:
            obj["metaData"].update(futureEmpty={}, futureDeep={"a": [{}]}, futureMixed=[1, {"x": 1}])
        return [obj]

    _edit_lines(pathlib.Path(future_table, "_delta_log", f"{0:020d}.json"), edit)
    assert DeltaTable(future_table).snapshot().metadata.extra["futureEmpty"] == {}
    with caplog.at_level("WARNING", logger="delta_core.write.checkpoint_write"):
        res = write_checkpoint(DeltaTable(future_table))
    assert sorted(r.args[0] for r in caplog.records) == ["futureDeep", "futureEmpty", "futureMixed"]
    cp = pq.read_table(os.path.join(future_table, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    meta = [m for m in cp.column("metaData").to_pylist() if m][0]
    assert meta["futureMetaField"] == {"level": 3} and "futureEmpty" not in meta
