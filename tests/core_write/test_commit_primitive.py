"""``put_if_absent`` is the only way commits are created: atomic across processes on local
disk (hard link) and S3 (conditional PUT on the moto server), locked in memory, refused on a
store without an atomic primitive unless the user opts in."""

from __future__ import annotations

import multiprocessing
import os
import uuid
from concurrent.futures import ProcessPoolExecutor

import pyarrow as pa
import pytest

from delta_core.errors import AtomicWriteUnsupportedError, FileAlreadyExistsError
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.storage import open_storage
from delta_core.write.table_writes import append, create_table
from tests.core_write import workers

SPAWN = multiprocessing.get_context("spawn")


KEYS = 30


def _put(uri: str, options: dict | None, writer: int, barrier) -> list[int]:
    """Try to create commits 0..KEYS-1; return the versions this writer created."""
    store = open_storage(uri, options)
    barrier.wait(timeout=60)
    won = []
    for v in range(KEYS):
        try:
            store.put_if_absent(commit_key(v), f"writer-{writer}\n".encode() * 1000)
            won.append(v)
        except FileAlreadyExistsError:
            pass
    return won


def _race(uri: str, options: dict | None, n: int = 6) -> None:
    with SPAWN.Manager() as m, ProcessPoolExecutor(n, mp_context=SPAWN) as pool:
        barrier = m.Barrier(n)
        futures = [pool.submit(_put, uri, options, i, barrier) for i in range(n)]
        wins = {i: f.result(timeout=120) for i, f in enumerate(futures)}
    store = open_storage(uri, options)
    for v in range(KEYS):
        winners = [i for i, won in wins.items() if v in won]
        assert len(winners) == 1, f"version {v} created by {winners}"
        assert store.read(commit_key(v)) == f"writer-{winners[0]}\n".encode() * 1000  # whole, not torn


def test_local_put_if_absent_across_processes(tmp_path):
    _race(str(tmp_path / "t"), None)
    leftovers = [n for n in os.listdir(tmp_path / "t" / "_delta_log") if n.endswith(".tmp")]
    assert leftovers == []  # temp names of the losers are gone


@pytest.mark.s3
def test_s3_conditional_put_across_processes(s3_table_uri, s3_storage_options):
    _race(s3_table_uri, s3_storage_options)


@pytest.mark.s3
def test_s3_commit_refuses_existing_object_written_elsewhere(s3_table_uri, s3_storage_options):
    import s3fs

    fs = s3fs.S3FileSystem(**s3_storage_options)
    fs.pipe_file(s3_table_uri.removeprefix("s3://") + "/" + commit_key(0), b"someone else\n")
    store = open_storage(s3_table_uri, s3_storage_options)
    with pytest.raises(FileAlreadyExistsError):
        store.put_if_absent(commit_key(0), b"mine\n")
    assert store.read(commit_key(0)) == b"someone else\n"


@pytest.mark.s3
def test_s3_table_roundtrip_with_deltars(s3_table_uri, s3_storage_options, deltalake_s3_options):
    import deltalake

    t = create_table(s3_table_uri, workers.SCHEMA, partition_columns=["p"], storage_options=s3_storage_options)
    append(t, workers.rows([1, 2], 0))
    append(t, workers.rows([3], 0, "z"))
    from delta_core.write.checkpoint_write import write_checkpoint

    write_checkpoint(t)
    dl = deltalake.DeltaTable(s3_table_uri, storage_options=deltalake_s3_options)
    assert dl.version() == 2
    assert sorted(pa.table(dl.to_pyarrow_table()).column("id").to_pylist()) == [1, 2, 3]
    assert DeltaTable(s3_table_uri, s3_storage_options).snapshot().log_segment.checkpoint_version == 2


def test_memory_store_commits(tmp_path):
    uri = f"memory://t-{uuid.uuid4().hex}"
    t = create_table(uri, workers.SCHEMA)
    snap = t.snapshot()
    append(t, workers.rows([1], 0))
    r = append(t, workers.rows([2], 0), read_snapshot=snap)
    assert r.version == 2 and r.attempts == 2
    assert t.snapshot().num_records == 2


def test_store_without_atomic_create_cannot_commit(tmp_path):
    uri, options = "dir://table", {"path": str(tmp_path), "target_protocol": "file"}
    with pytest.raises(AtomicWriteUnsupportedError):
        create_table(uri, workers.SCHEMA, storage_options=options)
    assert not any(tmp_path.rglob("*.json"))
    store = open_storage(uri, options, allow_unsafe_commits=True)
    t = create_table(uri, workers.SCHEMA, storage=store)
    append(t, workers.rows([1], 0))
    assert t.snapshot().version == 1
