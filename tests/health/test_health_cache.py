"""The health cache (``delta_core.health.cache``): a version's figures kept in files give the same
checks and report as a replay, on tables written by our writer, by delta-rs and on the fixtures
in tests/data; so does a checkpoint's stats coverage reused by a later version; a new version
misses; an unusable entry is recomputed; a new process reads what another stored."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import pathlib
import zlib
from typing import Any

import pyarrow as pa
import pytest

from delta_core.errors import DeltaError
from delta_core.health.cache import (
    CACHE_ENV,
    CacheKey,
    CheckpointCoverage,
    CheckpointKey,
    HealthCache,
    open_health_cache,
)
from delta_core.health.checks import TableChecks, evaluate_checks
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.log_segment import build_log_segment
from delta_core.log.table import DeltaTable
from delta_core.maintenance.stats_coverage import required_stats_columns
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files, set_properties
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR

NOW = 1_800_000_000_000  # every evaluation's clock, so tombstone expiry compares like for like
POLICY = HealthPolicy(skip_ratio_floor=0.9, compact_min_small_files=1)
FIXTURES = sorted([*CONFORMANCE_DIR.iterdir(), *(p for p in MODERN_DIR.iterdir() if p.is_dir())])


def _table(root: str | pathlib.Path) -> DeltaTable:
    return DeltaTable(str(root), clock=lambda: NOW)


def _outcome(root: str | pathlib.Path, cache: HealthCache | None, *,
             columns: list[str] | None = None) -> tuple[Any, ...]:
    """What an evaluation gives (the checks, the report but its duration), or the error it raised."""
    try:
        result = evaluate_checks(_table(root), policy=POLICY, columns=columns, cache=cache)
    except DeltaError as exc:
        return ("refused", type(exc).__name__)
    return _comparable(result)


def _comparable(result: TableChecks) -> tuple[Any, ...]:
    report = None if result.report is None else dataclasses.replace(result.report, duration_seconds=0.0)
    return result.version, result.checks, report


def _entries(cache_dir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(cache_dir.rglob("*.json"))


def _our_table(root: str) -> DeltaTable:
    """Our writer: overlapping files on ``x`` (skip ratio under the floor: the layout estimate
    runs), a deleted file (a tombstone) and a checkpoint in the middle."""
    table = create_table(root, pa.schema([("x", pa.int64()), ("s", pa.string())]))
    for i in range(4):
        append(table, pa.table({"x": pa.array([i, 40 - i], pa.int64()), "s": [f"a{i}", f"b{i}"]}))
    write_checkpoint(table)
    delete_files(table, [table.snapshot().file_paths[0]])
    append(table, pa.table({"x": pa.array([7], pa.int64()), "s": ["c"]}))
    return table


def _cached_table(tmp_path: pathlib.Path) -> tuple[str, DeltaTable, pathlib.Path, HealthCache]:
    """``_our_table`` under ``tmp_path`` and an empty cache beside it."""
    root = str(tmp_path / "ours")
    return root, _our_table(root), tmp_path / "cache", open_health_cache(str(tmp_path / "cache"))


def test_cached_checks_equal_a_replay_on_our_writers_table(tmp_path):
    root = str(tmp_path / "ours")
    _our_table(root)
    cache = open_health_cache(str(tmp_path / "cache"))
    for columns in (None, ["x"]):
        replayed = _outcome(root, None, columns=columns)
        assert _outcome(root, cache, columns=columns) == replayed  # a miss: computed and stored
        assert _outcome(root, cache, columns=columns) == replayed  # a hit
    # One entry per policy and columns; the Z-order columns made the layout estimate run.
    assert len(_entries(tmp_path / "cache")) == 2
    assert replayed[2].metrics.predicted_skip_ratio is not None and replayed[2].metrics.num_tombstones == 1


def test_cached_checks_equal_a_replay_on_a_delta_rs_table_with_deletion_vectors(tmp_path):
    import deltalake

    root = str(tmp_path / "rs")
    for i in range(3):
        deltalake.write_deltalake(root, pa.table({"x": pa.array(range(i * 10, i * 10 + 10), pa.int64())}),
                                  mode="append", configuration={"delta.enableDeletionVectors": "true"})
    deltalake.DeltaTable(root).delete("x < 3")
    deltalake.DeltaTable(root).optimize.compact()
    cache = open_health_cache(str(tmp_path / "cache"))
    replayed = _outcome(root, None)
    assert replayed[2].metrics.last_optimize_version is not None
    assert _outcome(root, cache) == replayed
    assert _outcome(root, cache) == replayed


@pytest.mark.parametrize("fixture", FIXTURES, ids=[p.name for p in FIXTURES])
def test_cached_checks_equal_a_replay_on_the_fixture_tables(fixture, tmp_path):
    cache = open_health_cache(str(tmp_path / "cache"))
    replayed = _outcome(fixture, None)
    assert _outcome(fixture, cache) == replayed
    assert _outcome(fixture, cache) == replayed
    # Only a table health could judge left an entry (nothing is cached for a refused one).
    assert len(_entries(tmp_path / "cache")) == (0 if replayed[0] == "refused" or replayed[2] is None else 1)
    for entry in _entries(tmp_path / "cache"):  # what a later version reuses: the checkpoint's coverage
        entry.unlink()
    assert _outcome(fixture, cache) == replayed


def _coverage_entries(cache_dir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(cache_dir.rglob("checkpoint-*.bits"))


def test_a_later_version_reuses_the_checkpoints_coverage(tmp_path):
    root, table, cache_dir, cache = _cached_table(tmp_path)
    first = _outcome(root, cache)
    (bits,) = _coverage_entries(cache_dir)
    assert bits.name.startswith(f"checkpoint-{table.last_checkpoint_version():020d}-")
    append(table, pa.table({"x": pa.array([3], pa.int64()), "s": [None]}))
    later = _outcome(root, cache)
    assert later == _outcome(root, None) and later[0] == first[0] + 1
    # Mark the entry (every checkpoint row uncovered, 1,000 more records each): a version that
    # reuses it reports the mark.
    key = CheckpointKey.of(table.storage.root, table.snapshot().log_segment,
                           required_stats_columns(table.snapshot().metadata))
    found = cache.load_coverage(key)
    assert found is not None and found.covered.any() and found.records is not None
    assert len(found.records) == len(found.known) == 4  # every add row of the checkpoint
    cache.store_coverage(key, CheckpointCoverage(found.known, found.covered & False, found.records + 1000,
                                                 found.counted))
    append(table, pa.table({"x": pa.array([4], pa.int64()), "s": ["d"]}))
    marked = _outcome(root, cache)[2].metrics
    replayed = _outcome(root, None)[2].metrics
    from_checkpoint = len(table.snapshot().checkpoint_rows())
    assert marked.stats_covered_files == replayed.stats_covered_files - from_checkpoint
    assert marked.num_records == replayed.num_records + 1000 * from_checkpoint


def test_an_older_version_judges_the_rows_a_newer_one_dropped(tmp_path):
    root = str(tmp_path / "ours")
    table = _our_table(root)  # a checkpoint, then a file of it deleted
    cache = open_health_cache(str(tmp_path / "cache"))
    _outcome(root, cache)  # judges the checkpoint rows still live: one fewer than it holds
    older = table.snapshot(version=table.last_checkpoint_version())
    assert len(older.checkpoint_rows()) == len(table.snapshot().checkpoint_rows()) + 1
    policy_report = table_health(_table(root), policy=POLICY, snapshot=older, cache=cache)
    plain = table_health(_table(root), policy=POLICY, snapshot=older)
    assert dataclasses.replace(policy_report, duration_seconds=0.0) == dataclasses.replace(plain, duration_seconds=0.0)
    key = CheckpointKey.of(table.storage.root, older.log_segment, required_stats_columns(older.metadata))
    found = cache.load_coverage(key)
    assert found is not None and found.known.all() and len(found.known) == len(older.checkpoint_rows())


def test_new_stats_columns_do_not_reuse_the_coverage(tmp_path):
    root, table, cache_dir, cache = _cached_table(tmp_path)
    _outcome(root, cache)
    set_properties(table, {"delta.dataSkippingStatsColumns": "x"})  # s is no longer judged
    again = _outcome(root, cache)
    assert again == _outcome(root, None) and again[2].metrics.stats_columns == ("x",)
    assert len(_coverage_entries(cache_dir)) == 2  # another key: the same checkpoint, other columns


def test_an_unusable_coverage_entry_is_recomputed(tmp_path):
    root = str(tmp_path / "ours")
    _our_table(root)
    cache_dir = tmp_path / "cache"
    cache = open_health_cache(str(cache_dir))
    _outcome(root, cache)
    (bits,) = _coverage_entries(cache_dir)
    head = bits.read_bytes().partition(b"\n")[0]
    replayed = _outcome(root, None)
    for damage in (b"garbage", head + b"\nnot zlib", head[:10], head + b"\n" + zlib.compress(b"\x01")):
        bits.write_bytes(damage)
        for entry in _entries(cache_dir):  # the version's own entry gone: the coverage entry is read
            entry.unlink()
        assert _outcome(root, cache) == replayed
        assert bits.read_bytes().partition(b"\n")[0] == head  # written again whole


def test_a_new_version_misses_and_replaces_the_older_entry(tmp_path):
    root, table, cache_dir, cache = _cached_table(tmp_path)
    before = _outcome(root, cache)
    (old,) = _entries(cache_dir)
    append(table, pa.table({"x": pa.array([1] * 3, pa.int64()), "s": ["z"] * 3}))
    after = _outcome(root, cache)
    assert after == _outcome(root, None) and after[0] == before[0] + 1
    assert after[2].metrics.num_files == before[2].metrics.num_files + 1
    (new,) = _entries(cache_dir)
    assert new != old and new.name.startswith(f"{after[0]:020d}-")


def test_a_table_recreated_at_the_same_path_misses(tmp_path):
    root = tmp_path / "t"
    create_table(str(root), pa.schema([("x", pa.int64())]))
    cache = open_health_cache(str(tmp_path / "cache"))
    first = _outcome(root, cache)
    # Same path, same version 0, another table: the log file's identity changed, so the key did.
    os.rename(root, tmp_path / "gone")
    create_table(str(root), pa.schema([("y", pa.string())]), properties={"delta.checkpointInterval": "3"})
    again = _outcome(root, cache)
    assert again == _outcome(root, None) and again[2].metrics.checkpoint_interval == 3
    assert first[0] == again[0] == 0 and first[2].metrics.checkpoint_interval != 3


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong key", "wrong types", "a wrong value type",
                                    "a directory"])
def test_an_unusable_entry_is_recomputed_and_rewritten(tmp_path, damage):
    root = str(tmp_path / "ours")
    _our_table(root)
    cache_dir = tmp_path / "cache"
    cache = open_health_cache(str(cache_dir))
    replayed = _outcome(root, None)
    _outcome(root, cache)
    (entry,) = _entries(cache_dir)
    text = entry.read_text()
    stored_key = json.loads(text)["key"]
    doc = json.loads(text)
    if damage == "garbage":
        entry.write_bytes(b"\x00\xff not json")
    elif damage == "truncated":
        entry.write_text(text[: len(text) // 2])
    elif damage == "wrong key":
        doc["key"]["version"] += 1
        entry.write_text(json.dumps(doc))
    elif damage == "wrong types":
        doc["health"]["metrics"]["size_histogram"] = "many"
        entry.write_text(json.dumps(doc))
    elif damage == "a wrong value type":  # well-formed JSON whose figure would fail the score
        doc["health"]["metrics"]["num_files"] = "many"
        entry.write_text(json.dumps(doc))
    else:
        entry.unlink()
        entry.mkdir()
    assert _outcome(root, cache) == replayed
    if damage != "a directory":  # a directory in the way stays there; every evaluation replays
        assert json.loads(entry.read_text())["key"] == stored_key  # rewritten whole
    assert _outcome(root, cache) == replayed


def test_an_unwritable_cache_costs_only_the_replay(tmp_path):
    root = str(tmp_path / "ours")
    _our_table(root)
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    assert _outcome(root, open_health_cache(str(blocker))) == _outcome(root, None)


def _evaluate_in_child(root: str, cache_dir: str) -> tuple[int, int]:
    """A fresh (spawned) process's evaluation: the version and the number of files it reports."""
    result = evaluate_checks(_table(root), policy=POLICY, cache=open_health_cache(cache_dir))
    assert result.report is not None
    return result.version, result.report.metrics.num_files


