"""``CommitSummary`` of real commits: file actions, dataChange, operation."""

from __future__ import annotations

import pyarrow as pa

from delta_core.log.commit_summary import CommitSummary
from delta_core.model.actions import Add, CommitInfo
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import append, commit_rewrite, create_table, delete_files, set_properties

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _summary(table, version: int) -> CommitSummary:
    return CommitSummary.from_actions(version, table.commit_actions(version))


def test_summaries_of_a_table_history(table_dir):
    table = create_table(table_dir, SCHEMA, partition_columns=["p"])
    append(table, pa.table({"id": [1, 2], "p": ["a", "a"]}, schema=SCHEMA))
    snap = table.snapshot()
    old = next(snap.add_actions())
    new = write_data_file(table.storage, pa.table({"id": [1, 2], "p": ["a", "a"]}, schema=SCHEMA),
                          metadata=snap.metadata, partition_values={"p": "a"}, data_change=False)
    commit_rewrite(table, removed=[old], added=[new])
    set_properties(table, {"delta.appendOnly": "false"})
    delete_files(table, [new.path])

    create, write, optimize, props, delete = (_summary(table, v) for v in range(5))
    assert create.metadata is not None and create.protocol is not None
    assert (create.has_file_actions, create.changes_data, create.operation) == (False, False, "CREATE TABLE")
    assert (write.has_file_actions, write.changes_data, write.operation) == (True, True, "WRITE")
    assert len(write.added_files) == 1 and not write.removed_files
    assert (optimize.has_file_actions, optimize.changes_data, optimize.operation) == (True, False, "OPTIMIZE")
    assert [a.path for a in optimize.removed_files] == [old.path]
    assert [a.path for a in optimize.added_files] == [new.path]
    assert (props.has_file_actions, props.changes_data) == (False, False) and props.metadata is not None
    assert (delete.has_file_actions, delete.changes_data, delete.operation) == (True, True, "DELETE")
    assert all(s.version == v for v, s in enumerate((create, write, optimize, props, delete)))


def test_operation_missing_or_unknown():
    add = Add("f.parquet", {}, 1, 0, False)
    assert CommitSummary.from_actions(3, [add]).operation is None
    assert CommitSummary.from_actions(3, [CommitInfo({}), add]).operation is None
    assert CommitSummary.from_actions(3, [CommitInfo({"operation": "MERGE"})]).operation == "MERGE"
