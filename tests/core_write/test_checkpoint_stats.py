"""Statistics of checkpoint rows are read on first use (issue 19): a snapshot loads a Parquet
checkpoint without ``add.stats``; ``files``, ``num_records`` and ``file_stats`` read them then,
matched to the rows replay kept. Checked against the stats our writer put in the commits."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib

import pyarrow as pa
import pytest

from delta_core.errors import CorruptLogError
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.date32())])


def _data(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "day": [dt.date(2024, 1, 1 + i % 3) for i in ids]}, schema=SCHEMA)


def _logged_stats(table_dir: str) -> dict[str, str]:
    """``add.stats`` by path, as the commits logged them."""
    out = {}
    log_dir = pathlib.Path(table_dir, "_delta_log")
    for f in sorted(log_dir.glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                out[action["add"]["path"]] = action["add"]["stats"]
    return out


def _checkpointed(table_dir: str) -> DeltaTable:
    t = create_table(table_dir, SCHEMA, partition_columns=["day"], properties={"delta.checkpointInterval": "1000"})
    for i in range(6):
        append(t, _data([3 * i, 3 * i + 1, 3 * i + 2]))
    write_checkpoint(t)
    return t


@pytest.mark.parametrize("remove_some", [False, True])
def test_stats_read_later_match_the_logged_ones(table_dir: str, remove_some: bool) -> None:
    t = _checkpointed(table_dir)
    if remove_some:  # replay drops checkpoint rows: the stats must follow the kept ones
        paths = sorted(t.snapshot().file_paths)
        delete_files(t, [paths[0], paths[3]])
    append(t, _data([100, 101]))
    snap = t.snapshot()
    logged = _logged_stats(table_dir)
    files = snap.files
    assert files.schema.names == [f.name for f in files.schema]  # no internal column leaks
    assert "checkpoint_row" not in files.column_names
    got = dict(zip(files["path"].to_pylist(), files["stats"].to_pylist()))
    assert got == {p: logged[p] for p in snap.file_paths}
    want_records = sum(json.loads(logged[p])["numRecords"] for p in snap.file_paths)
    assert snap.num_records == want_records
    assert files["num_records"].to_pylist() == [json.loads(s)["numRecords"] for s in files["stats"].to_pylist()]
    assert snap.file_stats()["num_records"].to_pylist() == files["num_records"].to_pylist()


def test_record_count_alone_needs_no_full_stats_copy(table_dir: str) -> None:
    t = _checkpointed(table_dir)
    snap = t.snapshot()
    logged = _logged_stats(table_dir)
    assert snap.num_records == sum(json.loads(s)["numRecords"] for s in logged.values())
    cols = snap.file_columns("path", "num_records")
    assert cols.column_names == ["path", "num_records"]
    assert dict(zip(cols["path"].to_pylist(), cols["num_records"].to_pylist())) == {
        p: json.loads(s)["numRecords"] for p, s in logged.items()}


def test_a_checkpoint_gone_after_load_fails_typed_when_stats_are_asked(table_dir: str) -> None:
    t = _checkpointed(table_dir)
    snap = t.snapshot()
    checkpoint = next(pathlib.Path(table_dir, "_delta_log").glob("*.checkpoint.parquet"))
    os.unlink(checkpoint)
    # what was loaded still answers: paths, sizes, partition values
    assert snap.num_files == len(_logged_stats(table_dir)) > 0
    assert len(snap.file_columns("path", "size", "partition_values")) == snap.num_files
    with pytest.raises(CorruptLogError, match="missing"):
        snap.files  # noqa: B018  (the property reads the checkpoint)


def test_a_rewritten_checkpoint_is_refused_rather_than_misread(table_dir: str) -> None:
    t = _checkpointed(table_dir)
    snap = t.snapshot()
    delete_files(t, [snap.file_paths[0]])
    checkpoint = next(pathlib.Path(table_dir, "_delta_log").glob("*.checkpoint.parquet"))
    newer = write_checkpoint(t)
    newer_file = pathlib.Path(table_dir, "_delta_log", f"{newer.version:020d}.checkpoint.parquet")
    os.replace(newer_file, checkpoint)  # the loaded checkpoint now holds other rows
    with pytest.raises(CorruptLogError, match="reload the table"):
        snap.files  # noqa: B018
