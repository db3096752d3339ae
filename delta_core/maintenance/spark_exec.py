"""Running maintenance work on Spark: tasks as rows, executed with ``mapInArrow``.

Compaction needs no shuffle: the driver turns each bin into one row (a pickled payload holding
the picklable ``Storage``, the table ``Metadata`` and the file paths), parallelises the rows
one per Spark partition (largest first, so the long bins start early), and a ``mapInArrow``
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


def tasks_frame(spark: "SparkSession", payloads: Sequence[Any]) -> "DataFrame":
    """A DataFrame with one row per payload, one row per partition (up to ``MAX_SLICES``)."""
    rows = [(i, pickle.dumps(p)) for i, p in enumerate(payloads)]
    slices = max(1, min(len(rows), MAX_SLICES))
    return spark.sparkContext.parallelize(rows, numSlices=slices).toDF(TASK_SCHEMA)


def payload_frame(
    spark: "SparkSession",
    payloads: Sequence[Any],
    fn: Callable[[Any], Iterator[pa.RecordBatch]],
    schema: Any,
) -> "DataFrame":
    """A DataFrame of the record batches ``fn(payload)`` yields for every payload (lazy).

    ``schema`` is the Spark schema of the batches (``StructType`` or DDL string).
    """

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column("payload").to_pylist():
                yield from fn(pickle.loads(payload))

    return tasks_frame(spark, payloads).mapInArrow(run, schema)


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
) -> list[list[str]]:
    """Run ``fn(payload)`` for every payload on the cluster; returns the string results per payload.

    ``fn`` must be a module-level function (importable on executors). A failed task fails the
    job; the error is re-raised as ``MaintenanceError`` carrying the Spark message.
    """
    if not payloads:
        return []
    frame = tasks_frame(spark, payloads).mapInArrow(_task_runner(fn), RESULT_SCHEMA)
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


def add_to_json(add: Add) -> str:
    return json.dumps(action_to_json(add), separators=(",", ":"))


def add_from_json(text: str) -> Add:
    action = action_from_json(json.loads(text))
    if not isinstance(action, Add):
        raise DeltaError(f"a Spark task returned {type(action).__name__} where an add was expected")
    return action
