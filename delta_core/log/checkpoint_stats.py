"""File statistics of checkpoint rows, read when first needed (PROTOCOL.md "Per-file
Statistics", "Checkpoint Schema").

The JSON ``stats`` string is most of a checkpoint's bytes, and loading a snapshot needs none
of it: paths, sizes and partition values describe the table; only planners and checkpoint
writers read statistics. A snapshot therefore loads a Parquet checkpoint without
``add.stats``, tags each checkpoint row with its ordinal (``CHECKPOINT_ROW``) through replay,
and keeps a ``CheckpointStats`` that reads the column later, in the same order. ``numRecords``
alone comes from ``add.stats_parsed.numRecords`` when every row has it (one integer column),
else from the JSON.

JSON ``stats`` are synthesised from ``stats_parsed`` only for rows that lack them. A checkpoint
that is gone or no longer holds the rows it held at load time (a log cleanup raced the reader)
raises ``CorruptLogError`` saying to reload the table.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import CorruptLogError
from delta_core.log.checkpoint_parquet import iter_batches, open_parquet, rows_holding
from delta_core.log.file_actions import num_records_from_stats
from delta_core.model.stats import stats_json_from_parsed
from delta_core.storage.base import Storage

# The column that carries a checkpoint row's ordinal through replay while its stats are unread.
CHECKPOINT_ROW = "checkpoint_row"


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """Reads ``stats`` and ``numRecords`` of the ``add`` rows of checkpoint Parquet ``keys``
    (parts, then sidecars: the order the rows were loaded in)."""

    storage: Storage
    keys: tuple[str, ...]
    version: int
    num_rows: int

    def stats(self) -> pa.ChunkedArray:
        """JSON ``stats`` of every checkpoint ``add`` row, by ordinal."""
        chunks: list[pa.Array] = []
        for key in self.keys:
            chunks.extend(self._stats_of(key).chunks)
        stats = pa.chunked_array(chunks, type=pa.string())
        self._check(len(stats))
        return stats

    def num_records(self) -> pa.ChunkedArray:
        """``numRecords`` of every checkpoint ``add`` row, by ordinal, from
        ``stats_parsed.numRecords`` when every row has it, else from the JSON, batch by batch
        (the strings of one batch at a time are held, not the whole column)."""
        chunks: list[pa.Array] = []
        for key in self.keys:
            found = self._parsed_num_records(key)
            if found is None:
                found = self._json_num_records(key)
            if found is None:
                return num_records_from_stats(self.stats())
            chunks.extend(found.chunks)
        out = pa.chunked_array(chunks, type=pa.int64())
        self._check(len(out))
        return out

    def _check(self, rows: int) -> None:
        if rows != self.num_rows:
            raise CorruptLogError(
                f"checkpoint {self.version} of {self.storage.root} now holds {rows} file rows, "
                f"not the {self.num_rows} read when the snapshot was loaded (it was rewritten or "
                "cleaned up meanwhile); reload the table", path=self.storage.root, version=self.version,
            )

    def _stats_of(self, key: str) -> pa.ChunkedArray:
        source = self.storage.uri(key)
        fh, pf = open_parquet(self.storage, key, version=self.version)
        try:
            add_type = _add_type(pf)
            if add_type is None:
                return pa.chunked_array([], type=pa.string())
            has_json = add_type.get_field_index("stats") >= 0
            has_parsed = add_type.get_field_index("stats_parsed") >= 0
            columns = ["add.path"] + (["add.stats"] if has_json else [])
            stats_chunks: list[pa.Array] = []
            for batch in iter_batches(pf, columns, source, self.version):
                rows, _ = rows_holding(batch.column("add"), "path")
                if has_json:
                    stats_chunks.extend(pc.struct_field(rows, "stats").chunks)
                else:
                    stats_chunks.append(pa.nulls(len(rows), pa.string()))
            stats = pa.chunked_array(stats_chunks, type=pa.string())
            if has_parsed and stats.null_count:
                stats = _fill_from_parsed(pf, stats, source, self.version)
            return stats
        finally:
            fh.close()

    def _json_num_records(self, key: str) -> pa.ChunkedArray | None:
        """``numRecords`` from the JSON of each batch, or ``None`` when some row has no JSON
        (its stats may have to be synthesised from ``stats_parsed``: see ``stats``)."""
        fh, pf = open_parquet(self.storage, key, version=self.version)
        try:
            add_type = _add_type(pf)
            if add_type is None:
                return pa.chunked_array([], type=pa.int64())
            if add_type.get_field_index("stats") < 0:
                return None
            out: list[pa.Array] = []
            for batch in iter_batches(pf, ["add.path", "add.stats"], self.storage.uri(key), self.version):
                rows, _ = rows_holding(batch.column("add"), "path")
                stats = pc.struct_field(rows, "stats")
                if stats.null_count and add_type.get_field_index("stats_parsed") >= 0:
                    return None
                out.extend(num_records_from_stats(stats).chunks)
                del batch, rows, stats
            return pa.chunked_array(out, type=pa.int64())
        finally:
            fh.close()

    def _parsed_num_records(self, key: str) -> pa.ChunkedArray | None:
        fh, pf = open_parquet(self.storage, key, version=self.version)
        try:
            add_type = _add_type(pf)
            if add_type is None:
                return pa.chunked_array([], type=pa.int64())
            parsed = add_type.field("stats_parsed").type if add_type.get_field_index("stats_parsed") >= 0 else None
            if parsed is None or not pa.types.is_struct(parsed) or parsed.get_field_index("numRecords") < 0:
                return None
            out: list[pa.Array] = []
            for batch in iter_batches(pf, ["add.path", "add.stats_parsed.numRecords"], self.storage.uri(key),
                                      self.version):
                rows, _ = rows_holding(batch.column("add"), "path")
                nums = pc.struct_field(pc.struct_field(rows, "stats_parsed"), "numRecords")
                if nums.null_count:
                    return None
                out.extend(pc.cast(nums, pa.int64()).chunks)
            return pa.chunked_array(out, type=pa.int64())
        finally:
            fh.close()


def _add_type(pf: pq.ParquetFile) -> pa.StructType | None:
    idx = pf.schema_arrow.get_field_index("add")
    if idx < 0:
        return None
    typ = pf.schema_arrow.field(idx).type
    return typ if pa.types.is_struct(typ) and typ.get_field_index("path") >= 0 else None


def _fill_from_parsed(pf: pq.ParquetFile, stats: pa.ChunkedArray, source: str, version: int) -> pa.ChunkedArray:
    """``stats`` with JSON synthesised from ``add.stats_parsed`` where it is missing."""
    chunks: list[pa.Array] = []
    for batch in iter_batches(pf, ["add.path", "add.stats_parsed"], source, version):
        rows, _ = rows_holding(batch.column("add"), "path")
        chunks.extend(pc.struct_field(rows, "stats_parsed").chunks)
    parsed = pa.chunked_array(chunks).combine_chunks() if chunks else None
    if parsed is None or len(parsed) != len(stats):
        return stats
    combined = stats.combine_chunks()
    # Synthesise only where JSON is missing and the struct is there: it is the slow part.
    need = pc.and_(pc.is_null(combined), pc.is_valid(parsed))
    if not pc.any(need).as_py():
        return stats
    synthesised = stats_json_from_parsed(parsed.filter(need))
    return pa.chunked_array([pc.replace_with_mask(combined, need, synthesised.cast(pa.string()))])
