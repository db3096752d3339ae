"""The curve task executor: rows of a batch of partitions re-laid along a space-filling curve.

Z-order and Hilbert rewrites (``zorder``) and liquid clustering (``cluster``, and ``compact`` on
a clustered table) run here, on a ``ZOrderPlan``. Per batch of partitions:

1. *Sample* — one Spark task per input file reads only the clustering columns (column
   projection; every read here applies the file's deletion vector, PROTOCOL.md "Deletion
   Vectors", so deleted rows are neither sampled nor written) and returns evenly spaced rows
   (about ``sample_rows`` overall). On the driver, ``layout_from_sample`` cuts each column at
   ``2**bits`` quantiles (range ids), computes the sample's curve keys, and cuts each
   partition's keys into as many equal-count stretches as it gets output files (input bytes /
   target size): one output file per stretch. A file whose stats cannot stand in the rewrite's
   proof is read whole here and summarised (``InputSummary``). Then, before anything is
   written, the inputs must still be live in the table's latest version
   (``rewrite_commit.ensure_inputs_live``): a batch that a writer's commit made stale stops.
2. *Key* — one task per file reads the whole file (pyarrow over storage), computes each row's
   curve key (of its range ids) and output file, sorts the rows by key and packs each output
   file's run as Arrow IPC bytes (``ipc_chunks``): one Spark row per run, not per data row, so
   rows never convert to Spark's row format and back.
3. *Shuffle* — ``repartition(n, __file)`` then ``sortWithinPartitions(__file)`` over those few
   packed runs; the target file of every row is already known, so no range-partitioner
   sampling pass runs.
4. *Write* — each Spark partition unpacks one output file's runs at a time, sorts its rows by
   key (merging the sorted runs) and writes the file, full stats, unless a commit since the
   batch's snapshot removed one of its inputs (``rewrite_commit.InputWatch``): then the task
   stops, the batch writes nothing more and is re-planned.

A Z-order plan's output in each partition forms a new ZCube (``ZCUBE_ID``, one UUID per
partition and batch; ``ZCUBE_ZORDER_BY``, the columns), so the next incremental run leaves it
alone. A liquid clustering executor (``CurveRewrite.liquid``) also tags every new file as PROTOCOL.md
"Clustered Table" asks (``clusteringProvider: "liquid"``) and as Delta Spark groups its own
clustered files (``ZCUBE_ID``, one UUID per run; ``ZCUBE_ZORDER_BY``, the columns), so Delta
Spark's next OPTIMIZE counts them as clustered.
"""

from __future__ import annotations

import itertools
import logging
import math
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.curves import curve_keys, quantile_boundaries, range_ids
from delta_core.maintenance.data_io import (
    DataFileReader,
    logical_data_schema,
    rewrite_output_key,
    write_rewritten,
)
from delta_core.maintenance.file_groups import FileGroup
from delta_core.maintenance.input_summary import SummarisingReader, paths_to_summarise
from delta_core.maintenance.ipc_chunks import pack, unpack
from delta_core.maintenance.metrics import Stopwatch
from delta_core.maintenance.rewrite_commit import InputWatch, RewriteOutput, deletion_vectors, ensure_inputs_live
from delta_core.maintenance.spark.tasks import (
    add_from_json,
    add_to_json,
    collect_arrow,
    default_slices,
    payload_frame,
)
from delta_core.maintenance.zorder_plan import ZOrderPlan
from delta_core.model.actions import Add, DeletionVectorDescriptor, Metadata
from delta_core.model.clustering import LIQUID_PROVIDER, ZCUBE_ID_TAG, ZCUBE_ZORDER_BY_TAG, zcube_tags
from delta_core.model.schema import StructType
from delta_core.storage.base import Storage
from delta_core.write.data_writer import table_schema
from delta_core.write.materialized_partitions import stores_partition_columns
from delta_core.write.rewrite_proof import InputSummary
from delta_core.write.row_tracking import FileRowIds, input_row_ids, preserved_tags

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.cluster_plan import ClusterPlan

log = logging.getLogger(__name__)

