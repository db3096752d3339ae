"""Running maintenance work on Spark: one Python call per payload, spread over tasks.

Compaction needs no shuffle: the driver turns each bin into a payload (the picklable
``Storage``, the table ``Metadata`` and the file paths) and ``run_tasks`` runs a plain Python
function on each payload inside the executors, through the RDD API: one Python stage, no
DataFrame conversions, no Arrow round trip for a handful of small results (``add`` actions as
JSON), which keeps the fixed cost of a job low. Payloads are spread round-robin over a few
tasks per core (callers pass them largest first, so the long bins start early and the waves
stay even). ``payload_frame`` is the DataFrame flavour (``mapInArrow``) for work whose rows must
go on through Spark (Z-order's file reads feed a shuffle).

pyspark is imported lazily; nothing in delta_core needs it at import time.
"""

from __future__ import annotations

import json
import logging
import pickle
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa

from delta_core.actions import Add, action_from_json, action_to_json
from delta_core.errors import DeltaError
from delta_core.maintenance.task_errors import task_error

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

TASK_SCHEMA = "task_id long, payload binary"
MAX_SLICES = 10_000
TASKS_PER_CORE = 4  # per-task overhead is ~0.1 s: a few waves balance load without paying it per file


def _task_runner(fn: Callable[[Any], list[str]]) -> Callable[[Iterator[tuple[int, Any]]], Iterator[tuple[int, str]]]:
    def run(rows: Iterator[tuple[int, Any]]) -> Iterator[tuple[int, str]]:
        for task_id, payload in rows:
            for result in fn(payload):
                yield task_id, result

    return run


def default_slices(spark: "SparkSession", n: int) -> int:
    """Task count for ``n`` payloads: a few waves over the cluster's cores, never more than ``n``."""
    return max(1, min(n, MAX_SLICES, spark.sparkContext.defaultParallelism * TASKS_PER_CORE))


def _round_robin(n: int, k: int) -> list[int]:
    """Indexes ``0..n-1`` ordered so that ``parallelize(..., k)``'s contiguous slices deal them out
    round-robin: slice ``j`` gets ``j, j+k, j+2k, ...``."""
    return [i for start in range(k) for i in range(start, n, k)]


def tasks_frame(spark: "SparkSession", payloads: Sequence[Any], *, slices: int | None = None) -> "DataFrame":
    """A DataFrame with one row per payload, spread over ``slices`` partitions round-robin (so
    payloads sorted largest first spread the big ones over all tasks)."""
    k = default_slices(spark, len(payloads)) if slices is None else max(1, min(slices, len(payloads)))
    rows = [(i, pickle.dumps(payloads[i])) for i in _round_robin(len(payloads), k)]
    return spark.sparkContext.parallelize(rows, numSlices=k).toDF(TASK_SCHEMA)


def payload_frame(
    spark: "SparkSession",
    payloads: Sequence[Any],
    fn: Callable[[Any], Iterator[pa.RecordBatch]],
    schema: Any,
    *,
    slices: int | None = None,
) -> "DataFrame":
    """A DataFrame of the record batches ``fn(payload)`` yields for every payload (lazy).

    ``schema`` is the Spark schema of the batches (``StructType`` or DDL string).
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                yield from fn(pickle.loads(payload))

    return tasks_frame(spark, payloads, slices=slices).mapInArrow(run, schema)


def collect_arrow(frame: "DataFrame", *, description: str) -> pa.Table:
    """``frame.toArrow()``; a failed Spark job becomes a typed error (``task_error``)."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JError

    spark = frame.sparkSession
    spark.sparkContext.setJobDescription(description)
    try:
        return frame.toArrow()
    except (PySparkException, Py4JError) as exc:
        raise task_error(exc, description=description) from exc
    finally:
        spark.sparkContext.setJobDescription(None)


def run_tasks(
    spark: "SparkSession",
    fn: Callable[[Any], list[str]],
    payloads: Sequence[Any],
    *,
    description: str = "delta maintenance",
    slices: int | None = None,
) -> list[list[str]]:
    """Run ``fn(payload)`` for every payload on the cluster; returns the string results per payload.

    ``fn`` must be a module-level function (importable on executors). A failed task fails the
    job; the error is re-raised typed (``task_error``): the executor's own ``DeltaError``, or
    ``RewriteTaskError`` naming the exception the executor raised.
    """
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JError

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
        sc.setJobDescription(None)
    out: list[list[str]] = [[] for _ in payloads]
    for task_id, result in results:
        out[task_id].append(result)
    return out


def _warm(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import importlib

    for module in ("delta_core.maintenance.compaction", "delta_core.maintenance.zorder"):
        importlib.import_module(module)  # the imports are what is being warmed
    yield from batches


def warm_up(spark: "SparkSession") -> None:
    """Start the session's Python workers and import the maintenance code in them, so a timed
    operation measures the work, not interpreter start-up (used by the benchmarks)."""
    n = spark.sparkContext.defaultParallelism
    spark.sparkContext.parallelize([(i, b"") for i in range(n * 2)], n * 2).toDF(TASK_SCHEMA) \
        .mapInArrow(_warm, TASK_SCHEMA).toArrow()


def resolve_spark(spark: Any) -> "SparkSession":
    """``spark`` itself, or the session a zero-argument factory returns (so callers can defer
    starting Spark until an operation actually has work)."""
    if spark is not None and not hasattr(spark, "sparkContext") and callable(spark):
        return spark()
    return spark


def add_to_json(add: Add) -> str:
    return json.dumps(action_to_json(add), separators=(",", ":"))


def add_from_json(text: str) -> Add:
    action = action_from_json(json.loads(text))
    if not isinstance(action, Add):
        raise DeltaError(f"a Spark task returned {type(action).__name__} where an add was expected")
    return action
