"""Streaming Parquet output: one file written row group by row group into a ``Storage``.

``ParquetStream`` buffers incoming Arrow tables until a row group is full, encodes it straight
into the storage's output stream (local disk or object store alike) and lets the caller see
each row group (``data_writer`` collects stats there), so memory stays at about one row group
whatever the file's size. The writer options are chosen here, once, for every data file:
snappy (as delta-rs and Delta Spark), page statistics, row groups of at most ``ROW_GROUP_ROWS``
rows / ``ROW_GROUP_BYTES`` bytes, and dictionary encoding except where ``dictionary_columns``
finds it would be dropped anyway (PROTOCOL.md "Data Files" leaves all of this to the writer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.model.arrow_values import empty_table, int_array_of
from delta_core.storage.atomic_output import AtomicOutput
from delta_core.storage.base import Storage

# Snappy and page statistics, as delta-rs and Delta Spark write; dictionary encoding where it
# can work (``dictionary_columns``).
PARQUET_COMPRESSION = "snappy"
# A row group holds at most this many rows (pyarrow's and parquet-rs's default) and at most about
# this many bytes of Arrow data: the writer buffers one row group, never a whole file.
ROW_GROUP_ROWS = 1024 * 1024
ROW_GROUP_BYTES = 64 * 1024 * 1024
# Values encoded per step (pyarrow's default is 1024): fewer, larger steps cost less per value;
# pages still close near the 1 MiB data page size.
WRITE_BATCH_SIZE = 8192
# Bytes handed to the storage's output stream per write: few calls into Python file objects.
OUTPUT_BUFFER_BYTES = 1024 * 1024
_DICTIONARY_SAMPLE = 4096


def _plain_or_dictionary(t: pa.DataType) -> bool:
    """Whether values of type ``t`` may be written plain instead of dictionary-encoded (strings,
    binaries, fixed-width values; booleans, nested and dictionary types are left alone)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) \
            or pa.types.is_large_binary(t):
        return True
    if pa.types.is_boolean(t) or pa.types.is_nested(t) or pa.types.is_dictionary(t):
        return False
    try:
        return int(t.bit_width) > 1
    except (ValueError, AttributeError):
        return False


def dictionary_columns(group: pa.Table) -> bool | list[str]:
    """What to pass as ``use_dictionary`` for a file whose first row group is ``group``.

    Dictionary encoding stays on (the Parquet default), except for leaf columns (top-level, or
    fields of structs: a checkpoint's ``add.path``, ``add.stats`` and ``add.stats_parsed`` bounds)
    of strings or fixed-width values that repeat too little for a dictionary to pay: random ids,
    paths, hashes, floats. There the writer builds a dictionary that is as large as the values
    plus an index per row, or that overflows the dictionary page limit (1 MiB) and is dropped for plain
    values after all, at about the cost of the encoding itself. Test: ``m`` values sampled from
    ``V`` holding ``D`` distinct ones repeat about ``m**2 / 2D`` times; a seeded random sample of
    the group's valid values repeating fewer than ``2 m**2 / V`` times means ``D > V / 4``, and the
    column is written plain. Skewed or clustered data repeats more, so errors lean to keeping the
    dictionary.
    """
    import numpy as np

    if group.num_rows < 4 * _DICTIONARY_SAMPLE:
        return True  # too few rows to tell, and a dictionary this small costs little
    plain: set[str] = set()
    rng = np.random.default_rng(0)
    rows = np.sort(rng.choice(group.num_rows, _DICTIONARY_SAMPLE, replace=False))
    for path, column in _struct_leaves(group):
        if not _plain_or_dictionary(column.type):
            continue
        values = len(column) - column.null_count  # V
        sample = column.take(int_array_of(rows))
        drawn = len(sample) - sample.null_count  # m
        if drawn < _DICTIONARY_SAMPLE // 2:
            continue  # mostly nulls: too few values to tell, and few to encode
        repeats = drawn - pc.count_distinct(sample, mode="only_valid").as_py()
        if repeats < 2 * drawn * drawn / values:
            plain.add(path)
    if not plain:
        return True
    return [path for path in _parquet_leaf_paths(group.schema) if path not in plain]


def _struct_leaves(group: pa.Table) -> list[tuple[str, pa.ChunkedArray]]:
    """The columns of ``group`` and, through structs, their fields, as (dotted Parquet path,
    values); lists and maps are left whole (``_plain_or_dictionary`` leaves them alone)."""
    out: list[tuple[str, pa.ChunkedArray]] = []

    def walk(path: str, column: pa.ChunkedArray) -> None:
        if pa.types.is_struct(column.type):
            for i, field in enumerate(column.type):
                walk(f"{path}.{field.name}", pc.struct_field(column, [i]))
        else:
            out.append((path, column))

    for field, column in zip(group.schema, group.columns, strict=True):
        walk(field.name, column)
    return out


