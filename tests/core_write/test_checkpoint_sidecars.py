"""UUID-named V2 checkpoints with sidecars (PROTOCOL.md "V2 Spec", "Sidecar Files") and
``_last_checkpoint.v2Checkpoint``, on tables built here and on the kernel-rs sidecar fixture.

delta-rs 1.6 replays ``v2Checkpoint`` tables only as far as the add actions (its pyarrow reader
refuses the feature), so rows are proven with our reader plus pyarrow over the data files, and
with delta-kernel-rs reading through our checkpoints, the commits before them gone.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.errors import ConfigError
from delta_core.log.last_checkpoint import LastCheckpoint, decode_last_checkpoint, encode_last_checkpoint
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Protocol
from delta_core.model.partition_values import url_decode_path
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from delta_core.write.transaction import Transaction
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows

SIDECAR_FIXTURE = MODERN_DIR / "krs-v2-checkpoints-parquet-with-sidecars"


def _v2_table(table_dir: str, files: int) -> DeltaTable:
    t = create_table(table_dir, pa.schema([("id", pa.int64())]), properties={"delta.checkpointInterval": "1000"})
    txn = Transaction(t, operation="UPGRADE PROTOCOL")
    txn.add_action(Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint")))
    txn.commit()
    for i in range(files):
        append(t, pa.table({"id": [10 * i, 10 * i + 1]}))
    return t


def _rows(table_dir: str, version: int | None = None) -> list[int]:
    """Ids of the rows our snapshot's live files hold, read with pyarrow."""
    snap = DeltaTable(table_dir).snapshot(version)
    ids: list[int] = []
    for path in snap.file_paths:
        ids += pq.read_table(os.path.join(table_dir, url_decode_path(path))).column("id").to_pylist()
    return sorted(ids)


def _strip_commits(table_dir: str, upto: int) -> None:
    for v in range(upto + 1):
        os.unlink(os.path.join(table_dir, "_delta_log", f"{v:020d}.json"))


def _log(table_dir: str) -> str:
    return os.path.join(table_dir, "_delta_log")


def test_sidecar_checkpoint_layout_and_read_back(table_dir):
    t = _v2_table(table_dir, 5)
    delete_files(t, [t.snapshot().file_paths[0]])  # a tombstone goes to a sidecar too
    before = _rows(table_dir)
    kernel_before = kernel_rows(table_dir)
    res = write_checkpoint(t, sidecar_threshold=2)
    assert (res.version, res.num_add_files, res.sidecars) == (7, 4, 3)  # 4 adds + 1 remove, <= 2 each
    name = os.path.basename(res.path)
    assert name.startswith(f"{7:020d}.checkpoint.") and name.endswith(".parquet") and len(name) == 20 + 12 + 36 + 8
    assert not os.path.exists(os.path.join(_log(table_dir), f"{7:020d}.checkpoint.parquet"))
    top = pq.read_table(res.path.removeprefix("file://"))
    sidecar_rows = [s for s in top.column("sidecar").to_pylist() if s]
    assert [r for r in top.column("checkpointMetadata").to_pylist() if r] == [{"version": 7, "tags": None}]
    assert all(a is None for a in top.column("add").to_pylist())
    side_dir = os.path.join(_log(table_dir), "_sidecars")
    assert sorted(s["path"] for s in sidecar_rows) == sorted(os.listdir(side_dir))
    adds, removes = [], []
    for s in sidecar_rows:
        f = os.path.join(side_dir, s["path"])
        assert s["sizeInBytes"] == os.path.getsize(f)
        part = pq.read_table(f)
        assert part.column_names == ["add", "remove"] and part.num_rows <= 2
        adds += [a["path"] for a in part.column("add").to_pylist() if a]
        removes += [r["path"] for r in part.column("remove").to_pylist() if r]
    assert sorted(adds) == sorted(t.snapshot().file_paths) and len(removes) == 1
    assert res.size == top.num_rows + len(adds) + len(removes)
    _strip_commits(table_dir, 7)
    snap = DeltaTable(table_dir).snapshot()
    assert snap.log_segment.checkpoint_files[0].name == name
    assert _rows(table_dir) == before == [10, 11, 20, 21, 30, 31, 40, 41]
    assert snap.tombstones.num_rows == 1
    assert kernel_rows(table_dir) == kernel_before
    import deltalake  # delta-rs replays the log from our checkpoint (its reader refuses the feature)

    dl = deltalake.DeltaTable(table_dir)
    assert dl.version() == 7
    assert sorted(pa.table(dl.get_add_actions(flatten=False)).column("path").to_pylist()) == sorted(snap.file_paths)


