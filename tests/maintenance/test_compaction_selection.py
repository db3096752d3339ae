"""Which bins a compaction rewrites (``bin_packing.keep_bins``). Automated selection: too few
fragments wait for more (``min_input_files``), a few larger small files merge only into a file
that is no longer small, files near the target are left alone unless over the deleted-rows ratio,
and the health estimate counts what the planner plans. Bin-packing (a run a person starts): every
bin of enough small files, whatever their sizes; files near the target still only for their
deleted rows."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError
from delta_core.health.compaction_estimate import estimate_compaction
from delta_core.health.policy import HealthPolicy
from delta_core.log.table import DeltaTable
from delta_core.maintenance.bin_packing import MERGED_FRAGMENT_SLACK
from delta_core.maintenance.compaction_plan import plan_compaction
from delta_core.maintenance.options import BIN_PACK, DEFAULT_MIN_INPUT_FILES, EXPLICIT_MIN_INPUT_FILES, CompactOptions
from tests.health.conftest import DV_PROTOCOL, add, write_log

KB = 1024
TARGET, MINIMUM = 128 * KB, 96 * KB  # fragments: under 16 KiB


def _snapshot(tmp_path, actions: list[dict], **kwargs):
    root = str(tmp_path / "t")
    write_log(root, [actions], partitioned=True, **kwargs)
    return DeltaTable(root).snapshot()


def _bins(snapshot, **kwargs) -> list[list[str]]:
    plan = plan_compaction(snapshot, target_size=TARGET, min_file_size=MINIMUM, **kwargs)
    estimate = estimate_compaction(snapshot, target_size=TARGET, min_file_size=MINIMUM, **kwargs)
    assert (estimate.input_files, estimate.output_files) == (plan.num_input_files, len(plan.bins))
    return [sorted(b.paths) for b in plan.bins]


def test_min_input_files_leaves_a_group_of_too_few_fragments_alone(tmp_path):
    snapshot = _snapshot(tmp_path, [*(add(f"a{i}", 2 * KB, part="a") for i in range(4)),
                                    *(add(f"b{i}", 2 * KB, part="b") for i in range(5))])
    # the plan's default is automation's (the policy's, 5); a run a person starts with no value merges any two
    assert DEFAULT_MIN_INPUT_FILES == HealthPolicy().min_input_files == 5 and CompactOptions().min_input_files is None
    assert _bins(snapshot) == [[f"b{i}" for i in range(5)]]  # a's four wait for a fifth
    assert _bins(snapshot, min_input_files=4) == [[f"a{i}" for i in range(4)], [f"b{i}" for i in range(5)]]
    with pytest.raises(ConfigError, match="at least 2"):
        plan_compaction(snapshot, min_input_files=1)


def test_a_few_files_merge_when_they_make_a_file_that_is_no_longer_small(tmp_path):
    # two 50 KiB files make 100 KiB, over the 96 KiB minimum: merged, though two are under five
    snapshot = _snapshot(tmp_path, [add("a1", 50 * KB, part="a"), add("a2", 50 * KB, part="a"),
                                    add("b1", 40 * KB, part="b"), add("b2", 40 * KB, part="b")])
    assert _bins(snapshot) == [["a1", "a2"]]  # b's 80 KiB would still be small: left alone


def test_fragments_merge_first_and_larger_small_files_wait(tmp_path):
    # five fragments and one 40 KiB file: together 50 KiB, still small, so only the fragments merge
    snapshot = _snapshot(tmp_path, [*(add(f"f{i}", 2 * KB, part="a") for i in range(5)), add("seg", 40 * KB, part="a")])
    assert _bins(snapshot) == [[f"f{i}" for i in range(5)]]
    # with enough larger ones to make a file of the minimum size, they all merge into it
    snapshot = _snapshot(tmp_path, [*(add(f"f{i}", 2 * KB, part="a") for i in range(5)),
                                    *(add(f"seg{i}", 45 * KB, part="a") for i in range(2))])
    assert _bins(snapshot) == [[*(f"f{i}" for i in range(5)), "seg0", "seg1"]]


def test_a_merged_fragment_waits_until_as_much_new_data_has_come(tmp_path):
    # a 10 KiB fragment (an earlier merge) and five 1 KiB ones: only the five merge
    merged = add("merged", 10 * KB, part="a")
    assert MERGED_FRAGMENT_SLACK * 5 * KB < 10 * KB <= MERGED_FRAGMENT_SLACK * 10 * KB
    snapshot = _snapshot(tmp_path, [merged, *(add(f"n{i}", KB, part="a") for i in range(5))])
    assert _bins(snapshot) == [[f"n{i}" for i in range(5)]]
    # with ten, as much as it holds, it merges with them
    snapshot = _snapshot(tmp_path, [merged, *(add(f"n{i}", KB, part="a") for i in range(10))])
    assert _bins(snapshot) == [["merged", *(f"n{i}" for i in range(10))]]


def test_files_near_the_target_are_rewritten_only_for_their_deleted_rows(tmp_path):
    # near: at the minimum and above; fragments beside them in the same partition
    actions = [add("near", MINIMUM, part="a"), add("over", 120 * KB, part="a"),
               *(add(f"f{i}", 2 * KB, part="a") for i in range(5)),
               add("near_dv_low", 100 * KB, part="b", dv_cardinality=1),  # 1 of 100 rows deleted
               add("near_dv_high", 100 * KB, part="c", dv_cardinality=30)]  # 30 of 100: over 0.05
    snapshot = _snapshot(tmp_path, actions, protocol=DV_PROTOCOL)
    assert _bins(snapshot) == [[f"f{i}" for i in range(5)], ["near_dv_high"]]


def _bin_packed(snapshot, *, min_input_files: int = EXPLICIT_MIN_INPUT_FILES) -> list[list[str]]:
    plan = plan_compaction(snapshot, target_size=TARGET, min_file_size=MINIMUM, min_input_files=min_input_files,
                           selection=BIN_PACK)
    return [sorted(b.paths) for b in plan.bins]


def test_bin_packing_merges_every_bin_of_small_files_whatever_their_sizes(tmp_path):
    # a: a merged fragment and one new file; b: two larger small files still small together;
    # c: three fragments; d: a file near the target beside a fragment, e: one over the ratio
    actions = [add("merged", 10 * KB, part="a"), add("new", KB, part="a"),
               add("b1", 40 * KB, part="b"), add("b2", 40 * KB, part="b"),
               *(add(f"c{i}", 2 * KB, part="c") for i in range(3)),
               add("near", 100 * KB, part="d"), add("d1", 2 * KB, part="d"),
               add("near_dv_high", 100 * KB, part="e", dv_cardinality=30)]
    snapshot = _snapshot(tmp_path, actions, protocol=DV_PROTOCOL)
    assert _bins(snapshot) == [["near_dv_high"]]  # automation: everything small waits
    assert _bin_packed(snapshot) == [["merged", "new"], ["b1", "b2"], ["c0", "c1", "c2"], ["near_dv_high"]]
    # a count given by hand still holds: c's three wait for a fourth, the other pairs for a third
    assert _bin_packed(snapshot, min_input_files=4) == [["near_dv_high"]]
    with pytest.raises(ConfigError, match="selection must be one of bin-pack, automated"):
        plan_compaction(snapshot, selection="all")


def test_health_counts_the_small_files_left_after_the_plan(tmp_path):
    # a: six fragments merge into one still small file; b: two 50 KiB files merge into a 100 KiB one
    snapshot = _snapshot(tmp_path, [*(add(f"a{i}", 2 * KB, part="a") for i in range(6)),
                                    add("b1", 50 * KB, part="b"), add("b2", 50 * KB, part="b")])
    estimate = estimate_compaction(snapshot, target_size=TARGET, min_file_size=MINIMUM)
    assert (estimate.input_files, estimate.output_files, estimate.small_inputs, estimate.small_outputs) == (8, 2, 8, 1)
    assert estimate.small_files_removed == 7


def test_min_input_files_reaches_the_plan_from_tables_yaml(tmp_path):
    from delta_core.config.reader import parse_config

    config = parse_config({"tables": {"t": {"uri": str(tmp_path / "t"), "compact": {"min_input_files": 8}}}})
    table = config.table("t")
    assert table.options(CompactOptions).min_input_files == 8
    assert table.advisor.health.min_input_files == 8  # health predicts the plan the run makes
    with pytest.raises(ConfigError, match="min_input_files"):
        parse_config({"tables": {"t": {"uri": "/t", "compact": {"min_input_files": 1}}}})


@pytest.mark.spark
def test_compaction_leaves_near_target_files_and_lone_fragments_untouched(spark, tmp_path):
    from delta_core.maintenance.spark.compaction import compact
    from delta_core.write.table_writes import append, create_table
    from tests.maintenance.conftest import deltars_rows, multiset

    uri = str(tmp_path / "t")
    table = create_table(uri, pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_columns=["region"])
    append(table, pa.table({"id": pa.array(range(20_000), pa.int64()), "region": ["eu"] * 20_000}))  # near the target
    for i in range(6):
        append(table, pa.table({"id": pa.array([i], pa.int64()), "region": ["eu"]}))  # fragments
    for i in range(3):
        append(table, pa.table({"id": pa.array([i], pa.int64()), "region": ["us"]}))  # too few to merge
    snapshot = table.snapshot()
    big = max(snapshot.add_actions(), key=lambda a: a.size)
    us = {a.path for a in snapshot.add_actions() if a.partition_values["region"] == "us"}
    before = multiset(deltars_rows(uri))
    metrics = compact(table, spark, target_size=big.size + 1, min_file_size=big.size, min_input_files=5)
    assert (metrics.num_removed_files, metrics.num_added_files) == (6, 1)
    live = set(table.snapshot().file_paths)
    assert big.path in live and us <= live
    assert multiset(deltars_rows(uri)) == before
