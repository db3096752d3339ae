"""Vacuum from an inventory instead of a listing (Delta's ``VACUUM ... USING INVENTORY``).

Listing a big table on an object store takes hours; a storage inventory (an S3 Inventory report,
or any table of the files) already holds what the listing would return. An inventory is a Delta
table, or Parquet or CSV files (one file, or a directory of them), with the columns Delta names:

- ``path`` (string): the file's absolute location (``s3://bucket/table/part-0.parquet``,
  ``file:///data/t/part-0.parquet`` or ``/data/t/part-0.parquet``), as stored: not URI-encoded;
- ``length`` (long): its size in bytes;
- ``isDir`` (boolean): directory rows are skipped;
- ``modificationTime`` (long): milliseconds since the epoch.

``inventory_listing`` turns it into the listing ``vacuum_plan.plan_vacuum`` takes, so every rule
of a listed vacuum applies unchanged: the retention, young files kept, hidden paths and
``_delta_log`` never touched, live files and their deletion vectors and CDC files kept whatever
the inventory says of them. A path outside the table root (an inventory of another table, or of
the whole bucket) refuses the vacuum before anything is deleted: the inventory must be the
table's. Files missing from the inventory are simply not deleted.
"""

from __future__ import annotations

import posixpath
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from delta_core.errors import ConfigError, PathEscapesTableError
from delta_core.log.log_path import LOG_DIR
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.vacuum_lite import LISTING_SCHEMA
from delta_core.model.arrow_values import int_scalar, string_array, string_scalar
from delta_core.model.path_identity import TableRoot, Where
from delta_core.storage import open_storage
from delta_core.storage.base import Storage, normalize_key

INVENTORY_SCHEMA = pa.schema([("path", pa.string()), ("length", pa.int64()), ("isDir", pa.bool_()),
                              ("modificationTime", pa.int64())])
_COLUMNS = INVENTORY_SCHEMA.names
_FILE_SUFFIXES = (".parquet", ".csv")


def read_inventory(uri: str, storage_options: dict[str, object] | None = None) -> pa.Table:
    """The inventory at ``uri`` (a Delta table, a Parquet or CSV file, or a directory of them)
    as ``INVENTORY_SCHEMA`` rows; ``ConfigError`` when it lacks a column or holds no file."""
    if uri.endswith(_FILE_SUFFIXES):  # one file
        parent, _, name = uri.rpartition("/")
        storage, keys = open_storage(parent or ".", storage_options), [name]
    else:
        storage = open_storage(uri, storage_options)
        if any(True for _ in storage.list_from(LOG_DIR)):
            return _delta_inventory(DeltaTable(storage=storage), uri)
        keys = [f.key for f in storage.list_recursive("") if not posixpath.basename(f.key).startswith((".", "_"))]
    tables = [_read_file(storage, k, uri) for k in keys if k.endswith(_FILE_SUFFIXES)]
    if not tables:
        raise ConfigError(f"the inventory {uri} holds no Parquet or CSV file: give a Delta table, a "
                          "Parquet/CSV file or a directory of them", path=uri)
    return pa.concat_tables(tables)


def _conform(table: pa.Table, source: str) -> pa.Table:
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise ConfigError(f"the inventory {source} has no column {', '.join(missing)}: an inventory needs "
                          f"{', '.join(_COLUMNS)} (Delta's VACUUM ... USING INVENTORY schema)", path=source)
    try:
        return table.select(_COLUMNS).cast(INVENTORY_SCHEMA)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ConfigError(f"the inventory {source} has columns of the wrong type ({exc}); expected "
                          "path string, length long, isDir boolean, modificationTime long (ms)", path=source) from None


def _read_file(storage: Storage, key: str, source: str) -> pa.Table:
    where = storage.uri(key)
    if key.endswith(".parquet"):
        return _conform(pq.read_table(pa.BufferReader(storage.read(key)), columns=None), where)
    types = {"path": pa.string(), "length": pa.int64(), "isDir": pa.bool_(), "modificationTime": pa.int64()}
    return _conform(pcsv.read_csv(pa.BufferReader(storage.read(key)),
                                  convert_options=pcsv.ConvertOptions(column_types=types)), where)


