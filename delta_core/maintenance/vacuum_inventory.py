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
inventory are simply not deleted. Rows naming a directory (``isDir``, or a trailing ``/``) are
left out and counted in ``InventorySkips``; a missing or unreadable file or a wrong schema is an
``InventoryError``. ``open_delta_shape`` gives the whole as an ``InventoryRead`` (with when it
was taken), the form every inventory shape takes (``s3_inventory`` reads S3 Inventory reports);
``vacuum_inventory_plan`` plans it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

from delta_core.errors import InventoryError, PathEscapesTableError
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
        raise InventoryError(f"the inventory {uri} holds no Parquet or CSV file: give a Delta table, a "
                          "Parquet/CSV file or a directory of them", path=uri)
    return (batch for key in files for batch in _file_batches(storage, key, batch_rows))


def _check_columns(names: Sequence[str], source: str, what: str = "inventory") -> None:
    missing = [c for c in _COLUMNS if c not in names]
    if missing:
        raise InventoryError(f"the {what} {source} has no column {', '.join(missing)}: an inventory needs "
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


def _wrong_type(source: str, exc: Exception) -> InventoryError:
    return InventoryError(f"the inventory {source} has columns of the wrong type ({exc}); expected "
                       "path string, length long, isDir boolean, modificationTime long (ms)", path=source)


def unreadable(source: str, exc: Exception) -> InventoryError:
    """The typed error for an inventory file that is missing or not what its name says."""
    what = "does not exist" if isinstance(exc, FileNotFoundError) else f"cannot be read ({type(exc).__name__}: {exc})"
    return InventoryError(f"the inventory file {source} {what}; nothing was committed or deleted. Give the "
                          "location of a complete inventory (a Delta table, Parquet or CSV files, or an S3 "
                          "Inventory manifest.json)", path=source)


def _file_batches(storage: Storage, key: str, batch_rows: int) -> Iterator[pa.RecordBatch]:
    where = storage.uri(key)
    try:
        fh = storage.open_input(key)
    except OSError as exc:
        raise unreadable(where, exc) from None
    with fh:
        if key.endswith(".parquet"):
            try:
                parquet = pq.ParquetFile(fh)
            except (pa.ArrowInvalid, OSError) as exc:
                raise unreadable(where, exc) from None
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


@dataclass(slots=True)
class InventorySkips:
    """Inventory rows left out of the listing, by reason (each is reported): rows naming a
    directory, a key's older rows, S3 Inventory rows outside the table root, of noncurrent
    versions and of delete markers."""

    directories: int = 0
    duplicates: int = 0
    outside_root: int = 0
    not_latest: int = 0
    delete_markers: int = 0


def inventory_listing(inventory: pa.Table | Iterable[pa.RecordBatch], table_root: str, *,
                      skips: InventorySkips | None = None, outside_root: str = "refuse") -> Iterator[pa.RecordBatch]:
    """The files of ``inventory`` (``INVENTORY_SCHEMA``, a table or batches) as batches of the
    listing ``plan_vacuum`` takes (``LISTING_SCHEMA``), batch for batch. Rows naming a directory
    (``isDir``, or a path ending in ``/``) are left out and counted in ``skips``. A path not
    certainly inside ``table_root`` is ``PathEscapesTableError`` (``outside_root="refuse"``,
    Delta's own inventory shape: nothing may be planned from another table's inventory) or left
    out and counted (``"skip"``: an S3 Inventory lists a whole bucket)."""
    root = TableRoot.of(table_root)
    spelled = _RootSpelling(root)
    counted = skips if skips is not None else InventorySkips()
    rows = 0
    for batch in inventory.to_batches() if isinstance(inventory, pa.Table) else inventory:
        rows += batch.num_rows
        is_dir = pc.or_(pc.fill_null(batch.column("isDir"), false_array(1)[0]),
                        pc.fill_null(pc.ends_with(batch.column("path"), "/"), false_array(1)[0]))
        dirs = pc.sum(is_dir).as_py() or 0
        counted.directories += dirs
        files = batch.filter(pc.invert(is_dir)) if dirs else batch
        keys = _keys(files.column("path"), root, table_root, spelled)
        if keys.null_count and outside_root == "skip":
            counted.outside_root += keys.null_count
            files, keys = files.filter(pc.is_valid(keys)), keys.drop_null()
        elif keys.null_count:
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


@dataclass(slots=True)
class InventoryRead:
    """An inventory being read: its ``shape`` (``"delta"``: Delta's own columns; ``"s3-inventory"``:
    an S3 Inventory report), when it was taken (ms, ``None`` if unknown), its
    ``INVENTORY_SCHEMA`` batches, whether rows outside the table root refuse the vacuum or are
    skipped (``"refuse"``/``"skip"``), and the rows skipped so far."""

    uri: str
    shape: str
    taken_ms: int | None
    batches: Iterator[pa.RecordBatch]
    outside_root: str = "refuse"
    skips: InventorySkips = field(default_factory=InventorySkips)

    def listing(self, table_root: str) -> Iterator[pa.RecordBatch]:
        return inventory_listing(self.batches, table_root, skips=self.skips, outside_root=self.outside_root)

    def age_hours(self, now_ms: int) -> float | None:
        return None if self.taken_ms is None else round((now_ms - self.taken_ms) / 3_600_000, 2)


def open_delta_shape(uri: str, storage_options: dict[str, object] | None = None, *,
                     batch_rows: int = BATCH_ROWS) -> InventoryRead:
    """An inventory of Delta's own shape (``read_inventory``), taken when its newest file was
    written (a Delta table: its latest commit)."""
    batches = read_inventory(uri, storage_options, batch_rows=batch_rows)
    try:
        if uri.endswith(_FILE_SUFFIXES):
            parent, _, name = uri.rpartition("/")
            taken: int | None = open_storage(parent or ".", storage_options).head(name).modification_time
        else:
            storage = open_storage(uri, storage_options)
            if any(True for _ in storage.list_from(LOG_DIR)):
                taken = DeltaTable(storage=storage).snapshot().timestamp
            else:
                taken = max((f.modification_time for f in storage.list_recursive("")
                             if f.key.endswith(_FILE_SUFFIXES)), default=None)
    except FileNotFoundError as exc:
        raise unreadable(uri, exc) from None
    return InventoryRead(uri, "delta", taken, batches)
