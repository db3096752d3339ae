"""What every rewrite plan is made of: groups of files of one partition, batched into commits.

A plan (compaction's bins, Z-order's and clustering's partitions, purge's single files) is a
sequence of ``FileGroup``: the files one rewrite task set reads together, all in one partition.
The groups of a plan share one ``PlannedFiles``: row numbers, group after group, of the plan's
file list (the ``path`` and ``size`` columns of the snapshot's files, not copied), so planning a
table of millions of files builds one Python object per group and one integer per file. The
first group asked for its files (the driver's batches, a dry run, a task payload) has every
planned row taken at once, in the groups' order; each group's ``file_list`` is then a zero-copy
slice of that one table, however many groups the plan has. ``files`` gives ``FileRef`` records
only to the executor that ships them.

``RewritePlan`` is what the rewrite driver (``spark.driver``) asks of any plan: its groups (which
the driver orders, bounds by ``run_bounds`` and batches with ``batch_groups``), the ``commitInfo``
parameters, and the counts for Delta's OPTIMIZE metrics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.model.arrow_values import mask_array, numbers_or_zero, take_rows
from delta_core.write.operation_records import OptimizeParameters, ReorgParameters

# The columns of a group's file list, from ``Snapshot.files``.
GROUP_COLUMNS = ("path", "size")

# Planned rows taken per piece: bounds the take's working set and keeps every taken string
# column far below Arrow's 2 GiB per array.
_TAKE_ROWS = 1 << 20


class PlannedFiles:
    """Rows ``rows`` (int64, group after group) of a plan's file list ``source``
    (``GROUP_COLUMNS``), taken from it once, on first use (``table``)."""

    __slots__ = ("_taken", "rows", "source")

    def __init__(self, source: pa.Table, rows: np.ndarray, *, taken: pa.Table | None = None) -> None:
        self.source = source
        self.rows = rows
        self._taken = taken

    @classmethod
    def of_table(cls, files: pa.Table) -> PlannedFiles:
        """Every row of ``files`` (``GROUP_COLUMNS``), in its order: nothing left to take."""
        return cls(files, np.arange(files.num_rows, dtype=np.int64), taken=files)

    @property
    def table(self) -> pa.Table:
        """The planned rows of ``source``, in the groups' order: one vectorised take, a piece of
        ``_TAKE_ROWS`` rows at a time, the first time any group's files are asked for."""
        if self._taken is None:
            self._taken = pa.Table.from_batches(
                [pa.record_batch([take_rows(c, self.rows[lo:lo + _TAKE_ROWS]) for c in self.source.columns],
                                 schema=self.source.schema) for lo in range(0, len(self.rows), _TAKE_ROWS)],
                schema=self.source.schema)
        return self._taken


@dataclass(frozen=True, slots=True)
class FileRef:
    """One input file: ``path`` exactly as in the log (still URI-encoded)."""

    path: str
    size: int


@dataclass(frozen=True, slots=True, eq=False)
class FileGroup:
    """Files of one partition (``partition_values`` as serialised in the log) rewritten together:
    the planned rows ``start`` to ``stop`` of ``planned``; ``total_size`` is the sum of their sizes."""

    partition_values: tuple[tuple[str, str | None], ...]
    planned: PlannedFiles
    start: int
    stop: int
    total_size: int

    @property
    def num_files(self) -> int:
        return self.stop - self.start

    @property
    def rows(self) -> np.ndarray:
        """The group's row numbers in the plan's file list (``planned.source``), in its order."""
        return self.planned.rows[self.start:self.stop]

    @property
    def file_list(self) -> pa.Table:
        """The group's files (``GROUP_COLUMNS``), in its order: a slice of the planned table."""
        return self.planned.table.slice(self.start, self.num_files)

    @property
    def paths(self) -> list[str]:
        return list(self.file_list.column("path").to_pylist())

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.file_list.column("size").to_pylist())

    @property
    def files(self) -> tuple[FileRef, ...]:
        """One record per file (for payloads shipped per file)."""
        return tuple(FileRef(p, s) for p, s in zip(self.paths, self.sizes))

    @property
    def partition_dict(self) -> dict[str, str | None]:
        return dict(self.partition_values)


def group_file_list(files: pa.Table) -> pa.Table:
    """``files`` (``Snapshot.files`` columns) reduced to ``GROUP_COLUMNS`` (no copy)."""
    return files.select(list(GROUP_COLUMNS))


