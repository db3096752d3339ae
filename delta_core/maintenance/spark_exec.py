"""Running maintenance work on Spark: tasks as rows, executed with ``mapInArrow``.

Compaction needs no shuffle: the driver turns each bin into one row (a pickled payload holding
the picklable ``Storage``, the table ``Metadata`` and the file paths), parallelises the rows
round-robin over a few tasks per core (largest first, so the long bins start early and spread
evenly), and a ``mapInArrow``
function calls a plain Python function on each payload inside the executor. Results (``add``
actions as JSON) come back through ``toArrow()``. The same helper serves any "one task per
row" job (Z-order's file reads, parallel deletes).

pyspark is imported lazily; nothing in delta_core needs it at import time.
"""

from __future__ import annotations

import json
import logging
import pickle
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import pyarrow as pa

from delta_core.actions import Add, action_from_json, action_to_json
from delta_core.errors import DeltaError, MaintenanceError

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

TASK_SCHEMA = "task_id long, payload binary"
RESULT_SCHEMA = "task_id long, result string"
MAX_SLICES = 10_000
TASKS_PER_CORE = 4  # per-task overhead is ~0.1 s: a few waves balance load without paying it per file


def _task_runner(fn: Callable[[Any], list[str]]) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            ids = batch.column("task_id").to_pylist()
            payloads = batch.column("payload").to_pylist()
            for task_id, payload in zip(ids, payloads):
                results = fn(pickle.loads(payload))
                yield pa.RecordBatch.from_pydict(
                    {"task_id": [task_id] * len(results), "result": results},
                    schema=pa.schema([("task_id", pa.int64()), ("result", pa.string())]),
                )

    return run


def default_slices(spark: "SparkSession", n: int) -> int:
    """Task count for ``n`` payloads: a few waves over the cluster's cores, never more than ``n``."""
    return max(1, min(n, MAX_SLICES, spark.sparkContext.defaultParallelism * TASKS_PER_CORE))


def tasks_frame(spark: "SparkSession", payloads: Sequence[Any], *, slices: int | None = None) -> "DataFrame":
    """A DataFrame with one row per payload, spread over ``slices`` partitions round-robin (so
    payloads sorted largest first spread the big ones over all tasks)."""
    k = default_slices(spark, len(payloads)) if slices is None else max(1, min(slices, len(payloads)))
    order = [i for start in range(k) for i in range(start, len(payloads), k)]
    rows = [(i, pickle.dumps(payloads[i])) for i in order]
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
    """``frame.toArrow()``; a failed Spark job becomes ``MaintenanceError``."""
    from pyspark.errors import PySparkException
    from py4j.protocol import Py4JError

    spark = frame.sparkSession
    spark.sparkContext.setJobDescription(description)
    try:
        return frame.toArrow()
    except (PySparkException, Py4JError) as exc:
        raise MaintenanceError(f"{description} failed on Spark: {_first_line(exc)}") from exc
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
    job; the error is re-raised as ``MaintenanceError`` carrying the Spark message.
    """
    if not payloads:
        return []
    frame = tasks_frame(spark, payloads, slices=slices).mapInArrow(_task_runner(fn), RESULT_SCHEMA)
    table = collect_arrow(frame, description=description)
    out: list[list[str]] = [[] for _ in payloads]
    for task_id, result in zip(table.column("task_id").to_pylist(), table.column("result").to_pylist()):
        out[task_id].append(result)
    return out


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    # Spark wraps the Python traceback; the useful line is the last "...Error: message".
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "Error" in ln and ":" in ln:
            return ln.strip()[:2000]
    return lines[0][:2000] if lines else type(exc).__name__


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
