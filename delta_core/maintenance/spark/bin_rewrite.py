"""The bin-rewrite task executor: each file group becomes one new file, written by one Spark task.

Compaction's bins and purge's single files run here. Each group is one Spark task that reads
its files with pyarrow over the table's storage and writes one new file (full stats, same
schema, physical names and partition values); rows never pass through the JVM. Each task
applies its inputs' deletion vectors as the batch's snapshot has them (PROTOCOL.md "Deletion
Vectors"): deleted rows are not written, and the new file has no vector and stats of its live
rows only; a group whose rows were all deleted writes nothing. Rows keep their input order
(OPTIMIZE's ``preserveInsertionOrder``), and, on a row-tracking table, their stable ids.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from delta_core.maintenance.data_io import rewrite_files, rewrite_output_key
from delta_core.maintenance.file_groups import FileGroup
from delta_core.maintenance.input_summary import SummarisingReader, paths_to_summarise, split_results
from delta_core.maintenance.rewrite_commit import RewriteOutput, deletion_vectors
from delta_core.maintenance.spark.tasks import add_from_json, add_to_json, run_tasks
from delta_core.model.actions import DeletionVectorDescriptor, Metadata
from delta_core.model.schema import StructType
from delta_core.storage.base import Storage
from delta_core.write.data_writer import table_schema
from delta_core.write.materialized_partitions import stores_partition_columns
from delta_core.write.row_tracking import FileRowIds, input_row_ids, preserved_tags

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable


@dataclass(frozen=True, slots=True)
class BinTask:
    """What one Spark task needs to rewrite one group (pickled to the executor): the table's
    ``storage`` (it carries its own options, nothing more is added), its ``metadata`` and
    ``schema`` (``table_schema(metadata)``, parsed once on the driver; ``None``: parsed here), the
    group's input ``paths`` (as in the log) with their ``sizes``, the group's
    ``partition_values``, the output ``key`` chosen on the driver, the inputs to ``summarise``
    for the proof, the ``deletion_vectors`` of the inputs (aligned with ``paths``; ``None``: no
    vector), ``row_ids``: the inputs' ``FileRowIds`` when rows' stable ids must be kept
    (row tracking), and ``partition_columns``: whether the new file holds the partition columns
    (``materialized_partitions.stores_partition_columns``)."""

    storage: Storage
    metadata: Metadata
    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    partition_values: Mapping[str, str | None]
    key: str
    summarise: tuple[str, ...]
    deletion_vectors: tuple[DeletionVectorDescriptor | None, ...] = ()
    row_ids: Mapping[str, FileRowIds] | None = None
    schema: StructType | None = None
    partition_columns: bool = False


def rewrite_bin(task: BinTask) -> list[str]:
    """Spark task: rewrite one group into one file; returns the new ``add`` as JSON (none when
    deletion vectors deleted every row of the group), then the summaries of the inputs in
    ``summarise`` (``InputSummary`` JSON)."""
    reader = SummarisingReader(task.storage, task.metadata, summarise=task.summarise, row_ids=task.row_ids,
                               schema=task.schema)
    add = rewrite_files(task.storage, task.paths, metadata=task.metadata,
                        partition_values=task.partition_values, sizes=task.sizes, reader=reader,
                        key=task.key, deletion_vectors=task.deletion_vectors or None, schema=task.schema,
                        partition_columns=task.partition_columns)
    return [*([add_to_json(add)] if add is not None else []), *(s.to_json() for s in reader.summaries())]


@dataclass(frozen=True, slots=True)
class BinRewrite:
    """The executor: one ``BinTask`` per group of a batch, largest first."""

    @property
    def preserves_insertion_order(self) -> bool:
        return True

    def rewrite(self, spark: SparkSession, table: DeltaTable, snapshot: Snapshot, batch: Sequence[FileGroup],
                *, label: str, outputs: list[str]) -> RewriteOutput:
        """One batch: one Spark task per group, each writing one file at a key chosen here (and
        recorded in ``outputs`` first, so the driver can delete them if the batch fails)."""
        inputs = [p for g in batch for p in g.paths]
        summarise = paths_to_summarise(snapshot, inputs)
        row_ids = input_row_ids(snapshot, inputs)
        dvs = deletion_vectors(snapshot, inputs)
        metadata = snapshot.metadata
        schema = table_schema(metadata)
        in_file = stores_partition_columns(snapshot.protocol, metadata)
        tasks = []
        for g in sorted(batch, key=lambda g: -g.total_size):
            key = rewrite_output_key(metadata, g.partition_dict, schema=schema)
            outputs.append(key)
            paths = g.paths
            tasks.append(BinTask(storage=table.storage, metadata=metadata, paths=tuple(paths), sizes=g.sizes,
                                 partition_values=g.partition_dict, key=key,
                                 summarise=tuple(p for p in paths if p in summarise),
                                 deletion_vectors=tuple(dvs.get(p) for p in paths),
                                 row_ids=None if row_ids is None else {p: row_ids[p] for p in paths},
                                 schema=schema, partition_columns=in_file))
        results = run_tasks(spark, rewrite_bin, tasks, description=label)
        adds, summaries = split_results(r for rs in results for r in rs)
        return RewriteOutput(tuple(add_from_json(a) for a in adds), tuple(summaries),
                             tags=preserved_tags(snapshot.protocol, snapshot.metadata))
