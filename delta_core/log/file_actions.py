"""Columnar form of ``add`` and ``remove`` actions (PROTOCOL.md "Add File and Remove File").

Replay works on Arrow tables, not on one Python object per file: a table can hold millions of
files. This module owns the two Arrow schemas (``FILES_SCHEMA`` for live ``add`` rows, the
``Snapshot.files`` contract in docs/internal-api.md, and ``TOMBSTONES_SCHEMA`` for ``remove``
rows), builds them from parsed JSON objects (commits, JSON checkpoints) and from checkpoint
Parquet columns (whose physical types vary between writers), computes the reconciliation key
``(path, deletionVector.uniqueId)`` and ``numRecords`` vectorised, and turns rows back into
``Add``/``Remove`` records for callers that want objects.

Bodies come either as Python objects (``table_from_json``, the exact reference) or as the
struct column Arrow's JSON reader produced for a whole commit (``table_from_json_struct``,
the fast path of ``commit_read``). That reader has no map type, so ``partitionValues`` and
``tags`` are read as structs of string children and turned into maps by ``map_from_struct``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import CorruptLogError
from delta_core.model.actions import ADD_JSON_FIELDS, REMOVE_JSON_FIELDS, Add, DeletionVectorDescriptor, Remove
from delta_core.model.arrow_values import (
    empty_table,
    int_array,
    int_scalar,
    repeat_string,
    sharing_nulls,
    string_scalar,
)

STRING_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct([
    ("storageType", pa.string()),
    ("pathOrInlineDv", pa.string()),
    ("offset", pa.int32()),
    ("sizeInBytes", pa.int32()),
    ("cardinality", pa.int64()),
])

FILES_SCHEMA = pa.schema([
    ("path", pa.string()),
    ("partition_values", STRING_MAP),
    ("size", pa.int64()),
    ("modification_time", pa.int64()),
    ("data_change", pa.bool_()),
    ("stats", pa.string()),
    ("tags", STRING_MAP),
    ("deletion_vector", DV_TYPE),
    ("base_row_id", pa.int64()),
    ("default_row_commit_version", pa.int64()),
    ("num_records", pa.int64()),
    ("clustering_provider", pa.string()),
])

TOMBSTONES_SCHEMA = pa.schema([
    ("path", pa.string()),
    ("deletion_timestamp", pa.int64()),
    ("data_change", pa.bool_()),
    ("extended_file_metadata", pa.bool_()),
    ("partition_values", STRING_MAP),
    ("size", pa.int64()),
    ("tags", STRING_MAP),
    ("deletion_vector", DV_TYPE),
    ("base_row_id", pa.int64()),
    ("default_row_commit_version", pa.int64()),
])

# Column name in our schemas -> field name in the log (JSON and checkpoint Parquet).
ADD_FIELDS: dict[str, str] = dict(ADD_JSON_FIELDS)
# The tombstones table keeps no stats: readers never need them and they dominate checkpoint size.
REMOVE_FIELDS: dict[str, str] = {k: v for k, v in REMOVE_JSON_FIELDS.items() if k != "stats"}

# Separates path and DV id inside the reconciliation key; cannot occur in a URI.
KEY_SEPARATOR = "\x00"  # between path and dvId in a ``file_keys`` key


# JSON field names of the string maps among the columns above.
MAP_JSON_FIELDS = ("partitionValues", "tags")


# --- building from JSON objects ----------------------------------------------------------


def _column_from_json(values: list[Any], typ: pa.DataType, name: str, *, source: str) -> pa.Array:
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as exc:
        raise CorruptLogError(f"{source}: field {name!r} has a value of the wrong type ({exc})", path=source) from exc


def table_from_json(bodies: Sequence[Mapping[str, Any]], *, tombstones: bool, source: str) -> pa.Table:
    """Arrow rows from the bodies of ``add`` (or ``remove``) JSON actions, in order."""
    schema = TOMBSTONES_SCHEMA if tombstones else FILES_SCHEMA
    fields = REMOVE_FIELDS if tombstones else ADD_FIELDS
    if not bodies:
        return empty_table(schema)
    arrays: list[pa.Array] = []
    for f in schema:
        if f.name == "num_records":
            arrays.append(pa.nulls(len(bodies), pa.int64()))  # filled in below
            continue
        js = fields[f.name]
        values = [b.get(js) for b in bodies]
        if f.name == "data_change":
            # Required by the protocol; old writers omitted it on removes, meaning true.
            values = [True if v is None else v for v in values]
        arrays.append(_column_from_json(values, f.type, js, source=source))
    table = pa.Table.from_arrays(arrays, schema=schema)
    if pc.any(pc.is_null(table["path"])).as_py():
        raise CorruptLogError(f"{source}: a file action has no path; the log is corrupt", path=source)
    if not tombstones:
        table = table.set_column(
            FILES_SCHEMA.get_field_index("num_records"), "num_records", num_records_from_stats(table["stats"])
        )
    return table


# --- building from Arrow's JSON reader ----------------------------------------------------


def json_body_type(*, tombstones: bool, map_keys: Mapping[str, Sequence[str]]) -> pa.StructType:
    """The explicit type to give Arrow's JSON reader for an ``add`` (or ``remove``) body: our
    column types under the log's field names, each string map as a struct of string fields
    named ``map_keys[field]`` (keys not listed there are inferred by the reader)."""
    schema = TOMBSTONES_SCHEMA if tombstones else FILES_SCHEMA
    names = REMOVE_FIELDS if tombstones else ADD_FIELDS
    fields = []
    for f in schema:
        if f.name == "num_records":
            continue
        js = names[f.name]
        if js in MAP_JSON_FIELDS:
            fields.append(pa.field(js, pa.struct([(k, pa.string()) for k in map_keys.get(js, ())])))
        else:
            fields.append(pa.field(js, f.type))
    return pa.struct(fields)


def map_from_struct(
    values: pa.StructArray, present: Sequence[pa.Array], *, positions: Sequence[pa.Array] | None = None,
) -> pa.MapArray:
    """``map<string,string>`` from a struct of string (or all-null) children: row ``i`` holds
    ``(field name, child[i])`` for every field ``j`` with ``present[j][i]`` true (a JSON key
    whose value is null is present; a missing key is not), in field order, or ordered by
    ``positions[j][i]`` when given. A null struct is a null map."""
    n = len(values)
    names = [f.name for f in values.type]
    valid = values.is_valid()
    keep = [pc.and_(p, valid) for p in present]
    if not names:
        offsets = pc.fill_null(pa.nulls(n + 1, pa.int32()), int_scalar(0, pa.int32()))
        return pa.MapArray.from_arrays(offsets, pa.nulls(0, pa.string()), pa.nulls(0, pa.string()),
                                       type=STRING_MAP, mask=pc.invert(valid))
    children = [pc.cast(values.field(j), pa.string()) for j in range(len(names))]
    counts = pc.cast(keep[0], pa.int32())
    for k in keep[1:]:
        counts = pc.add(counts, pc.cast(k, pa.int32()))
    offsets = pa.concat_arrays([int_array([0], pa.int32()), pc.cumulative_sum(counts)])
    if len(names) == 1:
        keys, items, flags = repeat_string(names[0], n), children[0], keep[0]
    else:
        # Entries in row-major order: entry e = i*k + j comes from row i of field j, which sits
        # at j*n + i in the field-major concatenation.
        k = len(names)
        pos = int_array(range(n * k))
        row = pc.divide(pos, int_scalar(k))
        field = pc.subtract(pos, pc.multiply(row, int_scalar(k)))
        src = pc.add(pc.multiply(field, int_scalar(n)), row)
        keys = pa.concat_arrays([repeat_string(name, n) for name in names]).take(src)
        items = pa.concat_arrays(children).take(src)
        flags = pa.concat_arrays(keep).take(src)
        if positions is not None:
            rank = pa.concat_arrays([pc.cast(p, pa.int64()) for p in positions]).take(src)
            perm = pc.sort_indices(pa.table({"row": row, "rank": rank}),
                                   sort_keys=[("row", "ascending"), ("rank", "ascending")])
            keys, items, flags = keys.take(perm), items.take(perm), flags.take(perm)
    return pa.MapArray.from_arrays(offsets, keys.filter(flags), items.filter(flags), type=STRING_MAP,
                                   mask=pc.invert(valid))


def _dv_from_struct(dv: pa.StructArray) -> pa.StructArray:
    """Our DV struct from the reader's (which may carry unknown children, e.g. ``maxRowIndex``)."""
    return pa.StructArray.from_arrays([dv.field(f.name) for f in DV_TYPE], fields=list(DV_TYPE),
                                      mask=pc.invert(dv.is_valid()))


