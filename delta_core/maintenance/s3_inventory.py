"""An S3 Inventory report, as AWS delivers it, read as a vacuum inventory.

A delivery is ``<destination prefix>/<source bucket>/<config ID>/<YYYY-MM-DDTHH-MMZ>/manifest.json``:
the manifest names the source bucket, when the report was taken (``creationTimestamp``, ms), the
``fileFormat`` (CSV, Parquet or ORC) and the ``fileSchema`` of its data files (CSV: a list of
column names, ``Bucket, Key, VersionId, IsLatest, IsDeleteMarker, Size, LastModifiedDate, ...``;
Parquet: a message type; ORC: ``struct<bucket:string,key:string,...>``) and the data files in
the destination bucket. CSV files are gzip, without a header, and spell keys URL-encoded.

The rows become ``INVENTORY_SCHEMA`` batches, file by file and batch by batch: of a versioned
bucket only latest versions (never a delete marker); rows outside the table root left out and
counted (a report covers a bucket). A report of another bucket, or without a row under the
table's ``_delta_log/`` (its prefix filter does not cover the table), is an ``InventoryError``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterator
from typing import IO
from urllib.parse import unquote_plus

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.orc as porc
import pyarrow.parquet as pq

from delta_core.errors import InventoryError
from delta_core.log.log_path import LOG_DIR
from delta_core.maintenance.vacuum_inventory import (
    BATCH_ROWS,
    INVENTORY_SCHEMA,
    InventoryRead,
    InventorySkips,
    unreadable,
)
from delta_core.model.arrow_values import string_array
from delta_core.model.path_identity import TableRoot
from delta_core.storage import open_storage

MANIFEST = "manifest.json"
_CSV_BLOCK_BYTES = 16 << 20
_WANTED = ("bucket", "key", "is_latest", "is_delete_marker", "size", "last_modified_date")
_TYPES = {"bucket": pa.string(), "key": pa.string(), "is_latest": pa.bool_(), "is_delete_marker": pa.bool_(),
          "size": pa.int64(), "last_modified_date": pa.timestamp("ms", tz="UTC")}


def is_report(uri: str, storage_options: dict[str, object] | None = None) -> bool:
    """Whether ``uri`` is a ``manifest.json`` or a prefix holding S3 Inventory deliveries."""
    if uri.rstrip("/").endswith("/" + MANIFEST):
        return True
    if uri.endswith((".parquet", ".csv")):
        return False
    storage = open_storage(uri, storage_options)
    return any(f.key.endswith("/" + MANIFEST) for f in storage.list_recursive(""))


def _snake(name: str) -> str:
    """``LastModifiedDate`` -> ``last_modified_date`` (CSV names; Parquet and ORC use the latter)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.strip()).lower()


def schema_columns(file_format: str, file_schema: str) -> list[str]:
    """The data files' column names, in order, from the manifest's ``fileSchema``."""
    if file_format == "CSV":
        return [_snake(c) for c in file_schema.split(",")]
    if file_format == "Parquet":
        return re.findall(r"(?:required|optional)\s+\w+\s+(\w+)", file_schema)
    if file_format == "ORC":
        return re.findall(r"(\w+):", file_schema.removeprefix("struct<"))
    raise InventoryError(f"S3 Inventory fileFormat {file_format!r} is not CSV, Parquet or ORC")


def open_report(uri: str, storage_options: dict[str, object] | None = None, *, table_root: str,
                batch_rows: int = BATCH_ROWS) -> InventoryRead:
    """The S3 Inventory report at ``uri`` (its ``manifest.json``, or a destination prefix: its
    newest delivery, by the delivery folder's time) for a vacuum of ``table_root``."""
    manifest_uri = uri.rstrip("/")
    if not manifest_uri.endswith("/" + MANIFEST):
        found = [f.key for f in open_storage(manifest_uri, storage_options).list_recursive("")
                 if f.key.endswith("/" + MANIFEST)]
        if not found:
            raise InventoryError(f"{uri} holds no S3 Inventory manifest.json", path=uri)
        manifest_uri = f"{manifest_uri}/{max(found, key=lambda k: k.rsplit('/', 2)[-2])}"
    parent, _, name = manifest_uri.rpartition("/")
    try:
        manifest = json.loads(open_storage(parent, storage_options).read(name))
        bucket_of_source, file_format = str(manifest["sourceBucket"]), str(manifest["fileFormat"])
        columns = schema_columns(file_format, str(manifest["fileSchema"]))
        destination = str(manifest["destinationBucket"]).removeprefix("arn:aws:s3:::")
        files = [f"s3://{destination}/{f['key']}" for f in manifest["files"]]
        taken = int(manifest["creationTimestamp"])
    except FileNotFoundError as exc:
        raise unreadable(manifest_uri, exc) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise InventoryError(f"{manifest_uri} is not an S3 Inventory manifest ({type(exc).__name__}: {exc})",
                             path=manifest_uri) from None
    location = TableRoot.of(table_root).location
    if location.scheme not in ("s3", "s3a") or location.authority != bucket_of_source:
        raise InventoryError(f"the S3 Inventory report {manifest_uri} lists bucket {bucket_of_source!r}, not the "
                             f"table's ({table_root}); nothing was committed or deleted", path=manifest_uri)
    missing = [c for c in ("key", "size", "last_modified_date") if c not in columns]
    if missing:
        raise InventoryError(f"the S3 Inventory report {manifest_uri} has no {', '.join(missing)} field: configure "
                             "the inventory with Size and LastModifiedDate", path=manifest_uri)
    prefix = location.path.strip("/") + "/" if location.path.strip("/") else ""
    skips = InventorySkips()
    return InventoryRead(manifest_uri, "s3-inventory", taken, _rows(
        files, file_format, columns, storage_options, bucket_of_source, prefix, skips, batch_rows, manifest_uri),
        outside_root="skip", skips=skips)


