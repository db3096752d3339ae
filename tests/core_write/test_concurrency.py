"""Concurrent writers in real processes (spawn): every commit lands once, versions are
contiguous, commit files are whole; mixed workloads raise exactly Delta's predicted conflicts."""

from __future__ import annotations

import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import pyarrow as pa
import pytest

from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, CommitInfo, parse_actions
from delta_core.write.table_writes import append, create_table
from tests.core_write import workers

SPAWN = multiprocessing.get_context("spawn")
WRITERS = 8
COMMITS = 50


def _check_log(t: DeltaTable, expected_ids: set[int]) -> None:
    latest = t.latest_version()
    assert latest == len(expected_ids)  # version 0 is the create
    seen: list[int] = []
    for v in range(1, latest + 1):
        actions = parse_actions(t.storage.read(commit_key(v)))  # whole, parseable JSON lines
        assert isinstance(actions[0], CommitInfo)
        adds = [a for a in actions if isinstance(a, Add)]
        assert len(adds) == 1
        stats = json.loads(adds[0].stats)
        seen.append(stats["minValues"]["id"])
    assert sorted(seen) == sorted(expected_ids) and len(set(seen)) == len(seen)
    assert t.snapshot().num_records == len(expected_ids)


def _stress(uri: str, options: dict | None, writers: int, commits: int) -> list[tuple[int, int, int]]:
    t = create_table(uri, workers.SCHEMA, partition_columns=["p"], storage_options=options)
    assert t.latest_version() == 0
    with ProcessPoolExecutor(writers, mp_context=SPAWN) as pool:
        futures = [pool.submit(workers.append_many, uri, options, w, commits) for w in range(writers)]
        results = [r for f in futures for r in f.result(timeout=600)]
    versions = sorted(v for _, v, _ in results)
    assert versions == list(range(1, writers * commits + 1))  # each lands exactly once, contiguous
    _check_log(DeltaTable(uri, options), {i for i, _, _ in results})
    return results


@pytest.mark.slow
def test_eight_writers_local(table_dir):
    started = time.monotonic()
    results = _stress(table_dir, None, WRITERS, COMMITS)
    import deltalake

    dl = deltalake.DeltaTable(table_dir)
    assert dl.version() == WRITERS * COMMITS
    assert pa.table(dl.to_pyarrow_table()).num_rows == WRITERS * COMMITS
    retries = sum(a - 1 for _, _, a in results)
    print(f"local: {WRITERS}x{COMMITS} commits in {time.monotonic() - started:.1f}s, {retries} retries")


@pytest.mark.slow
@pytest.mark.s3
def test_eight_writers_s3(s3_table_uri, s3_storage_options, deltalake_s3_options):
    started = time.monotonic()
    results = _stress(s3_table_uri, s3_storage_options, WRITERS, COMMITS)
    import deltalake

    dl = deltalake.DeltaTable(s3_table_uri, storage_options=deltalake_s3_options)
    assert dl.version() == WRITERS * COMMITS
    retries = sum(a - 1 for _, _, a in results)
    print(f"s3: {WRITERS}x{COMMITS} commits in {time.monotonic() - started:.1f}s, {retries} retries")


# --- mixed workloads: two processes read the same version, then commit in a set order ------


@pytest.fixture(scope="module")
def pair_pool():
    with ProcessPoolExecutor(2, mp_context=SPAWN) as pool:
        yield pool


@pytest.fixture(scope="module")
def manager():
    with SPAWN.Manager() as m:
        yield m


def _seed(table_dir: str) -> DeltaTable:
    t = create_table(table_dir, workers.SCHEMA, partition_columns=["p"])
    append(t, workers.rows([1, 2], 0, "a"))
    append(t, workers.rows([3, 4], 0, "b"))
    return t


def _race(pool, manager, uri: str, first: tuple, second: tuple, *, ordered: bool = True) -> tuple[str, str]:
    """Both read the same snapshot; ``first`` commits before ``second`` when ``ordered``."""
    barrier = manager.Barrier(2)
    first_done = manager.Event()
    f1 = pool.submit(workers.run_op, uri, None, first[0], first[1], barrier, None, first_done)
    f2 = pool.submit(workers.run_op, uri, None, second[0], second[1], barrier,
                     first_done if ordered else None, None)
    return f1.result(timeout=120), f2.result(timeout=120)


def test_rewrite_after_delete_of_its_input(table_dir, pair_pool, manager):
    t = _seed(table_dir)
    victim = t.snapshot().file_paths[0]
    r_delete, r_rewrite = _race(pair_pool, manager, table_dir, ("delete", victim), ("rewrite", victim))
    assert r_delete == "ok:3" and r_rewrite == "concurrent_delete_read"
    assert t.latest_version() == 3


def test_rewrite_and_blind_append_both_succeed(table_dir, pair_pool, manager):
    t = _seed(table_dir)
    victim = t.snapshot().file_paths[0]
    a, b = _race(pair_pool, manager, table_dir, ("append", 10), ("rewrite", victim))
    assert a.startswith("ok:") and b.startswith("ok:")
    a, b = _race(pair_pool, manager, table_dir, ("rewrite", t.snapshot().file_paths[0]), ("append", 11))
    assert a.startswith("ok:") and b.startswith("ok:")
    snap = t.snapshot()
    assert snap.version == 6 and snap.num_records == 6


def test_two_deletes_of_the_same_file(table_dir, pair_pool, manager):
    t = _seed(table_dir)
    victim = t.snapshot().file_paths[0]
    results = sorted(_race(pair_pool, manager, table_dir, ("delete", victim), ("delete", victim), ordered=False))
    assert results == ["concurrent_delete_delete", "ok:3"]


def test_metadata_change_beats_stale_append(table_dir, pair_pool, manager):
    _seed(table_dir)
    a, b = _race(pair_pool, manager, table_dir, ("set_properties", {"delta.appendOnly": "false"}), ("append", 5))
    assert a == "ok:3" and b == "metadata_changed"


def test_same_app_id_transactions(table_dir, pair_pool, manager):
    t = _seed(table_dir)
    results = sorted(_race(pair_pool, manager, table_dir, ("append_app", ("etl", 1, 7)),
                           ("append_app", ("etl", 2, 8)), ordered=False))
    assert results == ["concurrent_transaction", "ok:3"]
    assert t.snapshot().num_records == 5
