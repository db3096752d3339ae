"""Running maintenance work on Spark: one Python call per payload, spread over tasks.

Compaction needs no shuffle: the driver turns each bin into a payload (a frozen dataclass
defined next to its operation, e.g. ``CompactBinTask``: the picklable ``Storage``, the table
``Metadata`` and the file paths) and ``run_tasks`` runs a plain Python
function on each payload inside the executors, through the RDD API: one Python stage, no
DataFrame conversions, no Arrow round trip for a handful of small results (``add`` actions as
JSON), which keeps the fixed cost of a job low. Payloads are spread round-robin over a few
tasks per core (callers pass them largest first, so the long bins start early and the waves
stay even). ``payload_frame`` is the DataFrame flavour (``mapInArrow``) for work whose rows must
go on through Spark (Z-order's file reads feed a shuffle). ``settled_on_failure`` makes a failed
job wait for its other tasks to stop, so that what they wrote can be deleted.

pyspark is imported lazily; nothing in delta_core needs it at import time.
"""

from __future__ import annotations

import json
import logging
import pickle
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pyarrow as pa

from delta_core.errors import DeltaError
from delta_core.maintenance.spark.task_errors import task_error
from delta_core.model.actions import Add, action_from_json, action_to_json

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

TASK_SCHEMA = "task_id long, payload binary"
MAX_SLICES = 10_000
TASKS_PER_CORE = 4  # per-task overhead is ~0.1 s: a few waves balance load without paying it per file
# How long a failed batch waits for its other tasks to stop before its files are deleted. Spark
# kills a Python task's worker only some seconds (spark.python.task.killTimeout) after the job failed.
SETTLE_SECONDS = 60.0
_GROUP_KEY = "spark.jobGroup.id"
_INTERRUPT_KEY = "spark.job.interruptOnCancel"
T = TypeVar("T")  # a task payload: a frozen, picklable dataclass of the operation's own


def _task_runner(fn: Callable[[T], list[str]]) -> Callable[[Iterable[tuple[int, T]]], Iterator[tuple[int, str]]]:
    def run(rows: Iterable[tuple[int, T]]) -> Iterator[tuple[int, str]]:
        for task_id, payload in rows:
            for result in fn(payload):
                yield task_id, result

    return run


def default_slices(spark: SparkSession, n: int) -> int:
    """Task count for ``n`` payloads: a few waves over the cluster's cores, never more than ``n``."""
    return max(1, min(n, MAX_SLICES, spark.sparkContext.defaultParallelism * TASKS_PER_CORE))


def _round_robin(n: int, k: int) -> list[int]:
    """Indexes ``0..n-1`` ordered so that ``parallelize(..., k)``'s contiguous slices deal them out
    round-robin: slice ``j`` gets ``j, j+k, j+2k, ...``."""
    return [i for start in range(k) for i in range(start, n, k)]


def tasks_frame(spark: SparkSession, payloads: Sequence[T], *, slices: int | None = None) -> DataFrame:
    """A DataFrame with one row per payload, spread over ``slices`` partitions round-robin (so
    payloads sorted largest first spread the big ones over all tasks)."""
    k = default_slices(spark, len(payloads)) if slices is None else max(1, min(slices, len(payloads)))
    rows = [(i, pickle.dumps(payloads[i])) for i in _round_robin(len(payloads), k)]
    return spark.sparkContext.parallelize(rows, numSlices=k).toDF(TASK_SCHEMA)


def payload_frame(
    spark: SparkSession,
    payloads: Sequence[T],
    fn: Callable[[T], Iterator[pa.RecordBatch]],
    schema: Any,
    *,
    slices: int | None = None,
) -> DataFrame:
    """A DataFrame of the record batches ``fn(payload)`` yields for every payload (lazy).

    ``schema`` is the Spark schema of the batches (``StructType`` or DDL string).
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                yield from fn(pickle.loads(payload))

    return tasks_frame(spark, payloads, slices=slices).mapInArrow(run, schema)


def collect_arrow(frame: DataFrame, *, description: str) -> pa.Table:
    """``frame.toArrow()``; a failed Spark job becomes a typed error (``task_error``)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    spark = frame.sparkSession
    spark.sparkContext.setJobDescription(description)
    try:
        return frame.toArrow()
    except (PySparkException, Py4JError) as exc:
        raise task_error(exc, description=description) from exc
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]  # stub says str; None clears it


