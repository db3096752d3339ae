"""A checkpoint's ``stats`` column, read whole, tells its ``add`` rows apart by ``add.size``
only where the Parquet footer shows it set in as many rows as the required ``add.path``
(PROTOCOL.md "Checkpoint Schema", "Add File and Remove File"): written with statistics, without
them, and with an add row that breaks the protocol by having no size, the same stats and
record count come back."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.log.checkpoint_stats import add_marker
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files


def _table(root: pathlib.Path) -> pathlib.Path:
    """Five appends, one file removed (a tombstone row between add rows), then a checkpoint."""
    table = create_table(str(root), pa.schema([("id", pa.int64()), ("day", pa.string())]))
    for i in range(5):
        append(table, pa.table({"id": list(range(i + 1)), "day": [f"d{i}"] * (i + 1)}))
    delete_files(table, [table.snapshot().file_paths[0]])
    write_checkpoint(table)
    (checkpoint,) = (root / "_delta_log").glob("*.checkpoint.parquet")
    return checkpoint


def _without_one_size(rows: pa.Table) -> pa.Table:
    add = rows["add"].combine_chunks()
    holds = pc.is_valid(pc.struct_field(add, "path"))
    first = pc.index(holds, True).as_py()
    sizes = pc.struct_field(add, "size").to_pylist()
    sizes[first] = None
    children = [pa.array(sizes, pa.int64()) if f.name == "size" else add.field(i) for i, f in enumerate(add.type)]
    fixed = pa.StructArray.from_arrays(children, fields=list(add.type), mask=pc.invert(add.is_valid()))
    return rows.set_column(rows.schema.get_field_index("add"), "add", fixed)


@pytest.mark.parametrize(("variant", "marker"), [("statistics", "size"), ("no-statistics", "path"),
                                                 ("a-null-size", "path")])
def test_stats_come_back_whatever_marks_the_add_rows(tmp_path: pathlib.Path, variant: str, marker: str) -> None:
    checkpoint = _table(tmp_path / "t")
    rows = pq.read_table(checkpoint)
    if variant == "a-null-size":
        rows = _without_one_size(rows)
    pq.write_table(rows, checkpoint, write_statistics=variant != "no-statistics")
    assert add_marker(pq.ParquetFile(checkpoint)) == marker

    adds = [a for a in rows["add"].to_pylist() if a is not None]
    expected = {a["path"]: a["stats"] for a in adds}
    assert len(expected) == 4 and all(expected.values())
    snapshot = DeltaTable(str(tmp_path / "t")).snapshot()
    state = snapshot.replay_state
    assert state.checkpoint_stats is not None  # the stats come from the checkpoint, read later
    files = snapshot.file_columns("path", "stats").to_pylist()
    assert {f["path"]: f["stats"] for f in files} == expected
    assert snapshot.num_records == sum(json.loads(s)["numRecords"] for s in expected.values())
