"""A plan's file groups: each group's file list is the files assigned to it, cut from one take
of the planned rows (pure, no Spark; real logs of many files)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from benchmarks.bench_checkpoint import generate_log
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.file_groups import PlannedFiles, group_paths, keep_files, keep_where
from delta_core.maintenance.run_bounds import ordered_groups
from delta_core.maintenance.zorder_plan import plan_zorder
from delta_core.write.checkpoint_write import write_checkpoint


def _checkpointed_log(tmp_path) -> DeltaTable:
    """3,000 adds over 30 commits (300 removed), read from a checkpoint in the middle plus the
    commits after it: the snapshot's file list comes in many chunks."""
    generate_log(str(tmp_path / "t"), 3000, 30, removes=300)
    table = DeltaTable(str(tmp_path / "t"))
    write_checkpoint(table, version=17)
    return table


def test_each_bin_of_a_plan_of_many_bins_lists_the_files_assigned_to_it(tmp_path):
    snapshot = _checkpointed_log(tmp_path).snapshot()
    assert snapshot.log_segment.checkpoint_version == 17
    live = dict(zip(*(c.to_pylist() for c in snapshot.file_columns("path", "size").columns)))
    plan = plan_compaction(snapshot, target_size=25_000)  # files of 10-11 KB: two to a bin
    assert len(plan.bins) > 1000
    source = plan.bins[0].planned.source
    assert source.column("path").num_chunks > 1
    assert all(b.planned is plan.bins[0].planned for b in plan.bins)  # one take for every bin
    for b in plan.bins:
        assigned = source.take(pa.array(b.rows))
        assert b.file_list.equals(assigned)
        assert b.paths == assigned.column("path").to_pylist()
        assert list(b.sizes) == [live[p] for p in b.paths] and b.total_size == sum(b.sizes)
        day = b.partition_dict["day"]
        assert all(p.startswith(f"day={day}/") for p in b.paths)
    packed = [p for b in plan.bins for p in b.paths]
    # every file is small: all packed, once, but a partition's odd one out (a bin of one is dropped)
    assert len(set(packed)) == len(packed) and set(packed) <= set(live) and len(packed) >= len(live) - 28
    # the batches' paths, and those of the groups in any order, are their groups' paths in turn
    for batch in plan.batches(max_bytes=400_000):
        assert group_paths(batch).to_pylist() == [p for b in batch for p in b.paths]
    reordered = ordered_groups(plan.bins, "benefit")
    assert group_paths(reordered).to_pylist() == [p for b in reordered for p in b.paths]


def test_each_zorder_partition_lists_the_files_assigned_to_it(tmp_path):
    snapshot = _checkpointed_log(tmp_path).snapshot()
    plan = plan_zorder(snapshot, ["id", "value"])
    assert len(plan.partitions) == 28
    source = plan.partitions[0].planned.source
    for g in plan.partitions:
        assert g.file_list.equals(source.take(pa.array(g.rows)))
        assert all(p.startswith(f"day={g.partition_dict['day']}/") for p in g.paths)
    assert sorted(p for g in plan.partitions for p in g.paths) == sorted(snapshot.file_paths)


def test_narrowing_groups_by_one_mask_equals_narrowing_each(tmp_path):
    plan = plan_compaction(_checkpointed_log(tmp_path).snapshot(), target_size=60_000)
    groups = plan.bins[:40]
    paths = group_paths(groups)
    kept = np.ones(len(paths), dtype=bool)
    kept[::3] = False  # some groups lose one file, some two, some keep fewer than two
    narrowed = keep_where(groups, kept)
    gone = set(pc.filter(paths, pa.array(~kept)).to_pylist())
    one_by_one = [keep_files(g, g.file_list.filter(pa.array([p not in gone for p in g.paths]))) for g in groups]
    assert [(g.partition_values, g.paths, g.total_size) for g in narrowed] == \
        [(g.partition_values, g.paths, g.total_size) for g in one_by_one if g is not None]
    assert keep_where(groups, np.ones(len(paths), dtype=bool)) == list(groups)  # the same groups


def test_planned_rows_taken_in_pieces_equal_one_take():
    """More rows than one piece of the take, from a file list of several chunks, in any order."""
    rng = np.random.default_rng(5)
    n = (1 << 20) + 70_000
    paths = pa.array([f"p{i}" for i in range(n)], pa.string())
    source = pa.Table.from_batches([pa.record_batch([paths.slice(lo, 300_000),
                                                     pa.array(np.arange(lo, min(lo + 300_000, n)))],
                                                    names=["path", "size"]) for lo in range(0, n, 300_000)])
    rows = rng.permutation(n)[: n - 5]
    planned = PlannedFiles(source, rows)
    assert planned.table.equals(source.take(pa.array(rows)))
    assert planned.table is planned.table  # taken once
