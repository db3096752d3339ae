"""Which kind of vacuum inventory a location holds, opened as an ``InventoryRead``.

An S3 Inventory report (``s3_inventory``: a ``manifest.json``, or a destination prefix of
deliveries), else Delta's own shape (``vacuum_inventory``: a Delta table, Parquet or CSV files
with ``path``, ``length``, ``isDir``, ``modificationTime``).
"""

from __future__ import annotations

from delta_core.maintenance.s3_inventory import is_report, open_report
from delta_core.maintenance.vacuum_inventory import BATCH_ROWS, InventoryRead, open_delta_shape


def open_inventory(uri: str, storage_options: dict[str, object] | None = None, *, table_root: str,
                   batch_rows: int = BATCH_ROWS) -> InventoryRead:
    """The inventory at ``uri`` for a vacuum of ``table_root``."""
    if is_report(uri, storage_options):
        return open_report(uri, storage_options, table_root=table_root, batch_rows=batch_rows)
    return open_delta_shape(uri, storage_options, batch_rows=batch_rows)
