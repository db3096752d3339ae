"""Vacuum from an inventory instead of a listing (Delta's ``VACUUM ... USING INVENTORY``).

Listing a big table on an object store takes hours; a storage inventory (an S3 Inventory report,
or any table of the files) already holds what the listing would return. An inventory is a Delta
table, or Parquet or CSV files (one file, or a directory of them), with the columns Delta names:

- ``path`` (string): the file's absolute location (``s3://bucket/table/part-0.parquet``,
  ``file:///data/t/part-0.parquet`` or ``/data/t/part-0.parquet``), as stored: not URI-encoded;
- ``length`` (long): its size in bytes;
- ``isDir`` (boolean): directory rows are skipped;
- ``modificationTime`` (long): milliseconds since the epoch.

``read_inventory`` reads it batch by batch (Parquet by row batches, CSV by blocks, a Delta table
file by file) and ``inventory_listing`` turns each batch into a batch of the listing
``vacuum_plan.plan_vacuum`` takes, so an inventory of millions of rows is never held whole and
every rule of a listed vacuum applies unchanged: the retention, young files kept, hidden paths
and ``_delta_log`` never touched, live files and their deletion vectors and CDC files kept
whatever the inventory says of them. A path outside the table root (an inventory of another
table, or of the whole bucket) refuses the vacuum before anything is deleted (the plan is
complete before the first delete): the inventory must be the table's. Files missing from the
inventory are simply not deleted.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Sequence
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from delta_core.errors import ConfigError, PathEscapesTableError
from delta_core.log.log_path import LOG_DIR
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.vacuum_plan import LISTING_SCHEMA
from delta_core.model.arrow_values import false_array, int_scalar, string_array, string_scalar
from delta_core.model.path_identity import TableRoot, Where, parse_location
from delta_core.storage import open_storage
from delta_core.storage.base import Storage, normalize_key

INVENTORY_SCHEMA = pa.schema([("path", pa.string()), ("length", pa.int64()), ("isDir", pa.bool_()),
                              ("modificationTime", pa.int64())])
_COLUMNS = INVENTORY_SCHEMA.names
_FILE_SUFFIXES = (".parquet", ".csv")
BATCH_ROWS = 256 * 1024  # inventory rows read and turned into keys at a time
_CSV_BLOCK_BYTES = 16 << 20


def read_inventory(uri: str, storage_options: dict[str, object] | None = None, *,
                   batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The inventory at ``uri`` (a Delta table, a Parquet or CSV file, or a directory of them)
    as ``INVENTORY_SCHEMA`` record batches of at most ``batch_rows`` rows, read as they are
    consumed. ``ConfigError`` when it holds no file (raised here) or lacks a column or has one of
    the wrong type (raised when that file is reached)."""
    if uri.endswith(_FILE_SUFFIXES):  # one file
        parent, _, name = uri.rpartition("/")
        storage, keys = open_storage(parent or ".", storage_options), [name]
    else:
        storage = open_storage(uri, storage_options)
        if any(True for _ in storage.list_from(LOG_DIR)):
            return _delta_inventory(DeltaTable(storage=storage), uri, batch_rows)
        keys = [f.key for f in storage.list_recursive("") if not posixpath.basename(f.key).startswith((".", "_"))]
    files = [k for k in keys if k.endswith(_FILE_SUFFIXES)]
    if not files:
        raise ConfigError(f"the inventory {uri} holds no Parquet or CSV file: give a Delta table, a "
                          "Parquet/CSV file or a directory of them", path=uri)
    return (batch for key in files for batch in _file_batches(storage, key, batch_rows))


def _check_columns(names: Sequence[str], source: str, what: str = "inventory") -> None:
    missing = [c for c in _COLUMNS if c not in names]
    if missing:
        raise ConfigError(f"the {what} {source} has no column {', '.join(missing)}: an inventory needs "
                          f"{', '.join(_COLUMNS)} (Delta's VACUUM ... USING INVENTORY schema)", path=source)


