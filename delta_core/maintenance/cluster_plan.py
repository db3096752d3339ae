"""Clustering planning (pure): which files of a clustered table an incremental run rewrites.

PROTOCOL.md "Clustered Table": a clustering implementation reclusters only files it (or one it
supersedes) clustered, and may cluster any unclustered file; no file must be clustered at any
given moment. The rewrite itself is a Hilbert curve over the clustering columns (with one
column, the curve is a plain range sort), run by the Z-order executor on the plan built here.

Which files a run takes:

- ``full`` (``OPTIMIZE FULL``): every live file, whoever clustered it.
- Otherwise every *unclustered* file U (no ``clusteringProvider`` and no ZCube tags naming the
  current columns: ``delta_core.model.clustering.file_clustering``) is rewritten; files that
  another clustering implementation tagged, or that were clustered on earlier columns, are left
  alone. With no unclustered file, nothing
  is rewritten, so a second run commits nothing.
- Together with U, the clustered files whose ranges the new rows would widen most: the
  clustered files (on the current columns) whose min/max box on the clustering columns
  intersects U's bounding box, ranked by the share of their box inside U's box (measured per
  column in rank space over all the bounds involved, so strings and dates work as numbers do;
  a file without bounds counts as inside), then by the size of their ZCube (small cubes first:
  they are the ones a cube of new data should absorb), then by path. They are taken in that
  order while their bytes add up to at most U's bytes.

The bound: an incremental run rewrites at most twice the bytes of the unclustered data, however
large the table or its ZCubes (no minimum cube size, unlike Delta Spark's 100 GB default, which
makes it recluster every smaller cube: delta-io/delta issue 4304). When new data lands in a
narrow range (time-ordered appends), the few clustered files covering that range are merged with
it and ranges stay disjoint; when it spreads over the whole space it becomes a ZCube of its own.

At scale (10M files) the plan makes no Python object per file: a file's kind is decided once per
distinct (provider, ZCube tags) with the tags read as integer codes, the bounds are those of the
clustering columns only (``column_bounds``: typed, parsed a slice at a time) and only when the
merge rule runs, and the ranking and the fitting are NumPy's. The tags column itself is never
held: ``tag_codes`` turns ``Snapshot.iter_tags`` into codes a piece at a time (a checkpoint
batch, a commit), keeping an int32 per file and key and the distinct values.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError, CorruptLogError
from delta_core.maintenance.bin_packing import lexical_order, sort_keys_of, value_ranks
from delta_core.maintenance.column_bounds import column_bounds
from delta_core.maintenance.compaction_plan import resolve_sizes, table_target_size
from delta_core.maintenance.curves import bits_per_column
from delta_core.maintenance.file_groups import group_file_list, groups_of_rows
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.tag_codes import TagCodes, tag_codes
from delta_core.maintenance.zorder_plan import PartitionFiles, ZOrderPlan, validate_columns
from delta_core.model.arrow_values import (
    numbers_of,
    numbers_or_zero,
    take_rows,
)
from delta_core.model.clustering import (
    ZCUBE_ID_TAG,
    ZCUBE_ZORDER_BY_TAG,
    ClusteringColumn,
    FileClustering,
    clustering_columns,
    file_clustering,
    is_clustered_table,
)
from delta_core.model.stats import MAX_PREFIX, MIN_PREFIX
from delta_core.write.operation_records import OptimizeParameters

if TYPE_CHECKING:
    from delta_core.log.snapshot import Snapshot

CURVE = "hilbert"  # Delta Spark's ClusteringStrategy.curve


@dataclass(frozen=True, slots=True)
class ClusterPlan:
    """The files one clustering run rewrites (``rewrite``: a Hilbert plan of one group) and
    why: counts of the live files by what the run does with them."""

    columns: tuple[ClusteringColumn, ...]
    full: bool
    rewrite: ZOrderPlan
    unclustered_files: int  # rewritten (all of them)
    clustered_files_rewritten: int  # merged with the new data, or every one when full
    clustered_files_kept: int
    other_provider_files: int  # clustered by another implementation: kept unless full

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def is_empty(self) -> bool:
        return self.rewrite.is_empty

    @property
    def files_considered(self) -> int:
        return self.rewrite.files_considered

    @property
    def num_input_files(self) -> int:
        return self.rewrite.num_input_files

    @property
    def groups(self) -> tuple[PartitionFiles, ...]:
        return self.rewrite.partitions

    def batches(self, max_bytes: int = DEFAULT_BATCH_BYTES) -> list[tuple[PartitionFiles, ...]]:
        return self.rewrite.batches(max_bytes)

    def operation_parameters(self) -> OptimizeParameters:
        return OptimizeParameters(predicate=None, cluster_by=self.names, is_full=self.full)


def table_clustering_columns(snapshot: Snapshot) -> tuple[ClusteringColumn, ...]:
    """The clustering columns of a clustered table (``()`` when it is not one, or has none)."""
    if not is_clustered_table(snapshot.protocol):
        return ()
    root = snapshot.storage.root
    return clustering_columns(snapshot.domain_metadata, snapshot.schema, path=root, version=snapshot.version)


def checked_clustering_columns(snapshot: Snapshot) -> tuple[tuple[ClusteringColumn, ...], tuple[str, ...]]:
    """The clustering columns of ``snapshot`` and their canonical names, once this library can
    cluster on them; ``ConfigError`` (or ``CorruptLogError``) saying what to do otherwise."""
    root = snapshot.storage.root
    columns = table_clustering_columns(snapshot)
    if not columns:
        what = "has no clustering columns" if is_clustered_table(snapshot.protocol) else "is not clustered"
        raise ConfigError(f"the table {what}; set them with delta-core cluster-by TABLE --columns a,b "
                          "(or bin-pack it with delta-core compact)", path=root, version=snapshot.version)
    if snapshot.partition_columns:
        raise CorruptLogError("the table is clustered and partitioned, which the protocol forbids; "
                              "repair it with the engine that wrote it", path=root, version=snapshot.version)
    nested = [c.name for c in columns if len(c.logical) > 1]
    if nested:
        raise ConfigError(f"nested clustering column(s) {', '.join(nested)}: this library clusters on "
                          "top-level columns only; cluster this table with Delta Spark",
                          path=root, version=snapshot.version)
    props = snapshot.properties
    names = validate_columns(snapshot.schema, [c.logical[0] for c in columns], partition_columns=(),
                             num_indexed_cols=props.num_indexed_cols, stats_columns=props.stats_columns,
                             operation="cluster")
    return columns, names


def clustering_bounds(snapshot: Snapshot) -> pa.Table:
    """``column_bounds`` of the clustering columns (checked as ``plan_clustering`` checks them),
    for a run that both plans (``plan_clustering(bounds=...)``) and measures skipping on them:
    the statistics are then parsed once, not once for each."""
    _, names = checked_clustering_columns(snapshot)
    return column_bounds(snapshot, [(n,) for n in names])


def plan_clustering(snapshot: Snapshot, *, full: bool = False, target_size: int | None = None,
                    bounds: pa.Table | None = None) -> ClusterPlan:
    """Plan one clustering run of ``snapshot`` under the module docstring's rules. Pure.
    ``bounds``: ``clustering_bounds(snapshot)`` when the caller has them already (else the merge
    rule parses them, and only when it runs)."""
    columns, names = checked_clustering_columns(snapshot)
    target, _ = resolve_sizes(target_size, None, table_target=table_target_size(snapshot))
    # No statistics unless the merge rule needs bounds, and then only the clustering columns';
    # the tags as codes, read a piece at a time.
    files = snapshot.file_columns("path", "size", "clustering_provider")
    (cubes, _), zorder_by = tag_codes(snapshot.iter_tags(), (ZCUBE_ID_TAG, ZCUBE_ZORDER_BY_TAG), files.num_rows)
    kinds = _file_kinds(files.column("clustering_provider"), cubes >= 0, zorder_by, columns)
    unclustered = kinds == _KIND_CODES[FileClustering.UNCLUSTERED]
    current = kinds == _KIND_CODES[FileClustering.CURRENT_COLUMNS]
    sizes = numbers_or_zero(files.column("size"))
    if full:
        take = np.ones(files.num_rows, dtype=bool)
    else:
        take = unclustered.copy()
        if unclustered.any() and current.any():
            if bounds is None:
                bounds = column_bounds(snapshot, [(n,) for n in names])
            take |= _merge_candidates(bounds, files, sizes, cubes, columns, unclustered, current)
    rows = np.flatnonzero(take)
    clustered = ~unclustered
    return ClusterPlan(
        columns=columns,
        full=full,
        rewrite=ZOrderPlan(read_version=snapshot.version, columns=names, curve=CURVE, target_size=target,
                           predicate=None,
                           partitions=tuple(groups_of_rows(PartitionFiles, group_file_list(files), [rows], [()]))
                           if len(rows) else (),
                           files_considered=files.num_rows, bits_per_column=bits_per_column(len(names))),
        unclustered_files=int(unclustered.sum()),
        clustered_files_rewritten=int((clustered & take).sum()),
        clustered_files_kept=int((clustered & ~take).sum()),
        other_provider_files=int((kinds == _KIND_CODES[FileClustering.OTHER_PROVIDER]).sum()),
    )


# Each kind of file as a small integer, so the kinds of millions of files are one NumPy array.
_KINDS = tuple(FileClustering)
_KIND_CODES = {k: i for i, k in enumerate(_KINDS)}


def _file_kinds(provider: pa.ChunkedArray, has_cube: np.ndarray, zorder_by: TagCodes,
                columns: Sequence[ClusteringColumn]) -> np.ndarray:
    """``file_clustering`` of every live file (in ``files`` order; ``has_cube``: whether it has a
    ``ZCUBE_ID``; ``zorder_by``: its ``ZCUBE_ZORDER_BY`` as ``tag_codes``), as ``_KIND_CODES``:
    decided once per distinct (provider, ``ZCUBE_ZORDER_BY``, has a cube), of which a table has a
    handful, not once per file."""
    n = len(provider)
    if n == 0:
        return np.zeros(0, dtype=np.int8)
    zorder, tags = zorder_by
    combined = value_ranks(provider).astype(np.int64) * (len(tags) + 1) + zorder + 1
    distinct, firsts, codes = np.unique(combined * 2 + has_cube, return_index=True, return_inverse=True)
    del combined
    kinds = np.zeros(len(distinct), dtype=np.int8)
    providers = take_rows(provider, firsts).to_pylist()
    for i, (p, z, cube) in enumerate(zip(providers, zorder[firsts].tolist(), has_cube[firsts].tolist())):
        tag_map = {ZCUBE_ID_TAG: "", ZCUBE_ZORDER_BY_TAG: tags[z]} if cube and z >= 0 else None
        kinds[i] = _KIND_CODES[file_clustering(p, tag_map, columns)]
    chosen: np.ndarray = kinds[codes.reshape(-1)]
    return chosen


def _merge_candidates(bounds: pa.Table, files: pa.Table, sizes: np.ndarray, cubes: np.ndarray,
                      columns: Sequence[ClusteringColumn], unclustered: np.ndarray,
                      candidates: np.ndarray) -> np.ndarray:
    """The clustered files merged with the unclustered ones (the module docstring's rule;
    ``bounds``: ``column_bounds`` of ``columns``, ``sizes`` of the files, ``cubes``: their ZCubes
    as ``tag_codes``)."""
    score = np.ones(files.num_rows)
    for column in columns:
        lo_name, hi_name = MIN_PREFIX + column.logical[0], MAX_PREFIX + column.logical[0]
        if lo_name not in bounds.column_names or hi_name not in bounds.column_names:
            continue  # no bounds anywhere: every file counts as inside
        lo, hi = bounds.column(lo_name), bounds.column(hi_name)
        bounds = bounds.drop_columns([lo_name, hi_name])  # each column's bounds freed once used
        score *= _inside_share(lo, hi, unclustered)
        del lo, hi
    del bounds
    ranked = np.flatnonzero(candidates & (score > 0))
    # by share inside (largest first), then ZCube bytes (smallest first), then path
    order = lexical_order(-score[ranked], _cube_bytes(cubes, sizes, ranked),
                          sort_keys_of(files.column("path"), ranked))
    chosen = np.zeros(files.num_rows, dtype=bool)
    chosen[ranked[order][greedy_fit(sizes[ranked][order], int(sizes[unclustered].sum()))]] = True
    return chosen


def greedy_fit(sizes: np.ndarray, budget: int) -> np.ndarray:
    """Positions of ``sizes`` taken in order while they fit ``budget`` (one that does not fit is
    passed over: a smaller one further down may still fit), as a loop over the files would take
    them. A file larger than what is left can never fit later (what is left only shrinks), so
    each round drops those at once and takes the longest prefix of the rest that fits."""
    left = budget
    waiting = np.flatnonzero(sizes <= left)
    taken: list[np.ndarray] = []
    while len(waiting):
        spent = np.cumsum(sizes[waiting])
        fit = int(np.searchsorted(spent, left, side="right"))  # at least one: each waiting file fits alone
        taken.append(waiting[:fit])
        left -= int(spent[fit - 1])
        rest = waiting[fit + 1:]  # waiting[fit] did not fit after the others: passed over
        waiting = rest[sizes[rest] <= left]
    return np.concatenate(taken) if taken else np.zeros(0, dtype=np.int64)


def _inside_share(lo: pa.ChunkedArray, hi: pa.ChunkedArray, unclustered: np.ndarray) -> np.ndarray:
    """Per file, the share of its ``[lo, hi]`` range inside the unclustered files' range, in rank
    space (distinct bounds numbered in order); 1 for a file without bounds, or when the
    unclustered files' range is open because one of them has none."""
    bounded = numbers_of(pc.and_(pc.is_valid(lo), pc.is_valid(hi))).astype(bool) if len(lo) \
        else np.zeros(0, dtype=bool)
    share = np.ones(len(bounded))
    if not bounded.any() or not bounded[unclustered].all():
        return share
    rows = np.flatnonzero(bounded)
    every = len(rows) == len(bounded)  # the usual case: no copy of the bounds
    k = len(rows)
    # dense ranks of every bound at once: Arrow sorts the values, whatever their type
    both = pa.chunked_array([*lo.chunks, *hi.chunks]) if every \
        else pa.chunked_array([take_rows(lo, rows), take_rows(hi, rows)])
    # uint64 from Arrow, all below 2 * k: held as int32 (half the bytes) for the arithmetic below
    ranks = numbers_of(pc.rank(both, tiebreaker="dense")).astype(np.int32 if 2 * k < 2**31 else np.int64)
    del both
    f_lo, f_hi = ranks[:k], ranks[k:]
    new_lo, new_hi = f_lo[unclustered[rows]].min(), f_hi[unclustered[rows]].max()
    overlap = np.minimum(f_hi, new_hi)
    overlap -= np.maximum(f_lo, new_lo)
    overlap += 1
    np.clip(overlap, 0, None, out=overlap)
    width = np.subtract(f_hi, f_lo)
    np.add(width, 1, out=width)
    share[rows] = overlap / np.maximum(width, 1)
    return share


def _cube_bytes(cubes: np.ndarray, sizes: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For the files ``rows``, the bytes of their ZCube (``cubes``: ``tag_codes`` of every file's
    ``ZCUBE_ID``, ``sizes`` of every file; a file without a cube: its own size)."""
    totals = np.bincount(cubes + 1, weights=sizes).astype(np.int64)  # bucket 0: no cube
    chosen = cubes[rows]
    cube_bytes: np.ndarray = np.where(chosen >= 0, totals[chosen + 1], sizes[rows])
    return cube_bytes
