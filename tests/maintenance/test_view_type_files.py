"""Data files holding Arrow view types (issue 30: "View types").

delta-rs 1.6 rewrites the files a ``delete``/``update`` touches with ``string_view`` and
``binary_view`` columns (inside lists and structs too). They hold the table's ``string`` and
``binary`` values, so every rewrite reads them as those types: rows stay the same for delta-rs
and delta-kernel-rs, and the new files are written in the table's own types."""

from __future__ import annotations

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder

pytestmark = pytest.mark.spark


def _rows(start: int, n: int) -> pa.Table:
    ids = range(start, start + n)
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"s{i % 13}" for i in ids], pa.string()),
        "b": pa.array([bytes([i % 251]) * 3 for i in ids], pa.binary()),
        "l": pa.array([[f"e{i}", None] for i in ids], pa.list_(pa.string())),
        "st": pa.array([{"q": f"q{i}", "n": i} for i in ids], pa.struct([("q", pa.string()), ("n", pa.int64())])),
        "region": pa.array(["eu" if i % 2 else "us" for i in ids], pa.string()),
    })


def _all_rows(uri: str) -> tuple[pa.Table, pa.Table]:
    """Rows as delta-rs and as delta-kernel-rs read them."""
    import deltalake
    import polars_deltalake
    from deltalake import QueryBuilder

    dt = deltalake.DeltaTable(uri)
    rs = pa.table(QueryBuilder().register("t", dt).execute("select * from t").read_all())
    kernel = polars_deltalake.read_delta(uri).to_arrow()
    return rs, kernel


def _canonical(t: pa.Table) -> list[str]:
    """Rows as sorted text (lists and structs are not hashable), columns in name order."""
    return sorted(repr(r) for r in t.select(sorted(t.column_names)).to_pylist())


def _same(a: pa.Table, b: pa.Table) -> bool:
    """The same rows, whatever Arrow layout each reader chose (``a`` cast to ``b``'s)."""
    names = sorted(a.column_names)
    return _canonical(a.select(names).cast(b.select(names).schema)) == _canonical(b)


def _deltars_table_with_view_files(uri: str) -> None:
    import deltalake

    for i in range(8):
        deltalake.write_deltalake(uri, _rows(i * 30, 30), partition_by=["region"], mode="append")
        if i in (3, 7):  # each delete rewrites the files it touches (one per partition) as views
            deltalake.DeltaTable(uri).delete(f"id >= {(i - 3) * 30} and id % 7 = 0")
    views = [f for f in glob.glob(os.path.join(uri, "region=*", "*.parquet"))
             if pa.types.is_string_view(pq.read_schema(f).field("s").type)]
    assert views, "delta-rs no longer writes string_view: this test needs another source of view files"
    assert pa.types.is_binary_view(pq.read_schema(views[0]).field("b").type)


@pytest.mark.parametrize("operation", ["compact", "zorder"])
def test_rewrites_read_view_type_files_as_the_tables_types(spark, table_uri, operation):
    _deltars_table_with_view_files(table_uri)
    rs_before, kernel_before = _all_rows(table_uri)
    assert rs_before.num_rows == 240 - 35
    table = DeltaTable(table_uri)
    if operation == "compact":
        metrics = compact(table, spark)
    else:
        metrics = zorder(table, spark, ["id", "s"])
    assert metrics.version is not None and metrics.num_removed_files == 4 and metrics.num_added_files == 2
    rs_after, kernel_after = _all_rows(table_uri)
    assert _same(rs_after, rs_before) and _same(kernel_after, kernel_before) and _same(rs_after, kernel_after)
    for add in table.snapshot().add_actions():  # the new files hold the table's own types
        schema = pq.read_schema(os.path.join(table_uri, add.path))
        assert schema.field("s").type == pa.string() and schema.field("b").type == pa.binary()
        assert schema.field("l").type.value_type == pa.string()
