"""The demo table: many small appends (one file per day per commit) and some DELETEs,
written with ``delta_core.write.table_writes`` — the shape that needs compaction, z-order and vacuum."""

from __future__ import annotations

import pathlib


def build_demo_table(path: pathlib.Path, *, rows: int, appends: int, days: int,
                     delete_fraction: float, properties: dict[str, str] | None = None,
                     name: str = "events"):
    """Create the table with ``appends`` small commits and a DELETE of some files."""
    from delta_core.write.table_writes import append, create_table, delete_files
    from demo.data import PARTITION_COLUMNS, SCHEMA, event_batch

    table = create_table(str(path), SCHEMA, partition_columns=PARTITION_COLUMNS, name=name,
                         properties=properties)
    per_commit = rows // appends
    written = 0
    for i in range(appends):
        n = per_commit if i < appends - 1 else rows - written
        append(table, event_batch(n, days=days, first_id=written, seed=i))
        written += n
    paths = table.snapshot().file_paths
    doomed = sorted(paths)[:: max(1, round(1 / delete_fraction))] if delete_fraction > 0 else []
    half = len(doomed) // 2
    for chunk in (doomed[:half], doomed[half:]):
        if chunk:
            delete_files(table, chunk)
    return table
