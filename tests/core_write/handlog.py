"""Hand-written tables for the write-path tests: a ``_delta_log`` commit written as JSON lines
(as another engine would leave it) and data files written by pyarrow."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


def field(name: str, type_: Any, nullable: bool = True) -> dict[str, Any]:
    return {"name": name, "type": type_, "nullable": nullable, "metadata": {}}


def struct(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"type": "struct", "fields": list(fields)}


def write_table(root: str, schema: dict[str, Any], files: list[tuple[str, pa.Table]], *,
                configuration: dict[str, str] | None = None, protocol: tuple[int, int] = (1, 2),
                partition_columns: list[str] | None = None) -> None:
    """Version 0 of a table at ``root``: protocol, metaData with ``schema`` (a schemaString
    object), and one ``add`` per (relative path, rows) written with pyarrow."""
    os.makedirs(os.path.join(root, "_delta_log"), exist_ok=True)
    lines: list[dict[str, Any]] = [
        {"commitInfo": {"timestamp": 1_700_000_000_000, "operation": "CREATE TABLE", "engineInfo": "hand"}},
        {"protocol": {"minReaderVersion": protocol[0], "minWriterVersion": protocol[1]}},
        {"metaData": {"id": "00000000-0000-0000-0000-000000000021", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": partition_columns or [],
                      "configuration": configuration or {}, "createdTime": 1_700_000_000_000}},
    ]
    for rel, rows in files:
        full = os.path.join(root, rel)
        pq.write_table(rows, full)
        lines.append({"add": {"path": rel, "partitionValues": {}, "size": os.path.getsize(full),
                              "modificationTime": 1_700_000_000_000, "dataChange": True,
                              "stats": json.dumps({"numRecords": rows.num_rows})}})
    with open(os.path.join(root, "_delta_log", f"{0:020d}.json"), "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
