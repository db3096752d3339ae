"""Proof that a ``dataChange=false`` rewrite kept the data, checked before it commits.

PROTOCOL.md "Add File and Remove File": ``dataChange=false`` tells readers (streams, change
feeds) that the commit only rearranged existing data, so nothing may be lost or altered. Per
partition of the rewrite, what went in is compared with what came out, per column of the
statistics (PROTOCOL.md "Per-file Statistics"):

- rows: the inputs' live rows (``numRecords`` minus deletion-vector cardinality) against the
  outputs' ``numRecords``;
- null counts, summed, equal;
- every output's ``minValues``/``maxValues`` inside the inputs' envelope.

The inputs' side comes from their own stats; where those are incomplete (no ``numRecords``, a
``nullCount`` missing for a column the table indexes, or counts that include rows a deletion
vector removed), an ``InputSummary`` fills the gaps: the stats of the rows the rewrite task read
(``inputs_needing_summary`` says which inputs need one). Own stats win where both exist, so a
task that misreads a file cannot vouch for itself. The outputs' side comes from their stats,
which our writer always keeps for the indexed columns (the first
``delta.dataSkippingNumIndexedCols`` leaves, or ``delta.dataSkippingStatsColumns``); a column
without stats on either side cannot be compared and is skipped, as is a bound that a side does
not know.

Stats bounds are not exact, so they are compared in a way that cannot raise a false alarm on
unchanged data: an output's string bound that our writer truncated (a 32-character prefix; a
max also gets a tie-break U+007F or U+10FFFF) is compared with the inputs' bound on their
common prefix only, the tie-break dropped, since another writer may truncate differently or
not at all; an untruncated one is the exact value and is compared as is. Timestamps are
compared at millisecond precision (stats are floored to milliseconds), floats within float32
precision (a widened float column's stats may spell float32 values).

A mismatch raises ``RewriteVerificationError`` naming the column and the file.

``verify_restats`` is the same proof for a commit that re-adds files in place with new stats
(``COMPUTE STATS``, from ``analyze``): nothing is rewritten, so each new ``add`` must be its old
one — same path, deletion vector, partition values, size, tags, row ids — with only ``stats`` (and
``dataChange=false``) changed, and the rows must be the same: where the old stats had a
``numRecords``, the new one equals it (both count the file's physical rows, deleted ones
included). The new stats are otherwise the truth: old bounds and null counts are not compared,
since replacing wrong or wide ones is what a recomputation is for. Pure: no IO.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import RewriteVerificationError
from delta_core.log.file_actions import num_records_from_stats
from delta_core.model.actions import Add, Metadata
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX, NULL_COUNT_PREFIX, NUM_RECORDS, parse_stats, stats_columns
from delta_core.model.stats_collect import STRING_PREFIX_LENGTH, split_column_name
from delta_core.model.table_properties import TableProperties
from delta_core.write.data_writer import table_schema

_TIE_BREAKS = ("\x7f", "\U0010ffff")
FLOAT32_EPSILON = 2.0 ** -23


@dataclass(frozen=True, slots=True)
class InputSummary:
    """What a rewrite task read from one input file: ``path`` as in the log, and ``stats`` — the
    stats JSON (``numRecords``, ``minValues``, ``maxValues``, ``nullCount``; logical column
    names, every column) of the rows it read, after deletion vectors."""

    path: str
    stats: str

    def to_json(self) -> str:
        return json.dumps({"inputSummary": {"path": self.path, "stats": self.stats}}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> InputSummary | None:
        """The summary encoded by ``to_json``, or None if ``text`` is something else."""
        obj = json.loads(text)
        body = obj.get("inputSummary") if isinstance(obj, dict) else None
        if not isinstance(body, dict):
            return None
        return cls(str(body["path"]), str(body["stats"]))


def indexed_columns(metadata: Metadata) -> list[str]:
    """Logical dotted names of the leaf columns the table's writers keep stats for."""
    schema = table_schema(metadata)
    props = TableProperties(metadata.configuration)
    leaves = stats_columns(schema, partition_columns=metadata.partition_columns)
    if props.stats_columns is not None:
        wanted = [split_column_name(c) for c in props.stats_columns]
        return [c.name for c in leaves if any(c.logical[: len(w)] == w for w in wanted)]
    n = props.num_indexed_cols
    return [c.name for c in (leaves if n < 0 else leaves[:n])]


