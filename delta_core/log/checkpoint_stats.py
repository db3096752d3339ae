"""File statistics and tags of checkpoint rows, read when first needed (PROTOCOL.md "Per-file
Statistics", "Checkpoint Schema", "Add File and Remove File").

The JSON ``stats`` string is most of a checkpoint's bytes, and loading a snapshot needs none
of it: paths, sizes and partition values describe the table; only planners and checkpoint
writers read statistics. The same holds for ``tags``: a clustered table's ZCube tags are ~85
bytes a file (760 MB at 10M files as a map column) and only the cluster plan and checkpoint
writers read them. A snapshot therefore loads a Parquet checkpoint without ``add.stats`` and
``add.tags``, tags each checkpoint row with its ordinal (``CHECKPOINT_ROW``) through replay,
and keeps a ``CheckpointStats`` that reads either column later, in the same order, batch by
batch or for a few ordinals. ``numRecords`` alone comes from ``add.stats_parsed.numRecords``
when every row has it (one integer column), else from the JSON; a reader that needs only some
statistics (stats coverage) reads just their leaves of ``stats_parsed`` (``iter_struct_stats``).
Tags come back as ``files`` types them (``STRING_MAP``), whatever the writer named the map's
parts (``conform_array``).

Reading a whole column, the ``add`` rows are told apart by ``add.size`` (an integer) rather than
``add.path`` (strings, a quarter of the bytes decoded) wherever the footer shows the two set in
the same number of rows of every row group (``add_marker``).

JSON ``stats`` are synthesised from ``stats_parsed`` only for rows that lack them. A checkpoint
that is gone or no longer holds the rows it held at load time (a log cleanup raced the reader)
raises ``CorruptLogError`` saying to reload the table.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from delta_core.errors import CorruptLogError
from delta_core.log.checkpoint_parquet import iter_batches, marked_per_group, open_parquet, row_count, rows_holding
from delta_core.log.file_actions import FILES_SCHEMA, conform_array, num_records_from_stats
from delta_core.model.arrow_values import int_array_of, one_array, shared_nulls
from delta_core.model.ordered_threads import PARSE_THREADS, map_ahead
from delta_core.model.stats import stats_json_from_parsed
from delta_core.storage.base import Storage

# The column that carries a checkpoint row's ordinal through replay while its stats are unread.
CHECKPOINT_ROW = "checkpoint_row"

# The ``FILES_SCHEMA`` columns of checkpoint ``add`` rows that are read here, not at load time.
DEFERRED_COLUMNS = ("stats", "tags")


@dataclass(frozen=True, slots=True)
class StructStats:
    """A batch of checkpoint add rows' statistics (``CheckpointStats.iter_struct_stats``):
    ``parsed``, their ``stats_parsed`` with the leaves asked for (None where the part lacks some:
    then ``stats`` holds every row's JSON); ``stats``, the JSON of the rows whose struct has no
    ``numRecords`` (null elsewhere); ``num_records`` as ``CheckpointStats.num_records`` counts
    them, or None when it reads them from the struct later (a part without the leaves)."""

    parsed: pa.StructArray | None
    stats: pa.Array
    num_records: pa.Array | pa.ChunkedArray | None


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """Reads ``stats``, ``numRecords`` and ``tags`` of the ``add`` rows of checkpoint Parquet
    ``keys`` (parts, then sidecars: the order the rows were loaded in)."""

    storage: Storage
    keys: tuple[str, ...]
    version: int
    num_rows: int

    def stats(self) -> pa.ChunkedArray:
        """JSON ``stats`` of every checkpoint ``add`` row, by ordinal."""
        stats = pa.chunked_array(list(self.iter_stats()), type=pa.string())
        self.check_rows(len(stats))
        return stats

    def iter_stats(self, column: str = "stats") -> Iterator[pa.Array]:
        """``stats`` (or ``tags``: ``DEFERRED_COLUMNS``) in ordinal order, one Parquet batch at a
        time (a caller that streams holds one batch, not the column); the caller checks the total
        with ``check_rows``."""
        for key in self.keys:
            yield from (values for values, _, _ in self._column_of(key, column))

    def iter_counted_stats(self) -> Iterator[tuple[pa.Array, pa.ChunkedArray | None]]:
        """``iter_stats()``'s batches, each with its rows' ``numRecords`` as ``num_records``
        counts them when it counts that part's from the JSON (no ``add.stats_parsed.numRecords``),
        else None: one read of the column serves both."""
        for key in self.keys:
            yield from ((values, counted) for values, counted, _ in self._column_of(key, "stats", count=True))

    def iter_stats_with_struct(self, typ: pa.StructType) -> Iterator[tuple[pa.Array, pa.Array | None]]:
        """``iter_stats()``'s batches, each with its rows' ``add.stats_parsed`` where the part holds
        it typed exactly ``typ`` (None where it does not: another schema, another writer's types),
        so a checkpoint writer carries the struct forward instead of parsing the JSON again."""
        for key in self.keys:
            yield from ((values, parsed) for values, _, parsed in self._column_of(key, "stats", struct=typ))

    def holds_struct_stats(self, leaves: Sequence[tuple[str, ...]]) -> bool:
        """Whether some part's ``add.stats_parsed`` holds ``numRecords`` and every one of ``leaves``
        (paths inside it, e.g. ``("nullCount", "id")``), from the parts' footers."""
        for key in self.keys:
            fh, pf = open_parquet(self.storage, key, version=self.version)
            try:
                if _holds_leaves(_add_type(pf), leaves):
                    return True
            finally:
                fh.close()
        return False

    def iter_struct_stats(self, leaves: Sequence[tuple[str, ...]]) -> Iterator[StructStats]:
        """The add rows' statistics batch by batch in ordinal order, ``stats_parsed`` with only
        ``numRecords`` and ``leaves`` read (``holds_struct_stats``), where the part holds them
        (``StructStats``). The caller checks the total with ``check_rows``."""
        typ = FILES_SCHEMA.field("stats").type
        for key in self.keys:
            source = self.storage.uri(key)
            fh, pf = open_parquet(self.storage, key, version=self.version)
            try:
                add_type, marker = _add_type(pf), add_marker(pf)
                if add_type is None:
                    continue
                if not _holds_leaves(add_type, leaves):
                    yield from (StructStats(None, values, counted) for values, counted, _ in
                                self._column_of(key, "stats", count=True))
                    continue
                # As ``num_records``: the struct's numRecords when every add row of the part has
                # them (the footer tells), else the JSON's, read with it, and the struct's where a
                # row has no JSON.
                counted = marked_per_group(pf, "add.stats_parsed.numRecords")
                every = (counted == marked_per_group(pf, "add.path") if counted is not None
                         else self._parsed_num_records(key) is not None)
                json = not every and add_type.get_field_index("stats") >= 0
                columns = [f"add.{marker}", *(".".join(("add.stats_parsed", *leaf)) for leaf in
                                              [("numRecords",), *leaves])] + (["add.stats"] if json else [])
                for batch in iter_batches(pf, columns, source, self.version):
                    rows, _ = rows_holding(batch.column("add"), marker)
                    parsed = one_array(pc.struct_field(rows, "stats_parsed"))
                    records = pc.cast(pc.struct_field(parsed, "numRecords"), pa.int64())
                    if not json:
                        yield StructStats(parsed, shared_nulls(typ, len(parsed)), records)
                        continue
                    texts = one_array(conform_array(pc.struct_field(rows, "stats"), typ))
                    counts = pc.if_else(pc.is_valid(texts), one_array(num_records_from_stats(texts)), records)
                    yield StructStats(parsed, pc.if_else(pc.is_null(records), texts, shared_nulls(typ, len(texts))),
                                      counts)
            finally:
                fh.close()

    def stats_at(self, ordinals: np.ndarray, paths: pa.Array | pa.ChunkedArray,
                 column: str = "stats") -> Iterator[pa.Array]:
        """The ``stats`` (or ``tags``) of ``ordinals`` (ascending, distinct), reading only the
        Parquet row groups that hold them: a rewrite's inputs among a checkpoint of millions of
        files cost the row groups they are in, not the column. A part's row groups are matched
        to ordinals by the footer's null counts of ``add.path`` (or, without them, by reading
        ``add.path``); the rows read must have ``paths`` (the files' paths at load time), else
        the checkpoint was replaced meanwhile."""
        first = 0  # the ordinal of the part's first add row
        for key in self.keys:
            source = self.storage.uri(key)
            fh, pf = open_parquet(self.storage, key, version=self.version)
            try:
                counts = self._adds_per_group(pf, source)
                bounds = first + np.cumsum([0, *counts])
                cut = np.searchsorted(ordinals, bounds)
                for g in np.flatnonzero(cut[1:] > cut[:-1]).tolist():
                    lo, hi = int(cut[g]), int(cut[g + 1])
                    yield from self._rows_of_group(pf, source, g, counts[g], ordinals[lo:hi] - bounds[g],
                                                   paths.slice(lo, hi - lo), column)
                first = int(bounds[-1])
            finally:
                fh.close()
        self.check_rows(first)

    def _rows_of_group(self, pf: pq.ParquetFile, source: str, group: int, count: int, rows: np.ndarray,
                       paths: pa.Array | pa.ChunkedArray, column: str) -> Iterator[pa.Array]:
        """``column`` of ``rows`` (ascending, among the ``count`` add rows of row ``group``),
        batch by batch; the rows must have ``paths``."""
        start = done = 0
        for found, values, _ in self._values_in(pf, source, column, [group]):
            end = start + len(values)
            upto = int(np.searchsorted(rows, end))
            if upto > done:
                local = int_array_of(rows[done:upto] - start)
                if not one_array(found.take(local)).equals(one_array(paths.slice(done, upto - done))):
                    raise self._replaced(f"holds other files in row group {group} of {source} than when "
                                         "the snapshot was loaded")
                yield values.take(local)
                done = upto
            start = end
        if start != count:
            raise CorruptLogError(
                f"row group {group} of checkpoint {source} holds {start} file rows where its footer counts "
                f"{count}; the checkpoint is corrupt: rewrite it from the commits (delta-core checkpoint)",
                path=source, version=self.version)

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
            raise self._replaced(f"now holds {rows} file rows, not the {self.num_rows} read when the snapshot was loaded")

    def _replaced(self, what: str) -> CorruptLogError:
        return CorruptLogError(
            f"checkpoint {self.version} of {self.storage.root} {what} (it was rewritten or cleaned up "
            "meanwhile); reload the table", path=self.storage.root, version=self.version)

    def _column_of(self, key: str, column: str, *, count: bool = False, struct: pa.StructType | None = None,
                   ) -> Iterator[tuple[pa.Array, pa.ChunkedArray | None, pa.Array | None]]:
        """``column`` of checkpoint part ``key``, batch by batch, with the batch's ``numRecords``
        when ``count`` and the part counts them from the JSON (``iter_counted_stats``), and its
        ``stats_parsed`` when the part holds it typed ``struct`` (``iter_stats_with_struct``)."""
        fh, pf = open_parquet(self.storage, key, version=self.version)
        try:
            add_type = _add_type(pf)
            count = count and (add_type is None or not _has_parsed_num_records(add_type))
            batches = self._values_in(pf, self.storage.uri(key), column, marker=add_marker(pf), struct=struct)
            if count:  # a regex over every JSON string: on threads, while the caller reads the next batches
                yield from map_ahead(lambda batch: (batch[1], num_records_from_stats(batch[1]), batch[2]), batches,
                                     threads=PARSE_THREADS, name="stats-count")
            else:
                yield from ((values, None, parsed) for _, values, parsed in batches)
        finally:
            fh.close()

    def _values_in(self, pf: pq.ParquetFile, source: str, column: str, row_groups: list[int] | None = None,
                   *, marker: str = "path", struct: pa.StructType | None = None,
                   ) -> Iterator[tuple[pa.ChunkedArray, pa.Array, pa.Array | None]]:
        """The ``marker`` (``path``, or ``add_marker``'s) and ``column`` (``stats`` or ``tags``) of
        the add rows of ``pf`` (of its ``row_groups`` only, when given), batch by batch, typed as
        in ``FILES_SCHEMA``: JSON stats
        are synthesised from ``add.stats_parsed`` for rows that lack them; an all-null batch
        shares its nulls (``shared_nulls``). Third: the rows' ``add.stats_parsed`` when ``pf``
        holds it typed exactly ``struct``, else None."""
        if column not in DEFERRED_COLUMNS:
            raise ValueError(f"{column!r} is not a deferred checkpoint column ({', '.join(DEFERRED_COLUMNS)})")
        add_type = _add_type(pf)
        if add_type is None:
            return
        typ = FILES_SCHEMA.field(column).type
        has_own = add_type.get_field_index(column) >= 0
        has_parsed = column == "stats" and add_type.get_field_index("stats_parsed") >= 0
        carried = has_parsed and struct is not None and add_type.field("stats_parsed").type == struct
        # The struct fills rows without JSON: read only where the footer shows some (or cannot
        # tell), or where it is carried; a checkpoint with both decodes the JSON alone.
        read_parsed = carried or (has_parsed and not (has_own and _every_add_has(pf, column)))
        columns = [f"add.{marker}"] + ([f"add.{column}"] if has_own else []) + (["add.stats_parsed"] if read_parsed else [])
        for batch in iter_batches(pf, columns, source, self.version, row_groups=row_groups):
            rows, _ = rows_holding(batch.column("add"), marker)
            values = one_array(conform_array(pc.struct_field(rows, column), typ)) if has_own \
                else shared_nulls(typ, len(rows))
            parsed = one_array(pc.struct_field(rows, "stats_parsed")) if read_parsed else None
            if parsed is not None and values.null_count:
                values = _fill_from_parsed(values, parsed)
            if values.null_count == len(values):
                values = shared_nulls(typ, len(values))
            yield pc.struct_field(rows, marker), values, parsed if carried else None

    def _adds_per_group(self, pf: pq.ParquetFile, source: str) -> list[int]:
        """The add rows of each row group of ``pf``: from the footer, else by reading ``add.path``."""
        if _add_type(pf) is None:
            return [0] * pf.metadata.num_row_groups
        counts = marked_per_group(pf, "add.path")
        if counts is not None:
            return counts
        return [sum(row_count(pc.is_valid(pc.struct_field(batch.column("add"), "path")))
                    for batch in iter_batches(pf, ["add.path"], source, self.version, row_groups=[g]))
                for g in range(pf.metadata.num_row_groups)]

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
            marker = add_marker(pf)
            for batch in iter_batches(pf, [f"add.{marker}", "add.stats"], self.storage.uri(key), self.version):
                rows, _ = rows_holding(batch.column("add"), marker)
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
            if not _has_parsed_num_records(add_type):
                return None
            out: list[pa.Array] = []
            marker = add_marker(pf)
            for batch in iter_batches(pf, [f"add.{marker}", "add.stats_parsed.numRecords"], self.storage.uri(key),
                                      self.version):
                rows, _ = rows_holding(batch.column("add"), marker)
                nums = pc.struct_field(pc.struct_field(rows, "stats_parsed"), "numRecords")
                if nums.null_count:
                    return None
                out.extend(pc.cast(nums, pa.int64()).chunks)
            return pa.chunked_array(out, type=pa.int64())
        finally:
            fh.close()


def add_marker(pf: pq.ParquetFile) -> str:
    """The ``add`` field that marks the rows holding an ``add`` when a whole column is read:
    ``size`` (required, one integer) where the footer's null counts show it set in as many rows
    as the required ``path`` in every row group, else ``path`` itself."""
    return "size" if _every_add_has(pf, "size") else "path"


def _every_add_has(pf: pq.ParquetFile, field: str) -> bool:
    """Whether every ``add`` row of ``pf`` has ``add.<field>`` set, from the footer's null counts
    (False when they cannot tell)."""
    counts = marked_per_group(pf, f"add.{field}")
    return counts is not None and counts == marked_per_group(pf, "add.path")


def _add_type(pf: pq.ParquetFile) -> pa.StructType | None:
    idx = pf.schema_arrow.get_field_index("add")
    if idx < 0:
        return None
    typ = pf.schema_arrow.field(idx).type
    return typ if pa.types.is_struct(typ) and typ.get_field_index("path") >= 0 else None


def _has_parsed_num_records(add_type: pa.StructType) -> bool:
    """Whether the ``add`` struct has ``stats_parsed.numRecords``."""
    parsed = add_type.field("stats_parsed").type if add_type.get_field_index("stats_parsed") >= 0 else None
    return parsed is not None and pa.types.is_struct(parsed) and parsed.get_field_index("numRecords") >= 0


def _holds_leaves(add_type: pa.StructType | None, leaves: Sequence[tuple[str, ...]]) -> bool:
    """Whether ``add_type``'s ``stats_parsed`` holds ``numRecords`` and ``leaves`` as non-nested
    fields (names without dots, which a dotted column selection would split)."""

    def holds(path: tuple[str, ...]) -> bool:
        node: pa.DataType | None = add_type
        for name in path:
            if "." in name or not isinstance(node, pa.StructType) or node.get_field_index(name) < 0:
                return False
            node = node.field(name).type
        return not pa.types.is_nested(node)

    return all(holds(("stats_parsed", *leaf)) for leaf in [("numRecords",), *leaves])


def _fill_from_parsed(stats: pa.Array, parsed: pa.Array) -> pa.Array:
    """``stats`` with JSON synthesised from ``parsed`` (``add.stats_parsed``) where it is missing."""
    # Synthesise only where JSON is missing and the struct is there: it is the slow part.
    need = pc.and_(pc.is_null(stats), pc.is_valid(parsed))
    if not pc.any(need).as_py():
        return stats
    synthesised = stats_json_from_parsed(parsed.filter(need))
    return pc.replace_with_mask(stats, need, synthesised.cast(pa.string()))
