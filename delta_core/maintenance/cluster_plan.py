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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import ConfigError, CorruptLogError
from delta_core.maintenance.compaction_plan import resolve_sizes, table_target_size
from delta_core.maintenance.curves import bits_per_column, sortable
from delta_core.maintenance.file_groups import group_file_list
from delta_core.maintenance.options import DEFAULT_BATCH_BYTES
from delta_core.maintenance.zorder_plan import PartitionFiles, ZOrderPlan, validate_columns
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


def plan_clustering(snapshot: Snapshot, *, full: bool = False, target_size: int | None = None) -> ClusterPlan:
    """Plan one clustering run of ``snapshot`` under the module docstring's rules. Pure."""
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
    target, _ = resolve_sizes(target_size, None, table_target=table_target_size(snapshot))
    files = snapshot.files
    kinds = np.array([k.value for k in _file_kinds(files, columns)], dtype=object)
    unclustered = kinds == FileClustering.UNCLUSTERED.value
    if full:
        take = np.ones(files.num_rows, dtype=bool)
    else:
        take = unclustered.copy()
        if unclustered.any():
            take |= _merge_candidates(snapshot, files, columns, unclustered,
                                      kinds == FileClustering.CURRENT_COLUMNS.value)
    rows = np.flatnonzero(take)
    total = int(pc.sum(files.column("size").filter(pa.array(take))).as_py() or 0)
    clustered = ~unclustered
    return ClusterPlan(
        columns=columns,
        full=full,
        rewrite=ZOrderPlan(read_version=snapshot.version, columns=names, curve=CURVE, target_size=target,
                           predicate=None,
                           partitions=(PartitionFiles((), group_file_list(files), rows, total),) if len(rows) else (),
                           files_considered=files.num_rows, bits_per_column=bits_per_column(len(names))),
        unclustered_files=int(unclustered.sum()),
        clustered_files_rewritten=int((clustered & take).sum()),
        clustered_files_kept=int((clustered & ~take).sum()),
        other_provider_files=int((kinds == FileClustering.OTHER_PROVIDER.value).sum()),
    )


def _file_kinds(files: pa.Table, columns: Sequence[ClusteringColumn]) -> list[FileClustering]:
    """``file_clustering`` of every live file (in ``files`` order)."""
    n = files.num_rows
    provider = files.column("clustering_provider").to_pylist() if "clustering_provider" in files.column_names \
        else [None] * n
    if "tags" not in files.column_names:
        return [file_clustering(p, None, columns) for p in provider]
    tags = files.column("tags")
    cube = pc.map_lookup(tags, ZCUBE_ID_TAG, "first").to_pylist()
    zorder_by = pc.map_lookup(tags, ZCUBE_ZORDER_BY_TAG, "first").to_pylist()
    # Few distinct (provider, tag) pairs: decide each once, not once per file.
    seen: dict[tuple[str | None, str | None, bool], FileClustering] = {}
    out = []
    for key in zip(provider, zorder_by, (c is not None for c in cube)):
        kind = seen.get(key)
        if kind is None:
            p, z, has_cube = key
            tag_map = {ZCUBE_ID_TAG: "", ZCUBE_ZORDER_BY_TAG: z} if has_cube and z is not None else None
            kind = seen[key] = file_clustering(p, tag_map, columns)
        out.append(kind)
    return out


def _merge_candidates(snapshot: Snapshot, files: pa.Table, columns: Sequence[ClusteringColumn],
                      unclustered: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """The clustered files merged with the unclustered ones (the module docstring's rule)."""
    chosen = np.zeros(files.num_rows, dtype=bool)
    if not candidates.any():
        return chosen
    stats = snapshot.file_stats()  # one row per row of ``files``, in the same order
    score = np.ones(files.num_rows)
    for column in columns:
        lo_name, hi_name = MIN_PREFIX + column.logical[0], MAX_PREFIX + column.logical[0]
        if lo_name not in stats.column_names or hi_name not in stats.column_names:
            continue  # no bounds anywhere: every file counts as inside
        score *= _inside_share(stats.column(lo_name), stats.column(hi_name), unclustered)
    sizes = np.asarray(files.column("size").to_numpy(zero_copy_only=False), dtype=np.int64)
    cube_bytes = _cube_bytes(files, sizes)
    paths = files.column("path").to_pylist()
    budget = int(sizes[unclustered].sum())
    order = sorted((i for i in np.flatnonzero(candidates & (score > 0))),
                   key=lambda i: (-score[i], cube_bytes[i], paths[i]))
    spent = 0
    for i in order:
        if spent + sizes[i] > budget:
            continue  # a smaller file further down may still fit
        chosen[i] = True
        spent += int(sizes[i])
    return chosen


def _inside_share(lo: pa.ChunkedArray, hi: pa.ChunkedArray, unclustered: np.ndarray) -> np.ndarray:
    """Per file, the share of its ``[lo, hi]`` range inside the unclustered files' range, in rank
    space (distinct bounds numbered in order); 1 for a file without bounds, or when the
    unclustered files' range is open because one of them has none."""
    lo_valid = pc.is_valid(lo).to_numpy(zero_copy_only=False)
    hi_valid = pc.is_valid(hi).to_numpy(zero_copy_only=False)
    bounded = lo_valid & hi_valid
    share = np.ones(len(bounded))
    if not bounded.any() or not bounded[unclustered].all():
        return share
    values = sortable(pa.concat_arrays([lo.combine_chunks().filter(pa.array(bounded)),
                                        hi.combine_chunks().filter(pa.array(bounded))]))
    _, ranks = np.unique(values, return_inverse=True)
    k = int(bounded.sum())
    f_lo = np.zeros(len(bounded), dtype=np.int64)
    f_hi = np.zeros(len(bounded), dtype=np.int64)
    f_lo[bounded], f_hi[bounded] = ranks[:k], ranks[k:]
    new_lo, new_hi = f_lo[unclustered].min(), f_hi[unclustered].max()
    overlap = np.minimum(f_hi, new_hi) - np.maximum(f_lo, new_lo) + 1
    width = np.maximum(f_hi - f_lo + 1, 1)
    share[bounded] = (np.clip(overlap, 0, None) / width)[bounded]
    return share


def _cube_bytes(files: pa.Table, sizes: np.ndarray) -> np.ndarray:
    """Per file, the bytes of its ZCube (its own size when it has no ``ZCUBE_ID``)."""
    if "tags" not in files.column_names:
        return sizes
    cubes = pc.map_lookup(files.column("tags"), ZCUBE_ID_TAG, "first").to_pylist()
    totals: dict[str, int] = {}
    for cube, size in zip(cubes, sizes.tolist()):
        if cube is not None:
            totals[cube] = totals.get(cube, 0) + size
    return np.array([totals[c] if c is not None else s for c, s in zip(cubes, sizes.tolist())], dtype=np.int64)
