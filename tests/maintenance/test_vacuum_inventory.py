"""Vacuum from a storage inventory (Delta's ``VACUUM ... USING INVENTORY``, issue 31).

The inventory replaces the listing and nothing else: on the same table, a dry run from an
inventory of every file plans exactly what a dry run from a listing plans; a live file the
inventory calls old stays; files the inventory misses are not deleted; an inventory naming
another table's files refuses the vacuum with nothing deleted.
"""

from __future__ import annotations

import datetime as dt
import json
import os

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.errors import ConfigError, PathEscapesTableError
from delta_core.maintenance import vacuum_inventory
from delta_core.maintenance.spark.vacuum import list_table_files, referenced_keys, vacuum
from delta_core.maintenance.vacuum_plan import plan_vacuum
from delta_core.model.partition_values import url_decode_path
from delta_core.model.path_identity import TableRoot
from delta_core.storage.base import normalize_key
from tests.maintenance.conftest import DAY, all_files, deltars_rows, multiset


def inventory_of(root: str, *, prefix: str | None = None, drop: set[str] = frozenset(),
                 mtime_ms: int | None = None) -> pa.Table:
    """Every file and directory under ``root`` as a storage inventory lists it (``prefix``:
    how the paths are spelled, default ``file://`` + the root)."""
    prefix = prefix if prefix is not None else "file://" + root
    rows = {"path": [], "length": [], "isDir": [], "modificationTime": []}
    for d, dirs, files in os.walk(root):
        for name, is_dir in [(x, True) for x in dirs] + [(x, False) for x in files]:
            rel = os.path.relpath(os.path.join(d, name), root)
            if rel in drop:
                continue
            st = os.stat(os.path.join(d, name))
            rows["path"].append(f"{prefix}/{rel}")
            rows["length"].append(0 if is_dir else st.st_size)
            rows["isDir"].append(is_dir)
            rows["modificationTime"].append(mtime_ms if mtime_ms is not None else int(st.st_mtime * 1000))
    return pa.table(rows, schema=pa.schema([("path", pa.string()), ("length", pa.int64()), ("isDir", pa.bool_()),
                                            ("modificationTime", pa.int64())]))


def _later(now: float) -> int:
    return int((dt.datetime.fromtimestamp(now, dt.UTC) + 10 * DAY).timestamp() * 1000)


