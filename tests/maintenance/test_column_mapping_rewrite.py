"""Rewrites of real column-mapping tables (PROTOCOL.md "Column Mapping", modes ``name`` and ``id``)
keep physical column names, Parquet field ids at every depth (struct fields, and the array
element / map key and value ids of ``delta.columnMapping.nested.ids``) and ``partitionValues``
keyed by physical names: the physical schema of every new file is the table's. delta-rs reads the
same rows before and after, at every version, and so does delta-kernel-rs."""

from __future__ import annotations

import collections
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.partition_values import url_decode_path
from delta_core.model.schema import PARQUET_FIELD_ID, StructType, schema_to_arrow
from delta_core.write.data_writer import data_fields
from tests.dv_files import rows_applying_dvs
from tests.kernel_oracle import kernel_rows

pytestmark = pytest.mark.spark

# (table, Z-order columns or None for compaction): rs-table_with_column_mapping has one file per
# partition, which compaction leaves alone, so it is Z-ordered instead.
TABLES = [("golden-table-with-columnmapping-mode-id", None), ("golden-table-with-columnmapping-mode-name", None),
          ("rs-table_with_column_mapping", ["Super Name"]), ("golden-data-reader-timestamp_ntz-id-mode", None),
          ("golden-dv-with-columnmapping", None)]  # deletion vectors too: their rows stay deleted


def multiset(table: pa.Table) -> collections.Counter:
    """Rows as a multiset; nested values (lists, maps, structs) compared by their repr."""
    return collections.Counter(repr(sorted(r.items())) for r in table.to_pylist())


def layout(fields: list[pa.Field], prefix: str = "") -> list[tuple[str, str, bytes | None]]:
    """Every field at every depth: (path of physical names, type, Parquet field id)."""
    out = []
    for f in fields:
        t = f.type
        out.append((prefix + f.name, str(t) if not pa.types.is_nested(t) else type(t).__name__,
                    (f.metadata or {}).get(PARQUET_FIELD_ID)))
        if pa.types.is_struct(t):
            out += layout(list(t), f"{prefix}{f.name}.")
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            out += layout([t.value_field], f"{prefix}{f.name}.")
        elif pa.types.is_map(t):
            out += layout([t.key_field, t.item_field], f"{prefix}{f.name}.")
    return out


def copy(conformance_dir, name: str, tmp_path) -> tuple[str, DeltaTable]:
    root = str(tmp_path / name)
    shutil.copytree(conformance_dir / name, root)
    return root, DeltaTable(root)


def check_new_files(root: str, table: DeltaTable, version: int, old_partition_values: set) -> None:
    snap = table.snapshot()
    physical = schema_to_arrow(StructType(tuple(data_fields(snap.metadata))), physical=True)
    # every struct field of the table carries its column-mapping id (element/key/value only where
    # delta.columnMapping.nested.ids gives one)
    assert all(i is not None for p, _, i in layout(list(physical)) if not p.endswith((".element", ".key", ".value")))
    new = [a for a in snap.add_actions() if a.data_change is False]
    assert new
    for a in new:
        written = pq.read_schema(f"{root}/{url_decode_path(a.path)}")
        assert layout(list(written)) == layout(list(physical))
        # partition values keyed by physical names, strings kept as the log had them
        assert tuple(sorted(a.partition_values.items())) in old_partition_values
        assert set(a.partition_values) == {snap.schema[c].physical_name for c in snap.partition_columns}


@pytest.mark.parametrize(("name", "zorder_by"), TABLES)
def test_rewrite_keeps_the_physical_schema(spark, conformance_dir, tmp_path, name, zorder_by):
    root, table = copy(conformance_dir, name, tmp_path)
    first = table.latest_version()
    old_pv = {tuple(sorted(a.partition_values.items())) for a in table.snapshot().add_actions()}
    before = {v: multiset(rows_applying_dvs(root, v)) for v in range(first + 1)}
    kernel_before = kernel_rows(root)
    if zorder_by is None:
        m = compact(table, spark, target_size=10**9, min_file_size=10**9)
    else:
        m = zorder(table, spark, zorder_by)
    assert m.version == first + 1 and m.num_added_files >= 1
    check_new_files(root, table, m.version, old_pv)
    before[m.version] = before[first]
    for v, rows in before.items():
        assert multiset(rows_applying_dvs(root, v)) == rows, v
    assert kernel_rows(root) == kernel_before


def test_zorder_keeps_the_physical_schema_with_nested_ids(spark, conformance_dir, tmp_path):
    root, table = copy(conformance_dir, "golden-table-with-columnmapping-mode-id", tmp_path)
    old_pv = {tuple(sorted(a.partition_values.items())) for a in table.snapshot().add_actions()}
    before = multiset(rows_applying_dvs(root))
    kernel_before = kernel_rows(root)
    m = zorder(table, spark, ["IntegerType", "StringType"])
    check_new_files(root, table, m.version, old_pv)
    assert multiset(rows_applying_dvs(root)) == before
    assert kernel_rows(root) == kernel_before
