"""Running maintenance work on Spark: one Python call per payload, spread over tasks.

The driver turns each unit of work into a payload (a frozen dataclass defined next to its
operation, e.g. ``CompactBinTask``: the picklable ``Storage``, the table ``Metadata`` and the
file paths). ``tasks_frame`` makes a DataFrame of one row per pickled payload and
``payload_frame`` maps it with ``mapInArrow``: the DataFrame API only, no RDD and no
SparkContext, so the same code runs on a classic session (``local[*]``, ``spark://``, YARN,
Kubernetes) and over Spark Connect (``sc://``), where the client has no JVM at all.
``run_tasks`` runs a function returning strings (``add`` actions as JSON) per payload and
collects them; Z-order feeds ``payload_frame``'s rows on into a shuffle.

Payloads are dealt round-robin over a few tasks per core (callers pass them largest first, so
the long ones start early and the waves stay even): payload ``i`` goes to slice ``i % k`` and
the frame is range-partitioned on the slice number (a small sampling job over the local rows,
then exactly one slice per partition, on a classic session and over Connect alike).

``settled_on_failure`` tags the block's jobs (``SparkSession.addTag``, on both kinds of
session) and makes a failed block wait until Spark has killed the job's other Python workers,
so that what they wrote can be deleted.

pyspark is imported lazily; nothing in delta_core needs it at import time.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import pyarrow as pa

from delta_core.errors import DeltaError
from delta_core.maintenance.spark.task_errors import task_error
from delta_core.model.actions import Add, action_from_json, action_to_json

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


SLOT_COL = "slot"
TASK_SCHEMA = "slot int, task_id long, payload binary"
RESULT_SCHEMA = "task_id long, result string"
MAX_SLICES = 10_000
TASKS_PER_CORE = 4  # per-task overhead is ~0.1 s: a few waves balance load without paying it per file
# Cores assumed when neither spark.default.parallelism, a local[N] master, spark.cores.max nor
# spark.executor.instances says how many the application has (e.g. dynamic allocation).
FALLBACK_CORES = 4
# How long a failed block may wait for its other tasks to stop before its files are deleted.
SETTLE_SECONDS = 60.0
# Spark's Python runner polls for a killed task every 2 s, then waits spark.python.task.killTimeout
# before it destroys the task's Python worker (PythonRunner's MonitorThread).
_KILL_POLL_SECONDS = 2.0
_KILL_MARGIN_SECONDS = 1.0
_LOCAL_MASTER = re.compile(r"^local(?:\[(?P<n>\*|\d+)(?:,\s*\d+)?\])?$")
T = TypeVar("T")  # a task payload: a frozen, picklable dataclass of the operation's own


def _conf(spark: SparkSession, key: str) -> str | None:
    value = spark.conf.get(key, None)
    return value or None


def cluster_cores(spark: SparkSession) -> int:
    """How many tasks the application runs at once, from its configuration alone (a Spark
    Connect client has no SparkContext to ask for ``defaultParallelism``)."""
    parallelism = _conf(spark, "spark.default.parallelism")
    if parallelism is not None:
        return max(1, int(parallelism))
    local = _LOCAL_MASTER.match(_conf(spark, "spark.master") or "")
    if local is not None:
        n = local.group("n")
        return (os.cpu_count() or 1) if n == "*" else int(n or 1)
    cores_max = _conf(spark, "spark.cores.max")
    if cores_max is not None:
        return max(1, int(cores_max))
    instances = _conf(spark, "spark.executor.instances")
    if instances is not None:
        return max(1, int(instances) * int(_conf(spark, "spark.executor.cores") or 1))
    return FALLBACK_CORES


def default_slices(spark: SparkSession, n: int) -> int:
    """Task count for ``n`` payloads: a few waves over the cluster's cores, never more than ``n``."""
    return max(1, min(n, MAX_SLICES, cluster_cores(spark) * TASKS_PER_CORE))


def tasks_frame(spark: SparkSession, payloads: Sequence[T], *, slices: int | None = None) -> DataFrame:
    """A DataFrame with one row per payload (``slot``, ``task_id``, pickled ``payload``), payload
    ``i`` in slice ``i % slices`` and every slice one partition (so payloads sorted largest
    first spread the big ones over all tasks)."""
    n = len(payloads)
    k = default_slices(spark, n) if slices is None else max(1, min(slices, n))
    frame = spark.createDataFrame(pa.table({
        SLOT_COL: pa.array([i % k for i in range(n)], pa.int32()),
        "task_id": pa.array(range(n), pa.int64()),
        "payload": pa.array([pickle.dumps(p) for p in payloads], pa.binary()),
    }))
    # Spark splits a local relation its own way (in one partition when small); range
    # partitioning on the slot gives one slice per partition (AQE keeps an explicit count).
    return frame.repartitionByRange(k, SLOT_COL) if k > 1 else frame


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


