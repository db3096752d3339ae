"""Columnar decoding of one commit file with Arrow's JSON reader (PROTOCOL.md "Delta Log
Entries", "Add File and Remove File").

Lines whose first key is ``add`` or ``remove`` are read at once (a zero-copy slice of the file
when they are contiguous) with an explicit type for the bodies (``file_actions.json_body_type``);
the other lines (commitInfo, protocol, metaData, txn, ...: a handful) are decoded with
``json.loads`` by the caller. The result is checked to be exactly what the per-line decoder
(``commit_read``) would build:

- the bytes are valid UTF-8 and each file-action line holds exactly one object with one known
  action (rows are matched to lines, so file actions keep their line numbers as ``order``);
  unknown keys beside it are read and ignored (``actions.line_action``);
- typed fields have their JSON type (the reader refuses a number where a string is declared,
  and so on), so no value is coerced; unknown fields are inferred and dropped;
- ``partitionValues``/``tags`` are read as structs (the reader has no map type) whose string
  fields are named after the keys seen in the first lines, and the reader infers any other key;
  a null struct field is a missing key or a JSON ``null``, which only the line can tell, so
  those rows (rare) are looked up with ``json.loads``; entries keep the line's key order.

Anything else (a reader error, a mismatch) gives ``None``: the caller then decodes the commit
line by line, which also produces the precise error for a corrupt file.
"""

from __future__ import annotations

import json
import re
from array import array
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from delta_core.log.commit_stats import StatsPiece, split_stats
from delta_core.log.file_actions import (
    FILES_SCHEMA,
    MAP_JSON_FIELDS,
    TOMBSTONES_SCHEMA,
    json_body_type,
    map_from_struct,
    table_from_json_struct,
)
from delta_core.model.actions import ACTION_KEYS, line_action
from delta_core.model.arrow_values import empty_table, int_array, int_scalar

_FILE_KEYS = ("add", "remove")
# Lines decoded with json.loads up front to learn the map keys (partition columns, tags).
_SEED_LINES = 16
# Lines longer than a block make the reader fail (then the per-line decoder runs).
BLOCK_SIZE = 16 << 20
# A line whose (first) key is add or remove; other lines never reach the reader.
_FILE_LINE = r'^\s*\{{\s*"{key}"\s*:'


@dataclass(frozen=True, slots=True)
class CommitColumns:
    """A commit's file actions: ``FILES_SCHEMA``/``TOMBSTONES_SCHEMA`` rows and the 1-based line
    number of each (int64, ascending). With ``add_stats``, the ``stats`` of ``adds`` are packed
    there (``packed``) and null in the table."""

    adds: pa.Table
    removes: pa.Table
    add_lines: pa.Array
    remove_lines: pa.Array
    add_stats: StatsPiece | None = None

    def packed(self) -> CommitColumns:
        """These columns with the add ``stats`` packed (``commit_stats.split_stats``)."""
        if self.add_stats is not None:
            return self
        adds, stats = split_stats(self.adds)
        return CommitColumns(adds, self.removes, self.add_lines, self.remove_lines, stats)

    def add_lines_from(self, base: int) -> pa.Array:
        return pc.add(self.add_lines, int_scalar(base))

    def remove_lines_from(self, base: int) -> pa.Array:
        return pc.add(self.remove_lines, int_scalar(base))


@dataclass(frozen=True, slots=True)
class DecodedCommit:
    """A commit decoded by ``decode_commit``: its file actions and the lines of the rest."""

    columns: CommitColumns
    other_actions: list[tuple[int, str, Any]]  # (line number, key, body), in line order
    num_lines: int  # number of the last non-blank line


