"""Statistics of a few columns for every live file, typed, read a slice at a time (PROTOCOL.md
"Per-file Statistics").

A planner that needs the bounds of some columns (clustering's merge rule) or their null counts
(stats coverage) parses only those: the ``stats`` JSON is read a slice of ``STATS_SLICE_ROWS``
files at a time (``Snapshot.iter_stats``: a checkpoint's statistics are never held whole) and
parsed against the table schema pruned to the wanted leaves, so a table of 10M files costs the
typed columns asked for, not gigabytes of JSON strings. Parsing is most of a planner's time at
that scale: ``parsed_slices`` parses a few slices at once on threads (Arrow's JSON reader and
compute functions release the GIL) while the next ones are read.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

import pyarrow as pa

from delta_core.model.arrow_values import chunks_of
from delta_core.model.ordered_threads import PARSE_THREADS, map_ahead
from delta_core.model.schema import StructField, StructType
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX, parse_stats
from delta_core.write.data_writer import table_schema

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

# Rows of stats parsed at once: big enough that the per-parse setup is paid rarely, small enough
# that one slice's strings and parsed columns stay under ~100 MB.
STATS_SLICE_ROWS = 96 * 1024

T = TypeVar("T")


def stats_slices(snapshot: Snapshot, rows: int = STATS_SLICE_ROWS, *, after_checkpoint: bool = False,
                 count_records: bool = False) -> Iterator[pa.ChunkedArray]:
    """The ``stats`` of the live files in ``files`` order, in slices of at least ``rows`` files
    (the last may be shorter; a table without files yields one empty slice); with
    ``after_checkpoint``, of the files after ``Snapshot.checkpoint_rows`` only; with
    ``count_records``, the snapshot counts its ``num_records`` from the same read."""
    pending: list[pa.Array] = []
    held, given = 0, False
    for piece in snapshot.iter_stats(after_checkpoint=after_checkpoint, count_records=count_records):
        pending.extend(chunks_of(piece))
        held += len(piece)
        if held >= rows:
            yield pa.chunked_array(pending, pa.string())
            pending, held, given = [], 0, True
    if held or not given:
        yield pa.chunked_array(pending, pa.string())


def parsed_slices(snapshot: Snapshot, parse: Callable[[pa.ChunkedArray, int], T], *,
                  rows: int = STATS_SLICE_ROWS, after_checkpoint: bool = False,
                  count_records: bool = False) -> Iterator[T]:
    """``parse(stats, first)`` of each of ``stats_slices`` (``first``: the slice's first row in
    ``files`` order), in order: up to ``PARSE_THREADS`` slices parse on threads while this one
    reads the next (``parse`` must not touch ``snapshot``, which the reading advances)."""
    def numbered() -> Iterator[tuple[pa.ChunkedArray, int]]:
        first = 0
        for stats in stats_slices(snapshot, rows, after_checkpoint=after_checkpoint, count_records=count_records):
            yield stats, first
            first += len(stats)

    return map_ahead(lambda item: parse(*item), numbered(), threads=PARSE_THREADS, name="stats-parse")


def pruned_schema(schema: StructType, keep: Collection[tuple[str, ...]]) -> StructType:
    """``schema`` with only the leaves in ``keep`` (logical paths) and the structs above them, so
    only their stats are parsed."""

    def prune(struct: StructType, path: tuple[str, ...]) -> StructType:
        fields: list[StructField] = []
        for f in struct.fields:
            p = (*path, f.name)
            if isinstance(f.type, StructType):
                inner = prune(f.type, p)
                if inner.fields:
                    fields.append(replace(f, type=inner))
            elif p in keep:
                fields.append(f)
        return StructType(tuple(fields))

    return prune(schema, ())


def column_bounds(snapshot: Snapshot, columns: Sequence[tuple[str, ...]]) -> pa.Table:
    """``min.<col>`` and ``max.<col>`` (``<col>``: the logical path joined by dots; the column's
    type, null where a file logs no bound) of each of ``columns`` for every live file, in
    ``files`` order. A column that takes no bounds (binary, for one) has no column here."""
    # table_schema drops leftover mapping metadata in mode none, so physical names are the keys.
    schema = pruned_schema(table_schema(snapshot.metadata), set(columns))
    names = [f"{prefix}{'.'.join(c)}" for c in columns for prefix in (MIN_PREFIX, MAX_PREFIX)]
    partition_columns = snapshot.partition_columns

    def bounds_of(stats: pa.ChunkedArray, _first: int) -> pa.Table:
        parsed = parse_stats(stats, schema, partition_columns=partition_columns, physical=True)
        return parsed.select([n for n in names if n in parsed.column_names])  # the bounds only

    return pa.concat_tables(list(parsed_slices(snapshot, bounds_of)))
