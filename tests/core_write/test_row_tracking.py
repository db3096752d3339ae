"""Row tracking on every commit that adds files (PROTOCOL.md "Writer Requirements for Row
Tracking"): fresh ``baseRowId``s above the high-water mark, ``defaultRowCommitVersion`` = the
commit's version, the ``delta.rowTracking`` domain raised, ids re-assigned by a race's loser.
delta-kernel-rs reads the rows through our checkpoint of a row-tracking table."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from delta_core.errors import CorruptLogError, InvalidTransactionError
from delta_core.log.log_path import commit_key
from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, DomainMetadata
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, overwrite
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing
from tests.kernel_oracle import kernel_rows
from tests.row_tracking_tables import ROWS, assert_disjoint, high_water_mark, row_id_ranges, turn_on_row_tracking


def rows_of(root: str, version: int | None = None) -> list[tuple]:
    """The table's rows as delta-rs reads them, as a sorted multiset."""
    dl = RsTable(root, version=version)
    return sorted(tuple(r.values()) for r in dl.to_pyarrow_table().to_pylist())


@pytest.fixture()
def rt_table(table_dir) -> DeltaTable:
    """Two files of 3 rows, then row tracking turned on: ids 0..5 used, mark 5."""
    t = create_table(table_dir, ROWS.schema)
    append(t, ROWS)
    append(t, ROWS)
    turn_on_row_tracking(table_dir)
    return t


def new_adds(table: DeltaTable, version: int) -> list[Add]:
    return [a for a in table.commit_actions(version) if isinstance(a, Add)]


def test_append_assigns_fresh_ids_above_the_mark_and_raises_it(rt_table):
    root = rt_table.storage.root
    assert high_water_mark(root) == 5
    before = rows_of(root)
    more = pa.concat_tables([ROWS, ROWS])
    r = append(rt_table, more, target_file_size=1)  # several files in one commit
    adds = new_adds(rt_table, r.version)
    assert len(adds) >= 1
    assert all(a.default_row_commit_version == r.version for a in adds)
    assert min(a.base_row_id for a in adds) == 6
    assert high_water_mark(root) == 5 + more.num_rows
    ranges = row_id_ranges(root)
    assert_disjoint(ranges)
    assert max(last for _, last in ranges) == high_water_mark(root)
    assert rows_of(root) == sorted(before + [tuple(r.values()) for r in more.to_pylist()])
    # the checkpoint keeps the ids (recommitted adds keep baseRowId)
    kernel_before = kernel_rows(root)
    write_checkpoint(rt_table, version=r.version)
    assert row_id_ranges(root) == ranges
    for v in range(r.version):  # readers start at the checkpoint
        rt_table.storage.delete(commit_key(v))
    assert kernel_rows(root) == kernel_before


def test_overwrite_assigns_fresh_ids(rt_table):
    root = rt_table.storage.root
    r = overwrite(rt_table, ROWS)
    (add,) = new_adds(rt_table, r.version)
    assert (add.base_row_id, add.default_row_commit_version) == (6, r.version)
    assert high_water_mark(root) == 8
    assert rows_of(root) == sorted(tuple(x.values()) for x in ROWS.to_pylist())


def test_race_loser_reassigns_ids_above_the_winners_mark(rt_table):
    root = rt_table.storage.root
    snap = rt_table.snapshot()
    won = append(rt_table, ROWS)
    lost = append(rt_table, ROWS, read_snapshot=snap)
    assert (won.version, lost.version, lost.attempts) == (snap.version + 1, snap.version + 2, 2)
    (w,) = new_adds(rt_table, won.version)
    (loser,) = new_adds(rt_table, lost.version)
    # the loser's first attempt had computed ids 6..8 at the winner's version: both re-assigned
    assert (w.base_row_id, w.default_row_commit_version) == (6, won.version)
    assert (loser.base_row_id, loser.default_row_commit_version) == (9, lost.version)
    assert high_water_mark(root) == 11
    assert_disjoint(row_id_ranges(root))
    assert len(rows_of(root)) == 12


def test_suspended_row_tracking_assigns_nothing(table_dir):
    t = create_table(table_dir, ROWS.schema)
    append(t, ROWS)
    turn_on_row_tracking(table_dir, enable=False, suspended=True)
    r = append(t, ROWS)
    (add,) = new_adds(t, r.version)
    assert (add.base_row_id, add.default_row_commit_version) == (None, None)
    assert not any(isinstance(a, DomainMetadata) for a in t.commit_actions(r.version))


def test_first_ids_of_a_table_without_a_mark_start_at_zero(table_dir):
    # supported but no id assigned yet (no files, so no domain): the first file starts at 0
    t = create_table(table_dir, ROWS.schema)
    turn_on_row_tracking(table_dir, enable=False)
    assert "delta.rowTracking" not in t.snapshot().domain_metadata
    r = append(t, ROWS)
    (add,) = new_adds(t, r.version)
    assert add.base_row_id == 0 and high_water_mark(table_dir) == 2


def test_staging_the_row_tracking_domain_is_refused(rt_table, table_dir):
    root = table_dir
    before = listing(root)
    txn = Transaction(rt_table, operation="WRITE")
    txn.add_action(DomainMetadata("delta.rowTracking", json.dumps({"rowIdHighWaterMark": 99})))
    with pytest.raises(InvalidTransactionError, match="written by the transaction") as ei:
        txn.commit()
    assert ei.value.version == rt_table.snapshot().version + 1
    assert listing(root) == before


def test_corrupt_high_water_mark_is_refused_before_writing(rt_table, table_dir):
    root = table_dir
    version = rt_table.latest_version() + 1
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "x") as fh:
        fh.write(json.dumps({"domainMetadata": {"domain": "delta.rowTracking", "removed": False,
                                                "configuration": "{\"rowIdHighWaterMark\": \"x\"}"}}) + "\n")
    before = listing(root)
    with pytest.raises(CorruptLogError, match="rowIdHighWaterMark") as ei:
        append(rt_table, ROWS)
    assert ei.value.version == version
    assert listing(root) == before
