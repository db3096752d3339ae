"""Writing classic checkpoints, single-file and multi-part, then ``_last_checkpoint``
(PROTOCOL.md "Checkpoints", "Checkpoint Specs" > "V1 Spec", "Multi-part checkpoint",
"Checkpoint Schema", "Last Checkpoint File Schema").

The checkpoint is built columnar from the snapshot's Arrow tables — one row per action,
one struct column per action type (``protocol``, ``metaData``, ``txn``, ``add``, ``remove``,
``domainMetadata``), each row non-null in exactly one column — so a million files cost a few
vectorised array operations, not a million Python objects.

- ``add.stats`` is kept as JSON when ``delta.checkpoint.writeStatsAsJson`` (default true);
  ``stats_parsed`` and ``partitionValues_parsed`` are added when
  ``delta.checkpoint.writeStatsAsStruct`` is true (physical names under column mapping).
- Tombstones older than ``delta.deletedFileRetentionDuration`` and ``txn`` entries older
  than ``delta.setTransactionRetentionDuration`` are dropped (clock injectable).
- Multi-part checkpoints put protocol/metadata/txns in part 1 and the file actions (adds
  sorted by path, then tombstones sorted by path) in contiguous ranges over the parts: the same
  snapshot always yields the same parts, and each part covers one path range.
- Each part is written atomically (``Storage.write``); ``_last_checkpoint`` is written only
  after every part exists, and never moved backwards. Readers use a multi-part checkpoint only
  when all its parts exist, so a crash half-way leaves a table that still reads.
- ``protocol`` and ``metaData`` keep fields this library does not know (another writer's
  additions, ``Protocol.extra``/``Metadata.extra``) as extra struct fields of the inferred type,
  so a checkpoint loses nothing the commits held; readers ignore fields they do not know.
- Tables with the ``v2Checkpoint`` feature get a classic-named single file in the V2 spec
  (with its ``checkpointMetadata`` row), since multi-part files are V1-only.
- Nothing is written unless the write gate (``table_features.check_write_supported``) accepts
  the protocol of the version checkpointed and the table's current one (checkpointProtection
  rule (b): no checkpoint of a protocol this library does not support).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import ConfigError
from delta_core.log.file_actions import DV_TYPE, STRING_MAP
from delta_core.log.last_checkpoint import LastCheckpoint, encode_last_checkpoint, read_last_checkpoint
from delta_core.log.log_path import LAST_CHECKPOINT, checkpoint_key, multipart_checkpoint_key
from delta_core.model import progress
from delta_core.model.clock import Clock, system_clock
from delta_core.model.partition_values import typed_partition_values
from delta_core.model.schema import StructType
from delta_core.model.stats import parse_stats_struct
from delta_core.model.table_features import check_write_supported, column_mapping_mode, has_feature

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

PROTOCOL_TYPE = pa.struct([
    ("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
    ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string())),
])
METADATA_TYPE = pa.struct([
    ("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
    ("format", pa.struct([("provider", pa.string()), ("options", STRING_MAP)])),
    ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
    ("configuration", STRING_MAP), ("createdTime", pa.int64()),
])
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
DOMAIN_TYPE = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", STRING_MAP)])
REMOVE_TYPE = pa.struct([
    ("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
    ("extendedFileMetadata", pa.bool_()), ("partitionValues", STRING_MAP), ("size", pa.int64()),
    ("deletionVector", DV_TYPE), ("baseRowId", pa.int64()), ("defaultRowCommitVersion", pa.int64()),
])
_ADD_BASE = [
    ("path", pa.string()), ("partitionValues", STRING_MAP), ("size", pa.int64()),
    ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string()),
    ("tags", STRING_MAP), ("deletionVector", DV_TYPE), ("baseRowId", pa.int64()),
    ("defaultRowCommitVersion", pa.int64()),
]


@dataclass(frozen=True, slots=True)
class CheckpointResult:
    version: int
    parts: int
    size: int  # number of actions
    size_in_bytes: int
    path: str  # URI of the single file, or of part 1
    num_add_files: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "parts": self.parts, "size": self.size,
                "size_in_bytes": self.size_in_bytes, "path": self.path,
                "num_add_files": self.num_add_files}


# --- columns ------------------------------------------------------------------------------


def _col(table: pa.Table, name: str, typ: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, typ)
    col = table.column(name)
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return arr if arr.type == typ else arr.cast(typ)


def _add_struct(files: pa.Table, extra: list[tuple[str, pa.Array]]) -> pa.StructArray:
    n = files.num_rows
    arrays = [
        _col(files, "path", pa.string()),
        _col(files, "partition_values", STRING_MAP),
        _col(files, "size", pa.int64()),
        _col(files, "modification_time", pa.int64()),
        # The snapshot state is not a change: Delta writes dataChange=false in checkpoints.
        pa.repeat(False, n) if n else pa.array([], pa.bool_()),
        _col(files, "stats", pa.string()),
        _col(files, "tags", STRING_MAP),
        _col(files, "deletion_vector", DV_TYPE),
        _col(files, "base_row_id", pa.int64()),
        _col(files, "default_row_commit_version", pa.int64()),
    ]
    fields = [pa.field(name, typ) for name, typ in _ADD_BASE]
    if "clustering_provider" in files.column_names and files.column("clustering_provider").null_count < n:
        arrays.append(_col(files, "clustering_provider", pa.string()))
        fields.append(pa.field("clusteringProvider", pa.string()))
    for name, arr in extra:
        arrays.append(arr)
        fields.append(pa.field(name, arr.type))
    return pa.StructArray.from_arrays(arrays, fields=fields)


def _remove_struct(tomb: pa.Table) -> pa.StructArray:
    n = tomb.num_rows
    arrays = [
        _col(tomb, "path", pa.string()),
        _col(tomb, "deletion_timestamp", pa.int64()),
        pa.repeat(False, n) if n else pa.array([], pa.bool_()),
        _col(tomb, "extended_file_metadata", pa.bool_()),
        _col(tomb, "partition_values", STRING_MAP),
        _col(tomb, "size", pa.int64()),
        _col(tomb, "deletion_vector", DV_TYPE),
        _col(tomb, "base_row_id", pa.int64()),
        _col(tomb, "default_row_commit_version", pa.int64()),
    ]
    return pa.StructArray.from_arrays(arrays, fields=list(REMOVE_TYPE))


def _parsed_columns(snapshot: Snapshot, files: pa.Table) -> list[tuple[str, pa.Array]]:
    """``partitionValues_parsed`` and ``stats_parsed`` for writeStatsAsStruct tables."""
    metadata = snapshot.metadata
    schema = StructType.from_json(metadata.schema_string)
    mode = column_mapping_mode(snapshot.protocol, metadata.configuration)
    physical = mode != "none"
    out: list[tuple[str, pa.Array]] = []
    parts = list(metadata.partition_columns)
    if parts:
        typed = typed_partition_values(files.column("partition_values"), schema, parts, physical_keys=physical)
        arrays = [typed.column(c).combine_chunks() for c in parts]
        names = [schema[c].physical_name if physical else c for c in parts]
        out.append(("partitionValues_parsed", pa.StructArray.from_arrays(arrays, names=names)))
    stats = parse_stats_struct(_col(files, "stats", pa.string()), schema, partition_columns=parts,
                               physical=physical)
    out.append(("stats_parsed", stats))
    return out


# --- assembling the action rows -------------------------------------------------------------


def _with_unknown_fields(typ: pa.StructType, body: dict[str, Any],
                         extra: Mapping[str, Any]) -> tuple[pa.StructType, dict[str, Any]]:
    """``typ``/``body`` plus one field per unknown field of the action, typed as Arrow infers it.

    A value Arrow cannot type (e.g. a list mixing numbers and objects) or Parquet cannot hold
    (an empty object: a struct without fields) is left out, with a warning, rather than written
    in another shape.
    """
    fields = list(typ)
    body = dict(body)
    for name, value in extra.items():
        if typ.get_field_index(name) >= 0 or value is None:
            continue  # a null field and an absent one read back the same
        try:
            inferred = pa.array([value]).type
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            inferred = None
        if inferred is None or _has_empty_struct(inferred):
            log.warning("unknown field %r cannot be stored in a Parquet checkpoint; left out", name)
            continue
        fields.append(pa.field(name, inferred))
        body[name] = value
    return pa.struct(fields), body


def _has_empty_struct(typ: pa.DataType) -> bool:
    if pa.types.is_struct(typ):
        return typ.num_fields == 0 or any(_has_empty_struct(f.type) for f in typ)
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return _has_empty_struct(typ.value_type)
    return False


def _header_rows(snapshot: Snapshot, *, now_ms: int, v2: bool) -> dict[str, pa.Array]:
    """protocol, metaData, txn, domainMetadata (and checkpointMetadata) rows, one action each."""
    p, m = snapshot.protocol, snapshot.metadata
    protocol_type, protocol_body = _with_unknown_fields(PROTOCOL_TYPE, {
        "minReaderVersion": p.min_reader_version, "minWriterVersion": p.min_writer_version,
        # Non-null exactly when the protocol uses table features (PROTOCOL.md "Checkpoint Schema").
        "readerFeatures": list(p.reader_features or ()) if p.min_reader_version >= 3 else None,
        "writerFeatures": list(p.writer_features or ()) if p.min_writer_version >= 7 else None,
    }, p.extra)
    metadata_type, metadata_body = _with_unknown_fields(METADATA_TYPE, {
        "id": m.id, "name": m.name, "description": m.description,
        "format": {"provider": m.format.provider, "options": list(m.format.options.items())},
        "schemaString": m.schema_string, "partitionColumns": list(m.partition_columns),
        "configuration": list(m.configuration.items()), "createdTime": m.created_time,
    }, m.extra)
    rows: list[tuple[str, dict[str, Any]]] = [("protocol", protocol_body), ("metaData", metadata_body)]
    retention = snapshot.properties.set_transaction_retention
    cutoff = None if retention is None else now_ms - int(retention.total_seconds() * 1000)
    txns = snapshot.all_txns
    for app_id in sorted(txns):
        t = txns[app_id]
        if cutoff is not None and t.last_updated is not None and t.last_updated < cutoff:
            continue  # expired: the application stopped writing long ago
        rows.append(("txn", {"appId": t.app_id, "version": t.version, "lastUpdated": t.last_updated}))
    domains = getattr(snapshot, "domain_metadata", {}) or {}
    for name in sorted(domains):
        d = domains[name]
        if not d.removed:
            rows.append(("domainMetadata", {"domain": d.domain, "configuration": d.configuration,
                                             "removed": False}))
    if v2:
        rows.append(("checkpointMetadata", {"version": snapshot.version, "tags": None}))
    types = {"protocol": protocol_type, "metaData": metadata_type, "txn": TXN_TYPE,
             "domainMetadata": DOMAIN_TYPE, "checkpointMetadata": CHECKPOINT_METADATA_TYPE}
    return {name: pa.array([body if kind == name else None for kind, body in rows], typ)
            for name, typ in types.items()}


def _segment(columns: dict[str, pa.Array], n: int, types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({name: columns[name] if name in columns else pa.nulls(n, typ)
                     for name, typ in types.items()})


def build_checkpoint_table(
    snapshot: Snapshot,
    *,
    clock: Clock = system_clock,
    sort_by_path: bool = False,
) -> tuple[pa.Table, int, int]:
    """(table of checkpoint rows, number of header rows, number of add rows); ``clock`` gives
    the "now" that expired tombstones and txns are dropped against."""
    props = snapshot.properties
    now_ms = clock()
    v2 = has_feature(snapshot.protocol, "v2Checkpoint")
    files = snapshot.files
    if sort_by_path and files.num_rows:
        # Sorting the flat columns before they become structs is the cheap place to do it.
        files = files.take(pc.sort_indices(files.column("path")))
    extra = _parsed_columns(snapshot, files) if props.checkpoint_write_stats_as_struct else []
    add = _add_struct(files, extra)
    if not props.checkpoint_write_stats_as_json and any(name == "stats_parsed" for name, _ in extra):
        # Stats live in stats_parsed only; the JSON copy is dropped as the property asks.
        idx = add.type.get_field_index("stats")
        fields = list(add.type)
        arrays = [add.field(i) for i in range(len(fields))]
        arrays[idx] = pa.nulls(len(add), pa.string())
        add = pa.StructArray.from_arrays(arrays, fields=fields)
    tomb = snapshot.tombstones
    cutoff = now_ms - int(props.deleted_file_retention.total_seconds() * 1000)
    if tomb.num_rows:
        ts = tomb.column("deletion_timestamp")
        # Tombstones only protect files from vacuum until the retention passes.
        tomb = tomb.filter(pc.fill_null(pc.greater_equal(ts, cutoff), False))
        if sort_by_path and tomb.num_rows:
            tomb = tomb.take(pc.sort_indices(tomb.column("path")))
    remove = _remove_struct(tomb)
    header = _header_rows(snapshot, now_ms=now_ms, v2=v2)
    types: dict[str, pa.DataType] = {
        "protocol": header["protocol"].type, "metaData": header["metaData"].type, "txn": TXN_TYPE,
        "add": add.type, "remove": REMOVE_TYPE,
    }
    if header["domainMetadata"].null_count < len(header["domainMetadata"]):
        types["domainMetadata"] = DOMAIN_TYPE
    if v2:
        types["checkpointMetadata"] = CHECKPOINT_METADATA_TYPE
    n_head = len(header["protocol"])
    head = _segment({k: v for k, v in header.items() if k in types}, n_head, types)
    n_add, n_rm = len(add), len(remove)
    body = pa.concat_tables([_segment({"add": add}, n_add, types), _segment({"remove": remove}, n_rm, types)])
    return pa.concat_tables([head, body]), n_head, n_add


# --- writing -----------------------------------------------------------------------------


def _parquet_bytes(table: pa.Table) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="snappy", row_group_size=1 << 20)
    return sink.getvalue()


def write_checkpoint(
    table: DeltaTable,
    *,
    version: int | None = None,
    part_size: int | None = None,
    clock: Clock | None = None,
    update_last_checkpoint: bool = True,
    snapshot: Snapshot | None = None,
) -> CheckpointResult:
    """Write the checkpoint of ``version`` (default: latest) and point ``_last_checkpoint`` at it.

    ``part_size`` is the most actions per file: more actions than that yield a multi-part
    checkpoint. ``snapshot`` is an already loaded snapshot of ``table`` to checkpoint (saves
    reading the log again). Rewriting an existing checkpoint writes the same content again.
    ``clock`` overrides the table's clock for tombstone and txn expiry.
    """
    if part_size is not None and part_size < 1:
        raise ConfigError(f"part_size={part_size} must be at least 1")
    if snapshot is None or (version is not None and snapshot.version != version):
        snapshot = table.snapshot(version)
    # The write gate on the protocol of the version checkpointed: a checkpoint restates that
    # protocol, and checkpointProtection forbids checkpoints of protocols we do not support.
    check_write_supported(snapshot.protocol, snapshot.metadata, path=table.uri, version=snapshot.version)
    if version is not None:
        # An older version's protocol is not the table's: its current protocol governs writes too.
        latest_protocol, latest_metadata = table.protocol_and_metadata()
        check_write_supported(latest_protocol, latest_metadata, path=table.uri)
    storage = table.storage
    v2 = has_feature(snapshot.protocol, "v2Checkpoint")
    rows_estimate = snapshot.num_files + snapshot.tombstones.num_rows + 2 + len(snapshot.all_txns)
    multi = part_size is not None and rows_estimate > part_size and not v2
    if part_size is not None and rows_estimate > part_size and v2:
        log.info("table=%s version=%d has v2Checkpoint: writing one file, not parts", table.uri, snapshot.version)
    # started before the table is built: on a large table that is most of the time
    reported = progress.begin(f"checkpoint v{snapshot.version}", unit="actions", total_items=rows_estimate)
    cp, n_head, n_add = build_checkpoint_table(snapshot, clock=clock or table.clock, sort_by_path=multi)
    v = snapshot.version
    total_bytes = 0
    if not multi:
        key = checkpoint_key(v)
        buf = _parquet_bytes(cp)
        storage.write(key, buf.to_pybytes())
        total_bytes, parts, first = buf.size, 1, key
        reported.advance(items=cp.num_rows, nbytes=buf.size)
    else:
        assert part_size is not None
        body_rows = cp.num_rows - n_head
        parts = max(1, math.ceil(cp.num_rows / part_size))
        per_part = math.ceil(body_rows / parts) if body_rows else 0
        first = multipart_checkpoint_key(v, 1, parts)
        for i in range(parts):
            lo = n_head + i * per_part
            hi = min(cp.num_rows, lo + per_part)
            chunk = cp.slice(lo, max(0, hi - lo))
            if i == 0:
                chunk = pa.concat_tables([cp.slice(0, n_head), chunk])
            buf = _parquet_bytes(chunk)
            storage.write(multipart_checkpoint_key(v, i + 1, parts), buf.to_pybytes())
            total_bytes += buf.size
            reported.advance(items=chunk.num_rows, nbytes=buf.size)
    reported.end()
    result = CheckpointResult(version=v, parts=parts, size=cp.num_rows, size_in_bytes=total_bytes,
                              path=storage.uri(first), num_add_files=n_add)
    if update_last_checkpoint:
        _update_last_checkpoint(storage, result, multi=multi)
    log.info("table=%s version=%d checkpoint written: %d action(s) in %d part(s), %d bytes",
             table.uri, v, result.size, parts, total_bytes)
    return result


def _update_last_checkpoint(storage: Any, result: CheckpointResult, *, multi: bool) -> None:
    current = read_last_checkpoint(storage)
    if current is not None and current.version > result.version:
        return  # a newer checkpoint exists: the hint must never move backwards
    record = LastCheckpoint(
        version=result.version,
        size=result.size,
        parts=result.parts if multi else None,
        size_in_bytes=result.size_in_bytes,
        num_of_add_files=result.num_add_files,
    )
    storage.write(LAST_CHECKPOINT, encode_last_checkpoint(record))