def _conform(batches: Iterable[pa.RecordBatch], source: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """``batches`` as ``INVENTORY_SCHEMA`` batches of at most ``batch_rows`` rows; a column of
    the wrong type (found when its batch is read or cast) is a ``ConfigError``."""
    try:
        for batch in batches:
            typed = batch.select(_COLUMNS).cast(INVENTORY_SCHEMA)
            for first in range(0, typed.num_rows, batch_rows):
                yield typed.slice(first, batch_rows)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise _wrong_type(source, exc) from None


def _wrong_type(source: str, exc: Exception) -> ConfigError:
    return ConfigError(f"the inventory {source} has columns of the wrong type ({exc}); expected "
                       "path string, length long, isDir boolean, modificationTime long (ms)", path=source)


def _file_batches(storage: Storage, key: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    where = storage.uri(key)
    with storage.open_input(key) as fh:
        if key.endswith(".parquet"):
            parquet = pq.ParquetFile(fh)
            _check_columns(parquet.schema_arrow.names, where)
            batches: Iterable[pa.RecordBatch] = parquet.iter_batches(batch_size=batch_rows, columns=_COLUMNS)
        else:
            try:  # the first block is read (and converted) here
                reader = pcsv.open_csv(fh, read_options=pcsv.ReadOptions(block_size=_CSV_BLOCK_BYTES),
                                       convert_options=pcsv.ConvertOptions(column_types=dict(zip(
                                           _COLUMNS, INVENTORY_SCHEMA.types, strict=True))))
            except pa.ArrowInvalid as exc:
                raise _wrong_type(where, exc) from None
            _check_columns(reader.schema.names, where)
            batches = reader
        yield from _conform(batches, where, batch_rows)


def _delta_inventory(table: DeltaTable, source: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    snapshot = table.snapshot()
    _check_columns(snapshot.schema.field_names, source, "inventory table")
    files = snapshot.add_actions()
    return (batch for a in files for batch in _conform(
        read_data_file(table.storage, a.path, snapshot.metadata, columns=_COLUMNS, size=a.size,
                       deletion_vector=a.deletion_vector).to_batches(), source, batch_rows))


def inventory_listing(inventory: pa.Table | Iterable[pa.RecordBatch], table_root: str) -> Iterator[pa.RecordBatch]:
    """The files of ``inventory`` (``INVENTORY_SCHEMA``, a table or batches) as batches of the
    listing ``plan_vacuum`` takes (``LISTING_SCHEMA``), batch for batch. ``PathEscapesTableError``
    when a path is not certainly inside ``table_root``: nothing may be planned from another
    table's inventory."""
    root = TableRoot.of(table_root)
    spelled = _RootSpelling(root)
    rows = 0
    for batch in inventory.to_batches() if isinstance(inventory, pa.Table) else inventory:
        rows += batch.num_rows
        is_dir = pc.fill_null(batch.column("isDir"), false_array(1)[0])
        files = batch.filter(pc.invert(is_dir)) if pc.any(is_dir).as_py() else batch
        keys = _keys(files.column("path"), root, table_root, spelled)
        if keys.null_count:
            outside = files.column("path").filter(pc.is_null(keys))
            raise PathEscapesTableError(
                f"the inventory lists {len(outside)} path(s) outside the table root {root.location.uri} among "
                f"its first {rows:,} rows, e.g. {outside[0].as_py()!r}; nothing was deleted. Give the inventory "
                "of this table only (its rows filtered to paths under the root)", path=table_root)
        yield pa.RecordBatch.from_arrays([keys, files.column("length"), files.column("modificationTime")],
                                         schema=LISTING_SCHEMA)


# A remainder that is not certainly its own key: empty, a dot or empty segment, a trailing
# slash, a backslash, or what ``normalize_key`` refuses (``://``, a drive letter).
_NOT_PLAIN = r"^$|^[/.]|/[/.]|/$|\\|://|^.:/"


class _RootSpelling:
    """The literal prefix (``s3://bucket/t/``, ``/data/t/``) by which an inventory spells the
    table root, learnt from the first row of each batch until found. It is taken only when it names the root exactly (no
    symlink, no other spelling): a row that starts with it and goes on with a plain relative path
    then has that path as its key, found by slicing, with no placement."""

    def __init__(self, root: TableRoot) -> None:
        self.root = root
        self.prefix: str | None = None

    def learn(self, path: str) -> None:
        """Find the prefix in ``path``, unless known (an inventory spells its rows one way)."""
        if self.prefix is not None:
            return
        loc = self.root.location
        inner = loc.path.rstrip("/") + "/"
        at = path.find(inner)
        while at >= 0:
            candidate = path[:at + len(inner)]
            location = ("file://" + candidate) if candidate.startswith("/") else candidate
            parsed = parse_location(quote(location + "x", safe=":/"))
            if parsed is not None and (parsed.scheme, parsed.authority, parsed.path) == (
                    loc.scheme, loc.authority, inner + "x"):
                self.prefix = candidate
                return
            at = path.find(inner, at + 1)


def _keys(paths: pa.Array | pa.ChunkedArray, root: TableRoot, table_root: str, spelled: _RootSpelling) -> pa.Array:
    """The key of each path (null when it is not certainly inside ``root``): the rows spelled
    with the root's prefix and a plain remainder by slicing (``_RootSpelling``), the others by
    ``_placed_keys``."""
    flat = pc.fill_null(paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths,
                        string_scalar(""))
    if len(flat) == 0:
        return flat
    spelled.learn(flat[0].as_py())
    if spelled.prefix is None:
        return _placed_keys(flat, root, table_root)
    rest = pc.utf8_slice_codeunits(flat, len(spelled.prefix))  # counts code points, as len() does
    fast = pc.and_(pc.starts_with(flat, spelled.prefix), pc.invert(pc.match_substring_regex(rest, _NOT_PLAIN)))
    if pc.all(fast).as_py():
        return rest
    slow = pc.invert(fast)
    return pc.replace_with_mask(rest, slow, _placed_keys(flat.filter(slow), root, table_root))


def _placed_keys(flat: pa.Array, root: TableRoot, table_root: str) -> pa.Array:
    """The key of each path of a null-free column (null when it is not certainly inside
    ``root``). The files of one directory share its placement, so each distinct directory is
    placed once (``dir/x``) and its files' keys are its key plus their names: no Python string
    per file. Paths without a directory (or whose directory is only a scheme) and names that are
    not plain (empty, ``.``, ``..``, a backslash) are placed one by one."""
    if len(flat) == 0:
        return flat
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
