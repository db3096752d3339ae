"""Recomputing one data file's statistics from its rows, inside a task (PROTOCOL.md "Per-file
Statistics", "Deletion Vectors", "Column Mapping").

The rows come from ``data_io.DataFileReader`` (pyarrow over the table's ``Storage``; column
mapping resolved, widened types cast, the file's deletion vector applied) and go through the
collector our writer uses (``write.data_writer.file_stats_collector``), renamed to physical
names first: the stats keys, the indexed columns, string truncation and timestamp precision are
exactly the writer's.

Files with a deletion vector. Delta Spark's ``StatisticsCollection.recompute`` (behind ANALYZE
TABLE ... COMPUTE DELTA STATISTICS) refuses tables that can hold deletion vectors
("DELTA_UNSUPPORTED_STATS_RECOMPUTE_WITH_DELETION_VECTORS": it reads whole files, deleted rows
included), while its ``ComputeStats`` operation is declared to commit *tight* bounds on such
files. We recompute them as that declaration and the protocol say: ``numRecords`` counts the
file's physical rows, deleted ones included (PROTOCOL.md: "must equal the number of records in
the data file, not the valid records in the logical file"; here the rows read plus the vector's
cardinality, which the reader has checked against the file), while ``minValues``, ``maxValues``
and ``nullCount`` describe the rows the vector keeps, with ``tightBounds: true`` (Delta Spark's
tight state keeps that logical ``nullCount``, see its ``updateStatsToWideBounds``). On a table
whose protocol has the ``deletionVectors`` feature every recomputed stats object carries
``tightBounds: true``, as Delta Spark's collector writes it there; elsewhere the key is left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from delta_core.errors import MaintenanceError, MissingDataFileError
from delta_core.maintenance.data_io import LOCAL_READ_THREADS, READ_THREADS, DataFileReader
from delta_core.maintenance.vacuum_plan import log_path_to_key
from delta_core.model.actions import DeletionVectorDescriptor, Metadata
from delta_core.model.stats_collect import encode_stats_json
from delta_core.storage.base import Storage
from delta_core.write.data_writer import file_stats_collector, to_physical


def file_stats_json(reader: DataFileReader, metadata: Metadata, path: str, *, size: int | None = None,
                    deletion_vector: DeletionVectorDescriptor | None = None, tight_bounds: bool = False) -> str:
    """The ``add.stats`` JSON of the file at ``path`` (as in the log) recomputed from its rows;
    ``reader`` reads the table's indexed columns (module doc for ``numRecords`` and
    ``tight_bounds`` with a deletion vector)."""
    collector = file_stats_collector(metadata)
    unread = {p[0] for p in collector.indexed_paths} - set(reader.physical.names)
    if unread:
        # An unread column would get a null count of 0 and no bounds: wrong stats, not missing ones.
        raise MaintenanceError(f"the stats of {path} need column(s) {sorted(unread)} (physical names), which "
                               "this reader does not read; this is a bug in the caller", path=reader.storage.root)
    try:
        for chunk in reader.chunks(path, size=size, deletion_vector=deletion_vector):
            collector.update(to_physical(chunk, reader.physical))
    except FileNotFoundError as exc:
        uri = reader.storage.uri(log_path_to_key(path, reader.storage.root))
        raise MissingDataFileError(
            f"{uri}, a live file of the table, is missing from storage (deleted outside the Delta log?). "
            "Nothing was committed. Restore the file, or remove it from the table (Delta Spark: FSCK REPAIR "
            "TABLE), then run analyze again", path=uri) from exc
    stats = collector.result()
    stats["numRecords"] = collector.num_records + (deletion_vector.cardinality if deletion_vector else 0)
    if tight_bounds:
        stats["tightBounds"] = True
    return encode_stats_json(stats)


def files_stats_json(
    storage: Storage,
    metadata: Metadata,
    paths: Sequence[str],
    *,
    columns: Sequence[str],
    sizes: Sequence[int | None],
    deletion_vectors: Sequence[DeletionVectorDescriptor | None],
    tight_bounds: bool,
) -> list[str]:
    """``file_stats_json`` of each of ``paths`` (aligned with ``sizes`` and ``deletion_vectors``),
    reading only the top-level ``columns`` (logical names); a few files are read at once (object
    store reads are latency-bound)."""
    reader = DataFileReader(storage, metadata, columns=columns)
    local = storage.root.startswith(("file:", "memory:"))
    threads = max(1, min(LOCAL_READ_THREADS if local else READ_THREADS, len(paths)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(
            lambda i: file_stats_json(reader, metadata, paths[i], size=sizes[i], deletion_vector=deletion_vectors[i],
                                      tight_bounds=tight_bounds),
            range(len(paths))))