class _Lines:
    """The lines of a commit file as ``bytes.splitlines`` numbers them when only ``\\n`` ends
    lines (a lone ``\\r`` puts two objects on one of our lines: row and line counts then
    differ, which rejects the file), split into ``add`` lines, ``remove`` lines (by first key:
    the reader's input) and the other non-blank ones (decoded in Python: commitInfo, protocol,
    metaData, txn, ...)."""

    def __init__(self, data: bytes):
        self.data = data
        # Line i is data[offsets[i]:offsets[i + 1]], newline included. (A find() loop is ~3x
        # faster than locating newlines with Arrow compute.)
        offsets = array("q", [0])
        find, pos = data.find, data.find(b"\n")
        while pos >= 0:
            offsets.append(pos + 1)
            pos = find(b"\n", pos + 1)
        if offsets[-1] != len(data):
            offsets.append(len(data))
        self.offsets = offsets
        self.count = len(offsets) - 1
        self._whole = pa.LargeStringArray.from_buffers(self.count, pa.py_buffer(offsets), pa.py_buffer(data))
        # 1-based numbers of the add and remove lines (the reader's rows, in order) and of the
        # other non-blank lines.
        self.numbers: dict[str, pa.Array] = {}
        is_file = None
        for key in _FILE_KEYS:
            mask = pc.match_substring_regex(self._whole, _FILE_LINE.format(key=key))
            is_file = mask if is_file is None else pc.or_(is_file, mask)
            self.numbers[key] = pc.add(pc.cast(pc.indices_nonzero(mask), pa.int64()), int_scalar(1))
        rest = pc.indices_nonzero(pc.invert(is_file)).to_pylist() if self.count else []
        self.other_numbers = [i + 1 for i in rest if self.text(i).strip()]

    def lines_of(self, key: str) -> pa.Buffer:
        """The ``key`` lines as one buffer: a slice of the file when no other non-blank line
        sits between them (the usual layout), else a copy."""
        numbers = self.numbers[key]
        first, last = numbers[0].as_py(), numbers[-1].as_py()
        between = sum(first < n < last for n in self.other_numbers)
        for other, theirs in self.numbers.items():
            if other != key and len(theirs):
                inside = pc.and_(pc.greater(theirs, int_scalar(first)), pc.less(theirs, int_scalar(last)))
                between += pc.sum(pc.cast(inside, pa.int64())).as_py()
        if not between:
            start, end = self.offsets[first - 1], self.offsets[last]
            return pa.py_buffer(self.data).slice(start, end - start)
        picked = self._whole.take(pc.subtract(numbers, int_scalar(1)))
        return picked.buffers()[2].slice(0, pc.sum(pc.binary_length(picked)).as_py())

    def texts(self, numbers: pa.Array) -> pa.LargeStringArray:
        """The lines numbered ``numbers`` (1-based) as an Arrow array (each with its newline)."""
        return self._whole.take(pc.subtract(numbers, int_scalar(1)))

    def text(self, index: int) -> bytes:
        """Line ``index`` (0-based), with its newline."""
        return self.data[self.offsets[index]:self.offsets[index + 1]]

    def action(self, number: int) -> tuple[str, Any]:
        """The single action on line ``number`` (1-based); ``ValueError`` if it holds none."""
        found = line_action(json.loads(self.text(number - 1)))
        if found is None:
            raise ValueError("not a single action object")
        return found


def _valid_utf8(data: bytes) -> bool:
    text = pa.LargeStringArray.from_buffers(1, int_array([0, len(data)]).buffers()[1], pa.py_buffer(data))
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _seed_keys(lines: _Lines, key: str) -> dict[str, list[str]] | None:
    """Map keys seen in the first ``key`` actions, by field, in their order."""
    seeds: dict[str, list[str]] = {name: [] for name in MAP_JSON_FIELDS}
    for number in lines.numbers[key].slice(0, _SEED_LINES).to_pylist():
        try:
            found, body = lines.action(number)
        except ValueError:
            return None
        if found != key or not isinstance(body, dict):
            return None
        for name in MAP_JSON_FIELDS:
            value = body.get(name)
            if isinstance(value, dict):
                seeds[name] += [k for k in value if k not in seeds[name]]
    return seeds


def _read(data: pa.Buffer, key: str, seeds: dict[str, list[str]]) -> pa.Table:
    schema = pa.schema([(key, json_body_type(tombstones=key == "remove", map_keys=seeds))])
    return pa_json.read_json(
        pa.BufferReader(data),
        read_options=pa_json.ReadOptions(block_size=BLOCK_SIZE),
        parse_options=pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="infer"),
    )


def _map_types_ok(table: pa.Table, key: str, seeds: dict[str, list[str]]) -> bool:
    """Whether every map field came out as string (or all-null) children. Keys the reader
    inferred with another type (e.g. a date-like string read as timestamp) are added to
    ``seeds`` so that a second read declares them as strings."""
    ok = True
    body = table.schema.field(key).type
    for name in MAP_JSON_FIELDS:
        struct = body.field(name).type
        if any(not (pa.types.is_string(f.type) or pa.types.is_null(f.type)) for f in struct):
            ok = False
            seeds[name] = [f.name for f in struct]
    return ok


def _one_action_per_row(table: pa.Table, key: str) -> bool:
    """Whether no row holds a second known action beside ``key`` (other keys are unknown ones,
    which a reader ignores)."""
    return all(table[name].null_count == table.num_rows
               for name in table.column_names if name != key and name in ACTION_KEYS)


def _present(
    values: pa.StructArray, numbers: pa.Array, lines: _Lines, key: str, name: str,
) -> list[pa.Array] | None:
    """For each field of the map struct ``values`` (field ``name`` of ``key`` actions on lines
    ``numbers``): which rows hold that key. A null field is looked up in the row's line."""
    children = [values.field(j) for j in range(values.type.num_fields)]
    present = [pc.is_valid(c) for c in children]
    if not children:
        return present
    any_null = pc.is_null(children[0])
    for c in children[1:]:
        any_null = pc.or_(any_null, pc.is_null(c))
    unsure = pc.indices_nonzero(pc.and_(any_null, values.is_valid())).to_pylist()
    if not unsure:
        return present
    null_keys: list[list[int]] = [[] for _ in children]
    names = [f.name for f in values.type]
    line_of = numbers.to_pylist()
    for i in unsure:
        try:
            k, body = lines.action(line_of[i])
        except ValueError:
            return None
        obj = body.get(name) if k == key and isinstance(body, dict) else None
        if not isinstance(obj, dict):
            return None
        for j, field_name in enumerate(names):
            if field_name in obj and obj[field_name] is None:
                null_keys[j].append(i)
    index = int_array(range(len(values)))
    return [p if not nk else pc.or_(p, pc.is_in(index, value_set=int_array(nk)))
            for p, nk in zip(present, null_keys)]


