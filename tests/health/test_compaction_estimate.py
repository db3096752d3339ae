"""The health model's compaction counts equal what ``plan_compaction`` itself plans."""

from __future__ import annotations

import json
import math
import pathlib
import random

import pytest

from delta_core.errors import DeltaError
from delta_core.health.compaction_estimate import estimate_compaction
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from tests.health.conftest import DV_PROTOCOL, add, write_log

KB = 1024


@pytest.mark.parametrize("seed", range(6))
def test_counts_match_the_planner_on_random_tables(tmp_path, seed):
    rng = random.Random(seed)
    partitioned = bool(seed % 2)
    actions = []
    for i in range(rng.randint(1, 120)):
        a = add(f"f{i}.parquet", rng.choice([0, rng.randint(1, 40 * KB), 100 * KB, 200 * KB]))
        if partitioned:  # None: the null partition, logged as JSON null
            a["add"]["partitionValues"] = {"p": rng.choice(["a", "b", "c", None])}
        actions.append(a)
    write_log(str(tmp_path / "t"), [actions], partitioned=partitioned)
    snapshot = DeltaTable(str(tmp_path / "t")).snapshot()
    bins_seen: list[int] = []
    for target, minimum, least in [(100 * KB, None, 5), (64 * KB, 10 * KB, 2), (1000 * KB, 500 * KB, 3)]:
        plan = plan_compaction(snapshot, target_size=target, min_file_size=minimum, min_input_files=least)
        estimate = estimate_compaction(snapshot, target_size=target, min_file_size=minimum, min_input_files=least)
        assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins))
        assert estimate.input_bytes == sum(b.total_size for b in plan.bins)
        assert (estimate.target_size, estimate.min_file_size) == (plan.target_size, plan.min_file_size)
        # the small files it rewrites, and the bins whose files sum below the minimum (still small)
        assert estimate.small_inputs == sum(s < plan.min_file_size for b in plan.bins for s in b.sizes)
        assert estimate.small_outputs == sum(b.total_size < plan.min_file_size for b in plan.bins)
        bins_seen.append(len(plan.bins))
    assert max(bins_seen) > 1  # the tables give the planner real work


def test_table_target_file_size_is_used_as_the_planner_does(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{i}.parquet", 30 * KB) for i in range(7)]],
              configuration={"delta.targetFileSize": str(100 * KB)})
    snapshot = DeltaTable(root).snapshot()
    estimate = estimate_compaction(snapshot)
    plan = plan_compaction(snapshot)
    # 75 KiB minimum: all 7 small; bins of 3 + 3 (+ a lone file left alone).
    assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins)) == (6, 2)


def _readable_snapshots(root: pathlib.Path):
    for table in sorted(p for p in root.iterdir() if (p / "_delta_log").is_dir()):
        try:
            yield table.name, DeltaTable(str(table)).snapshot()
        except DeltaError:
            continue  # the suite's deliberately broken logs


def test_counts_match_the_planner_on_the_conformance_tables(conformance_dir):
    checked = bins = 0
    for name, snapshot in _readable_snapshots(conformance_dir):
        # A target of twice the largest file makes every file a candidate: the most bins.
        target = 2 * max([1, *snapshot.files.column("size").to_pylist()])
        plan = plan_compaction(snapshot, target_size=target)
        estimate = estimate_compaction(snapshot, target_size=target)
        assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins)), name
        assert estimate.input_bytes == sum(b.total_size for b in plan.bins), name
        checked, bins = checked + 1, bins + len(plan.bins)
    assert checked > 40 and bins > 100  # partitioned, column-mapped and checkpointed tables among them


