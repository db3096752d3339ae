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

from collections.abc import Iterator
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
        stats = pa.chunked_array(list(self.iter_stats()), type=pa.string())
        self.check_rows(len(stats))
        return stats

    def iter_stats(self) -> Iterator[pa.Array]:
        """``stats`` in ordinal order, one Parquet batch at a time (a caller that streams holds
        one batch of strings, not the column); the caller checks the total with ``check_rows``."""
        for key in self.keys:
            yield from self._stats_of(key)

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
        self.check_rows(len(out))
        return out

    def check_rows(self, rows: int) -> None:
        """``CorruptLogError`` unless the checkpoint still holds the ``num_rows`` rows read at load time."""
        if rows != self.num_rows:
            raise CorruptLogError(
                f"checkpoint {self.version} of {self.storage.root} now holds {rows} file rows, "
                f"not the {self.num_rows} read when the snapshot was loaded (it was rewritten or "
                "cleaned up meanwhile); reload the table", path=self.storage.root, version=self.version,
            )

    def _stats_of(self, key: str) -> Iterator[pa.Array]:
        """The ``stats`` of checkpoint part ``key``, batch by batch; JSON is synthesised from
        ``add.stats_parsed`` for rows that lack it."""
        source = self.storage.uri(key)
        fh, pf = open_parquet(self.storage, key, version=self.version)
        try:
            add_type = _add_type(pf)
            if add_type is None:
                return
            has_json = add_type.get_field_index("stats") >= 0
            has_parsed = add_type.get_field_index("stats_parsed") >= 0
            columns = ["add.path"] + (["add.stats"] if has_json else []) + (["add.stats_parsed"] if has_parsed else [])
            for batch in iter_batches(pf, columns, source, self.version):
                rows, _ = rows_holding(batch.column("add"), "path")
                stats = pc.struct_field(rows, "stats").combine_chunks() if has_json else pa.nulls(len(rows), pa.string())
                if has_parsed and stats.null_count:
                    stats = _fill_from_parsed(stats, pc.struct_field(rows, "stats_parsed").combine_chunks())
                yield stats
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


def _fill_from_parsed(stats: pa.Array, parsed: pa.Array) -> pa.Array:
    """``stats`` with JSON synthesised from ``parsed`` (``add.stats_parsed``) where it is missing."""
    # Synthesise only where JSON is missing and the struct is there: it is the slow part.
    need = pc.and_(pc.is_null(stats), pc.is_valid(parsed))
    if not pc.any(need).as_py():
        return stats
    synthesised = stats_json_from_parsed(parsed.filter(need))
    return pc.replace_with_mask(stats, need, synthesised.cast(pa.string()))