def _rows(files: list[str], file_format: str, columns: list[str], storage_options: dict[str, object] | None,
          bucket: str, prefix: str, skips: InventorySkips, batch_rows: int, manifest: str) -> Iterator[pa.RecordBatch]:
    covered = False
    for uri in files:
        parent, _, name = uri.rpartition("/")
        storage = open_storage(parent, storage_options)
        try:
            fh = storage.open_input(name)
        except OSError as exc:
            raise unreadable(uri, exc) from None
        with fh:
            for batch in _file_batches(fh, file_format, columns, batch_rows, uri):
                keys = batch.column("key")
                if file_format == "CSV":  # AWS URL-encodes CSV keys ('+' for a space)
                    keys = _decoded(keys)
                rows = _latest_files(batch, skips)
                keys = keys.filter(rows) if rows is not None else keys
                inside = pc.starts_with(keys, prefix)
                skips.outside_root += len(keys) - (pc.sum(inside).as_py() or 0)
                kept = batch.filter(rows) if rows is not None else batch
                kept, keys = kept.filter(inside), keys.filter(inside)
                covered = covered or bool(pc.any(pc.starts_with(keys, f"{prefix}{LOG_DIR}/")).as_py())
                yield pa.RecordBatch.from_arrays([
                    pc.binary_join_element_wise(f"s3://{bucket}/", keys, ""), kept.column("size"),
                    pa.array([False] * len(keys), pa.bool_()),
                    kept.column("last_modified_date").cast(pa.timestamp("ms", tz="UTC"), safe=False).cast(pa.int64())],
                    schema=INVENTORY_SCHEMA)
    if not covered:
        raise InventoryError(f"the S3 Inventory report {manifest} lists no file under s3://{bucket}/{prefix}"
                             f"{LOG_DIR}/: its prefix filter does not cover the table. Nothing was committed or "
                             "deleted; use an inventory configured for a prefix the table root is under", path=manifest)


def _decoded(keys: pa.Array) -> pa.Array:
    """``keys`` URL-decoded; only those holding a ``%`` or ``+`` go through Python."""
    encoded = pc.match_substring_regex(keys, r"[%+]")
    if not pc.any(encoded).as_py():
        return keys
    plain = string_array([unquote_plus(k) for k in keys.filter(encoded).to_pylist()])
    return pc.replace_with_mask(keys, encoded, plain)


def _latest_files(batch: pa.RecordBatch, skips: InventorySkips) -> pa.Array | None:
    """The rows that are a current object (not a noncurrent version, not a delete marker), or
    ``None`` when every row is (an unversioned bucket's report has neither column)."""
    names = batch.schema.names
    if "is_delete_marker" not in names and "is_latest" not in names:
        return None
    no = pa.array([False] * batch.num_rows, pa.bool_())
    marker = pc.fill_null(batch.column("is_delete_marker"), False) if "is_delete_marker" in names else no
    noncurrent = pc.invert(pc.fill_null(batch.column("is_latest"), True)) if "is_latest" in names else no
    skips.delete_markers += pc.sum(marker).as_py() or 0
    skips.not_latest += pc.sum(pc.and_(noncurrent, pc.invert(marker))).as_py() or 0
    return pc.invert(pc.or_(marker, noncurrent))


def _file_batches(fh: IO[bytes], file_format: str, columns: list[str], batch_rows: int,
                  uri: str) -> Iterator[pa.RecordBatch]:
    wanted = [c for c in _WANTED if c in columns]
    try:
        if file_format == "CSV":
            reader = pcsv.open_csv(gzip.GzipFile(fileobj=fh) if uri.endswith(".gz") else fh,
                                   read_options=pcsv.ReadOptions(column_names=columns, block_size=_CSV_BLOCK_BYTES),
                                   convert_options=pcsv.ConvertOptions(
                                       include_columns=wanted, column_types={c: _TYPES[c] for c in wanted},
                                       true_values=["true"], false_values=["false"]))
            for block in reader:
                yield from (block.slice(i, batch_rows) for i in range(0, block.num_rows, batch_rows))
        elif file_format == "Parquet":
            yield from pq.ParquetFile(fh).iter_batches(batch_size=batch_rows, columns=wanted)
        else:
            orc = porc.ORCFile(fh)
            for stripe in range(orc.nstripes):
                whole = orc.read_stripe(stripe, columns=wanted)  # a stripe is read whole (ORC's unit)
                yield from (whole.slice(i, batch_rows) for i in range(0, whole.num_rows, batch_rows))
    except (pa.ArrowInvalid, OSError, EOFError) as exc:
        raise unreadable(uri, exc) from None
