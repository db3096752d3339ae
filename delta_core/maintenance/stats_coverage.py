"""Which live files carry the statistics the table asks for (PROTOCOL.md "Per-file Statistics").

A table names the columns its writers keep stats for with ``delta.dataSkippingStatsColumns``, or
else the first ``delta.dataSkippingNumIndexedCols`` leaf columns (default 32; partition columns
have none). ``required_stats_columns`` is exactly the set our writer collects
(``write.data_writer.file_stats_collector``: void columns have none), so a file we write is always
covered and ``analyze`` can always cover a file.

A file's stats *cover* the table when they hold ``numRecords`` and, for every required column, a
``nullCount`` and, where the column's type takes bounds, its ``minValues``/``maxValues``. Bounds
may be absent for a reason, and then the file still counts as covered:

- every live row of the column is null (``nullCount`` reaches the file's live rows: ``numRecords``
  minus the deletion vector's cardinality) — there is no value to bound;
- float and double columns: a column holding NaN or an infinity has no JSON bound at all
  (``stats_collect``), which cannot be told apart from a bound left out, so their ``nullCount``
  is enough;
- string columns: a maximum is dropped when no short upper bound exists (``stats_collect``'s
  truncation rule), so their ``minValues`` is enough.

Booleans, binary, arrays and maps take a ``nullCount`` only. Wide bounds (``tightBounds`` false,
from deletion vectors) still cover: they are valid for skipping. A stat that does not parse as its
column's type (``model.stats.parse_stats``) counts as absent.

Columnar over the snapshot's files; only the required columns' stats are parsed. Pure: no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.column_bounds import pruned_schema, stats_slices
from delta_core.model.actions import Metadata
from delta_core.model.arrow_values import false_array, int_scalar
from delta_core.model.schema import PrimitiveType
from delta_core.model.stats import (
    MAX_PREFIX,
    MIN_PREFIX,
    NULL_COUNT_PREFIX,
    NUM_RECORDS,
    StatsColumn,
    parse_stats,
    stats_columns,
)
from delta_core.write.data_writer import file_stats_collector, table_schema

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

# Delta types whose files must carry min and max bounds (float/double: see the module doc).
_BOUNDED = frozenset({"byte", "short", "integer", "long", "decimal", "date", "timestamp", "timestamp_ntz"})
_STRING = "string"


def required_stats_columns(metadata: Metadata) -> tuple[StatsColumn, ...]:
    """The leaf columns (schema order) whose stats every file of the table should hold: those our
    writer collects. ``physical`` names are the stats keys (the logical ones without column
    mapping)."""
    indexed = set(file_stats_collector(metadata).indexed_paths)  # physical paths
    leaves = stats_columns(table_schema(metadata), partition_columns=metadata.partition_columns, physical=True)
    return tuple(c for c in leaves if c.physical in indexed)


@dataclass(frozen=True, slots=True)
class StatsCoverage:
    """Coverage of some files: ``covered`` is one boolean per file, in the order given."""

    columns: tuple[StatsColumn, ...]  # the required columns
    covered: pa.ChunkedArray

    @property
    def num_files(self) -> int:
        return len(self.covered)

    @property
    def num_covered(self) -> int:
        return int(pc.sum(pc.cast(self.covered, pa.int64())).as_py() or 0) if len(self.covered) else 0

    @property
    def ratio(self) -> float:
        """Share of the files that are covered (1.0 for no files)."""
        return round(self.num_covered / self.num_files, 6) if self.num_files else 1.0


def stats_coverage(files: pa.Table, metadata: Metadata) -> StatsCoverage:
    """Coverage of ``files`` (rows of ``Snapshot.files``: at least ``stats`` and
    ``deletion_vector``) for a table with ``metadata`` (module doc)."""
    columns = required_stats_columns(metadata)
    n = files.num_rows
    if n == 0:
        return StatsCoverage(columns, pa.chunked_array([], pa.bool_()))
    # table_schema drops leftover mapping metadata in mode none, so physical names are the keys.
    parsed = parse_stats(files.column("stats"), pruned_schema(table_schema(metadata), {c.logical for c in columns}),
                         partition_columns=metadata.partition_columns, physical=True)
    false = false_array(1)[0]  # not pa.scalar(False): converting Python values imports pandas
    records = parsed.column(NUM_RECORDS)
    cardinality = pc.fill_null(pc.struct_field(files.column("deletion_vector"), "cardinality"), int_scalar(0))
    live = pc.subtract(records, cardinality)
    covered = pc.is_valid(records)
    for c in columns:
        nulls = parsed.column(NULL_COUNT_PREFIX + c.name)
        ok = pc.is_valid(nulls)
        name = c.type.name if isinstance(c.type, PrimitiveType) else None
        if name in _BOUNDED or name == _STRING:
            bounds = pc.is_valid(parsed.column(MIN_PREFIX + c.name))
            if name != _STRING:
                bounds = pc.and_(bounds, pc.is_valid(parsed.column(MAX_PREFIX + c.name)))
            all_null = pc.fill_null(pc.greater_equal(nulls, live), false)
            ok = pc.and_(ok, pc.or_(bounds, all_null))
        covered = pc.and_(covered, ok)
    return StatsCoverage(columns, pc.fill_null(covered, false))


def snapshot_coverage(snapshot: Snapshot, *, after_checkpoint: bool = False,
                      count_records: bool = False) -> StatsCoverage:
    """Coverage of every live file of ``snapshot``, its stats read and parsed a slice at a time;
    with ``after_checkpoint``, of the files after ``Snapshot.checkpoint_rows`` only; with
    ``count_records``, the snapshot counts its files' ``num_records`` from the same read
    (``Snapshot.iter_stats``)."""
    rows = snapshot.checkpoint_rows() if after_checkpoint else None
    dvs = snapshot.file_columns("deletion_vector").column(0).slice(0 if rows is None else len(rows))
    covered: list[pa.Array] = []
    start = 0
    for stats in stats_slices(snapshot, after_checkpoint=after_checkpoint, count_records=count_records):
        part = pa.table({"stats": stats, "deletion_vector": dvs.slice(start, len(stats))})
        covered.extend(stats_coverage(part, snapshot.metadata).covered.chunks)
        start += len(stats)
    return StatsCoverage(required_stats_columns(snapshot.metadata), pa.chunked_array(covered, pa.bool_()))