def groups_of(
    kind: type[G],
    source: pa.Table,
    rows: np.ndarray,
    bounds: np.ndarray,
    partition_values: Sequence[tuple[tuple[str, str | None], ...]],
) -> list[G]:
    """One group (a ``kind``) per range ``rows[bounds[g]:bounds[g + 1]]`` of the file list
    ``source`` (``GROUP_COLUMNS``), group ``g`` in the partition ``partition_values[g]``; the
    groups share one ``PlannedFiles`` and their totals are summed over the sizes at once."""
    if len(bounds) < 2:
        return []
    planned = PlannedFiles(source, rows)
    running = np.concatenate([[0], np.cumsum(numbers_or_zero(source.column("size"))[rows], dtype=np.int64)])
    edges = bounds.tolist()
    totals = (running[bounds[1:]] - running[bounds[:-1]]).tolist()
    return [kind(partition_values[g], planned, lo, hi, totals[g]) for g, (lo, hi) in enumerate(zip(edges, edges[1:]))]


def groups_of_rows(
    kind: type[G],
    source: pa.Table,
    rows: Sequence[np.ndarray],
    partition_values: Sequence[tuple[tuple[str, str | None], ...]],
) -> list[G]:
    """``groups_of`` with group ``g`` the rows ``rows[g]`` of ``source``."""
    bounds = np.cumsum([0, *(len(r) for r in rows)])
    return groups_of(kind, source, np.concatenate(rows) if rows else np.zeros(0, np.int64), bounds, partition_values)


def group_paths(groups: Sequence[FileGroup]) -> pa.ChunkedArray:
    """The paths of ``groups``, group after group: slices of their planned tables, one per run
    of groups adjacent there (a batch of a plan in its order is one)."""
    pieces: list[pa.ChunkedArray] = []
    planned: PlannedFiles | None = None
    lo = hi = 0
    for g in groups:
        if g.planned is planned and g.start == hi:
            hi = g.stop
            continue
        if planned is not None:
            pieces.append(planned.table.column("path").slice(lo, hi - lo))
        planned, lo, hi = g.planned, g.start, g.stop
    if planned is not None:
        pieces.append(planned.table.column("path").slice(lo, hi - lo))
    return pa.chunked_array([c for p in pieces for c in p.chunks], pa.string())


G = TypeVar("G", bound=FileGroup)
G_co = TypeVar("G_co", bound=FileGroup, covariant=True)


def keep_files(group: G, kept: pa.Table) -> G | None:
    """``group`` narrowed to ``kept``, rows of its own file list: the group itself when no file
    went, a narrowed copy while it still holds two or more files (rewriting one file alone gains
    nothing), else None."""
    if kept.num_rows == group.num_files:
        return group
    if kept.num_rows < 2:
        return None
    return dataclasses.replace(group, planned=PlannedFiles.of_table(group_file_list(kept)), start=0,
                               stop=kept.num_rows, total_size=int(pc.sum(kept.column("size")).as_py() or 0))


def keep_where(groups: Sequence[G], kept: np.ndarray) -> list[G]:
    """``groups``, each narrowed to its files where ``kept`` (bool, one per path of
    ``group_paths(groups)``) holds, as ``keep_files`` narrows it (a group it drops is left out)."""
    out: list[G] = []
    lo = 0
    for g in groups:
        mask = kept[lo:lo + g.num_files]
        lo += g.num_files
        narrowed = g if mask.all() else keep_files(g, g.file_list.filter(mask_array(mask)))
        if narrowed is not None:
            out.append(narrowed)
    return out


def batch_groups(groups: Sequence[G], max_bytes: int) -> list[tuple[G, ...]]:
    """Consecutive groups of at most ``max_bytes`` input (at least one group each)."""
    if max_bytes <= 0:
        raise ConfigError(f"batch size must be positive, got {max_bytes}")
    out: list[tuple[G, ...]] = []
    current: list[G] = []
    size = 0
    for g in groups:
        if current and size + g.total_size > max_bytes:
            out.append(tuple(current))
            current, size = [], 0
        current.append(g)
        size += g.total_size
    if current:
        out.append(tuple(current))
    return out


class RewritePlan(Protocol[G_co]):
    """A plan the rewrite driver can run: ``files_considered`` (inside the predicate) and
    ``num_input_files`` (rewritten) feed OPTIMIZE's scan metrics."""

    @property
    def files_considered(self) -> int: ...

    @property
    def num_input_files(self) -> int: ...

    @property
    def groups(self) -> Sequence[G_co]:
        """Every group, in the plan's order (the driver orders, bounds and batches them)."""

    def operation_parameters(self) -> OptimizeParameters | ReorgParameters: ...