def _key_pattern(key: str) -> str:
    """RE2 pattern of ``"key":`` as a JSON writer spells it (raw UTF-8, optional spaces)."""
    return re.escape(json.dumps(key, ensure_ascii=False)) + r"\s*:"


def _entry_positions(
    values: pa.StructArray, present: list[pa.Array], numbers: pa.Array, lines: _Lines, key: str, name: str,
) -> list[pa.Array] | None:
    """Where each present key of the map field ``name`` stands in its line, so map entries keep
    the line's key order (writers such as delta-rs vary it from row to row). ``None`` when rows
    hold at most one key. The first match of ``"k":`` after the one ``"name":`` of the line is
    the key itself (a raw quote cannot occur inside a JSON string); rows where that cannot be
    established take their order from ``json.loads``."""
    k = values.type.num_fields
    if k < 2:
        return None
    counts = pc.cast(present[0], pa.int32())
    for p in present[1:]:
        counts = pc.add(counts, pc.cast(p, pa.int32()))
    if pc.max(counts).as_py() < 2:
        return None
    texts = lines.texts(numbers)
    field_pattern = _key_pattern(name)
    start = pc.find_substring_regex(texts, field_pattern)
    sure = pc.equal(pc.count_substring_regex(texts, field_pattern), int_scalar(1))
    positions = []
    for f, p in zip(values.type, present):
        pos = pc.find_substring_regex(texts, _key_pattern(f.name))
        sure = pc.and_(sure, pc.or_(pc.invert(p), pc.greater(pos, start)))
        positions.append(pos)
    if pc.all(sure).as_py():
        return positions
    names = [f.name for f in values.type]
    order: list[list[int]] = [[] for _ in names]
    for number in numbers.to_pylist():
        try:
            k_, body = lines.action(number)
        except ValueError:
            return None
        obj = body.get(name) if k_ == key and isinstance(body, dict) else None
        rank = {n: r for r, n in enumerate(obj)} if isinstance(obj, dict) else {}
        for j, n in enumerate(names):
            order[j].append(rank.get(n, k))
    return [int_array(o) for o in order]


def _file_table(data: pa.Buffer, lines: _Lines, key: str) -> pa.Table | None:
    """The ``key`` lines (``data``) read as our table, or ``None``."""
    seeds = _seed_keys(lines, key)
    if seeds is None:
        return None
    try:
        table = _read(data, key, seeds)
        if not _map_types_ok(table, key, seeds):
            table = _read(data, key, seeds)
            if not _map_types_ok(table, key, seeds):
                return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None
    numbers = lines.numbers[key]
    if table.num_rows != len(numbers) or table[key].null_count or not _one_action_per_row(table, key):
        return None
    tombstones = key == "remove"
    batches = []
    first = 0  # position in ``numbers`` of the chunk's first row
    for chunk in table[key].chunks:
        if not len(chunk):
            continue
        maps = {}
        for name in MAP_JSON_FIELDS:
            values = chunk.field(name)
            chunk_numbers = numbers.slice(first, len(chunk))
            present = _present(values, chunk_numbers, lines, key, name)
            if present is None:
                return None
            positions = _entry_positions(values, present, chunk_numbers, lines, key, name)
            maps[name] = map_from_struct(values, present, positions=positions)
        batches.append(table_from_json_struct(chunk, maps, tombstones=tombstones))
        first += len(chunk)
    out = pa.Table.from_batches(batches, schema=TOMBSTONES_SCHEMA if tombstones else FILES_SCHEMA)
    if out["path"].null_count:
        return None  # the per-line decoder reports it
    return out


def decode_commit(data: bytes) -> DecodedCommit | None:
    """Decode a commit file with Arrow's JSON reader, or ``None`` if it cannot be done exactly."""
    if not _valid_utf8(data):
        return None
    lines = _Lines(data)
    other_actions = []
    for number in lines.other_numbers:
        try:
            key, body = lines.action(number)
        except ValueError:
            return None
        if key in _FILE_KEYS:  # spelled oddly (e.g. an escaped key): leave it to the per-line decoder
            return None
        other_actions.append((number, key, body))
    tables = {}
    for key in _FILE_KEYS:
        if not len(lines.numbers[key]):
            tables[key] = empty_table(TOMBSTONES_SCHEMA if key == "remove" else FILES_SCHEMA)
            continue
        table = _file_table(lines.lines_of(key), lines, key)
        if table is None:
            return None
        tables[key] = table
    last = lines.other_numbers[-1] if lines.other_numbers else 0
    for numbers in lines.numbers.values():
        if len(numbers):
            last = max(last, numbers[-1].as_py())
    return DecodedCommit(
        columns=CommitColumns(adds=tables["add"], removes=tables["remove"],
                              add_lines=lines.numbers["add"], remove_lines=lines.numbers["remove"]),
        other_actions=other_actions, num_lines=last,
    )
