"""Inventory rows made one file each before a vacuum plans them, and metrics equal to what was
deleted: directory rows skipped and counted, a missing or corrupt inventory refused before
``VACUUM START``, duplicate rows counted once (the newest row decides), URL-encoded keys
refused, and a ``VACUUM END`` with status ``FAILED`` and the counts when deletes fail partway.
Each vacuum from an inventory is paired with the same vacuum by listing."""

from __future__ import annotations

import os
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import InventoryError, VacuumIncompleteError
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.model.partition_values import url_decode_path
from tests.maintenance.conftest import all_files, commit_lines, touch
from tests.maintenance.test_vacuum_inventory import _later, inventory_of


def _commit_info(table, version: int) -> dict:
    return next(a["commitInfo"] for a in commit_lines(table, version) if "commitInfo" in a)


def _write(rows: pa.Table, where) -> str:
    pq.write_table(rows, str(where), row_group_size=4)  # several batches: a key's rows may be apart
    return str(where)


def _live(table) -> set[str]:
    return {url_decode_path(p) for p in table.snapshot().file_paths}


def test_directory_rows_are_skipped_and_counted(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    rows = inventory_of(table_uri)
    dirs = rows.column("isDir").to_pylist()
    # directories flagged false, or null, or only by a trailing slash
    flags = [None if d and i % 2 else False if d else False for i, d in enumerate(dirs)]
    paths = [p + "/" if d and i % 3 == 0 else p for i, (p, d) in enumerate(zip(rows.column("path").to_pylist(), dirs))]
    unflagged = rows.set_column(0, "path", pa.array(paths)).set_column(2, "isDir", pa.array(flags, pa.bool_()))
    inv = _write(unflagged, tmp_path / "inv.parquet")
    listed = vacuum(table, dry_run=True, clock=lambda: _later(now))
    planned = vacuum(table, dry_run=True, inventory=inv, clock=lambda: _later(now))
    assert planned.paths == listed.paths
    # a directory row is counted when its flag or "/" says so, or else when it would have been deleted
    hidden = [any(part.startswith(("_", ".")) for part in p.removeprefix(f"file://{table_uri}/").split("/"))
              for p in rows.column("path").to_pylist()]
    assert planned.inventory_skipped_directories == sum(
        1 for i, d in enumerate(dirs) if d and (i % 3 == 0 or not hidden[i]))
    before = all_files(table_uri)
    done = vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert done.num_deleted_files == 5 and all_files(table_uri) == before - {
        k for k in before if table.storage.uri(k) in set(listed.paths)}
    assert _commit_info(table, done.version)["operationParameters"]["status"] == "COMPLETED"


def test_missing_or_corrupt_inventory_is_refused_before_vacuum_start(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    version, before = table.latest_version(), all_files(table_uri)
    with pytest.raises(InventoryError, match="does not exist"):
        vacuum(table, inventory=str(tmp_path / "nowhere.parquet"), clock=lambda: _later(now))
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(InventoryError, match="cannot be read"):
        vacuum(table, inventory=str(corrupt), clock=lambda: _later(now))
    (tmp_path / "dir").mkdir()
    pq.write_table(inventory_of(table_uri), str(tmp_path / "dir" / "a.parquet"))
    (tmp_path / "dir" / "b.parquet").write_bytes(b"PAR1 truncated")  # a later file is corrupt
    with pytest.raises(InventoryError, match="cannot be read"):
        vacuum(table, inventory=str(tmp_path / "dir"), clock=lambda: _later(now))
    assert table.latest_version() == version and all_files(table_uri) == before


def test_duplicate_rows_count_once_and_the_newest_row_decides(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    rows = inventory_of(table_uri)
    young_again = rows.filter(pc.ends_with(rows.column("path"), extra["orphan_root"]))
    young_again = young_again.set_column(3, "modificationTime", pa.array([_later(now)], pa.int64()))
    inv = _write(pa.concat_tables([rows, rows, young_again]), tmp_path / "inv.parquet")
    listed = vacuum(table, dry_run=True, clock=lambda: _later(now))
    planned = vacuum(table, dry_run=True, inventory=inv, clock=lambda: _later(now))
    expected = tuple(p for p in listed.paths if not p.endswith(extra["orphan_root"]))
    assert planned.paths == expected and planned.num_files_to_delete == 4
    files = rows.filter(pc.invert(rows.column("isDir"))).num_rows
    assert planned.inventory_skipped_duplicates == files + 1
    sizes = {p: os.path.getsize(p.removeprefix("file://")) for p in expected}
    assert planned.bytes_to_delete == sum(sizes.values())
    done = vacuum(table, inventory=inv, clock=lambda: _later(now))
    info = _commit_info(table, done.version)
    assert info["operationMetrics"]["numDeletedFiles"] == "4"
    assert info["operationMetrics"]["sizeOfDeletedData"] == str(sum(sizes.values())) == str(done.bytes_deleted)
    assert extra["orphan_root"] in all_files(table_uri) and _live(table) <= all_files(table_uri)


def test_url_encoded_keys_are_refused_not_phantom_deletions(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    rows = inventory_of(table_uri)
    encoded = [f"file://{table_uri}/" + quote(p.removeprefix(f"file://{table_uri}/")) for p in rows.column("path").to_pylist()]
    inv = _write(rows.set_column(0, "path", pa.array(encoded)), tmp_path / "inv.parquet")
    version, before = table.latest_version(), all_files(table_uri)
    with pytest.raises(InventoryError, match="URL-encoded"):
        vacuum(table, dry_run=True, inventory=inv, clock=lambda: _later(now))
    with pytest.raises(InventoryError, match="URL-encoded"):
        vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert table.latest_version() == version and all_files(table_uri) == before


def test_deletes_failing_partway_commit_vacuum_end_failed_with_the_counts(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    old = now - 30 * 86400
    touch(table_uri, "region=eu/sub/kept.bin", mtime=old)  # a directory the inventory calls a file
    rows = inventory_of(table_uri, drop={"region=eu/sub/kept.bin"})
    inv = _write(rows.set_column(2, "isDir", pa.array([False] * rows.num_rows)).filter(
        pc.or_(pc.invert(rows.column("isDir")), pc.ends_with(rows.column("path"), "region=eu/sub"))), tmp_path / "inv.parquet")
    os.remove(os.path.join(table_uri, extra["orphan_root"]))  # gone since the inventory was taken
    listed = vacuum(table, dry_run=True, clock=lambda: _later(now))
    version = table.latest_version()
    with pytest.raises(VacuumIncompleteError, match="1 of 6 deletes failed .*IsADirectoryError") as raised:
        vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert raised.value.version == version + 2 and table.latest_version() == version + 2
    start, end = _commit_info(table, version + 1), _commit_info(table, version + 2)
    assert start["operation"] == "VACUUM START" and start["operationMetrics"]["numFilesToDelete"] == "6"
    assert end["operation"] == "VACUUM END" and end["operationParameters"]["status"] == "FAILED"
    metrics = end["operationMetrics"]
    assert (metrics["numDeletedFiles"], metrics["numMissingFiles"], metrics["numFailedDeletes"]) == ("4", "1", "1")
    left = all_files(table_uri)
    assert "region=eu/sub/kept.bin" in left and _live(table) <= left
    assert {k for k in left if table.storage.uri(k) in set(listed.paths)} == {"region=eu/sub/kept.bin"}
