"""The one Spark task runner (DataFrame API and ``mapInArrow``, no RDD, no SparkContext: it runs
over Spark Connect too; tests/cluster runs it there): payloads are dealt round-robin, one slice
per partition; results come back in payload order; the task count comes from configuration."""

from __future__ import annotations

import pytest

from delta_core.errors import DeltaError
from delta_core.maintenance.spark.tasks import (
    SLOT_COL,
    _seconds,
    cluster_cores,
    default_slices,
    run_tasks,
    tasks_frame,
)

pytestmark = pytest.mark.spark


def _twice(payload: int) -> list[str]:
    """Spark task: two results per payload."""
    return [f"{payload}a", f"{payload}b"]


def test_payloads_are_dealt_round_robin_one_slice_per_partition(spark):
    from pyspark.sql.functions import spark_partition_id

    frame = tasks_frame(spark, list(range(10)), slices=4)
    rows = frame.select(spark_partition_id().alias("part"), SLOT_COL, "task_id").collect()
    assert sorted(r.task_id for r in rows) == list(range(10))
    assert all(r[SLOT_COL] == r.task_id % 4 for r in rows)
    slots_of_partition: dict[int, set[int]] = {}
    for r in rows:
        slots_of_partition.setdefault(r.part, set()).add(r[SLOT_COL])
    assert sorted(slots_of_partition.values(), key=min) == [{0}, {1}, {2}, {3}]


def test_run_tasks_returns_each_payloads_results_in_order(spark):
    payloads = [5, 3, 9, 1, 7]
    assert run_tasks(spark, _twice, payloads, slices=2) == [[f"{p}a", f"{p}b"] for p in payloads]
    assert run_tasks(spark, _twice, []) == []


def test_task_count_comes_from_configuration(spark):
    assert spark.conf.get("spark.master") == "local[2]"
    assert cluster_cores(spark) == 2
    assert default_slices(spark, 100) == 8  # four tasks per core
    assert default_slices(spark, 3) == 3  # never more tasks than payloads


def test_spark_durations():
    assert _seconds("2s") == 2.0 and _seconds("500ms") == 0.5 and _seconds("3") == 3.0 and _seconds("1min") == 60
    with pytest.raises(DeltaError, match="cannot read the Spark duration"):
        _seconds("soon")
