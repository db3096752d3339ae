"""Tables for the health tests. Health reads only the log, so most tables here are logs written
by hand (as another engine would leave them) whose ``add`` paths point at no data at all: a
health figure that needed a data read would fail on them."""

from __future__ import annotations

import json
import os
from typing import Any

SCHEMA = {"type": "struct", "fields": [
    {"name": "x", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}},
]}
T0 = 1_700_000_000_000
DV_PROTOCOL = {"minReaderVersion": 3, "minWriterVersion": 7,
               "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}


def add(path: str, size: int, *, records: int | None = 100, lo: int = 0, hi: int = 99,
        part: str | None = None, dv_cardinality: int | None = None) -> dict[str, Any]:
    """One ``add`` action (stats with ``x`` bounds unless ``records`` is None: no stats)."""
    body: dict[str, Any] = {
        "path": path, "partitionValues": {"p": part} if part is not None else {}, "size": size,
        "modificationTime": T0, "dataChange": True,
    }
    if records is not None:
        body["stats"] = json.dumps({"numRecords": records, "minValues": {"x": lo}, "maxValues": {"x": hi},
                                    "nullCount": {"x": 0}})
    if dv_cardinality is not None:
        body["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^",
                                  "offset": 1, "sizeInBytes": 36, "cardinality": dv_cardinality}
    return {"add": body}


def remove(path: str, size: int, *, when: int) -> dict[str, Any]:
    return {"remove": {"path": path, "deletionTimestamp": when, "dataChange": True, "size": size}}


def write_log(root: str, commits: list[list[dict[str, Any]]], *, configuration: dict[str, str] | None = None,
              partitioned: bool = False, protocol: dict[str, Any] | None = None,
              operations: dict[int, str] | None = None, ict: dict[int, int] | None = None) -> None:
    """Commits 0..n-1 at ``root``: commit 0 also holds protocol and metaData. ``operations``
    names a version's ``commitInfo.operation`` (default WRITE), ``ict`` its inCommitTimestamp."""
    os.makedirs(os.path.join(root, "_delta_log"), exist_ok=True)
    for version, actions in enumerate(commits):
        op = (operations or {}).get(version, "CREATE TABLE" if version == 0 else "WRITE")
        info: dict[str, Any] = {"timestamp": T0 + version, "operation": op}
        if ict and version in ict:
            info["inCommitTimestamp"] = ict[version]
        lines: list[dict[str, Any]] = [{"commitInfo": info}]
        if version == 0:
            lines.append({"protocol": protocol or {"minReaderVersion": 1, "minWriterVersion": 2}})
            lines.append({"metaData": {
                "id": "00000000-0000-0000-0000-0000000000aa", "format": {"provider": "parquet", "options": {}},
                "schemaString": json.dumps(SCHEMA), "partitionColumns": ["p"] if partitioned else [],
                "configuration": configuration or {}, "createdTime": T0}})
        lines += actions
        with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(line) + "\n" for line in lines))


def listing(root: str) -> list[tuple[str, int, int]]:
    """Every file below ``root`` with size and mtime: health must change none of them."""
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            out.append((os.path.relpath(p, root), st.st_size, st.st_mtime_ns))
    return sorted(out)
