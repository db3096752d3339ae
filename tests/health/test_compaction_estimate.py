"""The health model's compaction counts equal what ``plan_compaction`` itself plans."""

from __future__ import annotations

import pathlib
import random

import pytest

from delta_core.errors import DeltaError
from delta_core.health.compaction_estimate import estimate_compaction
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from tests.health.conftest import add, write_log

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
    for target, minimum in [(100 * KB, None), (64 * KB, 10 * KB), (1000 * KB, 500 * KB)]:
        plan = plan_compaction(snapshot, target_size=target, min_file_size=minimum)
        estimate = estimate_compaction(snapshot, target_size=target, min_file_size=minimum)
        assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins))
        assert (estimate.target_size, estimate.min_file_size) == (plan.target_size, plan.min_file_size)
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
        checked, bins = checked + 1, bins + len(plan.bins)
    assert checked > 40 and bins > 100  # partitioned, column-mapped and checkpointed tables among them