def test_inventory_plans_what_the_listing_plans(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    inv = str(tmp_path / "inventory.parquet")
    pq.write_table(inventory_of(table_uri), inv)
    listed = vacuum(table, dry_run=True, clock=lambda: _later(now))
    from_inventory = vacuum(table, dry_run=True, inventory=inv, clock=lambda: _later(now))
    assert from_inventory.paths == listed.paths and from_inventory.num_files_to_delete == 5
    assert from_inventory.young_kept == listed.young_kept == 1
    rows = multiset(deltars_rows(table_uri))
    before = all_files(table_uri)
    done = vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert done.num_deleted_files == 5
    planned = {k for k in before if table.storage.uri(k) in set(listed.paths)}
    assert len(planned) == 5 and all_files(table_uri) == before - planned
    assert multiset(deltars_rows(table_uri)) == rows


def test_live_files_listed_as_old_stay_and_missing_files_are_not_deleted(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    live = {url_decode_path(p) for p in table.snapshot().file_paths}
    # every file "old" (modified at the epoch), the old orphan left out of the inventory
    inv = str(tmp_path / "inventory.csv")
    pcsv.write_csv(inventory_of(table_uri, mtime_ms=0, drop={extra["orphan_old"]}), inv)
    before = all_files(table_uri)
    done = vacuum(table, inventory=inv, clock=lambda: _later(now))
    after = all_files(table_uri)
    assert live <= after and extra["orphan_old"] in after  # live: referenced; orphan: not in the inventory
    assert extra["young"] not in after  # the inventory said it was old: its time is what the plan uses
    assert done.num_deleted_files == len(before - after) == 5


def test_inventory_of_another_table_is_refused_with_nothing_deleted(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    inv = str(tmp_path / "inventory.parquet")
    other = str(tmp_path / "other")
    pq.write_table(inventory_of(table_uri, prefix="file://" + other), inv)
    before, version = all_files(table_uri), table.latest_version()
    with pytest.raises(PathEscapesTableError, match="outside the table root .*nothing was deleted"):
        vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert all_files(table_uri) == before and table.latest_version() == version  # no VACUUM START either


def test_a_stale_inventory_row_and_a_delta_table_inventory(scene, table_uri, tmp_path):
    import deltalake

    table, removed, extra, now = scene
    inv_table = inventory_of(table_uri)
    os.remove(os.path.join(table_uri, extra["orphan_root"]))  # gone since the inventory was taken
    inv = str(tmp_path / "inventory_table")
    deltalake.write_deltalake(inv, inv_table)
    done = vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert done.num_deleted_files == 4 and extra["orphan_old"] not in all_files(table_uri)
    assert done.num_missing_files == 1  # the stale row: counted apart, not as deleted
    assert done.inventory_shape == "delta" and done.inventory_age_hours is not None


def test_bad_inventories_are_typed_errors(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    no_column = str(tmp_path / "inv.parquet")
    pq.write_table(inventory_of(table_uri).drop_columns(["isDir"]), no_column)
    before = all_files(table_uri)
    with pytest.raises(ConfigError, match="no column isDir"):
        vacuum(table, inventory=no_column, clock=lambda: _later(now))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    with pytest.raises(ConfigError, match="holds no Parquet or CSV file"):
        vacuum(table, inventory=str(empty), clock=lambda: _later(now))
    with pytest.raises(ConfigError, match="lite"):
        vacuum(table, inventory=no_column, mode="lite")
    assert all_files(table_uri) == before


def test_cli_and_policy(scene, table_uri, tmp_path, capsys):
    table, removed, extra, now = scene
    inv = str(tmp_path / "inventory.parquet")
    pq.write_table(inventory_of(table_uri), inv)
    assert main(["vacuum", table_uri, "--inventory", inv, "--dry-run"]) == 0
    assert "from a delta inventory taken " in capsys.readouterr().out
    assert main(["vacuum", table_uri, "--inventory", inv, "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inventory_shape"] == "delta" and 0 <= out["inventory_age_hours"] < 1
    assert out["dry_run"] is True and out["files_listed"] == len(inventory_of(table_uri).filter(
        pa.compute.invert(inventory_of(table_uri).column("isDir"))))
    config = tmp_path / "tables.yaml"
    config.write_text(f"tables:\n  t:\n    uri: {table_uri}\n    vacuum:\n      inventory: {inv}\n"
                      "      dry_run: true\n")
    assert main(["vacuum", "--config", str(config), "--table", "t", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files_listed"] == out["files_listed"]


@pytest.mark.s3
def test_inventory_on_s3(s3_table_uri, s3_storage_options, tmp_path):
    import s3fs

    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import delete_files
    from tests.maintenance.conftest import make_table

    table = make_table(s3_table_uri, appends=2, storage_options=s3_storage_options)
    gone = table.snapshot().file_paths[0]
    delete_files(table, [gone])
    fs = s3fs.S3FileSystem(**s3_storage_options)
    bucket_path = s3_table_uri.removeprefix("s3://")
    fs.pipe_file(f"{bucket_path}/region=eu/orphan.parquet", b"x" * 10)
    infos = fs.find(bucket_path, detail=True)
    inv = pa.table({"path": ["s3://" + k for k in infos], "length": [v["size"] for v in infos.values()],
                    "isDir": [False] * len(infos), "modificationTime": [0] * len(infos)})
    inv_uri = f"s3://{bucket_path.split('/')[0]}/inventory/inv.parquet"
    with fs.open(inv_uri, "wb") as fh:
        pq.write_table(inv, fh)
    far = int((dt.datetime.now(dt.UTC) + 10 * DAY).timestamp() * 1000)
    done = vacuum(DeltaTable(s3_table_uri, s3_storage_options), inventory=inv_uri,
                  inventory_storage_options=s3_storage_options, clock=lambda: far)
    assert done.num_deleted_files == 2  # the removed file and the orphan
    left = {k.removeprefix(bucket_path + "/") for k in fs.find(bucket_path)}
    assert "region=eu/orphan.parquet" not in left and url_decode_path(gone) not in left
    assert {url_decode_path(p) for p in DeltaTable(s3_table_uri, s3_storage_options).snapshot().file_paths} <= left


def test_keys_placed_per_directory_match_each_path_placed_alone(tmp_path):
    # The listing places each directory once and appends the names; every spelling must get the
    # key that placing the path alone gives (and a symlinked spelling of the root resolves too).
    root = tmp_path / "t"
    (root / "day=1").mkdir(parents=True)
    os.symlink(root, tmp_path / "link")
    spellings = [f"{root}/day=1/a.parquet", f"file://{root}/day=1/b c%.parquet", f"file:{root}/top.parquet",
                 f"{root}//day=1/./d.parquet", f"{tmp_path}/link/day=1/e.parquet", f"{root}/day=1/x/../f.parquet",
                 f"{root}/day=1/..", f"file://localhost{root}/g.parquet"]
    inside = [p for p in spellings if vacuum_inventory._key(p, TableRoot.of(str(root))) is not None]
    rows = pa.table({"path": inside, "length": list(range(len(inside))), "isDir": [False] * len(inside),
                     "modificationTime": [1] * len(inside)})
    alone = [normalize_key(vacuum_inventory._key(p, TableRoot.of(str(root))), root=str(root)) for p in inside]
    assert {"day=1/a.parquet", "day=1/b c%.parquet", "top.parquet", "day=1/e.parquet", "g.parquet"} <= set(alone)
    for batch_rows in (len(inside), 3, 1):  # in one batch, and in batches that cut across spellings
        listed = pa.Table.from_batches(list(vacuum_inventory.inventory_listing(rows.to_batches(batch_rows),
                                                                               str(root))))
        assert listed.column("key").to_pylist() == alone
    with pytest.raises(PathEscapesTableError, match="1 path"):
        list(vacuum_inventory.inventory_listing(pa.concat_tables([rows, pa.table({
            "path": [f"{tmp_path}/other/h.parquet"], "length": [1], "isDir": [False], "modificationTime": [1]},
            schema=rows.schema)]), str(root)))


def _plan(table, listed, now_ms: int):
    """The plan of ``listed`` (a listing, as one table or as batches) against ``table``'s log."""
    snapshot = table.snapshot()
    retention = snapshot.properties.deleted_file_retention
    cutoff = now_ms - int(retention.total_seconds() * 1000)
    referenced = referenced_keys(snapshot, cutoff, table.storage.root, [])
    return plan_vacuum(listed, referenced=referenced, partition_columns=snapshot.partition_columns, now_ms=now_ms,
                       retention=retention)


def _shuffled(rows: pa.Table) -> pa.Table:
    """``rows`` in an order that mixes the directories (a batch of a few rows crosses them)."""
    return rows.take(sorted(range(rows.num_rows), key=lambda i: (i * 7919) % rows.num_rows))


def _write_inventory(kind: str, rows: pa.Table, where) -> str:
    """``rows`` as an inventory of ``kind``: a Parquet file of row groups of 3 rows, a directory
    of two CSV files, or a Delta table (written by delta-rs) of three files."""
    import deltalake

    half = rows.num_rows // 2
    if kind == "parquet":
        pq.write_table(rows, str(where / "inv.parquet"), row_group_size=3)
        return str(where / "inv.parquet")
    if kind == "csv":
        (where / "csv").mkdir()
        pcsv.write_csv(rows.slice(0, half), str(where / "csv" / "part-0.csv"))
        pcsv.write_csv(rows.slice(half), str(where / "csv" / "part-1.csv"))
        return str(where / "csv")
    for i, part in enumerate((rows.slice(0, half), rows.slice(half, 4), rows.slice(half + 4))):
        deltalake.write_deltalake(str(where / "delta"), part, mode="append" if i else "error")
    return str(where / "delta")


@pytest.mark.parametrize("kind", ["parquet", "csv", "delta"])
def test_inventory_read_in_small_batches_plans_what_one_batch_and_the_listing_plan(scene, table_uri, tmp_path, kind):
    table, removed, extra, now = scene
    rows = _shuffled(inventory_of(table_uri))
    uri = _write_inventory(kind, rows, tmp_path)
    batches = list(vacuum_inventory.read_inventory(uri, batch_rows=2))
    assert len(batches) >= rows.num_rows // 2 and all(b.num_rows <= 2 for b in batches)
    assert all(b.schema == vacuum_inventory.INVENTORY_SCHEMA for b in batches)
    assert multiset(pa.Table.from_batches(batches)) == multiset(rows)
    crossing = [b for b in batches if len({p.rsplit("/", 1)[0] for p in b.column("path").to_pylist()}) > 1]
    assert crossing  # batches that hold files of several directories

    later = _later(now)
    small = _plan(table, vacuum_inventory.inventory_listing(vacuum_inventory.read_inventory(uri, batch_rows=2),
                                                            table_uri), later)
    whole = _plan(table, pa.Table.from_batches(list(vacuum_inventory.inventory_listing(rows, table_uri))), later)
    assert small == whole
    listed = _plan(table, list_table_files(table.storage, table.snapshot().partition_columns), later)
    assert (small.to_delete, small.sizes, small.referenced_kept, small.young_kept) == (
        listed.to_delete, listed.sizes, listed.referenced_kept, listed.young_kept)
    assert small.num_files_to_delete == 5 and extra["orphan_old"] in small.to_delete


def test_a_path_of_another_table_in_a_later_batch_is_refused(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    rows = inventory_of(table_uri)
    stray = pa.table({"path": [f"{tmp_path}/other/part-0.parquet"], "length": [1], "isDir": [False],
                      "modificationTime": [0]}, schema=rows.schema)
    inv = str(tmp_path / "inv.parquet")
    pq.write_table(pa.concat_tables([rows, stray]), inv, row_group_size=2)
    with pytest.raises(PathEscapesTableError, match=f"1 path.*among its first {rows.num_rows + 1} rows"):
        list(vacuum_inventory.inventory_listing(vacuum_inventory.read_inventory(inv, batch_rows=2), table_uri))
    before, version = all_files(table_uri), table.latest_version()
    with pytest.raises(PathEscapesTableError, match="nothing was deleted"):
        vacuum(table, inventory=inv, clock=lambda: _later(now))
    assert all_files(table_uri) == before and table.latest_version() == version


def test_a_csv_value_of_the_wrong_type_is_a_config_error(scene, table_uri, tmp_path):
    table, removed, extra, now = scene
    inv = tmp_path / "inv.csv"
    inv.write_text(f"path,length,isDir,modificationTime\n{table_uri}/stray.parquet,ten,false,0\n")
    before = all_files(table_uri)
    with pytest.raises(ConfigError, match="wrong type"):
        vacuum(table, inventory=str(inv), clock=lambda: _later(now))
    assert all_files(table_uri) == before


def test_keys_sliced_after_the_root_prefix_match_the_keys_placed(tmp_path):
    # Rows spelled with the root's exact prefix take their key by slicing; every row that the
    # slice would get wrong must go through placement instead, and get the same key.
    root = tmp_path / "t"
    root.mkdir()
    table_root = str(root)
    tails = ["day=1/a.parquet", "top.parquet", "day=1/b c%20é.parquet", "day=1//c.parquet", "day=1/./d.parquet",
             "day=1/x/../e.parquet", "day=1/.f.crc", ".hidden", "_delta_log/0.json", "day=1/g:h.parquet",
             "day=1/", "day=1/sub/i.parquet"]
    paths = [f"{root}/{t}" for t in tails] + [f"file://{root}/j.parquet", f"file:{root}/k.parquet"]
    column = pa.array(paths)
    sliced = vacuum_inventory._keys(column, TableRoot.of(table_root), table_root,
                                    vacuum_inventory._RootSpelling(TableRoot.of(table_root)))
    placed = vacuum_inventory._placed_keys(column, TableRoot.of(table_root), table_root)
    assert sliced.to_pylist() == placed.to_pylist()
    assert sliced.to_pylist()[:4] == ["day=1/a.parquet", "top.parquet", "day=1/b c%20é.parquet", "day=1/c.parquet"]
    spelled = vacuum_inventory._RootSpelling(TableRoot.of(table_root))
    spelled.learn(f"file://{root}/day=1/a.parquet")
    assert spelled.prefix == f"file://{root}/"
    other = vacuum_inventory._RootSpelling(TableRoot.of(table_root))
    other.learn(f"{tmp_path}/t2/day=1/a.parquet")  # another table whose name starts with the root's
    assert other.prefix is None
