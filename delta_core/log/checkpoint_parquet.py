"""Opening and streaming checkpoint Parquet files (PROTOCOL.md "Checkpoints", "Sidecar Files").

Shared by the checkpoint reader (``checkpoint_read``) and the deferred reader of file
statistics (``checkpoint_stats``): both turn an unreadable or vanished file into a
``CorruptLogError`` that says what to do, and both stream row batches so a checkpoint of
millions of files is never decoded whole.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import CorruptLogError
from delta_core.storage.base import Storage

# Parquet pages are streamed through a buffer of this size instead of loading each column chunk
# whole: a checkpoint of millions of files is one row group of hundreds of MB.
_READ_BUFFER = 1 << 20

# Rows per streamed checkpoint batch: large enough that per-batch overhead is noise, small
# enough that one raw batch is a few MB (at 1M files, 32k rows gave a 30 MB lower peak than
# 128k, in the same time).
BATCH_ROWS = 32_768
_THREADED_ROWS = 250_000


def open_parquet(storage: Storage, key: str, *, version: int) -> tuple[IO[bytes], pq.ParquetFile]:
    """The open file and its Parquet reader; the caller closes the file."""
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


def iter_batches(pf: pq.ParquetFile, columns: list[str], source: str, version: int,
                 *, batch_rows: int | None = None, row_groups: list[int] | None = None) -> Iterator[pa.RecordBatch]:
    """``columns`` (dotted sub-columns allowed) in batches of ``BATCH_ROWS`` rows, or fewer
    (``batch_rows``), of every row group or of ``row_groups``."""
    size = min(batch_rows, BATCH_ROWS) if batch_rows else BATCH_ROWS
    # Decoding columns on Arrow's threads pays off on big checkpoints only; on small ones each
    # thread's allocator arena just adds to the peak memory.
    threads = pf.metadata.num_rows > _THREADED_ROWS
    try:
        yield from pf.iter_batches(batch_size=size, columns=columns, use_threads=threads, row_groups=row_groups)
    except (pa.ArrowInvalid, OSError) as exc:
        raise CorruptLogError(f"cannot read checkpoint {source}: {exc}", path=source, version=version) from exc


def marked_per_group(pf: pq.ParquetFile, field: str) -> list[int] | None:
    """Rows of each row group where the dotted leaf ``field`` (an action's required field, e.g.
    ``add.path``) is set, from the footer's null counts alone; ``None`` when the file has no such
    column or some row group has no null count."""
    md = pf.metadata
    column = next((j for j in range(md.num_columns) if md.schema.column(j).path == field), None)
    if column is None:
        return None
    counts = []
    for g in range(md.num_row_groups):
        group = md.row_group(g)
        stats = group.column(column).statistics
        if stats is None or not stats.has_null_count:
            return None
        counts.append(group.num_rows - stats.null_count)
    return counts


def rows_holding(column: pa.Array, child: str) -> tuple[pa.ChunkedArray, pa.Array]:
    """The rows of a struct ``column`` whose ``child`` is set (an action's required field marks
    the rows that hold that action), and the row mask.

    Rows are taken without a copy where they form a few runs (a checkpoint keeps its handful
    of non-file actions together, so a batch is one or two runs of ``add`` rows); rows spread
    over many runs are filtered."""
    mask = pc.is_valid(pc.struct_field(column, child))
    n = len(mask)
    missing = n - row_count(mask)
    if missing == 0:
        return pa.chunked_array([column], type=column.type), mask
    if missing == n:
        return pa.chunked_array([], type=column.type), mask
    # Positions where the mask flips: the boundaries of the runs.
    flags = pc.cast(mask, pa.int8())
    flips = pc.indices_nonzero(pc.not_equal(flags.slice(1), flags.slice(0, n - 1)))
    if len(flips) > _MAX_RUNS:
        return pa.chunked_array([column.filter(mask)], type=column.type), mask
    bounds = [0, *(int(i) + 1 for i in flips.to_pylist()), n]
    kept_first = bool(mask[0].as_py())
    runs = [column.slice(a, b - a) for i, (a, b) in enumerate(zip(bounds, bounds[1:]))
            if (i % 2 == 0) == kept_first]
    return pa.chunked_array(runs, type=column.type), mask


# More runs than this and filtering (one copy) beats many tiny chunks.
_MAX_RUNS = 16


def row_count(mask: pa.Array | pa.ChunkedArray) -> int:
    """Number of true values of a boolean mask without nulls."""
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0) if len(mask) else 0