def inputs_needing_summary(files: pa.Table, metadata: Metadata) -> set[str]:
    """Paths of the ``files`` (rows of ``Snapshot.files``: at least ``path``, ``stats`` and
    ``deletion_vector``) whose own stats cannot stand for their rows in the proof: no stats,
    no ``numRecords``, a ``nullCount`` missing for an indexed column, or a deletion vector (its
    stats count deleted rows too). Columnar: only those counts are parsed."""
    wanted = {NULL_COUNT_PREFIX + c for c in indexed_columns(metadata)}
    parsed = _parse(files.column("stats"), metadata, physical=True, only=wanted)
    unknown = pc.or_(parsed.column(NUM_RECORDS).is_null(), pc.is_valid(files.column("deletion_vector")))
    for name in wanted & set(parsed.column_names):
        unknown = pc.or_(unknown, parsed.column(name).is_null())
    return set(files.column("path").filter(unknown).to_pylist())


def verify_rewrite(
    removed: Sequence[Add],
    added: Sequence[Add],
    *,
    metadata: Metadata,
    summaries: Iterable[InputSummary] = (),
    table: str | None = None,
    version: int | None = None,
) -> None:
    """Raise ``RewriteVerificationError`` unless ``added`` hold what ``removed`` held (module doc)."""
    columns = indexed_columns(metadata)
    # Stats are parsed once for the whole batch (columnar), then compared partition by partition.
    ins, in_rows = _inputs(removed, metadata, {s.path: s for s in summaries})
    outs = _Side([a.path for a in added], _parse([a.stats for a in added], metadata, physical=True))
    groups: dict[tuple[tuple[str, str | None], ...], tuple[list[int], list[int]]] = {}
    for i, a in enumerate(removed):
        groups.setdefault(_partition_key(a), ([], []))[0].append(i)
    for i, a in enumerate(added):
        groups.setdefault(_partition_key(a), ([], []))[1].append(i)
    for key, (in_idx, out_idx) in groups.items():
        where = ", ".join(f"{k}={v}" for k, v in key)
        _verify_partition(ins.subset(in_idx), [in_rows[i] for i in in_idx], outs.subset(out_idx), columns=columns,
                          table=table, version=version, where=where)


def _partition_key(a: Add) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted(a.partition_values.items()))


def _parse(texts: Sequence[str | None] | pa.ChunkedArray, metadata: Metadata, *, physical: bool,
           only: Collection[str] | None = None) -> pa.Table:
    return parse_stats(texts, table_schema(metadata), partition_columns=metadata.partition_columns,
                       physical=physical, only=only)


@dataclass(frozen=True, slots=True)
class _Side:
    """One side of the comparison: file labels and their parsed stats, row for row."""

    labels: list[str]
    table: pa.Table

    def subset(self, rows: list[int]) -> _Side:
        return _Side([self.labels[i] for i in rows], self.table.take(pa.array(rows, pa.int64())))

    def values(self, column: str) -> list[Any] | None:
        return self.table.column(column).to_pylist() if column in self.table.column_names else None