PART_COL = "__part"
FILE_COL = "__file"
KEY_COL = "__zkey"
SUMMARY_COL = "__summary"
ROWS_COL = "__rows"
# What the key tasks hand to the shuffle: an output file id and some of its rows, packed.
PACKED_SCHEMA = pa.schema([pa.field(FILE_COL, pa.int32()), pa.field(ROWS_COL, pa.binary())])
BATCH_BYTES = 64 * 1024 * 1024  # packed rows per Arrow batch a key task hands to Spark
DEFAULT_SAMPLE_ROWS = 200_000


@dataclass(frozen=True, slots=True)
class ZOrderFileTask:
    """One input file for the sample and key tasks (pickled to the executor): the table's
    ``storage`` (with its own options only), its ``metadata``, the file's ``path`` (as in the
    log) and ``size``, the index ``part`` of its table partition in the batch, the clustering
    ``columns``, the ``fraction`` of rows to sample, whether to ``summarise`` it, and its
    ``deletion_vector`` (``None``: none), its ``row_ids`` when rows' stable ids must be kept
    (row tracking), and the table's ``schema`` (``table_schema(metadata)``, parsed once on the
    driver; ``None``: parsed here)."""

    storage: Storage
    metadata: Metadata
    path: str
    size: int
    part: int
    columns: tuple[str, ...]
    fraction: float
    summarise: bool
    deletion_vector: DeletionVectorDescriptor | None = None
    row_ids: FileRowIds | None = None
    schema: StructType | None = None


@dataclass(frozen=True, slots=True)
class CurveLayout:
    """Everything a task needs to place a row: per-column quantile cuts, and per table partition
    the curve-key cuts between its output files (``file_offsets[p]`` is its first file id)."""

    columns: tuple[str, ...]
    curve: str
    bits: int
    value_cuts: tuple[np.ndarray, ...]
    key_cuts: tuple[np.ndarray, ...]
    file_offsets: tuple[int, ...]

    @property
    def num_files(self) -> int:
        return self.file_offsets[-1] + len(self.key_cuts[-1]) + 1 if self.key_cuts else 0

    def keys(self, data: pa.Table) -> np.ndarray:
        coords = [range_ids(data.column(c), b) for c, b in zip(self.columns, self.value_cuts)]
        if not data.num_rows:
            return np.zeros(0, np.uint64)
        return curve_keys(self.curve, coords, self.bits)

    def file_ids(self, part: int, keys: np.ndarray) -> np.ndarray:
        cuts = self.key_cuts[part]
        return (self.file_offsets[part] + np.searchsorted(cuts, keys, side="right")).astype(np.int32)


