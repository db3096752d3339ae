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

Columnar over the snapshot's files. A stats string that holds every statistic the rules read,
valid, in the shape writers log is covered on one regular-expression match
(``model.stats_pattern``), without parsing; of the other strings' JSON, only the stats the rules
read are parsed. A checkpoint's files are judged from its ``add.stats_parsed`` where it holds
those stats (Delta Spark writes it by default, ``delta.checkpoint.writeStatsAsStruct``): their
validity, typed already, with only those leaves read and no JSON parsed; rows whose struct has
no ``numRecords`` and parts without those leaves are judged from their JSON. Pure but for the
snapshot's reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.column_bounds import parsed_slices, pruned_schema
from delta_core.model.actions import Metadata
from delta_core.model.arrow_values import chunks_of, false_array, int_scalar, mask_array, one_array, ordinal_mask
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
from delta_core.model.stats_pattern import holds_stats, stats_pattern
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
        return int(pc.sum(self.covered).as_py() or 0)  # a boolean sum counts the trues

    @property
    def ratio(self) -> float:
        """Share of the files that are covered (1.0 for no files)."""
        return round(self.num_covered / self.num_files, 6) if self.num_files else 1.0


def _struct_leaves(columns: tuple[StatsColumn, ...]) -> dict[str, tuple[str, ...]]:
    """The stats the coverage rules read (``parse_stats`` names, ``numRecords`` aside) and where
    a checkpoint's ``stats_parsed`` holds them."""
    leaves: dict[str, tuple[str, ...]] = {}
    for c in columns:
        leaves[NULL_COUNT_PREFIX + c.name] = ("nullCount", *c.physical)
        name = c.type.name if isinstance(c.type, PrimitiveType) else None
        if name in _BOUNDED or name == _STRING:
            leaves[MIN_PREFIX + c.name] = ("minValues", *c.physical)
        if name in _BOUNDED:
            leaves[MAX_PREFIX + c.name] = ("maxValues", *c.physical)
    return leaves