def table_from_json_struct(
    body: pa.StructArray, maps: Mapping[str, pa.MapArray], *, tombstones: bool,
) -> pa.RecordBatch:
    """Our rows from non-null ``add`` (or ``remove``) bodies read by Arrow's JSON reader with
    ``json_body_type``; ``maps`` holds the string-map columns by JSON field name, already
    converted (``map_from_struct``). Gives what ``table_from_json`` gives for the same bodies."""
    schema = TOMBSTONES_SCHEMA if tombstones else FILES_SCHEMA
    names = REMOVE_FIELDS if tombstones else ADD_FIELDS
    arrays: list[pa.Array] = []
    for f in schema:
        if f.name == "num_records":
            arrays.append(num_records_from_stats(arrays[schema.get_field_index("stats")]).combine_chunks())
            continue
        js = names[f.name]
        if js in maps:
            arrays.append(maps[js])
            continue
        col = body.field(js)
        if f.name == "data_change":
            # Required by the protocol; old writers omitted it on removes, meaning true.
            col = pc.or_kleene(col, pc.is_null(col))
        elif f.name == "deletion_vector":
            col = _dv_from_struct(col)
        arrays.append(col)
    # Columns no action of the commit sets (deletion vectors, tags, row ids...) share one buffer.
    return sharing_nulls(pa.RecordBatch.from_arrays(arrays, schema=schema))


