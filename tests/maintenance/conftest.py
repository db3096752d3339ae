"""Helpers for the maintenance tests: small real tables (ours and delta-rs's), row multisets,
commit inspection. Data sizes stay tiny: two shared cores."""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import json
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pytest

from delta_core.log.log_path import commit_key
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import delete_files
from tests.kernel_oracle import kernel_rows

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("x", pa.float64()),
    ("name", pa.string()),
    ("day", pa.date32()),
    ("ts", pa.timestamp("us", tz="UTC")),
    ("region", pa.string()),
])


def batch(start: int, n: int, *, regions: tuple[str, ...] = ("eu", "us")) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "x": pa.array([(i * 7919 % 1000) / 10.0 for i in ids], pa.float64()),
        "name": pa.array([None if i % 11 == 0 else f"n{i % 37}" for i in ids], pa.string()),
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 5) for i in ids], pa.date32()),
        "ts": pa.array([1_700_000_000_000_000 + i * 1_000_000 for i in ids], pa.timestamp("us", tz="UTC")),
        "region": pa.array([regions[i % len(regions)] for i in ids], pa.string()),
    }, schema=SCHEMA)


def make_table(uri: str, *, appends: int = 6, rows: int = 40, partition_columns: tuple[str, ...] = ("region",),
               properties: dict[str, str] | None = None, storage_options: dict | None = None) -> Any:
    """A table written by delta_core with ``appends`` small commits (2 files each when partitioned)."""
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    create_table(uri, SCHEMA, partition_columns=partition_columns, properties=properties,
                 storage_options=storage_options)
    table = DeltaTable(uri, storage_options)
    for i in range(appends):
        append(table, batch(i * rows, rows))
    return DeltaTable(uri, storage_options)


def make_deltars_table(uri: str, *, appends: int = 6, rows: int = 40, storage_options: dict | None = None,
                       partition_by: list[str] | None = None) -> None:
    import deltalake

    for i in range(appends):
        deltalake.write_deltalake(uri, batch(i * rows, rows), partition_by=partition_by or ["region"],
                                  mode="append", storage_options=storage_options)


def multiset(table: pa.Table) -> collections.Counter:
    cols = sorted(table.column_names)
    table = table.select(cols)
    return collections.Counter(tuple(r[c] for c in cols) for r in table.to_pylist())


def deltars_rows(uri: str, *, version: int | None = None, storage_options: dict | None = None) -> pa.Table:
    import deltalake

    dt_ = deltalake.DeltaTable(uri, version=version, storage_options=storage_options)
    return dt_.to_pyarrow_table()


@contextlib.contextmanager
def rows_kept(uri: str) -> Iterator[None]:
    """The block leaves the table at ``uri`` holding the same rows: delta-rs and delta-kernel-rs
    each read after it what they read before."""
    before = multiset(deltars_rows(uri))
    kernel_before = kernel_rows(uri)
    yield
    assert multiset(deltars_rows(uri)) == before
    assert kernel_rows(uri) == kernel_before


def commit_lines(table: Any, version: int) -> list[dict]:
    return [json.loads(line) for line in table.storage.read(commit_key(version)).splitlines() if line.strip()]


def commit_info(table: Any, version: int) -> dict:
    return next(a["commitInfo"] for a in commit_lines(table, version) if "commitInfo" in a)


def file_actions(table: Any, version: int) -> tuple[list[dict], list[dict]]:
    lines = commit_lines(table, version)
    return [a["add"] for a in lines if "add" in a], [a["remove"] for a in lines if "remove" in a]


def assert_versions_readable(uri: str, versions: Iterable[int], *, storage_options: dict | None = None) -> None:
    for v in versions:
        deltars_rows(uri, version=v, storage_options=storage_options)


@pytest.fixture()
def table_uri(tmp_path) -> str:
    return str(tmp_path / "table")


DAY = dt.timedelta(days=1)


def touch(root: str, key: str, *, mtime: float) -> str:
    path = os.path.join(root, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(b"x" * 10)
    os.utime(path, (mtime, mtime))
    return key


def all_files(root: str) -> set[str]:
    """Every file under ``root`` except the log (vacuum's own commits land there)."""
    out = set()
    for d, _dirs, files in os.walk(root):
        for f in files:
            out.add(os.path.relpath(os.path.join(d, f), root))
    return {k for k in out if not k.startswith("_delta_log/")}


@pytest.fixture()
def scene(table_uri):
    """A table with live files, a tombstone removed now, orphans old and young, hidden files."""
    table = make_table(table_uri, appends=3)
    snap = table.snapshot()
    removed = [url_decode_path(p) for p in snap.file_paths[:2]]
    delete_files(table, snap.file_paths[:2])  # tombstones with deletionTimestamp = now
    now = time.time()
    old, young = now - 30 * 86400, now + 10 * 86400 - 3600  # "young" relative to now + 10 days
    extra = {
        "orphan_old": touch(table_uri, "region=eu/part-orphan-old.parquet", mtime=old),
        "orphan_root": touch(table_uri, "stray.parquet", mtime=old),
        "gone_partition": touch(table_uri, "region=zz/part-0.parquet", mtime=old),
        "cdc_old": touch(table_uri, "_change_data/cdc-0.parquet", mtime=old),
        "young": touch(table_uri, "region=us/part-young.parquet", mtime=young),
        "crc": touch(table_uri, "region=eu/.part-x.parquet.crc", mtime=old),
        "success": touch(table_uri, "_SUCCESS", mtime=old),
        "tmp": touch(table_uri, "_tmp_writes/part-1.parquet", mtime=old),
        "manifest": touch(table_uri, "_symlink_format_manifest/region=eu/manifest", mtime=old),
    }
    for key in all_files(table_uri):  # make every data file old, as in a long-lived table
        if not key.startswith("_") and key not in extra.values() and "/." not in key:
            os.utime(os.path.join(table_uri, key), (old, old))
    return table, removed, extra, now
