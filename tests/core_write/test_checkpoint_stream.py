"""Checkpoints streamed a slice at a time into an atomically published file
(``CheckpointRows``, ``Storage.open_atomic_output``; PROTOCOL.md "Checkpoints": a reader never
sees a half-written checkpoint)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.storage import open_storage
from delta_core.write.checkpoint_write import CheckpointRows, build_checkpoint_table, write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from tests.core_write.conftest import appended_table, listing

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.string())])
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _data(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "name": [f"n{i}" for i in ids], "day": [f"d{i % 3}" for i in ids]},
                    schema=SCHEMA)


def _build(table_dir: str, n: int, **props: str) -> DeltaTable:
    return appended_table(table_dir, _data, n, **props)


def test_rows_built_in_slices_equal_the_whole_checkpoint(table_dir):
    # Struct stats and typed partition values are built per slice too: the slices, concatenated,
    # must be the rows of the whole table, with one schema.
    t = _build(table_dir, 5, **{"delta.checkpoint.writeStatsAsStruct": "true"})
    delete_files(t, t.snapshot().file_paths[:2])
    snap = t.snapshot()
    whole, n_head, n_add = build_checkpoint_table(snap)
    rows = CheckpointRows(snap)
    slices = list(rows.body(slice_rows=3))
    assert (rows.num_adds, rows.num_removes, rows.head.num_rows) == (n_add, 2, n_head) == (8, 2, 2)
    assert [s.num_rows for s in slices] == [3, 3, 2, 2]  # the adds in threes, then the removes
    assert all(s.schema == rows.schema for s in slices)
    assert pa.concat_tables([rows.head, *slices]).equals(whole)
    add = whole.column("add").combine_chunks()
    assert "stats_parsed" in add.type.names and "partitionValues_parsed" in add.type.names


def test_checkpoint_file_is_the_streamed_rows(table_dir):
    t = _build(table_dir, 4)
    res = write_checkpoint(t)
    written = pq.read_table(os.path.join(table_dir, "_delta_log", f"{res.version:020d}.checkpoint.parquet"))
    whole, _, _ = build_checkpoint_table(t.snapshot())
    assert written.num_rows == res.size == whole.num_rows
    assert written.column("add").to_pylist() == whole.column("add").to_pylist()
    assert res.size_in_bytes == os.path.getsize(res.path.removeprefix("file://"))
    assert not [n for n in os.listdir(os.path.join(table_dir, "_delta_log")) if n.endswith(".tmp")]


def test_failed_rewrite_keeps_the_old_checkpoint_and_leaves_no_temp_file(table_dir):
    # A real failure half-way through the file: the child may not write files past 4 KiB
    # (RLIMIT_FSIZE, EFBIG). The checkpoint it rewrites stays as it was, byte for byte.
    t = _build(table_dir, 3)
    write_checkpoint(t)
    before = listing(table_dir)
    assert max(size for name, size in before if "checkpoint.parquet" in name) > 2 * 4096
    script = textwrap.dedent(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        from delta_core.log.table import DeltaTable
        from delta_core.write.checkpoint_write import write_checkpoint
        try:
            write_checkpoint(DeltaTable({table_dir!r}))
        except OSError as exc:
            print("failed", exc.errno)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": REPO})
    assert out.stdout.startswith("failed"), out.stdout + out.stderr
    assert listing(table_dir) == before
    assert DeltaTable(table_dir).snapshot().num_files == t.snapshot().num_files


def test_local_atomic_output_appears_only_when_committed(tmp_path):
    storage = open_storage(str(tmp_path))
    storage.write("_delta_log/a.parquet", b"old")
    out = storage.open_atomic_output("_delta_log/a.parquet")
    out.write(b"new content")
    out.close()  # a writer closing its stream (also done on failure) publishes nothing
    assert storage.read("_delta_log/a.parquet") == b"old"  # readers still see the old file
    out.commit()
    assert storage.read("_delta_log/a.parquet") == b"new content"
    assert sorted(os.listdir(tmp_path / "_delta_log")) == ["a.parquet"]


def test_local_atomic_output_discarded_leaves_nothing(tmp_path):
    storage = open_storage(str(tmp_path))
    storage.write("_delta_log/a.parquet", b"old")
    before = listing(str(tmp_path))
    out = storage.open_atomic_output("_delta_log/a.parquet")
    out.write(b"half")
    out.discard()
    assert out.write(b"late flush") == len(b"late flush")  # a destructor's flush: dropped
    out.close()
    with pytest.raises(ValueError, match="discarded"):
        out.commit()
    assert listing(str(tmp_path)) == before
    assert storage.read("_delta_log/a.parquet") == b"old"


@pytest.mark.parametrize("mb", [1, 12])  # one PUT, and a multipart upload (s3fs parts of 5 MiB)
def test_s3_atomic_output_is_visible_only_when_complete(s3_table_uri, s3_storage_options, mb):
    import s3fs

    storage = open_storage(s3_table_uri, storage_options=s3_storage_options)
    data = os.urandom(mb * 1024 * 1024)
    out = storage.open_atomic_output("_delta_log/00000000000000000001.checkpoint.parquet")
    out.write(data)
    out.close()
    assert not storage.exists("_delta_log/00000000000000000001.checkpoint.parquet")
    out.commit()
    assert storage.read("_delta_log/00000000000000000001.checkpoint.parquet") == data

    # A discarded upload leaves no object and no pending multipart upload behind.
    out = storage.open_atomic_output("_delta_log/00000000000000000002.checkpoint.parquet")
    out.write(data)
    out.close()
    out.discard()
    assert not storage.exists("_delta_log/00000000000000000002.checkpoint.parquet")
    fs = s3fs.S3FileSystem(**s3_storage_options)
    bucket = s3_table_uri.removeprefix("s3://").split("/", 1)[0]
    uploads = fs.call_s3("list_multipart_uploads", Bucket=bucket)
    assert not uploads.get("Uploads")


def test_checkpoint_on_s3_reads_back(s3_table_uri, s3_storage_options):
    t = create_table(s3_table_uri, SCHEMA, partition_columns=["day"], storage_options=s3_storage_options)
    append(t, _data([1, 2, 3]))
    res = write_checkpoint(t)
    assert res.size_in_bytes == t.storage.head(f"_delta_log/{res.version:020d}.checkpoint.parquet").size
    fresh = DeltaTable(s3_table_uri, storage_options=s3_storage_options).snapshot()
    assert sorted(fresh.file_paths) == sorted(t.snapshot().file_paths)


def test_checkpoint_over_a_checkpoint_streams_its_stats_in_file_order(table_dir):
    # The second checkpoint reads the first one's stats a batch at a time (they are never loaded
    # whole) while later commits removed some of its files and added others: each written add
    # keeps its own file's stats, the deleted files have none, and the slices do not line up
    # with the stats batches.
    t = _build(table_dir, 6)
    first = write_checkpoint(t)
    stats_of = {a["path"]: a["stats"] for a in pq.read_table(first.path.removeprefix("file://")).column("add").to_pylist()
                if a is not None}
    delete_files(t, t.snapshot().file_paths[1:4])
    append(t, _data([100, 101]))
    snap = t.snapshot()
    assert snap.replay_state.stats_deferred
    new = {p: st for p, st in zip(snap.files["path"].to_pylist(), snap.files["stats"].to_pylist()) if p not in stats_of}
    assert len(new) == 2
    stats_of.update(new)
    rows = CheckpointRows(DeltaTable(table_dir).snapshot())
    adds = [a for s in rows.body(slice_rows=2) for a in s.column("add").to_pylist() if a is not None]
    assert len(adds) == snap.num_files == 6 * 2 - 3 + 2  # six appends of two files, three deleted, one append
    assert all(a["stats"] == stats_of[a["path"]] and '"numRecords"' in a["stats"] for a in adds)