# --- normalising checkpoint Parquet columns ----------------------------------------------


def conform_array(arr: pa.Array | pa.ChunkedArray, typ: pa.DataType) -> pa.ChunkedArray:
    """Cast a checkpoint column to our type: maps with other child names, DV structs with
    extra or missing children (``maxRowIndex``), narrower integers."""
    if isinstance(arr, pa.Array):
        arr = pa.chunked_array([arr], type=arr.type)
    if arr.type == typ:
        return arr
    if pa.types.is_struct(typ):
        chunks = []
        for chunk in arr.chunks:
            children = []
            for f in typ:
                if chunk.type.get_field_index(f.name) >= 0:
                    children.append(conform_array(chunk.field(f.name), f.type).combine_chunks())
                else:
                    children.append(pa.nulls(len(chunk), f.type))
            chunks.append(pa.StructArray.from_arrays(children, fields=list(typ), mask=pc.is_null(chunk)))
        return pa.chunked_array(chunks, type=typ)
    try:
        return arr.cast(typ)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise CorruptLogError(f"checkpoint column of type {arr.type} cannot be read as {typ}: {exc}") from exc


# --- stats -------------------------------------------------------------------------------

# Writers put numRecords first; this reads it without parsing the whole JSON. Rows the
# pattern does not match (other key order) fall back to a full parse.
_NUM_RECORDS = r'^\s*\{\s*"numRecords"\s*:\s*(?P<n>-?\d+)\s*[,}]'


