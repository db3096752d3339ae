"""Writing checkpoints, then ``_last_checkpoint`` (PROTOCOL.md "Checkpoints", "Checkpoint
Specs" > "V1 Spec" and "V2 Spec", "Checkpoint Schema", "Last Checkpoint File Schema").

The checkpoint is built columnar from the snapshot's Arrow tables — one row per action,
one struct column per action type (``protocol``, ``metaData``, ``txn``, ``add``, ``remove``,
``domainMetadata``), each row non-null in exactly one column — so a million files cost a few
vectorised array operations, not a million Python objects.

- ``add.stats`` is kept as JSON when ``delta.checkpoint.writeStatsAsJson`` (default true);
  ``stats_parsed`` and ``partitionValues_parsed`` are added when
  ``delta.checkpoint.writeStatsAsStruct`` is true (default true, as in Delta Spark; physical
  names under column mapping). ``stats_parsed`` is carried over from the checkpoint the snapshot
  was loaded from where that one holds it typed the same (same schema, our types), so only the
  files added since are parsed, a few slices at once on threads.
- Tombstones older than ``delta.deletedFileRetentionDuration`` and ``txn`` entries older
  than ``delta.setTransactionRetentionDuration`` are dropped (clock injectable).
- Multi-part checkpoints are never written (they are read): the protocol deprecates them,
  forbids them on ``v2Checkpoint`` tables, and requires Spark's hash partitioning of their parts
  so that parts of writers racing on one version mix safely ("Multi-part checkpoint").
- The checkpoint file is streamed: ``CheckpointRows`` builds its rows a slice at a time and
  ``ParquetStream`` writes them row group by row group, so the whole file never sits in memory.
  It is published atomically (``Storage.open_atomic_output``: a local temporary file renamed
  over the name, or an object-store upload that completes only once the footer is written), so
  no reader ever sees it half-written and a failed write leaves nothing; rewriting a version's
  checkpoint replaces it whole, as Delta Spark does. ``_last_checkpoint`` is written only after
  it (and its sidecars) exist, and never moved backwards.
- ``protocol`` and ``metaData`` keep fields this library does not know (another writer's
  additions, ``Protocol.extra``/``Metadata.extra``) as extra struct fields of the inferred type,
  so a checkpoint loses nothing the commits held; readers ignore fields they do not know.
- Tables with the ``v2Checkpoint`` feature get a classic-named single file in the V2 spec
  (with its ``checkpointMetadata`` row) while their file actions number at most the sidecar
  threshold; above it a UUID-named file (``n.checkpoint.<uuid>.parquet``) holding the non-file
  actions and one ``sidecar`` action per sidecar file (``checkpoint_sidecars``), and
  ``_last_checkpoint`` gets Delta Spark's ``v2Checkpoint`` field (path, size, modification
  time, non-file actions, sidecar files). With ``delta.checkpointPolicy=classic`` they get V1-spec
  classic checkpoints, as Delta Spark writes them (``writes_v2_spec``).
- Nothing is written unless the write gate (``table_features.check_write_supported``) accepts
  the protocol of the version checkpointed and the table's current one (checkpointProtection
  rule (b): no checkpoint of a protocol this library does not support).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.log.file_actions import DV_TYPE, FILES_SCHEMA, STRING_MAP
from delta_core.log.last_checkpoint import LastCheckpoint, encode_last_checkpoint, read_last_checkpoint
from delta_core.log.log_path import LAST_CHECKPOINT, checkpoint_key, v2_checkpoint_key
from delta_core.model import progress
from delta_core.model.actions import Sidecar, action_to_json
from delta_core.model.arrow_rows import array_from_pylist
from delta_core.model.arrow_values import chunks_of, empty_table, false_array, int_scalar, one_array
from delta_core.model.clock import Clock, system_clock
from delta_core.model.ordered_threads import PARSE_THREADS, map_ahead, read_ahead
from delta_core.model.partition_values import typed_partition_values
from delta_core.model.schema import StructType
from delta_core.model.stats import parse_stats_struct, stats_parsed_type
from delta_core.model.table_features import check_write_supported, column_mapping_mode, has_feature
from delta_core.storage.base import Storage
from delta_core.write.checkpoint_sidecars import (
    DEFAULT_SIDECAR_THRESHOLD,
    SidecarWriter,
    sidecar_tasks,
    uses_sidecars,
    write_sidecars_in_process,
)
from delta_core.write.parquet_stream import ParquetStream

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot
    from delta_core.log.table import DeltaTable

log = logging.getLogger(__name__)

# File actions turned into checkpoint rows per step while writing: the rows of one step (and the
# row group ``ParquetStream`` buffers) are all that exists beside the snapshot, not a second copy
# of the whole table.
SLICE_ROWS = 128 * 1024

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
SIDECAR_TYPE = pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64()),
                          ("modificationTime", pa.int64()), ("tags", STRING_MAP)])
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


_TAGS_SCHEMA = pa.schema([("tags", STRING_MAP)])


@dataclass(frozen=True, slots=True)
class CheckpointResult:
    version: int
    size: int  # number of actions, sidecar actions and the actions in sidecars included
    size_in_bytes: int  # the checkpoint file plus its sidecars
    path: str  # URI of the checkpoint file
    num_add_files: int = 0
    sidecars: int = 0  # sidecar files written (UUID-named V2 checkpoints only)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "size": self.size, "size_in_bytes": self.size_in_bytes,
                "path": self.path, "num_add_files": self.num_add_files, "sidecars": self.sidecars}


# --- columns ------------------------------------------------------------------------------


def _col(table: pa.Table, name: str, typ: pa.DataType) -> pa.Array:
    if name not in table.column_names:
        return pa.nulls(table.num_rows, typ)
    col = table.column(name)
    arr = one_array(col)
    return arr if arr.type == typ else arr.cast(typ)


def _add_struct(files: pa.Table, extra: list[tuple[str, pa.Array]], *, clustering: bool) -> pa.StructArray:
    n = files.num_rows
    arrays = [
        _col(files, "path", pa.string()),
        _col(files, "partition_values", STRING_MAP),
        _col(files, "size", pa.int64()),
        _col(files, "modification_time", pa.int64()),
        # The snapshot state is not a change: Delta writes dataChange=false in checkpoints.
        false_array(n),
        _col(files, "stats", pa.string()),
        _col(files, "tags", STRING_MAP),
        _col(files, "deletion_vector", DV_TYPE),
        _col(files, "base_row_id", pa.int64()),
        _col(files, "default_row_commit_version", pa.int64()),
    ]
    fields = [pa.field(name, typ) for name, typ in _ADD_BASE]
    if clustering:
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
        false_array(n),
        _col(tomb, "extended_file_metadata", pa.bool_()),
        _col(tomb, "partition_values", STRING_MAP),
        _col(tomb, "size", pa.int64()),
        _col(tomb, "deletion_vector", DV_TYPE),
        _col(tomb, "base_row_id", pa.int64()),
        _col(tomb, "default_row_commit_version", pa.int64()),
    ]
    return pa.StructArray.from_arrays(arrays, fields=list(REMOVE_TYPE))


@dataclass(frozen=True, slots=True)
class _StructStats:
    """How a table's ``stats_parsed`` is typed and parsed (``delta.checkpoint.writeStatsAsStruct``)."""

    schema: StructType
    partition_columns: tuple[str, ...]
    physical: bool  # column mapping: keys are physical names
    type: pa.StructType  # of ``stats_parsed``

    @classmethod
    def of(cls, snapshot: Snapshot) -> _StructStats:
        metadata = snapshot.metadata
        schema, parts = StructType.from_json(metadata.schema_string), tuple(metadata.partition_columns)
        physical = column_mapping_mode(snapshot.protocol, metadata.configuration) != "none"
        return cls(schema, parts, physical, stats_parsed_type(schema, partition_columns=parts, physical=physical))

    def completed(self, piece: tuple[pa.Array | pa.ChunkedArray, pa.Array | None]) -> pa.Table:
        """A piece of ``Snapshot.iter_stats_with_struct`` as ``stats`` and ``stats_parsed``: the
        struct carried from the checkpoint read, or parsed from the JSON where that checkpoint
        has none for some row that has JSON."""
        stats, parsed = piece
        if parsed is None or pc.any(pc.and_(pc.is_null(parsed), pc.is_valid(stats))).as_py():
            parsed = parse_stats_struct(stats, self.schema, partition_columns=self.partition_columns,
                                        physical=self.physical)
        return pa.table({"stats": stats, "stats_parsed": parsed})

    def partition_values(self, files: pa.Table) -> pa.StructArray:
        """``partitionValues_parsed`` of ``files`` (a table with partition columns)."""
        parts = list(self.partition_columns)
        typed = typed_partition_values(files.column("partition_values"), self.schema, parts,
                                       physical_keys=self.physical)
        arrays = [typed.column(c).combine_chunks() for c in parts]
        names = [self.schema[c].physical_name if self.physical else c for c in parts]
        return pa.StructArray.from_arrays(arrays, names=names)


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


