"""The health cache (``delta_core.health.cache``): a version's figures kept in files give the same
checks and report as a replay, on tables written by our writer, by delta-rs and on the fixtures
in tests/data; a new version misses; an unusable entry is recomputed; a new process reads what
another stored."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import pathlib
from typing import Any

import pyarrow as pa
import pytest

from delta_core.errors import DeltaError
from delta_core.health.cache import CACHE_ENV, CacheKey, HealthCache, open_health_cache
from delta_core.health.checks import TableChecks, evaluate_checks
from delta_core.health.policy import HealthPolicy
from delta_core.log.log_segment import build_log_segment
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
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


def test_a_new_version_misses_and_replaces_the_older_entry(tmp_path):
    root = str(tmp_path / "ours")
    table = _our_table(root)
    cache_dir = tmp_path / "cache"
    cache = open_health_cache(str(cache_dir))
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


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong key", "wrong types", "a directory"])
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
    assert key.file_key.startswith(f"{key.table_dir}/{segment.version:020d}-")
