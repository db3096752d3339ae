"""Rewrite amplification counts data files written: a writer's appends for the writers, a
``dataChange=false`` rewrite for maintenance, and a DELETE that keeps its file behind a new
deletion vector for nobody (the file was not written again)."""

from __future__ import annotations

import dataclasses
import shutil

import pyarrow as pa

from delta_core.health.amplification import rewrite_amplification
from delta_core.write.table_writes import append, commit_rewrite, create_table
from tests.dv_files import commit_deletion_vector


def test_a_deletion_vector_adds_no_bytes_and_a_rewrite_counts_as_maintenance(tmp_path):
    rows = pa.table({"id": pa.array(range(100), pa.int64())})
    table = create_table(str(tmp_path / "t"), rows.schema, properties={"delta.enableDeletionVectors": "true"})
    append(table, rows)
    append(table, rows)
    first, second = table.snapshot().add_actions()
    written = first.size + second.size
    commit_deletion_vector(table, first.path, [0, 1, 2])  # the file again, with a vector
    amp = rewrite_amplification(table.storage)
    assert (amp.writer_bytes, amp.maintenance_bytes, amp.last_version) == (written, 0, 3)

    # A rewrite of the second file into a copy of it: a new file, dataChange=false.
    shutil.copy(tmp_path / "t" / second.path, tmp_path / "t" / "rewritten.parquet")
    commit_rewrite(table, removed=[second], added=[dataclasses.replace(second, path="rewritten.parquet")])
    amp = rewrite_amplification(table.storage, start_version=4)
    assert (amp.writer_bytes, amp.maintenance_bytes, amp.ratio) == (0, second.size, None)
    assert rewrite_amplification(table.storage).ratio == round(second.size / written, 4)