def _job_tag(description: str) -> str:
    """A Spark job tag naming the work (tags may not hold commas; shown in the Spark UI)."""
    return re.sub(r"[^\w.:/=-]+", "_", description).strip("_")[:200] or "delta-maintenance"


def collect_arrow(frame: DataFrame, *, description: str) -> pa.Table:
    """``frame.toArrow()``, its jobs tagged with ``description``; a failed Spark job becomes a
    typed error (``task_error``)."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    spark = frame.sparkSession
    tag = _job_tag(description)
    spark.addTag(tag)
    try:
        return frame.toArrow()
    except (PySparkException, Py4JError) as exc:
        raise task_error(exc, description=description) from exc
    finally:
        spark.removeTag(tag)


@dataclass(frozen=True, slots=True)
class _Numbered(Generic[T]):
    """A payload with its index in the caller's list, so results come back in the caller's order."""

    index: int
    payload: T


def _numbered_runner(fn: Callable[[T], list[str]]) -> Callable[[_Numbered[T]], Iterator[pa.RecordBatch]]:
    schema = pa.schema([("task_id", pa.int64()), ("result", pa.string())])

    def run(numbered: _Numbered[T]) -> Iterator[pa.RecordBatch]:
        results = fn(numbered.payload)
        yield pa.record_batch([pa.array([numbered.index] * len(results), pa.int64()),
                               pa.array(results, pa.string())], schema=schema)

    return run


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
    if not payloads:
        return []
    frame = payload_frame(spark, [_Numbered(i, p) for i, p in enumerate(payloads)], _numbered_runner(fn),
                          RESULT_SCHEMA, slices=slices)
    table = collect_arrow(frame, description=description)
    out: list[list[str]] = [[] for _ in payloads]
    for task_id, result in zip(table.column("task_id").to_pylist(), table.column("result").to_pylist()):
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
    n = cluster_cores(spark) * 2
    tasks_frame(spark, [b""] * n, slices=n).mapInArrow(_warm, TASK_SCHEMA).toArrow()


def resolve_spark(spark: Any) -> SparkSession:
    """``spark`` itself, or the session a zero-argument factory returns (so callers can defer
    starting Spark until an operation actually has work)."""
    # A session is never callable; a Connect session's sparkContext raises, so test for a factory.
    if spark is not None and callable(spark) and not hasattr(spark, "createDataFrame"):
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
    """Run the block's Spark jobs under a tag of their own; if the block raises, interrupt what
    still runs under the tag and return (re-raising) only once Spark has killed the failed
    job's Python workers, or after ``timeout`` seconds.

    A job fails as soon as one task fails while its other tasks may still be writing files: the
    caller deletes those files next, and a task finishing later would leave one behind. Neither a
    Spark Connect client nor the DataFrame API can see running tasks, so the wait is what Spark
    itself allows a killed Python task: its runner notices the kill within one poll, then waits
    ``spark.python.task.killTimeout`` before destroying the worker."""
    tag = f"delta-maintenance-{uuid.uuid4().hex}"
    spark.addTag(tag)
    finished = False
    try:
        yield
        finished = True
    finally:
        spark.removeTag(tag)
        if not finished:
            spark.interruptTag(tag)  # a job of the block that is still running, if any
            time.sleep(min(timeout, _settle_seconds(spark)))


def _settle_seconds(spark: SparkSession) -> float:
    kill_timeout = _seconds(_conf(spark, "spark.python.task.killTimeout") or "2s")
    return _KILL_POLL_SECONDS + kill_timeout + _KILL_MARGIN_SECONDS


def _seconds(text: str) -> float:
    """A Spark time string (``2s``, ``500ms``, ``1min``; bare numbers are seconds) in seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min|h)?\s*", text)
    if match is None:
        raise DeltaError(f"cannot read the Spark duration {text!r}: use e.g. '2s' or '500ms'")
    value, unit = float(match.group(1)), match.group(2) or "s"
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}[unit]