def layout_from_sample(
    sample: pa.Table, *, columns: Sequence[str], curve: str, bits: int, files_per_partition: Sequence[int],
) -> CurveLayout:
    """Cut each column at ``2**bits`` quantiles of the sample, then each partition's sampled curve
    keys into ``files_per_partition[p]`` equal-count stretches (one output file each). Pure."""
    value_cuts = tuple(quantile_boundaries(sample.column(c), 2 ** bits) for c in columns)
    parts = sample.column(PART_COL).to_numpy(zero_copy_only=False) if sample.num_rows else np.zeros(0, np.int32)
    coords = [range_ids(sample.column(c), b) for c, b in zip(columns, value_cuts)]
    keys = curve_keys(curve, coords, bits) if sample.num_rows else np.zeros(0, np.uint64)
    key_cuts: list[np.ndarray] = []
    offsets: list[int] = []
    next_id = 0
    for p, n_files in enumerate(files_per_partition):
        own = np.sort(keys[parts == p])
        if n_files > 1 and len(own):
            cuts = np.unique(own[(np.arange(1, n_files) * len(own)) // n_files])
        else:
            cuts = np.zeros(0, np.uint64)
        offsets.append(next_id)
        key_cuts.append(cuts)
        next_id += len(cuts) + 1
    return CurveLayout(tuple(columns), curve, bits, value_cuts, tuple(key_cuts), tuple(offsets))


def _spark_schema(arrow_schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)


def _sample_file(task: ZOrderFileTask) -> Iterator[pa.RecordBatch]:
    """Spark task: evenly spaced rows of the clustering columns of one file, with its partition.

    A file to ``summarise`` (its stats cannot stand in the rewrite's proof) is read whole and one
    more row carries its ``InputSummary`` in ``__summary``."""
    summary = None
    if task.summarise:
        reader = SummarisingReader(task.storage, task.metadata, summarise=[task.path], schema=task.schema)
        data = reader.read(task.path, size=task.size, deletion_vector=task.deletion_vector)
        summary = reader.summaries()[0].to_json()
    else:
        data = DataFileReader(task.storage, task.metadata, columns=task.columns, schema=task.schema).read(
            task.path, size=task.size, deletion_vector=task.deletion_vector)
    data = data.select(list(task.columns))
    k = min(data.num_rows, max(1, math.ceil(data.num_rows * task.fraction)))
    if data.num_rows:
        idx = np.unique(np.linspace(0, data.num_rows - 1, k).astype(np.int64))
        data = data.take(pa.array(idx))
    data = data.append_column(PART_COL, pa.array(np.full(data.num_rows, task.part, np.int32)))
    data = data.append_column(SUMMARY_COL, pa.nulls(data.num_rows, pa.string()))
    yield from data.to_batches()
    if summary is not None:
        row = {f.name: pa.nulls(1, f.type) for f in data.schema}
        row[SUMMARY_COL] = pa.array([summary], pa.string())
        yield pa.RecordBatch.from_pydict(row, schema=data.schema)


def _packed_batch(file_ids: Sequence[int], chunks: Sequence[bytes]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({FILE_COL: pa.array(file_ids, pa.int32()), ROWS_COL: pa.array(chunks, pa.binary())},
                                      schema=PACKED_SCHEMA)


def _keyed_reader(layout: CurveLayout) -> Callable[[ZOrderFileTask], Iterator[pa.RecordBatch]]:
    def read(task: ZOrderFileTask) -> Iterator[pa.RecordBatch]:
        row_ids = None if task.row_ids is None else {task.path: task.row_ids}
        data = DataFileReader(task.storage, task.metadata, row_ids=row_ids, schema=task.schema).read(
            task.path, size=task.size, deletion_vector=task.deletion_vector)
        keys = layout.keys(data)
        # Within one table partition the file id grows with the key, so sorting by key also
        # groups the rows by output file: each file's rows leave as a few packed, sorted runs.
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        data = data.take(pa.array(order)).append_column(KEY_COL, pa.array(keys.astype(np.int64), pa.int64()))
        ids = layout.file_ids(task.part, keys)
        bounds = [0, *(np.flatnonzero(ids[1:] != ids[:-1]) + 1).tolist(), len(ids)]
        # Runs leave in Arrow batches of up to BATCH_BYTES, not one batch per run: every batch
        # costs a message and a reader on the JVM side, and a file has a run per output file.
        file_ids: list[int] = []
        chunks: list[bytes] = []
        size = 0
        for lo, hi in zip(bounds, bounds[1:]):
            for chunk in pack(data.slice(lo, hi - lo)):
                file_ids.append(int(ids[lo]))
                chunks.append(chunk)
                size += len(chunk)
                if size >= BATCH_BYTES:
                    yield _packed_batch(file_ids, chunks)
                    file_ids, chunks, size = [], [], 0
        if chunks:
            yield _packed_batch(file_ids, chunks)

    return read


def _file_writer(
    storage: Storage, metadata: Metadata, schema: StructType, partition_of_file: Sequence[dict[str, str | None]],
    keys: Sequence[str], watch: InputWatch, *, partition_columns: bool,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    out_schema = pa.schema([("result", pa.string())])

    def runs(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, bytes]]:
        for batch in batches:
            yield from zip(batch.column(FILE_COL).to_pylist(), batch.column(ROWS_COL).to_pylist())

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # Packed runs arrive grouped by file id; a file's runs are each sorted by key, so one
        # sort of the file's rows merges them. A task holds one output file's rows at a time.
        for file_id, run in itertools.groupby(runs(batches), key=lambda r: r[0]):
            rows = unpack(chunk for _, chunk in run)
            order = np.argsort(rows.column(KEY_COL).to_numpy(), kind="stable")
            rows = rows.take(pa.array(order)).drop_columns([KEY_COL])
            watch.check()  # no file for a batch a writer made stale meanwhile
            add = write_rewritten(storage, rows, metadata=metadata, schema=schema,
                                  partition_values=partition_of_file[file_id],
                                  key=keys[file_id], partition_columns=partition_columns)
            yield pa.RecordBatch.from_pydict({"result": [add_to_json(add)]}, schema=out_schema)

    return write


def input_records(snapshot: Snapshot, paths: Sequence[str]) -> int:
    """The rows of the input files ``paths`` by their ``numRecords`` (0 for a file without it),
    read here rather than carried by the plan, which reads no statistics."""
    files = snapshot.file_columns("path", "num_records")
    wanted = pc.is_in(files.column("path"), value_set=pa.array(list(paths), pa.string()))
    return int(pc.sum(files.column("num_records").filter(wanted)).as_py() or 0)


def _run_batch(
    spark: SparkSession, table: DeltaTable, snapshot: Snapshot, plan: ZOrderPlan, batch: Sequence[FileGroup], *,
    sample_rows: int, label: str, outputs: list[str],
) -> RewriteOutput:
    """One Z-order batch (the module docstring's steps 1-4); the key of every output file is
    chosen here and recorded in ``outputs`` before any task writes, so a failed batch can be
    cleaned up without listing the table."""
    metadata = snapshot.metadata
    schema = table_schema(metadata)  # parsed once for the batch, shipped with every task
    inputs = [path for p in batch for path in p.paths]
    row_ids = input_row_ids(snapshot, inputs)
    # rows carry their stable row ids through the shuffle in the hidden row tracking columns
    data_schema = logical_data_schema(metadata, row_tracking=row_ids is not None, schema=schema)
    total_rows = input_records(snapshot, inputs)
    fraction = 1.0 if total_rows <= sample_rows else sample_rows / total_rows
    summarise = paths_to_summarise(snapshot, inputs)
    dvs = deletion_vectors(snapshot, inputs)
    file_tasks = [
        ZOrderFileTask(storage=table.storage, metadata=metadata, path=f.path, size=f.size, part=i,
                       columns=tuple(plan.columns), fraction=fraction, summarise=f.path in summarise,
                       deletion_vector=dvs.get(f.path),
                       row_ids=None if row_ids is None else row_ids[f.path], schema=schema)
        for i, p in enumerate(batch) for f in sorted(p.files, key=lambda f: -f.size)
    ]
    sample_schema = pa.schema([data_schema.field(c).with_nullable(True) for c in plan.columns]
                              + [pa.field(PART_COL, pa.int32()), pa.field(SUMMARY_COL, pa.string())])
    watch = Stopwatch()
    sampled = collect_arrow(payload_frame(spark, file_tasks, _sample_file, _spark_schema(sample_schema)),
                            description=f"{label}: sample")
    is_summary = pc.is_valid(sampled.column(SUMMARY_COL))
    summaries = [InputSummary.from_json(t) for t in sampled.filter(is_summary).column(SUMMARY_COL).to_pylist()]
    sample = sampled.filter(pc.invert(is_summary)).drop_columns([SUMMARY_COL])
    files_per_partition = [plan.output_files([p]) for p in batch]
    layout = layout_from_sample(sample, columns=plan.columns, curve=plan.curve, bits=plan.bits_per_column,
                                files_per_partition=files_per_partition)
    # The sample read every input: if a writer removed one meanwhile, the batch would only lose
    # its commit, so it stops here, before anything is written, and is re-planned.
    ensure_inputs_live(table, snapshot, inputs, label=label)
    rows = payload_frame(spark, file_tasks, _keyed_reader(layout), _spark_schema(PACKED_SCHEMA))
    partition_of_file: list[dict[str, str | None]] = []
    for p, cuts in zip(batch, layout.key_cuts):
        partition_of_file.extend([dict(p.partition_values)] * (len(cuts) + 1))
    keys = [rewrite_output_key(metadata, values, schema=schema) for values in partition_of_file]
    outputs.extend(keys)
    writer = _file_writer(table.storage, metadata, schema, partition_of_file, keys,
                          InputWatch(table.storage, snapshot.version, frozenset(inputs)),
                          partition_columns=stores_partition_columns(snapshot.protocol, metadata))
    # A few files per Spark partition: the writer splits on __file, and fewer, larger tasks
    # avoid paying the per-task Python overhead once per output file.
    shuffle_parts = max(1, min(layout.num_files, default_slices(spark, layout.num_files)))
    shuffled = rows.repartition(shuffle_parts, FILE_COL).sortWithinPartitions(FILE_COL)
    sampled_at = watch.seconds()
    result = collect_arrow(shuffled.mapInArrow(writer, "result string"), description=f"{label}: cluster and write")
    # Per-stage time, to see where a slow rewrite spends it (the sample is a pass of its own).
    log.info("%s: sampled %d rows in %.2f s; keyed, shuffled and wrote %d files in %.2f s", label,
             sample.num_rows, sampled_at, result.num_rows, watch.seconds() - sampled_at)
    adds = tuple(add_from_json(r) for r in result.column("result").to_pylist())
    return RewriteOutput(adds, tuple(s for s in summaries if s is not None),
                         tags=preserved_tags(snapshot.protocol, snapshot.metadata))


@dataclass(frozen=True, slots=True)
class CurveRewrite:
    """The executor for a ``plan`` (its columns, curve, bits and target size): the module
    docstring's steps per batch, sampling about ``sample_rows`` rows. Every new file gets
    ``clustering_provider`` and ``file_tags`` when set; ``zcube_id`` names the ZCube the tags
    put the new files in."""

    plan: ZOrderPlan
    sample_rows: int = DEFAULT_SAMPLE_ROWS
    clustering_provider: str | None = None
    file_tags: Mapping[str, str] = field(default_factory=dict)
    zcube_id: str | None = None

    @classmethod
    def liquid(cls, plan: ClusterPlan, *, sample_rows: int = DEFAULT_SAMPLE_ROWS) -> CurveRewrite:
        """The executor of a liquid clustering run: its new files form one new ZCube."""
        cube_id = str(uuid.uuid4())
        return cls(plan.rewrite, sample_rows, LIQUID_PROVIDER, zcube_tags(cube_id, plan.columns), cube_id)

    @property
    def preserves_insertion_order(self) -> bool:
        return False

    def rewrite(self, spark: SparkSession, table: DeltaTable, snapshot: Snapshot, batch: Sequence[FileGroup],
                *, label: str, outputs: list[str]) -> RewriteOutput:
        out = _run_batch(spark, table, snapshot, self.plan, batch, sample_rows=self.sample_rows, label=label,
                         outputs=outputs)
        cubes: dict[tuple[tuple[str, str | None], ...], str] = {}
        if self.plan.zcube_zorder_by is not None:  # Z-order: each partition's output is a new ZCube
            for a in out.adds:
                cubes.setdefault(tuple(sorted(a.partition_values.items())), str(uuid.uuid4()))
        elif self.clustering_provider is None and not self.file_tags:
            return out

        def tags_of(a: Add) -> dict[str, str]:
            if self.plan.zcube_zorder_by is None:
                return {**(a.tags or {}), **self.file_tags}
            cube = cubes[tuple(sorted(a.partition_values.items()))]
            return {**(a.tags or {}), ZCUBE_ID_TAG: cube, ZCUBE_ZORDER_BY_TAG: self.plan.zcube_zorder_by}

        tagged = tuple(replace(a, clustering_provider=self.clustering_provider or a.clustering_provider,
                               tags=tags_of(a)) for a in out.adds)
        return RewriteOutput(tagged, out.input_summaries, tags=out.tags)