def _inputs(
    removed: Sequence[Add], metadata: Metadata, summaries: Mapping[str, InputSummary],
) -> tuple[_Side, list[int | None]]:
    """Stats rows of the inputs, in order, and their live rows.

    Each input's own stats count where they exist; its summary (what the task read) fills the
    gaps. Counts of a file with a deletion vector include its deleted rows, so they come from
    its summary only (its live rows, without one, from ``numRecords`` minus the cardinality)."""
    own = _parse([a.stats for a in removed], metadata, physical=True)
    dv = pa.array([a.deletion_vector is not None for a in removed], pa.bool_())
    read_at = {a.path: i for i, a in enumerate(a for a in removed if a.path in summaries)}
    read = _parse([summaries[a.path].stats for a in removed if a.path in summaries], metadata, physical=False)
    # One summary row per input (null where it has none), to merge column by column.
    read = read.take(pa.array([read_at.get(a.path) for a in removed], pa.int64()))
    columns = {}
    for name in own.column_names:
        mine, theirs = own.column(name), read.column(name)
        if name.startswith(NULL_COUNT_PREFIX):
            mine = pc.if_else(dv, pa.nulls(len(mine), mine.type), mine)
        columns[name] = pc.coalesce(mine, theirs)
    counts = own.column(NUM_RECORDS).to_pylist()
    read_counts = read.column(NUM_RECORDS).to_pylist()
    rows: list[int | None] = []
    for a, n, r in zip(removed, counts, read_counts):
        if r is not None:
            rows.append(r)  # rows read, deletion vectors applied
        else:
            rows.append(None if n is None else n - (a.deletion_vector.cardinality if a.deletion_vector else 0))
    return _Side([a.path for a in removed], pa.table(columns)), rows


def _verify_partition(
    ins: _Side, in_rows: list[int | None], outs: _Side, *, columns: Sequence[str], table: str | None,
    version: int | None, where: str,
) -> None:
    def fail(message: str, *, column: str | None, files: Sequence[str]) -> RewriteVerificationError:
        scope = f" (partition {where})" if where else ""
        return RewriteVerificationError(
            f"the rewrite would change the data{scope}: {message}. Nothing was committed and its new "
            f"file(s) are deleted; this is a bug in the rewrite or the inputs' stats are wrong - report it "
            "with the table, and do not re-run the rewrite on these files until it is understood",
            column=column, file=", ".join(files), path=table, version=version)

    if not ins.labels:
        raise fail(f"{len(outs.labels)} new file(s) replace no input", column=None, files=outs.labels)
    out_rows = outs.values(NUM_RECORDS) or []
    if None not in in_rows and None not in out_rows and sum(in_rows) != sum(out_rows):  # type: ignore[arg-type]
        raise fail(f"the inputs hold {sum(in_rows)} live rows but the new files {sum(out_rows)}",  # type: ignore[arg-type]
                   column=None, files=outs.labels)
    for column in columns:
        out_nulls = outs.values(NULL_COUNT_PREFIX + column)
        in_nulls = ins.values(NULL_COUNT_PREFIX + column)
        if out_nulls is None or in_nulls is None or None in out_nulls:
            continue  # no stats for this column (e.g. beyond dataSkippingNumIndexedCols)
        if None not in in_nulls and sum(in_nulls) != sum(out_nulls):
            raise fail(f"column {column!r} has {sum(in_nulls)} nulls in the inputs but {sum(out_nulls)} in "
                       f"the new file(s)", column=column, files=outs.labels)
        _check_bounds(column, ins, in_rows, in_nulls, outs, fail)


def _check_bounds(column: str, ins: _Side, in_rows: list[int | None], in_nulls: list[int | None], outs: _Side,
                  fail: Callable[..., RewriteVerificationError]) -> None:
    in_min, in_max = ins.values(MIN_PREFIX + column), ins.values(MAX_PREFIX + column)
    out_min, out_max = outs.values(MIN_PREFIX + column), outs.values(MAX_PREFIX + column)
    if in_min is None or in_max is None or out_min is None or out_max is None:
        return  # no bounds for this type (binary, arrays, maps, booleans)
    # An input with values but no bound leaves that side of the envelope open.
    has_values = [r is None or n is None or r > n for r, n in zip(in_rows, in_nulls)]
    if any(v and b is None for v, b in zip(has_values, in_min)):
        in_min = None
    if any(v and b is None for v, b in zip(has_values, in_max)):
        in_max = None
    lows = [b for b in in_min or [] if b is not None]
    highs = [b for b in in_max or [] if b is not None]
    # The inputs' envelope, once: not once per output (a batch of 10,000 inputs and 700 outputs).
    low, high = min(lows) if lows else None, max(highs) if highs else None
    for label, lo, hi in zip(outs.labels, out_min, out_max):
        if in_min is not None and lo is not None and (low is None or _below(lo, low)):
            raise fail(f"column {column!r} of {label} has minimum {lo!r}, below the inputs' {low!r}",
                       column=column, files=[label])
        if in_max is not None and hi is not None and (high is None or _above(hi, high)):
            raise fail(f"column {column!r} of {label} has maximum {hi!r}, above the inputs' {high!r}",
                       column=column, files=[label])


