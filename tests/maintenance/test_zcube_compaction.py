"""Compaction leaves the files of Z-order cubes to Z-order (which merges small cubes), so the two
never undo each other; liquid files and files due for deleted rows are still compacted."""

from __future__ import annotations

from delta_core.health.compaction_estimate import estimate_compaction
from delta_core.log.table import DeltaTable
from delta_core.maintenance.compaction_plan import plan_compaction
from tests.health.conftest import add, write_log

KB = 1024
CUBE = {"ZCUBE_ID": "c1", "ZCUBE_ZORDER_BY": '["x"]'}


def _tagged(path: str, **kwargs) -> dict:
    action = add(path, 10 * KB, **kwargs)
    action["add"]["tags"] = CUBE
    return action


def test_zcube_files_are_not_bin_packed(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[_tagged("c1.parquet"), _tagged("c2.parquet")],
                     [add("new1.parquet", 10 * KB), add("new2.parquet", 10 * KB)]])
    snapshot = DeltaTable(root).snapshot()
    plan = plan_compaction(snapshot, target_size=128 * KB, min_input_files=2)
    assert sorted(p for b in plan.bins for p in b.paths) == ["new1.parquet", "new2.parquet"]
    estimate = estimate_compaction(snapshot, target_size=128 * KB, min_input_files=2)
    assert (estimate.input_files, estimate.output_files) == (2, 1)


def test_a_zcube_file_due_for_deleted_rows_is_still_compacted(tmp_path):
    root = str(tmp_path / "t")
    write_log(root, [[_tagged("c1.parquet", dv_cardinality=50), _tagged("c2.parquet")]],
              protocol={"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                        "writerFeatures": ["deletionVectors"]})
    plan = plan_compaction(DeltaTable(root).snapshot(), target_size=128 * KB)
    assert [p for b in plan.bins for p in b.paths] == ["c1.parquet"]