def _delta_inventory(table: DeltaTable, source: str) -> pa.Table:
    snapshot = table.snapshot()
    if missing := [c for c in _COLUMNS if c not in snapshot.schema.field_names]:
        raise ConfigError(f"the inventory table {source} has no column {', '.join(missing)}: an inventory needs "
                          f"{', '.join(_COLUMNS)} (Delta's VACUUM ... USING INVENTORY schema)", path=source)
    parts = [read_data_file(table.storage, a.path, snapshot.metadata, columns=_COLUMNS, size=a.size,
                            deletion_vector=a.deletion_vector) for a in snapshot.add_actions()]
    return pa.concat_tables([_conform(p, source) for p in parts]) if parts else INVENTORY_SCHEMA.empty_table()


def inventory_listing(inventory: pa.Table, table_root: str) -> pa.Table:
    """The files of ``inventory`` (``INVENTORY_SCHEMA``) as the listing ``plan_vacuum`` takes
    (``key``, ``size``, ``modification_time``). ``PathEscapesTableError`` when a path is not
    certainly inside ``table_root``: nothing may be planned from another table's inventory."""
    files = inventory.filter(pc.invert(pc.fill_null(inventory.column("isDir"), False)))
    root = TableRoot.of(table_root)
    paths = files.column("path")
    # Slice by slice: the splitting and joining temporaries of one slice, not of millions of rows.
    keys = pa.chunked_array([_keys(paths.slice(i, _SLICE_ROWS), root, table_root)
                             for i in range(0, len(paths), _SLICE_ROWS)], pa.string())
    if keys.null_count:
        outside = files.column("path").filter(pc.is_null(keys)).to_pylist()
        raise PathEscapesTableError(
            f"the inventory lists {len(outside)} path(s) outside the table root {root.location.uri}, e.g. "
            f"{outside[0]!r}; nothing was deleted. Give the inventory of this table only (its rows filtered to "
            "paths under the root)", path=table_root)
    return pa.Table.from_arrays([keys, files.column("length"), files.column("modificationTime")],
                                schema=LISTING_SCHEMA)


_SLICE_ROWS = 256 * 1024


def _keys(paths: pa.ChunkedArray, root: TableRoot, table_root: str) -> pa.Array:
    """The key of each path (null when it is not certainly inside ``root``). The files of one
    directory share its placement, so each distinct directory is placed once (``dir/x``) and
    its files' keys are its key plus their names: no Python string per file. Paths without a
    directory (or whose directory is only a scheme) and names that are not plain (empty, ``.``,
    ``..``, a backslash) are placed one by one."""
    flat = pc.fill_null(paths.combine_chunks() if paths.num_chunks else string_array([]), string_scalar(""))
    lists = pc.split_pattern(flat, "/", max_splits=1, reverse=True)
    offsets, parts = lists.offsets, lists.values
    names = parts.take(pc.subtract(offsets[1:], int_scalar(1, pa.int32())))
    dirs = parts.take(offsets[:-1])
    shared = pc.and_(pc.equal(pc.list_value_length(lists), int_scalar(2, pa.int32())),
                     pc.invert(pc.or_(pc.match_substring_regex(names, r"^\.{0,2}$|\\"),
                                      pc.match_substring_regex(dirs, r"^[^/]*:/*$|^$"))))
    distinct = pc.unique(dirs.filter(shared))
    prefixes = []
    for directory in distinct.to_pylist():
        key = _key(f"{directory}/x", root)
        prefixes.append(None if key is None else normalize_key(key, root=table_root)[:-1])
    # Rows not ``shared`` get a wrong or null key here: they are all replaced below.
    prefix = string_array(prefixes).take(pc.index_in(dirs, value_set=distinct))
    keys = pc.binary_join_element_wise(prefix, names, string_scalar(""))
    alone = pc.invert(shared)
    if not pc.any(alone).as_py():
        return keys
    one_by_one = [_key(p, root) for p in flat.filter(alone).to_pylist()]
    placed = string_array([None if k is None else normalize_key(k, root=table_root) for k in one_by_one])
    return pc.replace_with_mask(keys, alone, placed)


def _key(path: str, root: TableRoot) -> str | None:
    """The key of ``path`` (an absolute location as stored, not URI-encoded) under ``root``."""
    location = ("file://" + path) if path.startswith("/") else path
    if "://" not in location and not location.startswith("file:"):
        return None  # a relative path names no place for certain
    placed = root.place(quote(location, safe=":/"))  # place() decodes once: give it the encoded form
    return placed.key if placed.where is Where.INSIDE else None
