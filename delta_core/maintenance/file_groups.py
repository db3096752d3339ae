"""What every rewrite plan is made of: groups of files of one partition, batched into commits.

A plan (compaction's bins, Z-order's and clustering's partitions, purge's single files) is a
sequence of ``FileGroup``: the files one rewrite task set reads together, all in one partition.
A group holds only its row numbers in the plan's file list (``source``: the ``path`` and
``size`` columns of the snapshot's files, shared by every group of the plan and not copied), so
planning a table of millions of files builds one Python object per group and one integer per
file, never a copy of the paths; ``file_list`` takes the group's rows when a consumer (the
driver's batches, a task executor) asks, and ``files`` gives ``FileRef`` records only to the
executor that ships them.

``RewritePlan`` is what the rewrite driver (``spark.driver``) asks of any plan: its groups (which
the driver orders, bounds by ``run_bounds`` and batches with ``batch_groups``), the ``commitInfo`` parameters, and the counts for Delta's OPTIMIZE metrics.
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
from delta_core.model.arrow_values import numbers_or_zero, take_rows
from delta_core.write.operation_records import OptimizeParameters, ReorgParameters

# The columns of a group's file list, from ``Snapshot.files``.
GROUP_COLUMNS = ("path", "size")


@dataclass(frozen=True, slots=True)
class FileRef:
    """One input file: ``path`` exactly as in the log (still URI-encoded)."""

    path: str
    size: int


@dataclass(frozen=True, slots=True, eq=False)
class FileGroup:
    """Files of one partition (``partition_values`` as serialised in the log) rewritten together:
    rows ``rows`` (int64, in the group's order) of the plan's file list ``source``
    (``GROUP_COLUMNS``); ``total_size`` is the sum of their sizes."""

    partition_values: tuple[tuple[str, str | None], ...]
    source: pa.Table
    rows: np.ndarray
    total_size: int

    @property
    def num_files(self) -> int:
        return len(self.rows)

    @property
    def file_list(self) -> pa.Table:
        """The group's files (``GROUP_COLUMNS``), in its order."""
        return _table_rows(self.source, self.rows)

    @property
    def paths(self) -> list[str]:
        return list(take_rows(self.source.column("path"), self.rows).to_pylist())

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(take_rows(self.source.column("size"), self.rows).to_pylist())

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
    totals are summed over the sizes at once."""
    if len(bounds) < 2:
        return []
    sizes = numbers_or_zero(source.column("size"))
    totals = np.add.reduceat(sizes[rows], bounds[:-1]).tolist() if len(rows) else [0] * (len(bounds) - 1)
    edges = bounds.tolist()
    return [kind(partition_values[g], source, rows[lo:hi], int(totals[g]))
            for g, (lo, hi) in enumerate(zip(edges, edges[1:]))]


def _table_rows(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """Rows ``rows`` (int64) of ``table``, in that order."""
    return pa.Table.from_arrays([take_rows(c, rows) for c in table.columns], schema=table.schema)


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
    return dataclasses.replace(group, source=group_file_list(kept), rows=np.arange(kept.num_rows, dtype=np.int64),
                               total_size=int(pc.sum(kept.column("size")).as_py() or 0))


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
