"""Tables written by delta-rs (``deltalake``) read identically by us at every version:
appends, overwrites, deletes, partitions needing escaping, checkpoints; local and on S3."""

from __future__ import annotations

import datetime as dt
import pathlib

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")

from delta_core.log.table import DeltaTable  # noqa: E402


def _theirs(uri: str, version: int, options: dict | None = None) -> dict:
    t = deltalake.DeltaTable(uri, version=version, storage_options=options)
    actions = pa.table(t.get_add_actions(flatten=True))
    parts = [c for c in actions.column_names if c.startswith("partition.")]
    rows = actions.to_pylist()
    return {
        "version": t.version(),
        "files": {r["path"]: (r["num_records"], tuple(r[c] for c in parts)) for r in rows},
        "partition_columns": [c[len("partition."):] for c in parts],
    }


def _ours(table: DeltaTable, version: int) -> dict:
    snap = table.snapshot(version)
    typed = snap.partition_values_typed()
    cols = snap.partition_columns
    records = dict(zip(snap.files["path"].to_pylist(), snap.files["num_records"].to_pylist()))
    values = {r["path"]: tuple(r[c] for c in cols) for r in typed.to_pylist()}
    return {
        "version": snap.version,
        "files": {p: (records[p], values[p]) for p in records},
        "partition_columns": cols,
    }


def _data(start: int, n: int) -> pa.Table:
    return pa.table({
        "id": pa.array(range(start, start + n), pa.int64()),
        "region": pa.array([["eu west", "us/east", "ap%south", "plain"][i % 4] for i in range(n)]),
        "day": pa.array([dt.date(2024, 1, 1 + i % 3) for i in range(n)], pa.date32()),
        "value": pa.array([float(i) / 3 for i in range(n)]),
    })


def _write_history(uri: str, options: dict | None = None) -> int:
    """Appends, an overwrite, deletes and a checkpoint; returns the last version."""
    kw = {"storage_options": options} if options else {}
    deltalake.write_deltalake(uri, _data(0, 12), partition_by=["region", "day"], **kw)
    deltalake.write_deltalake(uri, _data(100, 8), mode="append", partition_by=["region", "day"], **kw)
    deltalake.DeltaTable(uri, storage_options=options).delete("id < 4")
    deltalake.write_deltalake(uri, _data(200, 6), mode="append", partition_by=["region", "day"], **kw)
    deltalake.DeltaTable(uri, storage_options=options).create_checkpoint()
    deltalake.write_deltalake(uri, _data(300, 10), mode="overwrite", partition_by=["region", "day"], **kw)
    deltalake.DeltaTable(uri, storage_options=options).delete("region = 'plain'")
    deltalake.write_deltalake(uri, _data(400, 5), mode="append", partition_by=["region", "day"], **kw)
    return deltalake.DeltaTable(uri, storage_options=options).version()


def test_partitioned_history_matches_delta_rs(tmp_path: pathlib.Path) -> None:
    uri = str(tmp_path / "t")
    last = _write_history(uri)
    table = DeltaTable(uri)
    assert table.latest_version() == last == 6
    assert table.last_checkpoint_version() == 3
    for v in range(last + 1):
        assert _ours(table, v) == _theirs(uri, v), f"version {v}"
    snap = table.snapshot()
    assert snap.log_segment.checkpoint_version == 3
    assert snap.num_records == sum(pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True))["num_records"]
                                   .to_pylist())
    assert snap.partition_columns == ["region", "day"]
    assert [f.name for f in snap.arrow_schema] == ["id", "region", "day", "value"]
    history = table.history()
    assert [r.version for r in history] == list(range(last, -1, -1))
    assert history[0].commit_info.get("operation") == "WRITE"


def test_unpartitioned_overwrite_and_checkpoint_at_each_step(tmp_path: pathlib.Path) -> None:
    uri = str(tmp_path / "u")
    deltalake.write_deltalake(uri, pa.table({"x": [1, 2, 3]}))
    for i in range(4):
        deltalake.write_deltalake(uri, pa.table({"x": [i] * (i + 1)}), mode="overwrite" if i % 2 else "append")
        deltalake.DeltaTable(uri).create_checkpoint()
    table = DeltaTable(uri)
    for v in range(5):
        assert _ours(table, v) == _theirs(uri, v)
    stats = table.snapshot().file_stats()
    assert set(stats.column_names) >= {"path", "num_records", "min.x", "max.x", "null_count.x"}


@pytest.mark.s3
def test_s3_table_written_by_delta_rs(s3_table_uri: str, s3_storage_options: dict,
                                      deltalake_s3_options: dict) -> None:
    last = _write_history(s3_table_uri, deltalake_s3_options)
    table = DeltaTable(s3_table_uri, s3_storage_options)
    assert table.latest_version() == last
    for v in (0, 3, last):
        assert _ours(table, v) == _theirs(s3_table_uri, v, deltalake_s3_options)
    newest = table.snapshot(2).update()
    assert newest.version == last
    assert sorted(newest.file_paths) == sorted(table.snapshot().file_paths)
    assert [v for v, _ in table.changes_since(last - 2)] == [last - 1, last]
