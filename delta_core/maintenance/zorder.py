"""Z-order (and Hilbert) clustering executed on Spark.

Per batch of partitions (``plan_zorder`` decides them):

1. *Sample* — one Spark task per input file reads only the clustering columns and returns an
   evenly spaced sample (about ``sample_rows`` rows overall); the driver cuts each column at
   ``2**bits`` quantiles (``curves.quantile_boundaries``).
2. *Key* — one task per file reads the whole file (pyarrow over storage) and appends two
   columns: ``__part`` (which partition the row belongs to) and ``__zkey`` (the curve key of its
   per-column range ids). Rows now go through Spark:
3. *Shuffle* — ``repartitionByRange(n, __part, __zkey)`` with ``n`` = input bytes / target size,
   then ``sortWithinPartitions``, so every Spark partition is one contiguous stretch of the curve.
4. *Write* — each Spark partition writes its rows, split where the partition changes (and at
   twice the average rows per file, against skew), as new files with full stats.
5. *Commit* — ``OPTIMIZE`` with ``zOrderBy`` in ``operationParameters``, ``dataChange=false``,
   under the same conflict rules as compaction (``rewrite_commit``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from delta_core.actions import Metadata
from delta_core.maintenance.compaction_plan import DEFAULT_BATCH_BYTES
from delta_core.maintenance.curves import curve_keys, quantile_boundaries, range_ids
from delta_core.maintenance.data_io import logical_data_schema, read_data_file, write_rewritten
from delta_core.maintenance.metrics import MetricsRecord, Stopwatch
from delta_core.maintenance.rewrite_commit import all_live, commit_rewrite, file_size_metrics
from delta_core.maintenance.spark_exec import add_from_json, add_to_json, collect_arrow, payload_frame
from delta_core.maintenance.zorder_plan import PartitionFiles, ZOrderPlan, plan_zorder
from delta_core.storage.base import Storage
from delta_core.table_features import check_write_supported

log = logging.getLogger(__name__)

__all__ = ["ZOrderMetrics", "ZOrderPlan", "plan_zorder", "zorder"]

PART_COL = "__part"
KEY_COL = "__zkey"
DEFAULT_SAMPLE_ROWS = 200_000


@dataclass(frozen=True, slots=True)
class ZOrderMetrics(MetricsRecord):
    version: int | None
    versions: tuple[int, ...]
    read_version: int
    columns: tuple[str, ...]
    curve: str
    target_size: int
    predicate: str | None
    partitions_optimized: int
    files_considered: int
    num_batches: int
    batches_committed: int
    batches_aborted: int
    num_removed_files: int
    num_added_files: int
    removed_bytes: int
    added_bytes: int
    duration_seconds: float


def _spark_schema(arrow_schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


def _sample_file(payload: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    """Spark task: evenly spaced rows of the clustering columns of one file."""
    data = read_data_file(payload["storage"], payload["path"], payload["metadata"])
    data = data.select(payload["columns"])
    k = min(data.num_rows, max(1, math.ceil(data.num_rows * payload["fraction"])))
    if data.num_rows:
        idx = np.unique(np.linspace(0, data.num_rows - 1, k).astype(np.int64))
        data = data.take(pa.array(idx))
    yield from data.to_batches()


def _keyed_reader(
    columns: Sequence[str], boundaries: Sequence[np.ndarray], bits: int, curve: str, out_schema: pa.Schema,
) -> Callable[[dict[str, Any]], Iterator[pa.RecordBatch]]:
    def read(payload: dict[str, Any]) -> Iterator[pa.RecordBatch]:
        data = read_data_file(payload["storage"], payload["path"], payload["metadata"])
        coords = [range_ids(data.column(c), b) for c, b in zip(columns, boundaries)]
        keys = curve_keys(curve, coords, bits).astype(np.int64) if data.num_rows else np.zeros(0, np.int64)
        data = data.append_column(PART_COL, pa.array(np.full(data.num_rows, payload["part"], np.int32)))
        data = data.append_column(KEY_COL, pa.array(keys, pa.int64()))
        yield from data.cast(out_schema).to_batches()

    return read


def _partition_writer(
    storage: Storage, metadata: Metadata, partition_values: Sequence[dict[str, str | None]], max_rows: int | None,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    out_schema = pa.schema([("result", pa.string())])

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        current: int | None = None

        def flush() -> Iterator[pa.RecordBatch]:
            nonlocal pending, pending_rows
            if pending_rows and current is not None:
                data = pa.Table.from_batches(pending).drop_columns([PART_COL, KEY_COL])
                add = write_rewritten(storage, data, metadata=metadata, partition_values=partition_values[current])
                yield pa.RecordBatch.from_pydict({"result": [add_to_json(add)]}, schema=out_schema)
            pending, pending_rows = [], 0

        for batch in batches:
            parts = batch.column(PART_COL).to_numpy(zero_copy_only=False)
            start = 0
            # Rows arrive sorted by (__part, __zkey): split the batch where __part changes.
            cuts = list(np.flatnonzero(parts[1:] != parts[:-1]) + 1) + [len(parts)]
            for end in cuts:
                piece = batch.slice(start, end - start)
                part = int(parts[start])
                if part != current:
                    yield from flush()
                    current = part
                offset = 0
                while offset < piece.num_rows:
                    room = piece.num_rows - offset if max_rows is None else max_rows - pending_rows
                    chunk = piece.slice(offset, room)
                    pending.append(chunk)
                    pending_rows += chunk.num_rows
                    offset += chunk.num_rows
                    if max_rows is not None and pending_rows >= max_rows:
                        yield from flush()
                start = end
        yield from flush()

    return write


def _run_batch(
    spark: Any, table: Any, snapshot: Any, plan: ZOrderPlan, batch: Sequence[PartitionFiles], *, sample_rows: int,
    label: str,
) -> list[Any]:
    metadata = snapshot.metadata
    data_schema = logical_data_schema(metadata)
    total_rows = sum(f.num_records or 0 for p in batch for f in p.files)
    fraction = 1.0 if total_rows <= sample_rows else sample_rows / total_rows
    file_payloads = [
        {"storage": table.storage, "metadata": metadata, "path": f.path, "part": i,
         "columns": list(plan.columns), "fraction": fraction}
        for i, p in enumerate(batch) for f in p.files
    ]
    sample_schema = pa.schema([data_schema.field(c) for c in plan.columns])
    sample = collect_arrow(payload_frame(spark, file_payloads, _sample_file, _spark_schema(sample_schema)),
                           description=f"{label}: sample")
    num_ranges = 2 ** plan.bits_per_column
    boundaries = [quantile_boundaries(sample.column(c), num_ranges) for c in plan.columns]
    keyed_schema = data_schema.append(pa.field(PART_COL, pa.int32())).append(pa.field(KEY_COL, pa.int64()))
    keyed_schema = pa.schema([f.with_nullable(True) for f in keyed_schema])
    reader = _keyed_reader(plan.columns, boundaries, plan.bits_per_column, plan.curve, keyed_schema)
    rows = payload_frame(spark, file_payloads, reader, _spark_schema(keyed_schema))
    n = plan.output_files(batch)
    max_rows = 2 * math.ceil(total_rows / n) if total_rows else None
    writer = _partition_writer(table.storage, metadata, [dict(p.partition_values) for p in batch], max_rows)
    shuffled = rows.repartitionByRange(n, PART_COL, KEY_COL).sortWithinPartitions(PART_COL, KEY_COL)
    result = collect_arrow(shuffled.mapInArrow(writer, "result string"), description=f"{label}: cluster and write")
    return [add_from_json(r) for r in result.column("result").to_pylist()]


def zorder(
    table: Any,
    spark: Any,
    columns: Sequence[str],
    *,
    curve: str = "zorder",
    where: str | None = None,
    target_size: int | None = None,
    batch_size_bytes: int = DEFAULT_BATCH_BYTES,
    sample_rows: int = DEFAULT_SAMPLE_ROWS,
) -> ZOrderMetrics:
    """Cluster ``table``'s selected partitions along a Z-order (or Hilbert) curve over ``columns``."""
    watch = Stopwatch()
    snapshot = table.snapshot()
    check_write_supported(snapshot.protocol, snapshot.metadata, rewrite_only=True, path=table.uri,
                          version=snapshot.version)
    plan = plan_zorder(snapshot, columns, curve=curve, where=where, target_size=target_size)
    batches = plan.batches(batch_size_bytes)
    log.info("table=%s version=%d %s on %s: %d files in %d partitions, %d batch(es)", table.uri,
             snapshot.version, curve, ",".join(plan.columns), plan.num_input_files, len(plan.partitions),
             len(batches))
    versions: list[int] = []
    removed_files = added_files = removed_bytes = added_bytes = aborted = 0
    current = snapshot
    for index, batch in enumerate(batches, 1):
        if index > 1:
            current = table.snapshot()
            batch = tuple(p for p in batch if all_live(current, p.paths))
            if not batch:
                continue
        label = f"{curve} batch {index}/{len(batches)} of {table.uri}"
        adds = _run_batch(spark, table, current, plan, batch, sample_rows=sample_rows, label=label)
        inputs = [path for p in batch for path in p.paths]
        in_bytes = sum(p.total_size for p in batch)
        out_bytes = sum(a.size for a in adds)
        metrics = {
            "numRemovedFiles": len(inputs), "numAddedFiles": len(adds),
            "numRemovedBytes": in_bytes, "numAddedBytes": out_bytes, **file_size_metrics(adds),
            "numBatches": 1, "totalConsideredFiles": plan.files_considered, "totalFilesSkipped": 0,
            "numDeletionVectorsRemoved": 0, "preserveInsertionOrder": False,
        }
        outcome = commit_rewrite(table, current, input_paths=inputs, adds=adds,
                                 operation_parameters=plan.operation_parameters(), operation_metrics=metrics)
        if outcome.version is None:
            aborted += 1
            log.warning("table=%s %s not committed: %s", table.uri, label, outcome.reason)
            continue
        versions.append(outcome.version)
        removed_files += len(inputs)
        added_files += len(adds)
        removed_bytes += in_bytes
        added_bytes += out_bytes
        log.info("table=%s version=%d %s committed: %d -> %d files", table.uri, outcome.version, label,
                 len(inputs), len(adds))
    return ZOrderMetrics(
        version=versions[-1] if versions else None, versions=tuple(versions), read_version=snapshot.version,
        columns=plan.columns, curve=plan.curve, target_size=plan.target_size, predicate=plan.predicate,
        partitions_optimized=len(plan.partitions), files_considered=plan.files_considered,
        num_batches=len(batches), batches_committed=len(versions), batches_aborted=aborted,
        num_removed_files=removed_files, num_added_files=added_files, removed_bytes=removed_bytes,
        added_bytes=added_bytes, duration_seconds=watch.seconds(),
    )
