"""File statistics and tags of commit ``add`` rows, held compressed until asked for (PROTOCOL.md
"Per-file Statistics", "Add File and Remove File").

A commit's JSON ``add.stats`` strings are most of its bytes, and replay needs none of them:
paths, sizes, partition values and ``numRecords`` (counted from the stats when the commit is
decoded) describe the table; only planners and checkpoint writers read statistics. Snapshot
loading therefore packs each commit's stats into one zstd-compressed Arrow IPC buffer
(``StatsPiece``) as soon as the commit is decoded, the replay rows carry their ordinal
(``COMMIT_ROW``), and ``CommitStats`` unpacks the pieces one at a time, in ordinal order, when a
step asks: a caller that streams (``Snapshot.iter_stats``, the checkpoint writer) holds one
commit's strings at a time, never the column. The strings come back exactly as decoded
(byte-identical), without a second read of the log (on object stores a second read would cost
as much as the first). ``checkpoint_stats`` does the same for the rows of a checkpoint.

The adds' ``tags`` are packed beside their stats, in a buffer of their own (read only when tags
are asked for): a clustered table's ZCube tags are ~85 bytes a file as a map column (760 MB at
10M files) and repeat within a commit, so they compress to almost nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from delta_core.log.file_actions import STRING_MAP
from delta_core.model.arrow_values import mask_array, numbers_of, one_array, ordinal_mask, shared_nulls

# The column that carries a commit row's ordinal (position in its ``CommitStats``) through replay.
COMMIT_ROW = "commit_row"

# The packed columns, each its own IPC stream: the type of each.
PACKED_TYPES = {"stats": pa.string(), "tags": STRING_MAP}
# Level 1: ~1 GB/s and ~5-20x on stats JSON; higher levels cost more time than they save memory.
_OPTIONS = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=1))


@dataclass(frozen=True, slots=True)
class StatsPiece:
    """The ``stats`` (``data``) and ``tags`` of consecutive commit ``add`` rows, each compressed
    (an Arrow IPC stream; ``tags`` is ``None`` when no row has tags); ``data`` is ``None`` once
    none of its rows is live (``CommitStats.keeping``)."""

    num_rows: int
    data: pa.Buffer | None
    tags: pa.Buffer | None = None

    @classmethod
    def pack(cls, stats: pa.Array | pa.ChunkedArray, tags: pa.Array | pa.ChunkedArray | None = None) -> StatsPiece:
        packed_tags = None if tags is None or tags.null_count == len(tags) else _pack("tags", tags)
        return cls(len(stats), _pack("stats", stats), packed_tags)

    def unpack(self, column: str = "stats") -> pa.Array:
        """The ``stats`` (or ``tags``) of the rows."""
        if self.data is None:
            raise AssertionError(f"replay asked for the {column} of a commit none of whose files is live")
        if column == "tags" and self.tags is None:
            return shared_nulls(STRING_MAP, self.num_rows)
        values = pa.ipc.open_stream(self.data if column == "stats" else self.tags).read_all().column(0)
        return one_array(values)


def _pack(name: str, values: pa.Array | pa.ChunkedArray) -> pa.Buffer:
    schema = pa.schema([(name, PACKED_TYPES[name])])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema, options=_OPTIONS) as writer:
        writer.write_table(pa.Table.from_arrays([values], schema=schema))
    return sink.getvalue()


def split_stats(adds: pa.Table) -> tuple[pa.Table, StatsPiece]:
    """``adds`` with its ``stats`` and ``tags`` columns nulled (the strings freed once the caller
    drops the original) and those packed."""
    piece = StatsPiece.pack(adds.column("stats"), adds.column("tags"))
    for name, typ in PACKED_TYPES.items():
        adds = adds.set_column(adds.schema.get_field_index(name), name, shared_nulls(typ, adds.num_rows))
    return adds, piece


@dataclass(frozen=True, slots=True)
class CommitStats:
    """Packed ``stats`` of commit ``add`` rows, ordinal ``i`` being row ``i`` of the pieces
    in order. Immutable: ``then`` gives a longer one (a snapshot update appends its commits)."""

    pieces: tuple[StatsPiece, ...] = ()

    @property
    def num_rows(self) -> int:
        return sum(p.num_rows for p in self.pieces)

    def then(self, other: CommitStats) -> CommitStats:
        return CommitStats(self.pieces + other.pieces)

    def keeping(self, ordinals: pa.Array | pa.ChunkedArray) -> CommitStats:
        """These stats without the bytes of pieces that hold none of ``ordinals`` (their rows
        still count, so ordinals stay valid): a snapshot updated commit after commit does not
        keep the stats of files removed long ago."""
        bounds = np.cumsum([p.num_rows for p in self.pieces])
        used = np.zeros(len(self.pieces), dtype=bool)
        if len(ordinals):
            used[np.searchsorted(bounds, numbers_of(ordinals), side="right")] = True
        if all(u or p.data is None for u, p in zip(used.tolist(), self.pieces)):
            return self
        return CommitStats(tuple(p if u else StatsPiece(p.num_rows, None) for u, p in zip(used.tolist(), self.pieces)))

    def iter_stats(self, ordinals: pa.Array | pa.ChunkedArray, column: str = "stats") -> Iterator[pa.Array]:
        """The ``stats`` (or ``tags``) of ``ordinals`` (ascending, distinct), a piece at a time:
        only the piece being read is ever unpacked."""
        wanted = ordinal_mask(ordinals, self.num_rows)
        start = 0
        for piece in self.pieces:
            mask = wanted[start:start + piece.num_rows]
            start += piece.num_rows
            if mask.any():
                values = piece.unpack(column)
                yield values if mask.all() else values.filter(mask_array(mask))
