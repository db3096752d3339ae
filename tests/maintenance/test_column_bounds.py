"""Statistics parsed a slice at a time on threads come back in the snapshot's file order."""

from __future__ import annotations

import pyarrow as pa

from benchmarks.bench_checkpoint import generate_log
from delta_core.log.table import DeltaTable
from delta_core.maintenance.column_bounds import column_bounds, parsed_slices, pruned_schema
from delta_core.model.stats import parse_stats
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.data_writer import table_schema


def test_slices_parsed_on_threads_keep_the_files_order(tmp_path):
    """3,000 generated files, half from a checkpoint and half from later commits, each piece the
    snapshot reads its own slice: each slice's first row follows the last, and the bounds joined
    are every file's, in ``files`` order (as ``Snapshot.file_stats`` parses them in one go)."""
    root = str(tmp_path / "t")
    generate_log(root, 3000, 30, removes=300)
    write_checkpoint(DeltaTable(root), version=15)
    snapshot = DeltaTable(root).snapshot()
    schema = pruned_schema(table_schema(snapshot.metadata), {("id",), ("value",)})

    def parse(stats: pa.ChunkedArray, first: int) -> tuple[int, int, pa.Table]:
        return first, len(stats), parse_stats(stats, schema, partition_columns=snapshot.partition_columns, physical=True)

    parts = list(parsed_slices(snapshot, parse, rows=1))
    assert len(parts) > 1
    assert [first for first, _, _ in parts] == [sum(n for _, n, _ in parts[:i]) for i in range(len(parts))]
    whole = snapshot.file_stats()
    for name in ("min.id", "max.id", "min.value", "max.value"):
        joined = pa.chunked_array([c for _, _, t in parts for c in t.column(name).chunks])
        assert joined.to_pylist() == whole.column(name).to_pylist()
    assert column_bounds(snapshot, [("id",), ("value",)]).column("max.value").to_pylist() \
        == whole.column("max.value").to_pylist()
