"""The plans' columnar machinery: groups as row numbers of chunked columns, partitions as integer
codes, and plans of the benchmark's generated logs (partitioned, and clustered) read from a
checkpoint equal to the same plans read from the JSON commits."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from benchmarks.bench_checkpoint import Clustering, generate_log
from delta_core.log.table import DeltaTable
from delta_core.maintenance.bin_packing import partition_codes, sort_keys, sort_keys_of
from delta_core.maintenance.cluster_plan import greedy_fit, plan_clustering
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.tag_codes import tag_codes
from delta_core.maintenance.zorder_plan import plan_zorder
from delta_core.model.arrow_values import take_rows
from delta_core.write.checkpoint_write import write_checkpoint


def test_take_rows_across_chunks_equals_arrow_take():
    rng = random.Random(3)
    chunks = [pa.array([f"c{c}-{i}" if i % 7 else None for i in range(n)], pa.string())
              for c, n in enumerate([5, 0, 17, 1, 9])]
    column = pa.chunked_array(chunks)
    for rows in ([], [0], [31, 0, 5, 22, 22, 4], rng.sample(range(len(column)), len(column))):
        got = take_rows(column, np.array(rows, dtype=np.int64))
        assert got.to_pylist() == [column[i].as_py() for i in rows]


def test_partition_codes_number_partitions_in_sorted_order_nulls_last():
    a = pa.chunked_array([pa.array(["b", None, "a"]), pa.array(["b", "a", None])])
    b = pa.chunked_array([pa.array([2, 1, 1]), pa.array([1, 1, 1])])
    codes = partition_codes([a, b], 6)
    rows = list(zip(a.to_pylist(), b.to_pylist()))
    ordered = sorted(set(rows), key=lambda r: (r[0] is None, r[0] or "", r[1]))
    assert codes.tolist() == [ordered.index(r) for r in rows]
    assert partition_codes([], 4).tolist() == [0, 0, 0, 0]


def test_sort_keys_order_strings_as_arrow_does():
    column = pa.chunked_array([pa.array(["b", "a", None]), pa.array(["ab", "B"])])
    keys = sort_keys(column)
    assert [column[i].as_py() for i in sorted(range(5), key=lambda i: keys[i])] == \
        [column[i].as_py() for i in pc.sort_indices(column).to_pylist()]


@pytest.mark.parametrize("seed", range(4))
def test_greedy_fit_takes_what_a_loop_over_the_files_takes(seed):
    rng = random.Random(seed)
    sizes = [rng.choice([1, 2, 5, 40, rng.randint(1, 100)]) for _ in range(rng.randint(0, 300))]
    budget = rng.randint(0, sum(sizes) or 1)
    taken, spent = [], 0
    for i, size in enumerate(sizes):
        if spent + size <= budget:
            taken.append(i)
            spent += size
    assert greedy_fit(np.array(sizes, dtype=np.int64), budget).tolist() == taken


def _two_copies(tmp_path, clustering: Clustering | None = None) -> tuple[DeltaTable, DeltaTable]:
    """The benchmark's generated log twice: one read from its JSON commits, one from a checkpoint
    in the middle of the log plus the commits after it (rows in more chunks, in another order)."""
    tables = []
    for name in ("json", "checkpointed"):
        generate_log(str(tmp_path / name), 3000, 30, removes=300, clustering=clustering)
        tables.append(DeltaTable(str(tmp_path / name)))
    write_checkpoint(tables[1], version=17)
    return tables[0], tables[1]


def test_plans_from_a_checkpoint_equal_plans_from_the_commits(tmp_path):
    json_table, checkpointed = _two_copies(tmp_path)
    snapshots = [t.snapshot() for t in (json_table, checkpointed)]
    assert snapshots[1].log_segment.checkpoint_version == 17
    plans = [plan_compaction(s, target_size=400_000) for s in snapshots]
    assert [(b.partition_values, b.paths, b.total_size) for b in plans[0].bins] == \
        [(b.partition_values, b.paths, b.total_size) for b in plans[1].bins]
    live = dict(zip(*(c.to_pylist() for c in snapshots[1].file_columns("path", "size").columns)))
    plan = plans[1]
    assert sorted(p for b in plan.bins for p in b.paths) == sorted(live)  # every file small: all packed
    for b in plan.bins:  # each bin: one partition, by size then path, within the target
        day = dict(b.partition_values)["day"]
        assert all(p.startswith(f"day={day}/") for p in b.paths)
        assert [(live[p], p) for p in b.paths] == sorted((live[p], p) for p in b.paths)
        assert list(b.sizes) == [live[p] for p in b.paths] and b.total_size == sum(b.sizes) <= 400_000
    assert plan.partitions_considered == plan.partitions_compacted == 28
    zorders = [plan_zorder(s, ["id", "value"]) for s in snapshots]
    assert [(g.partition_values, sorted(g.paths)) for g in zorders[0].partitions] == \
        [(g.partition_values, sorted(g.paths)) for g in zorders[1].partitions]
    assert [g.partition_dict["day"] for g in zorders[1].partitions] == sorted(f"2024-01-{d:02d}" for d in range(1, 29))


def test_cluster_plan_of_the_generated_clustered_log(tmp_path):
    json_table, checkpointed = _two_copies(tmp_path, Clustering(("id", "value"), clustered_below=2700))
    plans = [plan_clustering(t.snapshot()) for t in (json_table, checkpointed)]
    assert plans[0].names == ("id", "value")
    assert [sorted(g.paths) for g in plans[0].groups] == [sorted(g.paths) for g in plans[1].groups]
    plan = plans[1]
    # files 2700.. (the last three commits) are unclustered; a tenth of those of all commits but
    # the last were removed by the next one
    appended = sum(1 for i in range(2700, 3000) if i % 10 or i >= 2900)
    assert plan.unclustered_files == appended == 280 and plan.other_provider_files == 0
    assert plan.unclustered_files + plan.clustered_files_rewritten + plan.clustered_files_kept \
        == checkpointed.snapshot().num_files
    # the appended files' id ranges lie above every clustered file's: none is merged with them
    assert plan.clustered_files_rewritten == 0 and plan.num_input_files == appended
    assert plan_clustering(checkpointed.snapshot(), full=True).num_input_files == checkpointed.snapshot().num_files


def _first_appearance_codes(tags: list, key: str) -> tuple[list[int], list[str]]:
    """Per map, the code of its first ``key`` entry's value among the values in order of first
    appearance (-1: none, or null): what ``tag_codes`` must give, in plain Python."""
    values: dict[str, int] = {}
    codes = []
    for entries in tags:
        value = next((v for k, v in entries or [] if k == key), None)
        codes.append(-1 if value is None else values.setdefault(value, len(values)))
    return codes, list(values)


def _pieces(column: pa.Array, cuts: list[int]) -> list:
    """``column`` cut at ``cuts``: arrays and chunked arrays, as ``Snapshot.iter_tags`` yields."""
    bounds = [0, *cuts, len(column)]
    out = [column.slice(lo, hi - lo) for lo, hi in zip(bounds, bounds[1:])]
    return [pa.chunked_array([p, p.slice(0, 0)]) if i % 2 else p for i, p in enumerate(out)]


@pytest.mark.parametrize("maps", [
    [[("ZCUBE_ID", "c1"), ("ZCUBE_ZORDER_BY", "z")], [("ZCUBE_ID", "c2")], [("x", "c1")]],
    [[("ZCUBE_ID", "c1"), ("ZCUBE_ID", "c9")], [], [("ZCUBE_ID", None)]],  # a key twice, a null value
    [[("ZCUBE_ID", "c1")], None, [("ZCUBE_ID", "c3")]],  # a null map
    [[("ZCUBE_ZORDER_BY", "c1"), ("ZCUBE_ID", "c2")], [("ZCUBE_ID", "c1")], [("ZCUBE_ID", "c2")]],  # shared values
])
def test_tag_codes_equal_map_lookup(maps):
    column = pa.array(maps * 3, pa.map_(pa.string(), pa.string()))
    keys = ("ZCUBE_ID", "ZCUBE_ZORDER_BY")
    for part in (column, column.slice(1), column.slice(1, 1)):
        whole = tag_codes([part], keys, len(part))
        for key, (codes, values) in zip(keys, whole):
            got = [values[c] if c >= 0 else None for c in codes.tolist()]
            assert got == pc.map_lookup(part, pa.scalar(key), "first").to_pylist()
            assert (codes.tolist(), values) == _first_appearance_codes(part.to_pylist(), key)
        for cuts in ([], [1], [1, 2], list(range(1, len(part)))):
            pieces = tag_codes(_pieces(part, [c for c in cuts if c < len(part)]), keys, len(part))
            assert [(c.tolist(), v) for c, v in pieces] == [(c.tolist(), v) for c, v in whole]


def test_piecewise_tag_codes_of_a_snapshot_equal_the_whole_columns(tmp_path):
    """The cluster plan's codes, read from ``iter_tags`` (checkpoint batches, then commits'
    packed pieces), equal those of the whole ``tags`` column read at once, and the map lookup."""
    _, checkpointed = _two_copies(tmp_path, Clustering(("id", "value"), clustered_below=2700))
    snapshot = checkpointed.snapshot()
    state = snapshot.replay_state
    assert state.checkpoint_stats is not None and state.commit_stats is not None
    assert state.rows["tags"].null_count == snapshot.num_files  # none loaded with the snapshot
    assert len(list(snapshot.iter_tags())) == 2  # the checkpoint's batch, then the commits' piece
    keys = ("ZCUBE_ID", "ZCUBE_ZORDER_BY")
    piecewise = tag_codes(snapshot.iter_tags(), keys, snapshot.num_files)
    column = snapshot.files["tags"]
    whole = tag_codes([column], keys, snapshot.num_files)
    assert [(c.tolist(), v) for c, v in piecewise] == [(c.tolist(), v) for c, v in whole]
    tags = column.to_pylist()
    for key, (codes, values) in zip(keys, piecewise):
        assert (codes.tolist(), values) == _first_appearance_codes(tags, key)
    cubes = piecewise[0][1]
    assert len(cubes) > 10 and (piecewise[0][0] >= 0).sum() < snapshot.num_files  # tagged and untagged files


@pytest.mark.parametrize("rows", [[3], [7, 0, 5], list(range(9, -1, -1))])
def test_sort_keys_of_some_rows_order_them_as_their_own_sort(rows):
    """Few rows are taken and sorted, many are ranked within the whole column: the same order."""
    column = pa.chunked_array([pa.array(["d", "a", "c"]), pa.array(["b", "e", "a2", "z", "y", "x", "w"])])
    keys = sort_keys_of(column, np.array(rows, dtype=np.int64))
    assert [column[rows[i]].as_py() for i in np.argsort(keys, kind="stable")] == \
        sorted(column[r].as_py() for r in rows)
