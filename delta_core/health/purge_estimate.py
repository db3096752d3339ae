"""What an automated purge would do, counted from the log (PROTOCOL.md "Deletion Vectors").

A purge run by automation rewrites the files whose own deleted-row share is over the policy's
ratio (``HealthPolicy.purge_file_ratio``; ``delta_core.config.automated_runs``), with the test
the purge plan itself uses (``compaction_plan.over_deleted_rows_ratio``). The deleted rows left
afterwards are those of the files at or under it: the advice judges the purge by them.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from delta_core.maintenance.compaction_plan import over_deleted_rows_ratio
from delta_core.model.arrow_values import int_scalar, numbers_of, numbers_or_zero


@dataclass(frozen=True, slots=True)
class PurgeEstimate:
    files: int  # files the purge would rewrite
    bytes: int  # their bytes
    deleted_rows: int  # the deleted rows it drops, of files whose row count is known


def estimate_purge(files: pa.Table, ratio: float) -> PurgeEstimate:
    """The purge over ``ratio`` of ``files`` (``Snapshot.file_columns("size", "deletion_vector",
    "num_records")``)."""
    if files.num_rows == 0 or files.column("deletion_vector").null_count == files.num_rows:
        return PurgeEstimate(0, 0, 0)
    due = over_deleted_rows_ratio(files, ratio)
    chosen = numbers_of(due).astype(bool, copy=False)
    known = pc.and_(due, pc.is_valid(files.column("num_records")))
    cardinality = pc.struct_field(files.column("deletion_vector"), "cardinality")
    deleted = pc.sum(pc.if_else(known, pc.fill_null(cardinality, int_scalar(0)), int_scalar(0))).as_py()
    return PurgeEstimate(int(chosen.sum()), int(numbers_or_zero(files.column("size"))[chosen].sum()), int(deleted or 0))
