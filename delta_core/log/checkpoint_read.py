"""Reading checkpoints (PROTOCOL.md "Checkpoints", "Sidecar Files", "Checkpoint Schema",
"V2 Checkpoint Table Feature").

Handles every checkpoint form a log can hold: a classic single Parquet file, all parts of a
multi-part checkpoint, and UUID-named V2 checkpoints in Parquet or JSON whose ``sidecar``
actions point at Parquet files in ``_delta_log/_sidecars/`` (a classic-named checkpoint may
follow the V2 spec too, so ``sidecar`` is honoured wherever it appears).

Reading is split in two so the protocol gate runs before any file action is touched:
``read_checkpoint_state`` returns the few non-file actions (protocol, metaData, txn,
domainMetadata, checkpointMetadata, sidecar); ``read_checkpoint_files`` returns the ``add``
and ``remove`` rows as Arrow tables. Parquet reads project only the sub-columns needed and
stream batches of rows (a batch of only ``add`` rows becomes file rows without a copy), so a
checkpoint of millions of files is never held both raw and converted; JSON ``stats`` are
synthesised from ``stats_parsed`` only for rows that lack them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import CorruptLogError
from delta_core.log.file_actions import (
    ADD_FIELDS,
    FILES_SCHEMA,
    REMOVE_FIELDS,
    TOMBSTONES_SCHEMA,
    conform_array,
    num_records_from_stats,
    table_from_json,
)
from delta_core.log.log_path import SIDECAR_DIR, LogFileKind, LogPath
from delta_core.model.actions import (
    CheckpointMetadata,
    DomainMetadata,
    Metadata,
    Protocol,
    Sidecar,
    Txn,
    action_from_json,
    iter_log_lines,
)
from delta_core.model.stats import stats_json_from_parsed
from delta_core.storage.base import Storage

# Non-file action columns, with the field whose presence marks a real action in that row
# (some writers emit non-null structs with all-null children).
_NON_FILE = {
    "protocol": "minReaderVersion",
    "metaData": "id",
    "txn": "appId",
    "domainMetadata": "domain",
    "checkpointMetadata": "version",
    "sidecar": "path",
}


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """The non-file actions of one checkpoint (all parts together)."""

    version: int
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: tuple[Txn, ...] = ()
    domain_metadata: tuple[DomainMetadata, ...] = ()
    checkpoint_metadata: CheckpointMetadata | None = None
    sidecars: tuple[Sidecar, ...] = ()
    # Parsed JSON V2 checkpoint lines, kept so the file actions are not read twice.
    _json_bodies: dict[str, list[dict[str, Any]]] = field(default_factory=dict, compare=False, repr=False)


# Parquet pages are streamed through a buffer of this size instead of loading each column chunk
# whole: a checkpoint of millions of files is one row group of hundreds of MB.
_READ_BUFFER = 1 << 20


def _read_bytes(storage: Storage, key: str, *, version: int) -> bytes:
    try:
        return storage.read(key)
    except FileNotFoundError:
        raise CorruptLogError(
            f"checkpoint file {storage.uri(key)} disappeared while reading; retry (a log cleanup "
            "may be running)", path=storage.uri(key), version=version,
        ) from None


def _open_parquet(storage: Storage, key: str, *, version: int) -> tuple[IO[bytes], pq.ParquetFile]:
    try:
        fh = storage.open_input(key)
    except FileNotFoundError:
        raise CorruptLogError(
            f"checkpoint file {storage.uri(key)} is missing; restore it or remove the checkpoint "
            "so readers fall back to the commits", path=storage.uri(key), version=version,
        ) from None
    try:
        # INT96 (Spark's default timestamp encoding, found in stats_parsed and
        # partitionValues_parsed) decoded as nanoseconds wraps outside 1677-2262.
        return fh, pq.ParquetFile(fh, coerce_int96_timestamp_unit="us", buffer_size=_READ_BUFFER,
                                  pre_buffer=False)
    except (pa.ArrowInvalid, OSError) as exc:
        fh.close()
        raise CorruptLogError(
            f"checkpoint file {storage.uri(key)} is not readable Parquet ({exc}); delete it so "
            "readers use the commits or an older checkpoint", path=storage.uri(key), version=version,
        ) from exc


def _actions_from_column(column: pa.Array | pa.ChunkedArray, key: str, *, source: str) -> list[Any]:
    presence = _NON_FILE[key]
    mask = pc.is_valid(pc.struct_field(column, presence)) if column.type.get_field_index(presence) >= 0 else None
    if mask is None:
        return []
    rows = column.filter(mask).to_pylist(maps_as_pydicts="lossy")
    out = []
    for body in rows:
        body = {k: v for k, v in body.items() if v is not None}
        try:
            out.append(action_from_json({key: body}))
        except CorruptLogError as exc:
            raise CorruptLogError(f"{source}: {exc}", path=source) from exc
    return out


def _state_from_actions(version: int, actions: Sequence[Any],
                        json_bodies: dict[str, list[dict[str, Any]]] | None = None) -> CheckpointState:
    protocol = metadata = cp_meta = None
    txns: list[Txn] = []
    domains: list[DomainMetadata] = []
    sidecars: list[Sidecar] = []
    for a in actions:
        if isinstance(a, Protocol):
            protocol = a
        elif isinstance(a, Metadata):
            metadata = a
        elif isinstance(a, Txn):
            txns.append(a)
        elif isinstance(a, DomainMetadata):
            domains.append(a)
        elif isinstance(a, CheckpointMetadata):
            cp_meta = a
        elif isinstance(a, Sidecar):
            sidecars.append(a)
    return CheckpointState(
        version=version, protocol=protocol, metadata=metadata, txns=tuple(txns),
        domain_metadata=tuple(domains), checkpoint_metadata=cp_meta, sidecars=tuple(sidecars),
        _json_bodies=json_bodies or {},
    )


def _parse_json_checkpoint(storage: Storage, f: LogPath) -> tuple[list[Any], dict[str, list[dict[str, Any]]]]:
    data = _read_bytes(storage, f.key, version=f.version)
    actions: list[Any] = []
    bodies: dict[str, list[dict[str, Any]]] = {"add": [], "remove": []}
    for lineno, key, body in iter_log_lines(
        data, source=storage.uri(f.key), version=f.version,
        remedy="delete this checkpoint so readers use the commits",
    ):
        if key in bodies and isinstance(body, dict):
            bodies[key].append(body)
        elif key in _NON_FILE:
            try:
                actions.append(action_from_json({key: body}))
            except CorruptLogError as exc:
                raise CorruptLogError(f"{storage.uri(f.key)}: line {lineno}: {exc}",
                                      path=storage.uri(f.key), version=f.version) from exc
    return actions, bodies


def read_checkpoint_state(storage: Storage, files: Sequence[LogPath]) -> CheckpointState:
    """Protocol, metadata, txns, domain metadata and sidecar references of a checkpoint."""
    if not files:
        raise ValueError("read_checkpoint_state needs at least one checkpoint file")
    version = files[0].version
    if len(files) == 1 and files[0].kind is LogFileKind.V2_CHECKPOINT and files[0].file_format == "json":
        json_actions, bodies = _parse_json_checkpoint(storage, files[0])
        return _state_from_actions(version, json_actions, bodies)
    actions: list[Any] = []
    for f in files:
        fh, pf = _open_parquet(storage, f.key, version=version)
        try:
            names = [n for n in _NON_FILE if pf.schema_arrow.get_field_index(n) >= 0]
            if not names:
                continue
            # Streamed: these columns are null in nearly every row, yet whole they cost 100+ MB.
            for batch in _iter_batches(pf, names, storage.uri(f.key), version):
                for name in names:
                    actions.extend(_actions_from_column(batch.column(name), name, source=storage.uri(f.key)))
        finally:
            fh.close()
    return _state_from_actions(version, actions)


def _read_columns(pf: pq.ParquetFile, columns: list[str], source: str, version: int) -> pa.Table:
    try:
        return pf.read(columns=columns, use_threads=True)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(f"cannot read checkpoint {source}: {exc}", path=source, version=version) from exc


def _present_fields(pf: pq.ParquetFile, top: str) -> list[str]:
    """Sub-fields of ``add``/``remove`` this file has and we read (none if the column is absent)."""
    idx = pf.schema_arrow.get_field_index(top)
    if idx < 0:
        return []
    struct_type = pf.schema_arrow.field(idx).type
    if not pa.types.is_struct(struct_type) or struct_type.get_field_index("path") < 0:
        return []
    mapping = ADD_FIELDS if top == "add" else REMOVE_FIELDS
    return [js for js in mapping.values() if struct_type.get_field_index(js) >= 0]


def _file_rows(column: pa.Array, top: str, present: list[str]) -> tuple[pa.Table, pa.Array]:
    """The ``add`` or ``remove`` rows of one checkpoint column in our schema, and the row mask."""
    schema, mapping = (FILES_SCHEMA, ADD_FIELDS) if top == "add" else (TOMBSTONES_SCHEMA, REMOVE_FIELDS)
    # The ``path`` is required, so its presence marks a row holding this action.
    mask = pc.is_valid(pc.struct_field(column, "path"))
    if not pc.all(mask).as_py():  # a batch of adds only (the bulk of a checkpoint) is used uncopied
        column = column.filter(mask)
    n = len(column)
    arrays = []
    for f in schema:
        js = mapping.get(f.name)
        if js in present:
            arrays.append(conform_array(pc.struct_field(column, js), f.type))
        elif f.name == "data_change":
            arrays.append(pa.chunked_array([pa.array([True] * n, pa.bool_())]))
        else:
            arrays.append(pa.chunked_array([pa.nulls(n, f.type)]))
    return pa.Table.from_arrays(arrays, schema=schema), mask


def _fill_stats(pf: pq.ParquetFile, files: pa.Table, mask: pa.ChunkedArray, source: str, version: int) -> pa.Table:
    # Kept in its chunks: combining copies every stats string (hundreds of MB at millions of files).
    stats: pa.ChunkedArray | pa.Array = files["stats"]
    add_type = pf.schema_arrow.field("add").type
    if stats.null_count and add_type.get_field_index("stats_parsed") >= 0:
        parsed = _read_columns(pf, ["add.stats_parsed"], source, version)["add"]
        parsed = pc.struct_field(parsed.filter(mask), "stats_parsed").combine_chunks()
        stats = stats.combine_chunks()
        # Synthesise only where JSON is missing and the struct is there: it is the slow part.
        need = pc.and_(pc.is_null(stats), pc.is_valid(parsed))
        if pc.any(need).as_py():
            synthesised = stats_json_from_parsed(parsed.filter(need))
            stats = pc.replace_with_mask(stats, need, synthesised.cast(pa.string()))
            files = files.set_column(files.schema.get_field_index("stats"), "stats", stats)
    return files.set_column(
        files.schema.get_field_index("num_records"), "num_records", num_records_from_stats(stats)
    )


def sidecar_key(sidecar: Sidecar) -> str:
    """Where a ``sidecar`` lives: always ``_delta_log/_sidecars/<name>`` (the path is URI-encoded
    and may be just the name, relative, or absolute; only the name identifies the file)."""
    name = unquote(sidecar.path.rstrip("/").rsplit("/", 1)[-1])
    if not name or name in (".", ".."):
        raise CorruptLogError(f"sidecar path {sidecar.path!r} names no file")
    return f"{SIDECAR_DIR}/{name}"


def _parquet_file_actions(storage: Storage, key: str, version: int) -> tuple[pa.Table | None, pa.Table | None]:
    fh, pf = _open_parquet(storage, key, version=version)
    try:
        source = storage.uri(key)
        fields = {top: _present_fields(pf, top) for top in ("add", "remove")}
        wanted = [f"{top}.{js}" for top, names in fields.items() for js in names]
        if not wanted:
            return None, None
        # One scan for both columns, streamed in batches (columns decoded in parallel): only the
        # batch in hand exists both raw and as our rows, never the whole checkpoint twice.
        add_parts: list[pa.Table] = []
        add_masks: list[pa.Array] = []
        remove_parts: list[pa.Table] = []
        for batch in _iter_batches(pf, wanted, source, version):
            if fields["add"]:
                rows, mask = _file_rows(batch.column("add"), "add", fields["add"])
                add_parts.append(rows)
                add_masks.append(mask)
            if fields["remove"]:
                remove_parts.append(_file_rows(batch.column("remove"), "remove", fields["remove"])[0])
            del batch  # release the raw batch before decoding the next
        adds = removes = None
        if fields["add"]:
            adds = _concat_parts(add_parts, FILES_SCHEMA)
            mask = pa.chunked_array(add_masks, type=pa.bool_())
            adds = _fill_stats(pf, adds, mask, source, version)
        if fields["remove"]:
            removes = _concat_parts(remove_parts, TOMBSTONES_SCHEMA)
        return adds, removes
    finally:
        fh.close()


# Rows per streamed checkpoint batch: large enough that per-batch overhead is noise, small
# enough that one raw batch is a few tens of MB.
_BATCH_ROWS = 131_072


def _iter_batches(pf: pq.ParquetFile, columns: list[str], source: str, version: int) -> Iterator[pa.RecordBatch]:
    try:
        yield from pf.iter_batches(batch_size=_BATCH_ROWS, columns=columns, use_threads=True)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(f"cannot read checkpoint {source}: {exc}", path=source, version=version) from exc


def _concat_parts(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    # Zero-copy: each batch stays a chunk.
    return pa.concat_tables(parts) if parts else schema.empty_table()


def read_checkpoint_files(
    storage: Storage, files: Sequence[LogPath], state: CheckpointState,
) -> tuple[pa.Table, pa.Table]:
    """All ``add`` rows (``FILES_SCHEMA``) and ``remove`` rows (``TOMBSTONES_SCHEMA``) of the
    checkpoint, sidecars included."""
    version = state.version
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    if state._json_bodies:
        source = storage.uri(files[0].key)
        adds.append(table_from_json(state._json_bodies.get("add", []), tombstones=False, source=source))
        removes.append(table_from_json(state._json_bodies.get("remove", []), tombstones=True, source=source))
    else:
        for f in files:
            a, r = _parquet_file_actions(storage, f.key, version)
            adds += [a] if a is not None else []
            removes += [r] if r is not None else []
    for sc in state.sidecars:
        key = sidecar_key(sc)
        try:
            a, r = _parquet_file_actions(storage, key, version)
        except CorruptLogError as exc:
            raise CorruptLogError(
                f"sidecar {sc.path} of checkpoint {version} cannot be read ({exc}); the checkpoint "
                "is unusable: delete it so readers fall back to the commits",
                path=storage.uri(key), version=version,
            ) from exc
        adds += [a] if a is not None else []
        removes += [r] if r is not None else []
    add_table = pa.concat_tables(adds) if adds else FILES_SCHEMA.empty_table()
    remove_table = pa.concat_tables(removes) if removes else TOMBSTONES_SCHEMA.empty_table()
    return add_table, remove_table


__all__ = ["CheckpointState", "read_checkpoint_files", "read_checkpoint_state", "sidecar_key"]