def run_tasks(
    spark: SparkSession,
    fn: Callable[[T], list[str]],
    payloads: Sequence[T],
    *,
    description: str = "delta maintenance",
    slices: int | None = None,
) -> list[list[str]]:
    """Run ``fn(payload)`` for every payload on the cluster; returns the string results per payload.

    ``fn`` must be a module-level function (importable on executors). A failed task fails the
    job; the error is re-raised typed (``task_error``): the executor's own ``DeltaError``, or
    ``RewriteTaskError`` naming the exception the executor raised.
    """
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    if not payloads:
        return []
    sc = spark.sparkContext
    k = default_slices(spark, len(payloads)) if slices is None else max(1, min(slices, len(payloads)))
    rows = [(i, payloads[i]) for i in _round_robin(len(payloads), k)]
    sc.setJobDescription(description)
    try:
        results = sc.parallelize(rows, numSlices=k).mapPartitions(_task_runner(fn)).collect()
    except (PySparkException, Py4JError) as exc:
        raise task_error(exc, description=description) from exc
    finally:
        sc.setJobDescription(None)  # type: ignore[arg-type]  # stub says str; None clears it
    out: list[list[str]] = [[] for _ in payloads]
    for task_id, result in results:
        out[task_id].append(result)
    return out


def _warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import importlib

    for module in ("delta_core.maintenance.spark.compaction", "delta_core.maintenance.spark.zorder"):
        importlib.import_module(module)  # the imports are what is being warmed
    yield from batches


def warm_up(spark: SparkSession) -> None:
    """Start the session's Python workers and import the maintenance code in them, so a timed
    operation measures the work, not interpreter start-up (used by the benchmarks)."""
    n = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize([(i, b"") for i in range(n * 2)], n * 2).toDF(TASK_SCHEMA) \
        .mapInArrow(_warm, TASK_SCHEMA).toArrow()


def resolve_spark(spark: Any) -> SparkSession:
    """``spark`` itself, or the session a zero-argument factory returns (so callers can defer
    starting Spark until an operation actually has work)."""
    if spark is not None and not hasattr(spark, "sparkContext") and callable(spark):
        return cast("SparkSession", spark())
    return cast("SparkSession", spark)  # quoted: imported only for type checking


def add_to_json(add: Add) -> str:
    return json.dumps(action_to_json(add), separators=(",", ":"))


def add_from_json(text: str) -> Add:
    action = action_from_json(json.loads(text))
    if not isinstance(action, Add):
        raise DeltaError(f"a Spark task returned {type(action).__name__} where an add was expected")
    return action


@contextmanager
def settled_on_failure(spark: SparkSession, *, timeout: float = SETTLE_SECONDS) -> Iterator[None]:
    """Run the block's Spark jobs in a job group of their own; if the block raises, return
    (re-raising) only once none of the group's tasks still runs, or after ``timeout`` seconds.
    A job fails as soon as one task fails while its other tasks may still be writing files: the
    caller deletes those files next, and a task finishing later would leave one behind."""
    sc = spark.sparkContext
    group = f"delta-maintenance-{uuid.uuid4().hex}"
    saved = {key: sc.getLocalProperty(key) for key in (_GROUP_KEY, _INTERRUPT_KEY)}
    # No thread interrupts: a task must stay running in Spark's eyes until its Python worker stops.
    sc.setJobGroup(group, group, interruptOnCancel=False)
    finished = False
    try:
        yield
        finished = True
    finally:
        for key, value in saved.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]  # None unsets it
        if not finished:
            _wait_for_group(sc, group, timeout)


def _wait_for_group(sc: Any, group: str, timeout: float) -> None:
    tracker = sc.statusTracker()
    deadline = time.monotonic() + timeout
    while True:
        running = 0
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                running += stage.numActiveTasks if stage is not None else 0
        if not running:
            return
        if time.monotonic() > deadline:
            log.warning("%d task(s) of failed job group %s still running after %.0f s", running, group, timeout)
            return
        time.sleep(0.1)
