"""Issue 21 §4: CHECK constraints (``delta.constraints.*``, PROTOCOL.md "CHECK Constraints").

This library evaluates no SQL: writes that change rows on a table holding a constraint are
refused (whatever its protocol says), adding a constraint over existing rows is refused, and
rewrites with ``dataChange=false`` stay allowed.
"""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from delta_core.errors import ConfigError, UnsupportedWriterFeatureError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file, rewrite_files
from delta_core.write.data_writer import write_data_file
from delta_core.write.table_writes import append, commit_rewrite, create_table, delete_files, overwrite, set_properties
from delta_core.write.transaction import Transaction
from tests.core_write.conftest import listing
from tests.core_write.handlog import field, struct, write_table

SCHEMA = pa.schema([("id", pa.int64())])
CHECK = {"delta.constraints.positive": "id > 0"}


@pytest.fixture()
def constrained(table_dir) -> DeltaTable:
    """A (1, 2) table carrying CHECK (id > 0), as another writer left it: two files."""
    write_table(table_dir, struct(field("id", "long")),
                [("a.parquet", pa.table({"id": [1, 2]})), ("b.parquet", pa.table({"id": [3]}))],
                configuration=CHECK)
    return DeltaTable(table_dir)


def test_append_breaking_constraint_refused_nothing_written(constrained, table_dir):
    before = listing(table_dir)
    with pytest.raises(UnsupportedWriterFeatureError) as e:
        append(constrained, pa.table({"id": [-5]}))
    assert "positive" in str(e.value) and "Delta Spark" in str(e.value)
    assert (e.value.path, e.value.version) == (constrained.uri, 0)
    assert listing(table_dir) == before


@pytest.mark.parametrize("write", [
    lambda t: append(t, pa.table({"id": [7]})),
    lambda t: overwrite(t, pa.table({"id": [7]})),
    lambda t: delete_files(t, ["a.parquet"]),
])
def test_every_data_changing_write_refused(constrained, table_dir, write):
    before = listing(table_dir)
    with pytest.raises(UnsupportedWriterFeatureError, match="positive"):
        write(constrained)
    assert listing(table_dir) == before
    assert constrained.latest_version() == 0


def test_commit_adding_rows_refused_at_validation(constrained, table_dir):
    # A caller staging adds itself meets the same rule when the commit is validated.
    before = listing(table_dir)
    snap = constrained.snapshot()
    txn = Transaction(constrained, read_snapshot=snap, operation="WRITE")
    add = write_data_file(constrained.storage, pa.table({"id": [-5]}), metadata=snap.metadata, partition_values={})
    txn.add_written_files([add])
    with pytest.raises(UnsupportedWriterFeatureError, match="positive"):
        txn.commit()
    assert listing(table_dir) == before


def test_rewrite_of_constrained_table_stays_allowed(constrained, table_dir):
    snap = constrained.snapshot()
    removed = list(snap.add_actions())
    added = rewrite_files(constrained.storage, [a.path for a in removed], metadata=snap.metadata,
                          partition_values={})
    result = commit_rewrite(constrained, removed=removed, added=[added], read_snapshot=snap)
    after = constrained.snapshot()
    assert result.version == 1 and after.file_paths == [added.path]
    assert read_data_file(constrained.storage, added.path, after.metadata).column("id").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("ids", [[-5, 1], [1, 2]])
def test_adding_constraint_over_rows_refused(table_dir, ids):
    # Rows are not validated here, so even rows that would pass are refused: Spark validates.
    t = create_table(table_dir, SCHEMA)
    append(t, pa.table({"id": ids}))
    before = listing(table_dir)
    with pytest.raises(ConfigError) as e:
        set_properties(t, CHECK)
    assert "ADD CONSTRAINT" in str(e.value) and e.value.path == t.uri
    assert listing(table_dir) == before


def test_changing_constraint_over_rows_refused(constrained, table_dir):
    before = listing(table_dir)
    with pytest.raises(ConfigError, match="delta.constraints.positive"):
        set_properties(constrained, {"delta.constraints.positive": "id > -10"})
    assert listing(table_dir) == before


def test_create_table_with_constraint_supports_it_and_refuses_rows(table_dir):
    t = create_table(table_dir, SCHEMA, properties=CHECK)
    with open(os.path.join(table_dir, "_delta_log", f"{0:020d}.json"), encoding="utf-8") as fh:
        protocol = next(json.loads(line)["protocol"] for line in fh if '"protocol"' in line)
    assert protocol == {"minReaderVersion": 1, "minWriterVersion": 3}
    before = listing(table_dir)
    with pytest.raises(UnsupportedWriterFeatureError, match="positive"):
        append(t, pa.table({"id": [-5]}))
    assert listing(table_dir) == before
    # A property change adds no row, so the constraint does not stand in its way.
    assert set_properties(t, {"delta.checkpointInterval": "20"}).version == 1