def _close(a: float, b: float) -> bool:
    # A float column widened to double keeps its float32 values, whose stats another writer
    # printed as the shortest float32 spelling (3.4 for 3.4000000953674316).
    return math.isclose(a, b, rel_tol=FLOAT32_EPSILON)


def _ms(v: dt.datetime) -> dt.datetime:
    return v.replace(microsecond=v.microsecond // 1000 * 1000)


def _units(s: str) -> int:
    return len(s.encode("utf-16-le", "surrogatepass")) // 2


def _exact(bound: str, *, is_max: bool) -> bool:
    # Our writer cuts a longer string to a prefix of the prefix length (a max also gets a
    # tie-break after it): a min shorter than that, or a max no longer, is the value itself.
    return _units(bound) <= STRING_PREFIX_LENGTH if is_max else _units(bound) < STRING_PREFIX_LENGTH


def _below(out_min: Any, in_min: Any) -> bool:
    """Whether an output's min bound lies below the inputs' min bound beyond doubt."""
    if isinstance(out_min, str) and isinstance(in_min, str):
        if _exact(out_min, is_max=False):
            return out_min < in_min  # the inputs' bound is at most their true minimum
        n = min(len(out_min), len(in_min))
        return out_min[:n] < in_min[:n]
    if isinstance(out_min, dt.datetime) and isinstance(in_min, dt.datetime):
        return _ms(out_min) < _ms(in_min)
    if isinstance(out_min, float) and isinstance(in_min, float):
        return out_min < in_min and not _close(out_min, in_min)
    return bool(out_min < in_min)


def _above(out_max: Any, in_max: Any) -> bool:
    """Whether an output's max bound lies above the inputs' max bound beyond doubt."""
    if isinstance(out_max, str) and isinstance(in_max, str):
        if _exact(out_max, is_max=True):
            return out_max > in_max  # the inputs' bound is at least their true maximum
        if out_max.endswith(_TIE_BREAKS):
            out_max = out_max[:-1]  # what remains is a prefix of the true maximum
        n = min(len(out_max), len(in_max))
        return bool(out_max[:n] > in_max[:n])
    if isinstance(out_max, dt.datetime) and isinstance(in_max, dt.datetime):
        return _ms(out_max) > _ms(in_max)
    if isinstance(out_max, float) and isinstance(in_max, float):
        return out_max > in_max and not _close(out_max, in_max)
    return bool(out_max > in_max)


def verify_restats(old: Sequence[Add], new: Sequence[Add], *, table: str | None = None,
                   version: int | None = None) -> None:
    """Raise ``RewriteVerificationError`` unless each of ``new`` re-adds the file of the ``old``
    add at its position, changing only its stats, with the same ``numRecords`` where the old
    stats had one (module doc)."""

    def fail(message: str, file: str) -> RewriteVerificationError:
        return RewriteVerificationError(
            f"the stats update would change the table: {message}. Nothing was committed; this is a bug in "
            "the stats computation or the file was replaced in storage outside the Delta log - report it "
            "with the table", column=None, file=file, path=table, version=version)

    if len(old) != len(new):
        raise fail(f"{len(new)} updated file(s) for {len(old)} analyzed", file="")
    for before, after in zip(old, new):
        if replace(after, stats=before.stats, data_change=before.data_change) != before:
            raise fail(f"{after.path} differs from the live file in more than its stats", file=after.path)
        if after.data_change:
            raise fail(f"{after.path} is re-added with dataChange=true", file=after.path)
    counts_before = num_records_from_stats(pa.array([a.stats for a in old], pa.string())).to_pylist()
    counts_after = num_records_from_stats(pa.array([a.stats for a in new], pa.string())).to_pylist()
    for a, n_before, n_after in zip(new, counts_before, counts_after):
        if n_after is None or (n_before is not None and n_before != n_after):
            raise fail(f"{a.path} held {n_before} rows by its stats, but {n_after} were counted now", file=a.path)
