"""Rewrites of type-widened tables write the table's current types, widened from what the old files
hold (PROTOCOL.md "Type Widening"). delta-rs refuses these fixtures (``typeWidening-preview``),
so the rows are checked against the old files read with pyarrow and widened to the schema, and
read by delta-kernel-rs after the rewrite (before it too, where kernel-rs can read them)."""

from __future__ import annotations

import collections
import datetime as dt
import decimal
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.partition_values import url_decode_path
from delta_core.model.schema import schema_to_arrow
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info

pytestmark = pytest.mark.spark


def widened_rows(root: str, table: DeltaTable, version: int | None = None) -> collections.Counter:
    """The rows of the live files, each file read with pyarrow and cast to the table's types."""
    snap = table.snapshot(version)
    target = schema_to_arrow(snap.schema)
    out: collections.Counter = collections.Counter()
    for path in snap.file_paths:
        data = pq.read_table(f"{root}/{url_decode_path(path)}")
        cast = pa.table([data.column(f.name).cast(f.type) for f in target], schema=target)
        out.update(repr(r) for r in cast.to_pylist())
    return out


def copy(src, tmp_path) -> tuple[str, DeltaTable]:
    root = str(tmp_path / "t")
    shutil.copytree(src, root)
    return root, DeltaTable(root)


def check_rewrite(root: str, table: DeltaTable, version: int, before: collections.Counter) -> None:
    snap = table.snapshot()
    target = schema_to_arrow(snap.schema)
    assert commit_info(table, version)["operation"] == "OPTIMIZE"
    (add,) = snap.add_actions()
    written = pq.read_schema(f"{root}/{url_decode_path(add.path)}")
    assert [(f.name, f.type) for f in written] == [(f.name, f.type) for f in target]  # current types
    assert widened_rows(root, table) == before
    assert widened_rows(root, table, version - 1) == before  # the previous version still reads the same


def assert_kernel_reads_the_widened_rows(root: str, before: collections.Counter) -> None:
    """golden-type-widening: delta-kernel-rs (polars-deltalake 1.3.2) refuses it while its files hold
    different types ("scan batch failed: data type mismatch for column decimal_decimal_same_scale:
    incoming: Decimal(10, 2) != target: Decimal(20, 2)"), so the rows before are pyarrow's; after
    the rewrite every file holds the current types and kernel-rs reads the same rows."""
    assert collections.Counter(repr(r) for r in kernel_rows(root).to_pylist()) == before


def test_compaction_of_a_widened_table_writes_the_current_types(spark, conformance_dir, tmp_path):
    root, table = copy(conformance_dir / "golden-type-widening", tmp_path)
    before = widened_rows(root, table)
    m = compact(table, spark)
    assert (m.num_removed_files, m.num_added_files) == (2, 1)
    check_rewrite(root, table, m.version, before)
    assert_kernel_reads_the_widened_rows(root, before)
    # values the old file held as byte, date and short came out widened, not reinterpreted
    rows = pq.read_table(f"{root}/{url_decode_path(next(table.snapshot().add_actions()).path)}").to_pylist()
    old = next(r for r in rows if r["byte_long"] == 1)
    assert old["date_timestamp_ntz"] == dt.datetime(2024, 9, 9)
    assert old["short_decimal"] == decimal.Decimal("2.0") and old["float_double"] == pytest.approx(3.4, rel=1e-6)


def test_compaction_of_a_nested_widened_table_writes_the_current_types(spark, conformance_dir, tmp_path):
    # struct field, map key and value, array element widened from int to long
    src = MODERN_DIR / "golden-type-widening-nested"
    root, table = copy(src, tmp_path)
    before = widened_rows(root, table)
    assert sum(before.values()) == 2
    kernel_before = kernel_rows(root)
    m = compact(table, spark)
    check_rewrite(root, table, m.version, before)
    assert kernel_rows(root) == kernel_before


def test_zorder_of_a_widened_table_writes_the_current_types(spark, conformance_dir, tmp_path):
    root, table = copy(conformance_dir / "golden-type-widening", tmp_path)
    before = widened_rows(root, table)
    m = zorder(table, spark, ["int_long", "date_timestamp_ntz"])
    check_rewrite(root, table, m.version, before)
    assert_kernel_reads_the_widened_rows(root, before)
