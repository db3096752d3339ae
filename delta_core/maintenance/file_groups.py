"""What every rewrite plan is made of: groups of files of one partition, batched into commits.

A plan (compaction's bins, Z-order's and clustering's partitions, purge's single files) is a
sequence of ``FileGroup``: the files one rewrite task set reads together, all in one partition.
A group holds its files as Arrow columns (``path``, ``size``, ``num_records``: a zero-copy slice
of the plan's file list), so planning a table of millions of files builds one Python object per
group, not per file; ``files`` gives ``FileRef`` records only to the executor that ships them.

``RewritePlan`` is what the rewrite driver (``spark.driver``) asks of any plan: its groups (which
the driver orders, bounds by ``run_bounds`` and batches with ``batch_groups``), the ``commitInfo`` parameters, and the counts for Delta's OPTIMIZE metrics.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError
from delta_core.write.operation_records import OptimizeParameters, ReorgParameters

# The columns of a group's file list, from ``Snapshot.files``.
GROUP_COLUMNS = ("path", "size", "num_records")


@dataclass(frozen=True, slots=True)
class FileRef:
    """One input file: ``path`` exactly as in the log (still URI-encoded)."""

    path: str
    size: int
    num_records: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class FileGroup:
    """Files of one partition (``partition_values`` as serialised in the log) rewritten together:
    ``file_list`` has their ``GROUP_COLUMNS``, ``total_size`` is the sum of their sizes."""

    partition_values: tuple[tuple[str, str | None], ...]
    file_list: pa.Table
    total_size: int

    @property
    def num_files(self) -> int:
        return int(self.file_list.num_rows)

    @property
    def paths(self) -> list[str]:
        return list(self.file_list.column("path").to_pylist())

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(self.file_list.column("size").to_pylist())

    @property
    def files(self) -> tuple[FileRef, ...]:
        """One record per file (for payloads shipped per file)."""
        columns = [self.file_list.column(c).to_pylist() for c in GROUP_COLUMNS]
        return tuple(FileRef(p, s, n) for p, s, n in zip(*columns))

    @property
    def partition_dict(self) -> dict[str, str | None]:
        return dict(self.partition_values)


def group_file_list(files: pa.Table) -> pa.Table:
    """``files`` (``Snapshot.files`` columns) reduced to ``GROUP_COLUMNS`` (``num_records`` null
    where the list has none)."""
    records = files.column("num_records") if "num_records" in files.column_names \
        else pa.nulls(files.num_rows, pa.int64())
    return pa.table({"path": files.column("path"), "size": files.column("size"), "num_records": records})


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
    return dataclasses.replace(group, file_list=kept, total_size=int(pc.sum(kept.column("size")).as_py() or 0))


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
