"""The skip ratio a Z-order run's own plan predicts, from the log alone, once per version."""

from __future__ import annotations

from delta_core.health.layout_estimate import MIN_SKIP_RISE, estimate_layout, skip_target
from delta_core.log.table import DeltaTable
from tests.health.conftest import add, write_log

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