def writes_v2_spec(snapshot: Snapshot) -> bool:
    """Whether checkpoints of ``snapshot`` follow the V2 spec: on ``v2Checkpoint`` tables, unless
    ``delta.checkpointPolicy`` is ``classic`` (Delta Spark's property; PROTOCOL.md "V2 Checkpoint
    Table Feature" allows V1-spec classic checkpoints there), which DROP FEATURE sets first."""
    policy = snapshot.configuration.get("delta.checkpointPolicy", "").strip().lower()
    return has_feature(snapshot.protocol, "v2Checkpoint") and policy != "classic"


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
    return {name: array_from_pylist([body if kind == name else None for kind, body in rows], typ)
            for name, typ in types.items()}


def _segment(columns: dict[str, pa.Array], n: int, types: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({name: columns[name] if name in columns else pa.nulls(n, typ)
                     for name, typ in types.items()})


class CheckpointRows:
    """The rows of a checkpoint, built a slice at a time: ``head`` (protocol, metaData, txn,
    domainMetadata, checkpointMetadata rows), then ``body()`` (add rows, then unexpired
    remove rows) in slices of ``SLICE_ROWS``, all of type ``schema``. Each slice is a few
    vectorised Arrow operations over the snapshot's columns (zero-copy where the snapshot has
    one chunk), so the checkpoint's rows never exist all at once next to the snapshot's.
    ``clock`` gives the "now" that expired tombstones and txns are dropped against."""

    def __init__(self, snapshot: Snapshot, *, clock: Clock = system_clock) -> None:
        props = snapshot.properties
        now_ms = clock()
        self._snapshot = snapshot
        # Everything but num_records (not a checkpoint column: counting it would parse every JSON)
        # and stats and tags, which ``body`` reads a slice at a time (``Snapshot.iter_stats``,
        # ``iter_tags``): a checkpoint's stats are most of its bytes, and a clustered table's
        # tags much of the rest, and neither need be held whole.
        self._files = files = snapshot.file_columns(*(n for n in FILES_SCHEMA.names
                                                      if n not in ("num_records", "stats", "tags")))
        self._struct = _StructStats.of(snapshot) if props.checkpoint_write_stats_as_struct else None
        self._stats_as_json = props.checkpoint_write_stats_as_json
        # Decided once for the whole file: every slice must have the same add type.
        self._clustering = ("clustering_provider" in files.column_names
                            and files.column("clustering_provider").null_count < files.num_rows)
        tomb = snapshot.tombstones
        cutoff = now_ms - int(props.deleted_file_retention.total_seconds() * 1000)
        if tomb.num_rows:
            ts = tomb.column("deletion_timestamp")
            # Tombstones only protect files from vacuum until the retention passes.
            tomb = tomb.filter(pc.fill_null(pc.greater_equal(ts, int_scalar(cutoff)), false_array(1)[0]))
        self._tombstones = tomb
        v2 = writes_v2_spec(snapshot)
        header = _header_rows(snapshot, now_ms=now_ms, v2=v2)
        types: dict[str, pa.DataType] = {
            "protocol": header["protocol"].type, "metaData": header["metaData"].type, "txn": TXN_TYPE,
            "add": self._add_rows(files.slice(0, 0), empty_table(self._stats_schema),
                                  pa.chunked_array([], STRING_MAP)).type,
            "remove": REMOVE_TYPE,
        }
        if header["domainMetadata"].null_count < len(header["domainMetadata"]):
            types["domainMetadata"] = DOMAIN_TYPE
        if v2:
            types["checkpointMetadata"] = CHECKPOINT_METADATA_TYPE
        self._types = types
        self.schema = pa.schema(types)
        n_head = len(header["protocol"])
        self.head = _segment({k: v for k, v in header.items() if k in types}, n_head, types)
        self.num_adds: int = files.num_rows
        self.num_removes: int = tomb.num_rows

    @property
    def num_rows(self) -> int:
        return int(self.head.num_rows) + self.num_adds + self.num_removes

    @property
    def _stats_schema(self) -> pa.Schema:
        """The statistics columns ``body`` streams beside ``files``: ``stats`` (and ``stats_parsed``)."""
        fields = [pa.field("stats", pa.string())]
        if self._struct is not None:
            fields.append(pa.field("stats_parsed", self._struct.type))
        return pa.schema(fields)

    def _add_rows(self, files: pa.Table, stats: pa.Table, tags: pa.ChunkedArray) -> pa.StructArray:
        """The ``add`` rows of ``files``, whose ``stats`` (``_stats_schema``) and ``tags`` arrive apart."""
        files = files.append_column("stats", stats.column("stats")).append_column("tags", tags)
        extra: list[tuple[str, pa.Array]] = []
        if self._struct is not None:
            if self._struct.partition_columns:
                extra.append(("partitionValues_parsed", self._struct.partition_values(files)))
            extra.append(("stats_parsed", one_array(stats.column("stats_parsed"))))
        add = _add_struct(files, extra, clustering=self._clustering)
        if not self._stats_as_json and self._struct is not None:
            # Stats live in stats_parsed only; the JSON copy is dropped as the property asks.
            idx = add.type.get_field_index("stats")
            fields = list(add.type)
            arrays = [add.field(i) for i in range(len(fields))]
            arrays[idx] = pa.nulls(len(add), pa.string())
            add = pa.StructArray.from_arrays(arrays, fields=fields)
        return add

    def _stats(self) -> Iterator[pa.Table]:
        """The files' ``_stats_schema`` columns in pieces: the JSON as the snapshot streams it and
        ``stats_parsed`` carried from the checkpoint read, or parsed, a few pieces at once on
        threads, where that checkpoint has none."""
        if self._struct is None:
            return (pa.table({"stats": piece}) for piece in self._snapshot.iter_stats())
        return map_ahead(self._struct.completed, self._snapshot.iter_stats_with_struct(self._struct.type),
                         threads=PARSE_THREADS, name="checkpoint-stats")

    def body(self, *, slice_rows: int = SLICE_ROWS) -> Iterator[pa.Table]:
        """The add rows, then the remove rows, ``slice_rows`` at a time."""
        # Batches follow the columns' chunks (zero-copy slices): a slice across chunk
        # boundaries would copy every path and stats string of it.
        # Both are read from the checkpoint on threads of their own while the caller encodes.
        stats = _Pieces(read_ahead(self._stats(), depth=2, name="checkpoint-stats-read"), self._stats_schema)
        tags = _Pieces(read_ahead((pa.table({"tags": pa.chunked_array(chunks_of(piece), STRING_MAP)})
                                   for piece in self._snapshot.iter_tags()), depth=2, name="checkpoint-tags-read"),
                       _TAGS_SCHEMA)
        for batch in self._files.to_batches(max_chunksize=slice_rows):
            add = self._add_rows(pa.Table.from_batches([batch]), stats.take(batch.num_rows),
                                 tags.take(batch.num_rows).column("tags"))
            yield _segment({"add": add}, len(add), self._types)
        for start in range(0, self.num_removes, slice_rows):
            remove = _remove_struct(self._tombstones.slice(start, slice_rows))
            yield _segment({"remove": remove}, len(remove), self._types)


class _Pieces:
    """Consecutive rows of a table of ``schema`` that arrives in pieces of any length (statistics, tags)."""

    def __init__(self, pieces: Iterator[pa.Table], schema: pa.Schema) -> None:
        self._pieces = pieces
        self._held: list[pa.Table] = [empty_table(schema)]
        self._rows = 0

    def take(self, n: int) -> pa.Table:
        """The next ``n`` rows."""
        while self._rows < n:
            piece = next(self._pieces)
            self._held.append(piece)
            self._rows += piece.num_rows
        held = pa.concat_tables(self._held)
        rest = held.slice(n)
        self._held, self._rows = [rest], rest.num_rows
        return held.slice(0, n)


def build_checkpoint_table(
    snapshot: Snapshot,
    *,
    clock: Clock = system_clock,
) -> tuple[pa.Table, int, int]:
    """(table of checkpoint rows, number of header rows, number of add rows), all in memory;
    ``write_checkpoint`` streams ``CheckpointRows`` instead."""
    rows = CheckpointRows(snapshot, clock=clock)
    return pa.concat_tables([rows.head, *rows.body()]), rows.head.num_rows, rows.num_adds


# --- writing -----------------------------------------------------------------------------


def _write_parquet(storage: Storage, key: str, schema: pa.Schema, parts: Iterable[pa.Table]) -> int:
    """Stream ``parts`` into one Parquet file at ``key`` a row group at a time, published
    atomically on completion (``ParquetStream(atomic=True)``: never visible half-written, and a
    failure leaves nothing, not even a partial file); returns the file's size in bytes."""
    stream = ParquetStream(storage, key, schema, atomic=True)
    size = None
    try:
        for part in parts:
            stream.write(part)
        size = stream.close()
    finally:
        if size is None:
            stream.abort()
    return size


def write_checkpoint(
    table: DeltaTable,
    *,
    version: int | None = None,
    clock: Clock | None = None,
    update_last_checkpoint: bool = True,
    snapshot: Snapshot | None = None,
    sidecar_threshold: int | None = None,
    sidecar_writer: SidecarWriter | None = None,
) -> CheckpointResult:
    """Write the checkpoint of ``version`` (default: latest) and point ``_last_checkpoint`` at it.

    ``snapshot`` is an already loaded snapshot of ``table`` to checkpoint (saves reading the log
    again). Rewriting an existing classic checkpoint writes the same content again. ``clock``
    overrides the table's clock for tombstone and txn expiry. On ``v2Checkpoint`` tables with
    more than ``sidecar_threshold`` file actions (default ``DEFAULT_SIDECAR_THRESHOLD``) the
    checkpoint is UUID-named and its file actions go to sidecars of at most that many actions,
    written by ``sidecar_writer`` (default: in this process; Spark passes its own).
    """
    threshold = DEFAULT_SIDECAR_THRESHOLD if sidecar_threshold is None else sidecar_threshold
    if threshold < 1:
        raise ConfigError(f"the sidecar threshold (file actions per sidecar) must be at least 1, got {threshold}")
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
    rows_estimate = snapshot.num_files + snapshot.tombstones.num_rows + 2 + len(snapshot.all_txns)
    # started before the table is built: on a large table that is most of the time
    reported = progress.begin(f"checkpoint v{snapshot.version}", unit="actions", total_items=rows_estimate)
    rows = CheckpointRows(snapshot, clock=clock or table.clock)
    v = snapshot.version
    n_file_actions = rows.num_adds + rows.num_removes
    v2_record: dict[str, Any] | None = None
    if writes_v2_spec(snapshot) and uses_sidecars(n_file_actions, threshold=threshold):
        # The sidecar tasks carry their rows (Spark ships them); the slices are not copied.
        body = pa.concat_tables(list(rows.body()))
        tasks = sidecar_tasks(storage, body, version=v, max_actions=threshold)
        sidecars = (sidecar_writer or write_sidecars_in_process)(tasks)
        top = _uuid_checkpoint_table(rows.head, sidecars)
        key = v2_checkpoint_key(v, str(uuid.uuid4()))
        top_bytes = _write_parquet(storage, key, top.schema, [top])
        written = storage.head(key)
        size = top.num_rows + n_file_actions
        total_bytes = top_bytes + sum(s.size_in_bytes for s in sidecars)
        v2_record = {
            "path": written.name, "sizeInBytes": top_bytes, "modificationTime": written.modification_time,
            "nonFileActions": _rows_as_actions(rows.head),
            "sidecarFiles": [action_to_json(s)["sidecar"] for s in sidecars],
        }
    else:
        # One classic file (V1, or V2 spec with its checkpointMetadata row on v2Checkpoint tables),
        # streamed slice by slice: the rows are built as the writer takes them.
        key = checkpoint_key(v)
        total_bytes = _write_parquet(storage, key, rows.schema, itertools.chain([rows.head], rows.body()))
        size = rows.num_rows
    reported.advance(items=size, nbytes=total_bytes)
    reported.end()
    result = CheckpointResult(version=v, size=size, size_in_bytes=total_bytes, path=storage.uri(key),
                              num_add_files=rows.num_adds, sidecars=0 if v2_record is None else len(v2_record["sidecarFiles"]))
    if update_last_checkpoint:
        _update_last_checkpoint(storage, result, v2_checkpoint=v2_record)
    log.info("table=%s version=%d checkpoint written: %d action(s), %d bytes%s", table.uri, v, result.size,
             total_bytes, "" if v2_record is None else f", {len(v2_record['sidecarFiles'])} sidecar(s)")
    return result


def _uuid_checkpoint_table(head: pa.Table, sidecars: Sequence[Sidecar]) -> pa.Table:
    """The UUID-named file: the non-file actions, then one ``sidecar`` row per sidecar. The
    ``add``/``remove`` columns stay (all null), as Delta Spark writes them."""
    rows = array_from_pylist([{"path": s.path, "sizeInBytes": s.size_in_bytes,
                               "modificationTime": s.modification_time, "tags": None} for s in sidecars], SIDECAR_TYPE)
    types = {**{f.name: f.type for f in head.schema}, "sidecar": SIDECAR_TYPE}
    head = head.append_column("sidecar", pa.nulls(head.num_rows, SIDECAR_TYPE))
    return pa.concat_tables([head, _segment({"sidecar": rows}, len(rows), types)])


def _rows_as_actions(head: pa.Table) -> list[dict[str, Any]]:
    """Checkpoint rows as the JSON actions they hold (for ``_last_checkpoint``'s
    ``v2Checkpoint.nonFileActions``): the non-null column of each row, nulls left out."""
    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(x) for k, x in value.items() if x is not None}
        if isinstance(value, list):
            return [plain(x) for x in value]
        return value

    out: list[dict[str, Any]] = []
    for row in head.to_pylist(maps_as_pydicts="strict"):
        out.extend({name: plain(body)} for name, body in row.items() if body is not None)
    return out


def _update_last_checkpoint(storage: Any, result: CheckpointResult, *,
                            v2_checkpoint: dict[str, Any] | None) -> None:
    current = read_last_checkpoint(storage)
    if current is not None and current.version > result.version:
        return  # a newer checkpoint exists: the hint must never move backwards
    record = LastCheckpoint(
        version=result.version,
        size=result.size,
        size_in_bytes=result.size_in_bytes,
        num_of_add_files=result.num_add_files,
        # Delta Spark's addition (not in the protocol's schema): readers may skip reading the
        # UUID-named file; ours never need it (the listing finds the checkpoint).
        v2_checkpoint=v2_checkpoint,
    )
    storage.write(LAST_CHECKPOINT, encode_last_checkpoint(record))