def num_records_from_stats(stats: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray:
    """``numRecords`` of each JSON ``stats`` string (null when absent or unparsable)."""
    if isinstance(stats, pa.Array):
        stats = pa.chunked_array([stats], type=pa.string())
    out = []
    for chunk in stats.chunks:
        if len(chunk) == 0 or chunk.null_count == len(chunk):
            out.append(pa.nulls(len(chunk), pa.int64()))
            continue
        found = pc.struct_field(pc.extract_regex(chunk, _NUM_RECORDS), "n")
        try:
            nums = pc.cast(found, pa.int64())
        except pa.ArrowInvalid:  # digits beyond int64: no count
            nums = pa.array([None if n is None else _int64_or_none(int(n)) for n in found.to_pylist()], pa.int64())
        misses = pc.and_(pc.is_valid(chunk), pc.is_null(found))
        if pc.any(misses).as_py():
            values = nums.to_pylist()
            texts = chunk.to_pylist()
            for i in pc.indices_nonzero(misses).to_pylist():
                values[i] = _parse_num_records(texts[i])
            nums = pa.array(values, type=pa.int64())
        out.append(nums)
    return pa.chunked_array(out, type=pa.int64())


def _parse_num_records(text: str) -> int | None:
    try:
        value = json.loads(text).get("numRecords")
    except (ValueError, AttributeError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return _int64_or_none(int(value))


def _int64_or_none(value: int) -> int | None:
    return value if -(1 << 63) <= value < (1 << 63) else None


# --- reconciliation keys -----------------------------------------------------------------


def dv_unique_ids(dv: pa.ChunkedArray) -> pa.ChunkedArray:
    """``storageType + pathOrInlineDv`` plus ``@offset`` when present; null where no DV."""
    storage_type = pc.struct_field(dv, "storageType")
    location = pc.struct_field(dv, "pathOrInlineDv")
    offset = pc.cast(pc.struct_field(dv, "offset"), pa.string())
    base = pc.binary_join_element_wise(storage_type, location, string_scalar(""))
    with_offset = pc.binary_join_element_wise(base, offset, string_scalar("@"))
    return pc.if_else(pc.is_null(offset), base, with_offset)


# The columns ``file_keys`` reads.
KEY_COLUMNS = ("path", "deletion_vector")


def file_keys(
    table: pa.Table, *, paths: pa.ChunkedArray | pa.Array | None = None,
) -> pa.ChunkedArray | pa.Array:
    """The logical-file key of each row: ``path`` alone without DV, else ``path NUL dvId``.
    ``paths`` replaces the ``path`` column (replay passes its canonical forms)."""
    path = table["path"] if paths is None else paths
    dv = table["deletion_vector"]
    if dv.null_count == len(dv):
        return path
    uid = dv_unique_ids(dv)
    joined = pc.binary_join_element_wise(path, uid, string_scalar(KEY_SEPARATOR))
    return pc.if_else(pc.is_null(uid), path, joined)


# --- back to records ---------------------------------------------------------------------


def _dv(d: Mapping[str, Any] | None) -> DeletionVectorDescriptor | None:
    if d is None:
        return None
    return DeletionVectorDescriptor(
        storage_type=d["storageType"], path_or_inline_dv=d["pathOrInlineDv"],
        size_in_bytes=d["sizeInBytes"], cardinality=d["cardinality"], offset=d["offset"],
    )


def _maps(arr: pa.MapArray) -> list[dict[str, Any] | None]:
    """Python dicts of a map column, built from the flat keys/items: converting map rows one by
    one is ~10x slower and dominates record conversion."""
    offsets = arr.offsets.to_pylist()
    lo, hi = offsets[0], offsets[-1]
    keys = arr.keys.slice(lo, hi - lo).to_pylist()
    items = arr.items.slice(lo, hi - lo).to_pylist()
    out: list[dict[str, Any] | None] = [
        dict(zip(keys[a - lo:b - lo], items[a - lo:b - lo])) for a, b in zip(offsets, offsets[1:])
    ]
    if arr.null_count:
        out = [d if ok else None for d, ok in zip(out, arr.is_valid().to_pylist())]
    return out


def _columns(batch: pa.RecordBatch) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for name, col in zip(batch.schema.names, batch.columns):
        if pa.types.is_map(col.type):
            out[name] = _maps(col)
        elif name == "deletion_vector":
            out[name] = [_dv(d) for d in col.to_pylist()] if col.null_count < len(col) else [None] * len(col)
        else:
            out[name] = col.to_pylist()
    return out


def iter_adds(files: pa.Table, *, batch_size: int = 65536) -> Iterator[Add]:
    """``Add`` records for the rows of a ``FILES_SCHEMA`` table (streamed in batches)."""
    for batch in files.to_batches(max_chunksize=batch_size):
        c = _columns(batch)
        for i in range(batch.num_rows):
            yield Add(
                path=c["path"][i], partition_values=c["partition_values"][i] or {},
                size=c["size"][i] if c["size"][i] is not None else 0,
                modification_time=c["modification_time"][i] if c["modification_time"][i] is not None else 0,
                data_change=c["data_change"][i] is not False,
                stats=c["stats"][i], tags=c["tags"][i], deletion_vector=c["deletion_vector"][i],
                base_row_id=c["base_row_id"][i], default_row_commit_version=c["default_row_commit_version"][i],
                clustering_provider=c["clustering_provider"][i],
            )


def iter_removes(tombstones: pa.Table, *, batch_size: int = 65536) -> Iterator[Remove]:
    """``Remove`` records for the rows of a ``TOMBSTONES_SCHEMA`` table."""
    for batch in tombstones.to_batches(max_chunksize=batch_size):
        c = _columns(batch)
        for i in range(batch.num_rows):
            yield Remove(
                path=c["path"][i], deletion_timestamp=c["deletion_timestamp"][i],
                data_change=c["data_change"][i] is not False,
                extended_file_metadata=c["extended_file_metadata"][i],
                partition_values=c["partition_values"][i], size=c["size"][i], tags=c["tags"][i],
                deletion_vector=c["deletion_vector"][i], base_row_id=c["base_row_id"][i],
                default_row_commit_version=c["default_row_commit_version"][i],
            )