def _greedy_bins(snapshot, target: int, minimum: int, ratio: float, min_input_files: int = 5) -> list[list[str]]:
    """The packing rule written out file by file (compaction_plan's docstring): per partition,
    candidates by size then path, greedy bins up to the target; a bin with a file over the
    deleted-rows ratio kept whole, one of two files or more reaching the minimum kept whole, any
    other cut to its fragments (under target / 8; of those, the longest run smallest first whose
    largest is at most 1.25 times the rest together) and kept when at least ``min_input_files`` are left."""
    by_partition: dict[str | None, list[tuple[int, str, bool]]] = {}
    for a in snapshot.add_actions():
        records = json.loads(a.stats)["numRecords"] if a.stats else None
        dv = a.deletion_vector
        due = dv is not None and (records is None or (dv.cardinality / records if records else math.inf) > ratio)
        if a.size < minimum or due:
            by_partition.setdefault(a.partition_values.get("p"), []).append((a.size, a.path, due))
    bins = []
    for part in sorted(by_partition, key=lambda p: (p is None, p or "")):
        current: list[tuple[int, str, bool]] = []
        for f in sorted(by_partition[part]):
            if current and sum(c[0] for c in current) + f[0] > target:
                bins.append(current)
                current = []
            current.append(f)
        bins.append(current)
    kept = []
    for b in bins:
        if any(f[2] for f in b) or (len(b) > 1 and sum(f[0] for f in b) >= minimum):
            kept.append([f[1] for f in b])
            continue
        fragments: list[str] = []  # the longest run, smallest first, whose largest is at most the rest together
        merged = 0
        for i, (size, _, _) in enumerate(b):
            if size >= min(target // 8, minimum):
                break
            if i == 0 or size <= 1.25 * merged:
                fragments = [f[1] for f in b[:i + 1]]
            merged += size
        if len(fragments) >= min_input_files:
            kept.append(fragments)
    return kept


def test_planner_and_health_agree_on_many_partitions_with_deleted_rows(tmp_path):
    rng = random.Random(7)
    actions = []
    for i in range(3000):
        dv = rng.choice([None, None, None, 0, 3, 40]) if i % 4 else None
        records = None if i % 97 == 0 else 100
        # equal sizes are common, so the order of ties (by path) decides which files share a bin
        size = rng.choice([5 * KB, 5 * KB, 20 * KB, rng.randint(1, 90 * KB), 300 * KB])
        actions.append(add(f"part-{rng.randint(0, 10**9):010d}-{i}.parquet", size, records=records,
                           part=rng.choice([None, *(f"p{k:03d}" for k in range(150))]), dv_cardinality=dv))
    write_log(str(tmp_path / "t"), [actions], partitioned=True, protocol=DV_PROTOCOL)
    snapshot = DeltaTable(str(tmp_path / "t")).snapshot()
    plan = plan_compaction(snapshot, target_size=64 * KB, min_file_size=48 * KB, max_deleted_rows_ratio=0.05)
    estimate = estimate_compaction(snapshot, target_size=64 * KB, min_file_size=48 * KB, max_deleted_rows_ratio=0.05)
    assert [b.paths for b in plan.bins] == _greedy_bins(snapshot, 64 * KB, 48 * KB, 0.05)
    assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins))
    assert plan.partitions_compacted > 140 and len(plan.bins) > 300
    # files over the ratio are rewritten alone, a large one too
    assert any(b.num_files == 1 and b.sizes == (300 * KB,) for b in plan.bins)


@pytest.mark.parametrize("name", ["dat-multi_partitioned", "rs-delta-0.8.0-null-partition",
                                  "golden-data-reader-partition-values", "rs-partition-type-primitives"])
def test_partitions_are_the_distinct_partition_values_of_the_live_files(conformance_dir, name):
    """count_partitions (health's estimate and the assets' file statistics) against the distinct
    rows of the typed partition values, nulls counted as one value, on real partitioned tables."""
    from delta_core.maintenance.bin_packing import count_partitions

    snapshot = DeltaTable(str(conformance_dir / name)).snapshot()
    typed = snapshot.partition_values_typed()
    expected = len({tuple(row.values()) for row in typed.to_pylist()})
    assert count_partitions(typed.columns, typed.num_rows) == expected
    assert estimate_compaction(snapshot).partitions == expected
    assert count_partitions([], 0) == 0 and count_partitions([], 5) == 1
