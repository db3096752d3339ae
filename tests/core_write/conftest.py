"""Helpers for the write-path tests: real tables in tmp_path, delta-rs as the reference reader."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import append, create_table


def listing(root: str) -> list[tuple[str, int]]:
    """Every file below ``root`` (relative path, size): compare before/after a failed write."""
    out = []
    for dirpath, dirs, files in os.walk(root):
        for d in dirs:
            out.append((os.path.relpath(os.path.join(dirpath, d), root) + "/", 0))
        for name in files:
            p = os.path.join(dirpath, name)
            out.append((os.path.relpath(p, root), os.path.getsize(p)))
    return sorted(out)


def appended_table(table_dir: str, rows: Callable[[list[int]], pa.Table], n: int, **props: str) -> DeltaTable:
    """A table partitioned by ``day`` (the schema of ``rows([])``) with ``n`` appends of two rows
    each, ``rows(ids)``, and ``props``; no checkpoint unless asked (an interval of 1000)."""
    t = create_table(table_dir, rows([]).schema, partition_columns=["day"],
                     properties={"delta.checkpointInterval": "1000", **props})
    for i in range(n):
        append(t, rows([2 * i, 2 * i + 1]))
    return t


def _norm(value: Any) -> Any:
    """delta-rs typed stats value -> the JSON form we wrote."""
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items() if v is not None}
    if isinstance(value, dt.datetime):
        ms = value.microsecond // 1000
        text = value.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}"
        return text + ("Z" if value.tzinfo is not None else "")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return float(value)
    return value


def _strip_none(d: Any) -> Any:
    if isinstance(d, dict):
        out = {k: _strip_none(v) for k, v in d.items() if v is not None}
        return {k: v for k, v in out.items() if v != {}}
    return d


def deltars_files(uri: str, version: int, storage_options: dict | None = None) -> dict[str, dict]:
    """path (decoded) -> {num_records, null_count, min, max} as delta-rs reads them."""
    import deltalake

    dl = deltalake.DeltaTable(uri, version=version, storage_options=storage_options)
    actions = pa.table(dl.get_add_actions(flatten=False)).to_pylist()
    out = {}
    for a in actions:
        out[url_decode_path(a["path"])] = {
            "numRecords": a.get("num_records"),
            "nullCount": _strip_none(_norm(a.get("null_count") or {})),
            "minValues": _strip_none(_norm(a.get("min") or {})),
            "maxValues": _strip_none(_norm(a.get("max") or {})),
        }
    return out


def our_files(table, version: int) -> dict[str, dict]:
    snap = table.snapshot(version)
    out = {}
    for add in snap.add_actions():
        stats = json.loads(add.stats) if add.stats else {}
        out[url_decode_path(add.path)] = {
            "numRecords": stats.get("numRecords"),
            "nullCount": _strip_none(stats.get("nullCount", {})),
            "minValues": _strip_none(stats.get("minValues", {})),
            "maxValues": _strip_none(stats.get("maxValues", {})),
        }
    return out


def deltars_rows(uri: str, version: int, storage_options: dict | None = None, *, sort_by: str = "id") -> list[dict]:
    import deltalake

    dl = deltalake.DeltaTable(uri, version=version, storage_options=storage_options)
    t = pa.table(dl.to_pyarrow_table())
    return sorted(t.to_pylist(), key=lambda r: (r[sort_by] is None, r[sort_by]))


@pytest.fixture()
def table_dir(tmp_path) -> str:
    return str(tmp_path / "table")
