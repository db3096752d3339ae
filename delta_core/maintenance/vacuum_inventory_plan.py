"""The vacuum plan of an inventory: its rows made one file each before the plan stands.

An inventory is not a listing (Delta Spark's ``getFilesFromInventory``): a key may be listed
twice, and a row may name a directory with no flag saying so. So, batch by batch, beside the
planning step every listing takes (``vacuum_plan.plan_batch``), this keeps the 64-bit hashes of
every key (``model.string_hashes``) and of every key with a row inside the retention, and the
distinct directories above the keys. Then the candidates are made one per key (Delta Spark's
``maxBy`` on the modification time: a key with any young row is kept), a candidate that is a
directory above other keys is dropped, and a candidate whose URL-decoded key is referenced
refuses the plan (the inventory spells keys URL-encoded: every live file would look orphaned).
Each skip is counted in ``InventorySkips``. At 10M rows this holds 8 bytes a row, the
directories and the candidates, never the rows.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.errors import InventoryError
from delta_core.maintenance.key_fingerprints import KeySet
from delta_core.maintenance.vacuum_inventory import InventorySkips
from delta_core.maintenance.vacuum_plan import (
    CANDIDATES_SCHEMA,
    BatchPlan,
    PlanCounts,
    VacuumPlan,
    VacuumRules,
    assemble_plan,
    plan_batch,
)
from delta_core.model.arrow_values import int_scalar, string_array
from delta_core.model.string_hashes import string_hashes


def plan_inventory(listed: Iterable[pa.RecordBatch], *, referenced: pa.Array | pa.ChunkedArray, rules: VacuumRules,
                   skips: InventorySkips, source: str) -> VacuumPlan:
    """The vacuum plan of an inventory's listing batches (``LISTING_SCHEMA``); see the module
    docstring. Counts the duplicate and directory rows into ``skips``; ``InventoryError`` when
    the inventory's keys are URL-encoded."""
    known = KeySet(referenced)
    every: list[np.ndarray] = []
    young: list[np.ndarray] = []
    directories: set[str] = set()
    counts = PlanCounts()
    candidates: list[pa.RecordBatch] = []
    for batch in listed:
        keys = batch.column("key")
        hashes = string_hashes(keys)
        assert hashes is not None  # inventory_listing gives keys without nulls
        every.append(hashes)
        times = pc.fill_null(batch.column("modification_time"), int_scalar(rules.cutoff_ms))
        young.append(hashes[np.asarray(pc.greater_equal(times, int_scalar(rules.cutoff_ms)), dtype=bool)])
        _add_directories(keys, directories)
        part = plan_batch(batch, known, rules)
        counts += part.counts
        candidates.append(part.candidates)
    listed_hashes = np.concatenate(every) if every else np.empty(0, np.uint64)
    skips.duplicates += len(listed_hashes) - len(np.unique(listed_hashes))
    chosen = pa.Table.from_batches(candidates, schema=CANDIDATES_SCHEMA)
    # One candidate per key (the largest size of its rows), none with a young row.
    chosen = chosen.group_by("key", use_threads=False).aggregate([("size", "max")]).rename_columns(["key", "size"])
    young_set = KeySet.of_sorted_hashes(np.unique(np.concatenate(young))) if young else None
    if young_set is not None and chosen.num_rows:
        chosen = chosen.filter(pa.array(~young_set.may_contain(chosen.column("key"))))
    if directories and chosen.num_rows:
        is_dir = pc.is_in(chosen.column("key"), value_set=string_array(sorted(directories)))
        skips.directories += pc.sum(is_dir).as_py() or 0
        chosen = chosen.filter(pc.invert(is_dir))
    _refuse_encoded(chosen.column("key"), known, source)
    return assemble_plan([BatchPlan(chosen.cast(CANDIDATES_SCHEMA), counts)], rules)


def _add_directories(keys: pa.Array | pa.ChunkedArray, directories: set[str]) -> None:
    """Add every directory above ``keys`` to ``directories`` (the keys' distinct parents go
    through Python, each walked up once)."""
    nested = keys.filter(pc.match_substring(keys, "/"))
    if len(nested) == 0:
        return
    for parent in pc.unique(pc.replace_substring_regex(nested, r"/[^/]*$", "")).to_pylist():
        while parent and parent not in directories:
            directories.add(parent)
            parent = parent.rpartition("/")[0]


def _refuse_encoded(keys: pa.ChunkedArray, known: KeySet, source: str) -> None:
    maybe = keys.filter(pc.match_substring(keys, "%"))
    if len(maybe) == 0:
        return
    decoded = string_array([unquote(k) for k in maybe.to_pylist()])
    referenced = known.may_contain(decoded)
    if referenced.any():
        example = maybe.filter(pa.array(referenced))[0].as_py()
        raise InventoryError(
            f"the inventory {source} spells keys URL-encoded ({example!r} decodes to a live file of the table): "
            "every live file would look orphaned. Nothing was committed or deleted. Give the inventory with "
            "keys as stored (an S3 Inventory CSV report is decoded when read through its manifest.json)",
            path=source)
