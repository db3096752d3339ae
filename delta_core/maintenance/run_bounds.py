"""How much of a rewrite plan one run takes on (``options.RewriteBounds``): pure, no Spark, no IO.

The rewrite driver (``spark.driver``) narrows a plan's file groups in three steps before it
batches them, so every rewrite (compact, zorder, cluster, purge) is bounded the same way:

1. *Quiet partitions* — ``quiet_groups``: with ``quiet_minutes``, a partition where a live file
   was added (``add.modificationTime``) within the window is skipped whole, as writers may still
   be appending there; on an unpartitioned table the recent files are taken out of their groups
   instead (``file_groups.keep_files``: a group that loses files keeps going only while it still
   holds two or more).
2. *Order* — ``ordered_groups``: partitions ``smallest`` first (fewest planned input bytes), or
   most ``benefit`` first: the most input files per byte rewritten. A rewrite writes about one
   file per target size of input, so files removed per byte rewritten is ``files/bytes - 1/target``:
   ordering by ``files/bytes`` is ordering by files removed per byte. Groups of one partition stay
   together, ordered the same way among themselves; ties keep the plan's order.
3. *Caps* — ``take_within``: groups in that order while their input stays within ``max_bytes``
   and ``max_files``. The first group always runs, however large, so a group larger than a cap
   is not left behind forever.

What a run leaves (by a cap, or by ``max_duration`` between batches) is a ``Leftover``, reported
in the metrics and planned again by the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pyarrow.compute as pc

from delta_core.maintenance.file_groups import FileGroup, group_paths, keep_where
from delta_core.model.arrow_values import numbers_of

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

G = TypeVar("G", bound=FileGroup)
PartitionKey = frozenset[tuple[str, "str | None"]]


@dataclass(frozen=True, slots=True)
class Leftover:
    """Planned groups a run did not start, and the bound that stopped it (``max_bytes``,
    ``max_files`` or ``max_duration``; ``None``: nothing was left)."""

    groups: int = 0
    files: int = 0
    bytes: int = 0
    stopped_by: str | None = None

    @classmethod
    def of(cls, groups: Sequence[FileGroup], stopped_by: str) -> Leftover:
        if not groups:
            return cls()
        return cls(len(groups), sum(g.num_files for g in groups), sum(g.total_size for g in groups), stopped_by)

    def __add__(self, other: Leftover) -> Leftover:
        return Leftover(self.groups + other.groups, self.files + other.files, self.bytes + other.bytes,
                        other.stopped_by or self.stopped_by)


@dataclass(frozen=True, slots=True)
class QuietSkip:
    """What ``quiet_groups`` skipped: planned partitions with a recent file, and the input files
    not rewritten because of them."""

    partitions: int = 0
    files: int = 0


def _partition_key(group: FileGroup) -> PartitionKey:
    return frozenset(group.partition_values)


def quiet_groups(snapshot: Snapshot, groups: Sequence[G], quiet_minutes: float | None, *,
                 now_ms: int) -> tuple[list[G], QuietSkip]:
    """``groups`` without those written within ``quiet_minutes`` of ``now_ms`` (the module
    docstring's step 1)."""
    if quiet_minutes is None or not groups:
        return list(groups), QuietSkip()
    files = snapshot.file_columns("path", "partition_values", "modification_time")
    recent = files.filter(pc.greater(files.column("modification_time"), now_ms - int(quiet_minutes * 60_000)))
    if snapshot.partition_columns:
        busy = {frozenset(items) for items in recent.column("partition_values").to_pylist()}
        kept = [g for g in groups if _partition_key(g) not in busy]
        skipped = [g for g in groups if _partition_key(g) in busy]
        return kept, QuietSkip(len({_partition_key(g) for g in skipped}), sum(g.num_files for g in skipped))
    quiet = ~numbers_of(pc.is_in(group_paths(groups), value_set=recent.column("path"))).astype(bool)
    out = keep_where(groups, quiet)
    return out, QuietSkip(0, sum(g.num_files for g in groups) - sum(g.num_files for g in out))


def ordered_groups(groups: Sequence[G], order: str) -> list[G]:
    """``groups`` in ``order`` (``smallest`` or ``benefit``; the module docstring's step 2): one
    stable sort of arrays, a partition key made once per distinct ``partition_values``."""
    first: dict[PartitionKey, int] = {}  # partition -> its number, in order of first appearance
    seen: dict[tuple[tuple[str, str | None], ...], int] = {}
    part = np.empty(len(groups), np.int64)
    for i, g in enumerate(groups):
        code = seen.get(g.partition_values)
        if code is None:
            code = seen[g.partition_values] = first.setdefault(_partition_key(g), len(first))
        part[i] = code
    sizes = np.fromiter((g.total_size for g in groups), np.int64, len(groups))
    files = np.fromiter((g.num_files for g in groups), np.int64, len(groups))
    part_bytes = np.zeros(len(first), np.int64)
    part_files = np.zeros(len(first), np.int64)
    np.add.at(part_bytes, part, sizes)
    np.add.at(part_files, part, files)
    keys: tuple[np.ndarray, ...]  # the last is the first sort key
    if order == "smallest":
        keys = (sizes, part, part_bytes[part])
    else:
        keys = (-files / np.maximum(sizes, 1), part, -part_files[part] / np.maximum(part_bytes[part], 1))
    return [groups[i] for i in np.lexsort(keys).tolist()]


def take_within(groups: Sequence[G], *, max_bytes: int | None, max_files: int | None) -> tuple[list[G], Leftover]:
    """The first of ``groups`` whose input stays within the caps, and what is left (the module
    docstring's step 3)."""
    nbytes = nfiles = 0
    for index, g in enumerate(groups):
        over = ("max_bytes" if max_bytes is not None and nbytes + g.total_size > max_bytes else
                "max_files" if max_files is not None and nfiles + g.num_files > max_files else None)
        if over is not None and index > 0:
            return list(groups[:index]), Leftover.of(groups[index:], over)
        nbytes += g.total_size
        nfiles += g.num_files
    return list(groups), Leftover()