def test_a_second_process_reads_the_entry_the_first_stored(tmp_path):
    root = str(tmp_path / "ours")
    table = _our_table(root)
    cache_dir = str(tmp_path / "cache")
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        version, files = pool.apply(_evaluate_in_child, (root, cache_dir))
    assert (version, files) == (table.latest_version(), table.snapshot().num_files)
    # The entry is marked: a reader that used it reports the mark, one that replayed the log cannot.
    (entry,) = _entries(pathlib.Path(cache_dir))
    doc = json.loads(entry.read_text())
    doc["health"]["metrics"]["num_files"] = 123_456
    entry.write_text(json.dumps(doc))
    with ctx.Pool(1) as pool:
        assert pool.apply(_evaluate_in_child, (root, cache_dir)) == (version, 123_456)


def test_the_cli_keeps_and_reuses_the_figures(tmp_path, capsys, monkeypatch):
    from delta_core.cli.main import main

    root = str(tmp_path / "ours")
    _our_table(root)
    monkeypatch.chdir(tmp_path)  # no ./tables.yaml policy
    monkeypatch.delenv(CACHE_ENV, raising=False)
    cache_dir = tmp_path / "cache"

    def health(*extra: str) -> dict[str, Any]:
        assert main(["health", root, "--json", *extra]) == 0
        doc = json.loads(capsys.readouterr().out)
        doc.pop("duration_seconds")
        return doc

    plain = health()
    assert not cache_dir.exists()  # no cache unless asked for
    assert health("--cache-dir", str(cache_dir)) == plain
    (entry,) = _entries(cache_dir)
    monkeypatch.setenv(CACHE_ENV, str(cache_dir))  # the same cache through the environment
    assert health() == plain
    doc = json.loads(entry.read_text())
    doc["health"]["metrics"]["num_files"] = 123_456  # a mark only a read of the entry reports
    entry.write_text(json.dumps(doc))
    assert health()["metrics"]["num_files"] == 123_456


def test_the_key_names_everything_the_figures_follow_from(tmp_path):
    root = str(tmp_path / "ours")
    table = _our_table(root)
    segment = build_log_segment(table.storage)
    key = CacheKey.of(table.storage.root, segment, policy=POLICY, columns=None)
    others = [CacheKey.of(table.storage.root, segment, policy=HealthPolicy(), columns=None),
              CacheKey.of(table.storage.root, segment, policy=POLICY, columns=["x"]),
              CacheKey.of(table.storage.root, segment, policy=POLICY, columns=[]),
              CacheKey.of(str(tmp_path / "other"), segment, policy=POLICY, columns=None)]
    assert len({key.file_key, *(k.file_key for k in others)}) == 5
    assert key.file_key.split("/")[1].startswith(f"{segment.version:020d}-")
