"""Runs one bin rewrite in a fresh process (started with spawn), so the Arrow memory pool's peak
belongs to the rewrite alone."""

from __future__ import annotations

from typing import Any


def rewrite_in_fresh_process(uri: str, budget: int) -> dict[str, Any]:
    """Compact every data file of the table at ``uri`` into one file with row groups and
    read-ahead limited to ``budget`` bytes; returns the ``add`` and the pool's peak bytes."""
    import pyarrow as pa

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance import data_io
    from delta_core.maintenance.spark.tasks import add_to_json
    from delta_core.write import parquet_stream

    parquet_stream.ROW_GROUP_BYTES = budget
    data_io.READ_AHEAD_BYTES = budget
    table = DeltaTable(uri)
    snapshot = table.snapshot()
    files = snapshot.files
    add = data_io.rewrite_files(table.storage, files.column("path").to_pylist(), metadata=snapshot.metadata,
                                partition_values={}, sizes=files.column("size").to_pylist())
    return {"add": add_to_json(add), "peak_bytes": pa.default_memory_pool().max_memory()}
