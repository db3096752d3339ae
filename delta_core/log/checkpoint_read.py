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
stream batches of rows (runs of ``add`` rows become file rows without a copy), so a checkpoint
of millions of files is never held both raw and converted. The ``add.stats`` column, most of a
checkpoint's bytes, and ``add.tags`` (a clustered table's ZCube tags) are not read here:
``checkpoint_stats`` reads them when a caller needs them; until then they are nulls sharing one
buffer (``shared_nulls``), as are the columns a checkpoint does not have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import CorruptLogError
from delta_core.log.checkpoint_parquet import iter_batches, marked_per_group, open_parquet, rows_holding
from delta_core.log.checkpoint_stats import CHECKPOINT_ROW, DEFERRED_COLUMNS, CheckpointStats
from delta_core.log.file_actions import (
    ADD_FIELDS,
    FILES_SCHEMA,
    REMOVE_FIELDS,
    TOMBSTONES_SCHEMA,
    conform_array,
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
from delta_core.model.arrow_values import empty_table, int_array, shared_nulls, true_array
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


def _read_bytes(storage: Storage, key: str, *, version: int) -> bytes:
    try:
        return storage.read(key)
    except FileNotFoundError:
        raise CorruptLogError(
            f"checkpoint file {storage.uri(key)} disappeared while reading; retry (a log cleanup "
            "may be running)", path=storage.uri(key), version=version,
        ) from None


def _actions_from_column(column: pa.Array | pa.ChunkedArray, key: str, *, source: str) -> list[Any]:
    presence = _NON_FILE[key]
    if column.type.get_field_index(presence) < 0:
        return []
    marker = pc.struct_field(column, presence)
    if marker.null_count == len(marker):  # most batches: file rows only
        return []
    rows = column.filter(pc.is_valid(marker)).to_pylist(maps_as_pydicts="lossy")
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
        fh, pf = open_parquet(storage, f.key, version=version)
        try:
            actions.extend(_non_file_actions(pf, storage.uri(f.key), version))
        finally:
            fh.close()
    return _state_from_actions(version, actions)


# Rows per batch when decoding the non-file columns: they are null in nearly every row, and
# small batches let the scan stop soon after the last row that holds one.
_STATE_BATCH_ROWS = 8192


def _non_file_actions(pf: pq.ParquetFile, source: str, version: int) -> list[Any]:
    """The non-file actions of one checkpoint file. The columns are decoded batch by batch
    until every action is found: how many rows hold each action is known from the Parquet
    statistics (the null count of its marker field) when every row group has them, as
    delta-kernel-rs skips row groups by the same counts; without them a first pass reads only
    each marker field (one narrow column each) to find the last row holding one. Writers put
    these few rows first, so either way the scan stops after a batch or two."""
    schema = pf.schema_arrow
    names = [n for n in _NON_FILE if schema.get_field_index(n) >= 0
             and pa.types.is_struct(schema.field(n).type)
             and schema.field(n).type.get_field_index(_NON_FILE[n]) >= 0]
    if not names:
        return []
    remaining = _marked_rows(pf, names)
    last = None
    if remaining is None:
        last = _last_marked_row(pf, names, source, version)
        if last < 0:
            return []
    elif not any(remaining.values()):
        return []
    actions: list[Any] = []
    offset = 0
    for batch in iter_batches(pf, names, source, version, batch_rows=_STATE_BATCH_ROWS):
        for name in names:
            found = _actions_from_column(batch.column(name), name, source=source)
            actions.extend(found)
            if remaining is not None:
                remaining[name] -= len(found)
        offset += batch.num_rows
        if (last is not None and offset > last) or (remaining is not None and max(remaining.values()) <= 0):
            break
    return actions


def _marked_rows(pf: pq.ParquetFile, names: list[str]) -> dict[str, int] | None:
    """Rows holding each action ``names`` names, from the row groups' null counts of its marker
    field; ``None`` when some row group has no such statistic."""
    counts = {}
    for name in names:
        groups = marked_per_group(pf, f"{name}.{_NON_FILE[name]}")
        if groups is None:
            return None
        counts[name] = sum(groups)
    return counts


def _last_marked_row(pf: pq.ParquetFile, names: list[str], source: str, version: int) -> int:
    """The last row holding any of the actions ``names`` names (-1 if none), reading only each
    action's marker field."""
    last = -1
    offset = 0
    for batch in iter_batches(pf, [f"{n}.{_NON_FILE[n]}" for n in names], source, version):
        for name in names:
            marks = pc.is_valid(pc.struct_field(batch.column(name), _NON_FILE[name]))
            found = pc.indices_nonzero(marks)
            if len(found):
                last = max(last, offset + int(found[-1].as_py()))
        offset += batch.num_rows
    return last


def _present_fields(pf: pq.ParquetFile, top: str) -> list[str]:
    """Sub-fields of ``add``/``remove`` this file has and we read now (none if the column is
    absent); ``add.stats`` and ``add.tags`` are left to ``CheckpointStats``."""
    idx = pf.schema_arrow.get_field_index(top)
    if idx < 0:
        return []
    struct_type = pf.schema_arrow.field(idx).type
    if not pa.types.is_struct(struct_type) or struct_type.get_field_index("path") < 0:
        return []
    mapping = ADD_FIELDS if top == "add" else REMOVE_FIELDS
    return [js for name, js in mapping.items()
            if struct_type.get_field_index(js) >= 0 and not (top == "add" and name in _DEFERRED)]


# FILES_SCHEMA columns read later, from the checkpoint, by ``CheckpointStats`` (``num_records``
# from the stats).
_DEFERRED = frozenset({*DEFERRED_COLUMNS, "num_records"})


def _file_rows(column: pa.Array, top: str, present: list[str]) -> pa.Table:
    """The ``add`` or ``remove`` rows of one checkpoint column in our schema."""
    schema, mapping = (FILES_SCHEMA, ADD_FIELDS) if top == "add" else (TOMBSTONES_SCHEMA, REMOVE_FIELDS)
    # The ``path`` is required, so its presence marks a row holding this action.
    rows, _ = rows_holding(column, "path")
    n = len(rows)
    arrays = []
    for f in schema:
        js = mapping.get(f.name)
        if js in present:
            arrays.append(conform_array(pc.struct_field(rows, js), f.type))
        elif f.name == "data_change":
            arrays.append(pa.chunked_array([true_array(n)]))  # required; old writers omitted it
        else:  # deferred, or not in this checkpoint: one buffer of nulls for every batch
            arrays.append(pa.chunked_array([shared_nulls(f.type, n)]))
    return pa.Table.from_arrays(arrays, schema=schema)


def sidecar_key(sidecar: Sidecar) -> str:
    """Where a ``sidecar`` lives: always ``_delta_log/_sidecars/<name>`` (the path is URI-encoded
    and may be just the name, relative, or absolute; only the name identifies the file)."""
    name = unquote(sidecar.path.rstrip("/").rsplit("/", 1)[-1])
    if not name or name in (".", ".."):
        raise CorruptLogError(f"sidecar path {sidecar.path!r} names no file")
    return f"{SIDECAR_DIR}/{name}"


def _parquet_file_actions(storage: Storage, key: str, version: int) -> tuple[pa.Table | None, pa.Table | None]:
    fh, pf = open_parquet(storage, key, version=version)
    try:
        source = storage.uri(key)
        fields = {top: _present_fields(pf, top) for top in ("add", "remove")}
        wanted = [f"{top}.{js}" for top, names in fields.items() for js in names]
        if not wanted:
            return None, None
        # One scan for both columns, streamed in batches (columns decoded in parallel): only the
        # batch in hand exists both raw and as our rows, never the whole checkpoint twice.
        add_parts: list[pa.Table] = []
        remove_parts: list[pa.Table] = []
        for batch in iter_batches(pf, wanted, source, version):
            if fields["add"]:
                add_parts.append(_file_rows(batch.column("add"), "add", fields["add"]))
            if fields["remove"]:
                remove_parts.append(_file_rows(batch.column("remove"), "remove", fields["remove"]))
            del batch  # release the raw batch before decoding the next
        adds = _concat_parts(add_parts, FILES_SCHEMA) if fields["add"] else None
        removes = _concat_parts(remove_parts, TOMBSTONES_SCHEMA) if fields["remove"] else None
        return adds, removes
    finally:
        fh.close()


def _concat_parts(parts: list[pa.Table], schema: pa.Schema) -> pa.Table:
    # Zero-copy: each batch stays a chunk.
    return pa.concat_tables(parts) if parts else empty_table(schema)


@dataclass(frozen=True, slots=True)
class CheckpointFiles:
    """The file actions of a checkpoint: ``adds`` (``FILES_SCHEMA`` plus ``CHECKPOINT_ROW``)
    and ``removes`` (``TOMBSTONES_SCHEMA``). Rows from Parquet have no ``stats``,
    ``num_records`` or ``tags`` yet: their ``CHECKPOINT_ROW`` is their ordinal, and ``stats``
    reads those columns when asked. Rows from a JSON V2 checkpoint's own lines are read whole
    (null ordinal)."""

    adds: pa.Table
    removes: pa.Table
    stats: CheckpointStats


def read_checkpoint_files(storage: Storage, files: Sequence[LogPath], state: CheckpointState) -> CheckpointFiles:
    """All ``add`` and ``remove`` rows of the checkpoint, sidecars included. Rows read from
    Parquet come first (rows whose ``stats`` wait have ordinals, the rest follow them)."""
    version = state.version
    adds: list[pa.Table] = []
    removes: list[pa.Table] = []
    keys: list[str] = []
    parquet_keys = [] if state._json_bodies else [f.key for f in files]
    for key in [*parquet_keys, *(sidecar_key(sc) for sc in state.sidecars)]:
        try:
            a, r = _parquet_file_actions(storage, key, version)
        except CorruptLogError as exc:
            if key in parquet_keys:
                raise
            raise CorruptLogError(
                f"sidecar {storage.uri(key)} of checkpoint {version} cannot be read ({exc}); the "
                "checkpoint is unusable: delete it so readers fall back to the commits",
                path=storage.uri(key), version=version,
            ) from exc
        adds += [a] if a is not None else []
        removes += [r] if r is not None else []
        keys += [key] if a is not None else []
    n = sum(a.num_rows for a in adds)
    add_table = pa.concat_tables(adds) if adds else empty_table(FILES_SCHEMA)
    add_table = add_table.append_column(CHECKPOINT_ROW, int_array(range(n)))
    if state._json_bodies:  # the V2 checkpoint's own lines: read whole, stats and tags included
        source = storage.uri(files[0].key)
        json_adds = table_from_json(state._json_bodies.get("add", []), tombstones=False, source=source)
        add_table = pa.concat_tables([
            add_table, json_adds.append_column(CHECKPOINT_ROW, pa.nulls(json_adds.num_rows, pa.int64()))])
        removes.append(table_from_json(state._json_bodies.get("remove", []), tombstones=True, source=source))
    return CheckpointFiles(
        adds=add_table,
        removes=pa.concat_tables(removes) if removes else empty_table(TOMBSTONES_SCHEMA),
        stats=CheckpointStats(storage, tuple(keys), version, n),
    )


__all__ = ["CheckpointFiles", "CheckpointState", "read_checkpoint_files", "read_checkpoint_state", "sidecar_key"]
