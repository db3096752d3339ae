"""File statistics of commit ``add`` rows, held compressed until asked for (PROTOCOL.md
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
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from delta_core.model.arrow_values import mask_array, numbers_of, ordinal_mask, shared_nulls

# The column that carries a commit row's ordinal (position in its ``CommitStats``) through replay.
COMMIT_ROW = "commit_row"

_SCHEMA = pa.schema([("stats", pa.string())])
# Level 1: ~1 GB/s and ~5-20x on stats JSON; higher levels cost more time than they save memory.
_OPTIONS = pa.ipc.IpcWriteOptions(compression=pa.Codec("zstd", compression_level=1))


@dataclass(frozen=True, slots=True)
class StatsPiece:
    """The ``stats`` of consecutive commit ``add`` rows, compressed (an Arrow IPC stream);
    ``data`` is ``None`` once none of its rows is live (``CommitStats.keeping``)."""

    num_rows: int
    data: pa.Buffer | None

    @classmethod
    def pack(cls, stats: pa.Array | pa.ChunkedArray) -> StatsPiece:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, _SCHEMA, options=_OPTIONS) as writer:
            writer.write_table(pa.Table.from_arrays([stats], schema=_SCHEMA))
        return cls(len(stats), sink.getvalue())

    def unpack(self) -> pa.Array:
        if self.data is None:
            raise AssertionError("replay asked for the stats of a commit none of whose files is live")
        table = pa.ipc.open_stream(self.data).read_all()
        column = table.column(0)
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)


def split_stats(adds: pa.Table) -> tuple[pa.Table, StatsPiece]:
    """``adds`` with its ``stats`` column nulled (the strings freed once the caller drops the
    original) and those stats packed."""
    index = adds.schema.get_field_index("stats")
    piece = StatsPiece.pack(adds.column(index))
    return adds.set_column(index, "stats", shared_nulls(pa.string(), adds.num_rows)), piece


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

    def iter_stats(self, ordinals: pa.Array | pa.ChunkedArray) -> Iterator[pa.Array]:
        """The ``stats`` of ``ordinals`` (ascending, distinct), a piece at a time: only the
        piece being read is ever unpacked."""
        wanted = ordinal_mask(ordinals, self.num_rows)
        start = 0
        for piece in self.pieces:
            mask = wanted[start:start + piece.num_rows]
            start += piece.num_rows
            if mask.any():
                stats = piece.unpack()
                yield stats if mask.all() else stats.filter(mask_array(mask))
