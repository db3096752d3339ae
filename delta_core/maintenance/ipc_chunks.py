"""Rows packed as Arrow IPC byte strings, to move through a Spark shuffle as a few opaque values.

Z-order must bring every row to the task that writes its output file, which takes a shuffle.
Shuffling the rows themselves costs a conversion per row at each end (Arrow -> Spark's row
format -> Arrow) and a JVM sort of every row; the rows of one input file bound for one output
file are instead sent as one value here (``pack``: Arrow IPC stream format, uncompressed,
since Spark compresses shuffle blocks itself), so the shuffle moves and sorts a handful of
binary values per input file. Nothing here imports Spark.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa

# Upper bound on one packed value: a binary value is one Spark row, whole in JVM memory, and
# Arrow batches into and out of Python workers hold many of them.
MAX_CHUNK_BYTES = 4 * 1024 * 1024


def pack(rows: pa.Table, *, max_bytes: int = MAX_CHUNK_BYTES) -> Iterator[bytes]:
    """``rows`` as IPC streams of at most about ``max_bytes`` of Arrow data each (at least one
    row per stream; no stream for no rows), in row order."""
    if not rows.num_rows:
        return
    per_chunk = max(1, (rows.num_rows * max_bytes) // max(1, rows.nbytes))
    for start in range(0, rows.num_rows, per_chunk):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, rows.schema) as writer:
            writer.write_table(rows.slice(start, per_chunk))
        yield sink.getvalue().to_pybytes()


def unpack(chunks: Iterable[bytes]) -> pa.Table:
    """The rows of one or more ``chunks`` (from ``pack``, one schema) as one table, in order
    (zero-copy: the table's buffers are the chunks')."""
    return pa.concat_tables([pa.ipc.open_stream(pa.py_buffer(chunk)).read_all() for chunk in chunks])
