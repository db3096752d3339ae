"""Progress reported by long operations (``delta_core.model.progress``): a rewrite reports each
batch's files and bytes, a checkpoint each part; with no sink nothing is reported."""

from __future__ import annotations

import pytest

from delta_core.maintenance.options import RewriteBounds
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.progress import reporting_to
from delta_core.write.checkpoint_write import write_checkpoint
from tests.maintenance.conftest import make_table


class Recorder:
    """A ``ProgressSink`` that keeps what it was told: [name, unit, totals, [(items, bytes)...]]."""

    def __init__(self) -> None:
        self.stages: list[dict] = []
        self.open = False

    def start(self, name: str, *, unit: str, total_items: int | None, total_bytes: int | None) -> None:
        self.stages.append({"name": name, "unit": unit, "total_items": total_items, "total_bytes": total_bytes,
                            "steps": []})
        self.open = True

    def advance(self, *, items: int, nbytes: int) -> None:
        assert self.open
        self.stages[-1]["steps"].append((items, nbytes))

    def finish(self) -> None:
        self.open = False


@pytest.mark.spark
def test_compaction_reports_each_batch_in_files_and_bytes(spark, table_uri):
    table = make_table(table_uri, appends=3)  # 2 partitions x 3 small files
    recorder = Recorder()
    with reporting_to(recorder):
        # one batch per partition
        metrics = compact(table, spark, bounds=RewriteBounds(batch_size=1), min_input_files=3)
    [stage] = recorder.stages
    assert stage["name"] == "compaction" and stage["unit"] == "files"
    assert stage["total_items"] == metrics.num_removed_files == 6
    assert stage["total_bytes"] == metrics.removed_bytes
    assert len(stage["steps"]) == metrics.num_batches == 2
    assert sum(i for i, _ in stage["steps"]) == 6 and sum(b for _, b in stage["steps"]) == metrics.removed_bytes
    assert not recorder.open


def test_checkpoint_reports_its_actions_and_bytes(table_uri):
    table = make_table(table_uri, appends=3)
    recorder = Recorder()
    with reporting_to(recorder):
        result = write_checkpoint(table)
    [stage] = recorder.stages
    assert stage["name"] == f"checkpoint v{result.version}" and stage["unit"] == "actions"
    assert stage["steps"] and sum(i for i, _ in stage["steps"]) == result.size
    assert sum(b for _, b in stage["steps"]) == result.size_in_bytes
    assert not recorder.open
    # without a sink the same work reports nothing and still succeeds
    assert write_checkpoint(table).size == result.size
    assert len(recorder.stages) == 1