def _covered(columns: tuple[StatsColumn, ...], stat: Callable[[str], pa.Array | pa.ChunkedArray],
             deletion_vectors: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The module doc's rules over the files' stats ``stat(name)`` (``parse_stats`` names)."""
    false = false_array(1)[0]  # not pa.scalar(False): converting Python values imports pandas
    records = stat(NUM_RECORDS)
    cardinality = pc.fill_null(pc.struct_field(deletion_vectors, "cardinality"), int_scalar(0))
    live = pc.subtract(records, cardinality)
    covered = pc.is_valid(records)
    for c in columns:
        nulls = stat(NULL_COUNT_PREFIX + c.name)
        ok = pc.is_valid(nulls)
        name = c.type.name if isinstance(c.type, PrimitiveType) else None
        if name in _BOUNDED or name == _STRING:
            bounds = pc.is_valid(stat(MIN_PREFIX + c.name))
            if name != _STRING:
                bounds = pc.and_(bounds, pc.is_valid(stat(MAX_PREFIX + c.name)))
            all_null = pc.fill_null(pc.greater_equal(nulls, live), false)
            ok = pc.and_(ok, pc.or_(bounds, all_null))
        covered = pc.and_(covered, ok)
    return pc.fill_null(covered, false)


def stats_coverage(files: pa.Table, metadata: Metadata) -> StatsCoverage:
    """Coverage of ``files`` (rows of ``Snapshot.files``: at least ``stats`` and
    ``deletion_vector``) for a table with ``metadata`` (module doc)."""
    columns = required_stats_columns(metadata)
    if files.num_rows == 0:
        return StatsCoverage(columns, pa.chunked_array([], pa.bool_()))
    # table_schema drops leftover mapping metadata in mode none, so physical names are the keys.
    schema, leaves = table_schema(metadata), _struct_leaves(columns)
    pattern = stats_pattern(columns, frozenset(leaves))
    held = None if pattern is None else holds_stats(one_array(files.column("stats")), pattern)
    rest = files if held is None else files.filter(pc.invert(held))
    if not rest.num_rows:
        return StatsCoverage(columns, pa.chunked_array([held]))
    parsed = parse_stats(rest.column("stats"), pruned_schema(schema, {c.logical for c in columns}),
                         partition_columns=metadata.partition_columns, physical=True, only=leaves)
    covered = one_array(_covered(columns, parsed.column, rest.column("deletion_vector")))
    if held is not None:  # the parsed rows' verdicts in the places of the rows no pattern held
        covered = pc.replace_with_mask(held, pc.invert(held), covered)
    return StatsCoverage(columns, pa.chunked_array([covered]))


def _checkpoint_coverage(snapshot: Snapshot, *, count_records: bool) -> list[pa.Array] | None:
    """Coverage of the files replay kept from the checkpoint (``Snapshot.checkpoint_rows``),
    judged from the checkpoint's ``stats_parsed`` where it holds the stats the rules read (only
    those leaves are read), from the JSON of the rows whose struct has no ``numRecords`` and of
    the parts without those leaves; None when no part holds them. ``count_records``: the
    snapshot counts the checkpoint rows' ``num_records`` from the same read."""
    reader, rows = snapshot.replay_state.checkpoint_stats, snapshot.checkpoint_rows()
    columns = required_stats_columns(snapshot.metadata)
    leaves = _struct_leaves(columns)
    if reader is None or rows is None or not len(rows) or not reader.holds_struct_stats(list(leaves.values())):
        return None
    fields = {NUM_RECORDS: ("numRecords",), **leaves}
    wanted = None if len(rows) == reader.num_rows else ordinal_mask(rows, reader.num_rows)
    dvs = snapshot.file_columns("deletion_vector").column(0)
    covered: list[pa.Array] = []
    counts: list[pa.Array] | None = [] if count_records and snapshot.checkpoint_num_records() is None else None
    start = kept = 0
    for batch in reader.iter_struct_stats(list(leaves.values())):
        parsed, texts, n = batch.parsed, batch.stats, len(batch.stats)
        if counts is not None and batch.num_records is not None:
            counts.extend(chunks_of(batch.num_records))
        else:
            counts = None
        if wanted is not None:
            mask = mask_array(wanted[start:start + n])
            texts, parsed = texts.filter(mask), None if parsed is None else parsed.filter(mask)
        start += n
        dv = one_array(dvs.slice(kept, len(texts)))
        kept += len(texts)
        from_json = (false_array(len(texts)) if texts.null_count == len(texts) else
                     one_array(stats_coverage(pa.table({"stats": texts, "deletion_vector": dv}),
                                              snapshot.metadata).covered))
        if parsed is None:
            covered.append(from_json)
            continue
        stats = {name: pc.struct_field(parsed, list(path)) for name, path in fields.items()}
        covered.append(pc.if_else(pc.is_valid(stats[NUM_RECORDS]), _covered(columns, stats.__getitem__, dv),
                                  from_json))
    reader.check_rows(start)
    if counts is not None:
        snapshot.reuse_checkpoint_num_records(pa.chunked_array(counts, pa.int64()))
    return covered


def snapshot_coverage(snapshot: Snapshot, *, after_checkpoint: bool = False,
                      count_records: bool = False) -> StatsCoverage:
    """Coverage of every live file of ``snapshot``, its stats read and parsed a slice at a time,
    the checkpoint's files' from its ``stats_parsed`` where it holds them (``_checkpoint_coverage``);
    with ``after_checkpoint``, of the files after ``Snapshot.checkpoint_rows`` only; with
    ``count_records``, the snapshot counts its files' ``num_records`` from the same read
    (``Snapshot.iter_stats``)."""
    columns = required_stats_columns(snapshot.metadata)
    head = None if after_checkpoint else _checkpoint_coverage(snapshot, count_records=count_records)
    if head is not None:
        tail = snapshot_coverage(snapshot, after_checkpoint=True)
        return StatsCoverage(columns, pa.chunked_array([*head, *tail.covered.chunks], pa.bool_()))
    rows = snapshot.checkpoint_rows() if after_checkpoint else None
    dvs = snapshot.file_columns("deletion_vector").column(0).slice(0 if rows is None else len(rows))
    metadata = snapshot.metadata

    def covered(stats: pa.ChunkedArray, first: int) -> pa.ChunkedArray:
        part = pa.table({"stats": stats, "deletion_vector": dvs.slice(first, len(stats))})
        return stats_coverage(part, metadata).covered

    chunks = [c for part in parsed_slices(snapshot, covered, after_checkpoint=after_checkpoint,
                                          count_records=count_records) for c in part.chunks]
    return StatsCoverage(columns, pa.chunked_array(chunks, pa.bool_()))
