"""The skip ratio a Z-order run's own plan predicts, from the log alone, once per version; after
the run it advised, no Z-order is advised again until a writer adds data."""

from __future__ import annotations

from delta_core.health.checks import check_data_skipping
from delta_core.health.layout_estimate import MIN_SKIP_RISE, estimate_layout, skip_target
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from tests.health.conftest import T0, add, remove, write_log

MB = 1024 * 1024


def test_prediction_follows_the_planned_groups_and_is_kept_per_version(tmp_path):
    root = str(tmp_path / "t")
    # four 1 MiB files each spanning 0..399, Z-ordered into 1 MiB files: 4 disjoint stretches
    write_log(root, [[add(f"f{i}.parquet", MB, lo=0, hi=399) for i in range(4)]])
    snapshot = DeltaTable(root).snapshot()
    estimate = estimate_layout(snapshot, ["x"], clustered=False, target_size=MB)
    assert (estimate.skip_ratio, estimate.files_rewritten, estimate.unreachable) == (0.75, 4, None)
    assert estimate_layout(snapshot, ["x"], clustered=False, target_size=MB) is estimate  # planned once
    assert skip_target(estimate, 0.0, 0.5) is None
    # into one file of the table's default target: nothing to skip, so the target is out of reach
    whole = estimate_layout(snapshot, ["x"], clustered=False)
    assert whole.skip_ratio == 0.0
    reason = skip_target(whole, 0.0, 0.5)
    assert reason is not None and f"a rise under {MIN_SKIP_RISE:.0%}" in reason


def test_a_new_file_beside_kept_files_predicts_their_layout_plus_its_own(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[add(f"f{i}.parquet", MB, lo=i * 100, hi=i * 100 + 99) for i in range(4)],
                     [add("new.parquet", MB, lo=0, hi=399)]])
    estimate = estimate_layout(DeltaTable(root).snapshot(), ["x"], clustered=False, target_size=MB)
    # no ZCube tags: all five files are rewritten into 5 stretches of the range
    assert estimate.files_rewritten == 5 and estimate.skip_ratio == 0.8


def _cube(path: str, lo: int, hi: int, cube: str) -> dict:
    """A file a Z-order run on ``x`` wrote into ZCube ``cube``."""
    action = add(path, MB, lo=lo, hi=hi)
    action["add"]["tags"] = {"ZCUBE_ID": cube, "ZCUBE_ZORDER_BY": '["x"]'}
    return action


def test_a_zorder_short_of_the_floor_is_advised_once_until_a_writer_adds_data(tmp_path):
    root = str(tmp_path / "t")
    policy = HealthPolicy(zorder_target_size=MB)
    # one 1 MiB cube Z-ordered already, beside two new files: all three span the whole range of x
    commits = [[_cube("old.parquet", 0, 399, "c1"), add("a.parquet", MB, lo=0, hi=399),
                add("b.parquet", MB, lo=0, hi=399)]]
    write_log(root, commits)
    before = table_health(DeltaTable(root), policy=policy, columns=["x"])
    # the plan rewrites the two new files into two: a probe reads the old cube and one of them
    assert (before.metrics.skip_ratio, before.metrics.predicted_skip_ratio) == (0.0, round(1 / 3, 4))
    assert "zorder" in {r.operation for r in before.recommendations}  # under the floor, but a rise past 5%
    assert not check_data_skipping(before).passed

    # the run: the two new files become cube c2 with disjoint halves of the range
    commits.append([remove("a.parquet", MB, when=T0), remove("b.parquet", MB, when=T0),
                    _cube("c2-0.parquet", 0, 199, "c2"), _cube("c2-1.parquet", 200, 399, "c2")])
    write_log(root, commits)
    after = table_health(DeltaTable(root), policy=policy, columns=["x"])
    assert after.metrics.skip_ratio == round(1 / 3, 4) < policy.skip_ratio_floor  # as predicted: still short
    assert "zorder" not in {r.operation for r in after.recommendations}
    check = check_data_skipping(after)
    assert check.passed and not check.reachable and "would rewrite nothing" in (check.unreachable_reason or "")

    # another writer's append: the plan takes the new file again, so health estimates anew
    write_log(root, [*commits, [add("c.parquet", MB, lo=0, hi=399)]])
    appended = estimate_layout(DeltaTable(root).snapshot(), ["x"], clustered=False, target_size=MB)
    assert appended.unreachable is None and appended.files_rewritten == 1