def test_last_checkpoint_has_v2_checkpoint_field_and_readers_do_not_need_it(table_dir):
    t = _v2_table(table_dir, 3)
    kernel_before = kernel_rows(table_dir)
    res = write_checkpoint(t, sidecar_threshold=1)
    raw = open(os.path.join(_log(table_dir), "_last_checkpoint"), "rb").read()
    last = decode_last_checkpoint(raw)  # the checksum covers the new field
    v2 = last.v2_checkpoint
    assert v2 is not None and v2["path"] == os.path.basename(res.path)
    top = os.path.join(_log(table_dir), v2["path"])
    assert v2["sizeInBytes"] == os.path.getsize(top)
    assert v2["modificationTime"] == int(os.path.getmtime(top) * 1000)
    kinds = [next(iter(a)) for a in v2["nonFileActions"]]
    assert kinds == ["protocol", "metaData", "checkpointMetadata"]
    assert v2["nonFileActions"][0]["protocol"]["readerFeatures"] == ["v2Checkpoint"]
    assert {s["path"] for s in v2["sidecarFiles"]} == set(os.listdir(os.path.join(_log(table_dir), "_sidecars")))
    assert (last.size_in_bytes, last.num_of_add_files, last.parts) == (res.size_in_bytes, 3, None)
    expected = _rows(table_dir)
    # A reader must not need the field: without it (or with it wrong) the snapshot is the same.
    plain = LastCheckpoint(version=last.version, size=last.size, size_in_bytes=last.size_in_bytes)
    open(os.path.join(_log(table_dir), "_last_checkpoint"), "wb").write(encode_last_checkpoint(plain))
    _strip_commits(table_dir, res.version)
    assert _rows(table_dir) == expected == [0, 1, 10, 11, 20, 21]
    assert kernel_rows(table_dir) == kernel_before


def test_below_threshold_and_non_v2_tables_get_one_classic_file(table_dir, tmp_path):
    t = _v2_table(table_dir, 2)
    kernel_before = kernel_rows(table_dir)
    res = write_checkpoint(t, sidecar_threshold=2)  # 2 file actions: not above the threshold
    assert res.sidecars == 0 and res.path.endswith(f"{3:020d}.checkpoint.parquet")
    assert not os.path.exists(os.path.join(_log(table_dir), "_sidecars"))
    assert decode_last_checkpoint(open(os.path.join(_log(table_dir), "_last_checkpoint"), "rb").read()).v2_checkpoint is None
    _strip_commits(table_dir, res.version)
    assert kernel_rows(table_dir) == kernel_before
    plain_dir = str(tmp_path / "v1")
    p = create_table(plain_dir, pa.schema([("id", pa.int64())]))
    for i in range(3):
        append(p, pa.table({"id": [i]}))
    res = write_checkpoint(p, sidecar_threshold=1)  # V1 tables never get sidecars
    assert res.sidecars == 0 and res.path.endswith(f"{3:020d}.checkpoint.parquet")


def test_bad_threshold_is_refused_before_writing(table_dir):
    t = _v2_table(table_dir, 2)
    before = listing(table_dir)
    with pytest.raises(ConfigError, match="sidecar threshold .* must be at least 1, got 0"):
        write_checkpoint(t, sidecar_threshold=0)
    assert listing(table_dir) == before


def test_cli_sidecar_threshold(table_dir, capsys):
    _v2_table(table_dir, 3)
    kernel_before = kernel_rows(table_dir)
    before = listing(table_dir)
    assert main(["checkpoint", table_dir, "--json", "--sidecar-threshold", "0"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "usage"
    assert listing(table_dir) == before
    assert main(["checkpoint", table_dir, "--json", "--force", "--sidecar-threshold", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sidecars"] == 2 and ".checkpoint.parquet" not in out["path"]
    assert len(os.listdir(os.path.join(_log(table_dir), "_sidecars"))) == 2
    _strip_commits(table_dir, out["checkpoint_version"])
    assert kernel_rows(table_dir) == kernel_before


def test_sidecar_fixture_rewritten_by_us(tmp_path):
    """Our sidecar checkpoint of the kernel-rs fixture (101 files, 1233 rows) reads the same."""
    table_dir = str(tmp_path / "t")
    shutil.copytree(SIDECAR_FIXTURE, table_dir)
    t = DeltaTable(table_dir)
    snap = t.snapshot()
    assert (snap.version, snap.num_files) == (6, 101)
    ids = _rows(table_dir)
    assert len(ids) == 1233
    kernel_before = kernel_rows(table_dir)
    assert kernel_before.num_rows == 1233
    theirs = set(os.listdir(os.path.join(_log(table_dir), "_sidecars")))
    for name in os.listdir(_log(table_dir)):  # only our checkpoint may serve version 6
        if ".checkpoint." in name:
            os.unlink(os.path.join(_log(table_dir), name))
    res = write_checkpoint(t, sidecar_threshold=40)
    assert res.sidecars == 3 and res.num_add_files == 101
    ours = set(os.listdir(os.path.join(_log(table_dir), "_sidecars"))) - theirs
    assert len(ours) == 3 and all(n.startswith(f"{6:020d}.checkpoint.") for n in ours)
    _strip_commits(table_dir, 6)
    again = DeltaTable(table_dir).snapshot()
    assert again.log_segment.checkpoint_files[0].name == os.path.basename(res.path)
    assert sorted(again.file_paths) == sorted(snap.file_paths)
    assert _rows(table_dir) == ids
    assert kernel_rows(table_dir) == kernel_before