def _parquet_leaf_paths(schema: pa.Schema) -> list[str]:
    """Dotted Parquet paths of the leaf columns ``schema`` is written as (``a``, ``s.x``,
    ``l.list.element``): the names ``use_dictionary`` takes."""
    sink = pa.BufferOutputStream()
    pq.write_table(empty_table(schema), sink)  # Schema.empty_table would import pandas
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return [meta.schema.column(i).path for i in range(meta.num_columns)]


class ParquetStream:
    """One Parquet file at ``key`` written from a stream of tables (all with ``schema``).

    Incoming rows are buffered until a row group is full (``row_group_rows`` rows or
    ``row_group_bytes`` bytes of Arrow data), then encoded straight into
    ``storage.open_output(key)`` through a write buffer; ``on_row_group`` sees each row group
    just before it is written. The output is opened with the first row group, so a stream that
    fails early leaves nothing behind; one that fails later is deleted by ``abort``.
    With ``atomic`` the file goes through ``storage.open_atomic_output``: nothing is visible at
    ``key`` until ``close`` completes it, and ``abort`` discards it (a file already at ``key``,
    e.g. a checkpoint being rewritten, stays).
    """

    def __init__(
        self,
        storage: Storage,
        key: str,
        schema: pa.Schema,
        *,
        row_group_rows: int | None = None,
        row_group_bytes: int | None = None,
        on_row_group: Callable[[pa.Table], None] | None = None,
        atomic: bool = False,
    ) -> None:
        self.storage = storage
        self.key = key
        self.schema = schema
        self.row_group_rows = max(1, ROW_GROUP_ROWS if row_group_rows is None else row_group_rows)
        self.row_group_bytes = max(1, ROW_GROUP_BYTES if row_group_bytes is None else row_group_bytes)
        self.on_row_group = on_row_group
        self.atomic = atomic
        self.num_rows = 0
        self.num_row_groups = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        self._file: IO[bytes] | AtomicOutput | None = None
        self._sink: pa.NativeFile | None = None
        self._writer: pq.ParquetWriter | None = None

    def write(self, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        self._pending.append(data)
        self._pending_rows += data.num_rows
        self._pending_bytes += data.nbytes
        while self._pending_rows >= self.row_group_rows or self._pending_bytes >= self.row_group_bytes:
            self._flush_row_group()

    def _flush_row_group(self) -> None:
        buffered = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        rows = self._pending_rows
        # As many rows as fit both limits (by the average row width of what is buffered).
        take = min(rows, self.row_group_rows,
                   max(1, self.row_group_bytes * rows // max(1, self._pending_bytes)))
        group = buffered.slice(0, take) if take < rows else buffered
        rest = buffered.slice(take) if take < rows else None
        self._write_group(group)
        self._pending = [rest] if rest is not None else []
        self._pending_rows = rows - take
        self._pending_bytes = rest.nbytes if rest is not None else 0

    def _open(self, first: pa.Table | None) -> pq.ParquetWriter:
        if self._writer is None:
            use_dictionary = dictionary_columns(first) if first is not None else True
            self._file = (self.storage.open_atomic_output(self.key) if self.atomic
                          else self.storage.open_output(self.key))
            self._sink = pa.output_stream(self._file, buffer_size=OUTPUT_BUFFER_BYTES)
            self._writer = pq.ParquetWriter(self._sink, self.schema, compression=PARQUET_COMPRESSION,
                                            use_dictionary=use_dictionary, write_statistics=True,
                                            write_batch_size=WRITE_BATCH_SIZE)
        return self._writer

    def _write_group(self, group: pa.Table) -> None:
        if self.on_row_group is not None:
            self.on_row_group(group)
        self._open(group).write_table(group, row_group_size=group.num_rows)
        self.num_rows += group.num_rows
        self.num_row_groups += 1

    def close(self) -> int:
        """Write what is buffered and the footer; returns the file's size in bytes."""
        if self._pending_rows:
            self._flush_row_group()
        writer = self._open(None)  # a stream without rows still makes a valid (empty) file
        writer.close()
        assert self._sink is not None and self._file is not None
        size: int = self._sink.tell()
        self._sink.close()
        if isinstance(self._file, AtomicOutput):
            self._file.commit()  # only now, after the footer: never a partial file at the key
        else:
            self._file.close()  # commits the object on stores that upload on close
        return size

    def abort(self) -> None:
        """Drop the partial file (best effort: the caller is already handling a failure)."""
        self._pending = []
        if self._file is None:
            return
        if isinstance(self._file, AtomicOutput):
            # Nothing was published: drop the upload or temporary file, never the key itself.
            # The writer's late flushes into the discarded output are dropped.
            self._file.discard()
            return
        try:
            if self._sink is not None:
                self._sink.close()
            self._file.close()
        except OSError:
            pass
        try:
            self.storage.delete(self.key)
        except OSError:
            pass


__all__ = [
    "OUTPUT_BUFFER_BYTES", "PARQUET_COMPRESSION", "ROW_GROUP_BYTES", "ROW_GROUP_ROWS",
    "WRITE_BATCH_SIZE", "ParquetStream", "dictionary_columns",
]
