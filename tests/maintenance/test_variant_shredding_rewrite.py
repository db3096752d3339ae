"""Rewrites of a table whose files mix shredded and unshredded variants (PROTOCOL.md "Variant
Shredding"): Spark's ``spark-shredded-variant-preview-delta`` plus one file shredded here the way
VariantShredding.md lays it out, in every variant column of the table (top level, in an array,
a struct, a map, an array of structs, a struct of an array). With ``delta.enableVariantShredding``
unset, compaction writes every value unshredded; with it set, compaction also writes one
unshredded layout, so no file mixes shredding schemas. Values are decoded by pyspark's
``VariantVal`` as JSON for every row, and compared with delta-kernel-rs's rows of the fixture and
of every rewritten table (polars-deltalake reads a shredded file's ``value`` alone, losing the
``typed_value`` part, so the table with the shredded file is compared only once rewritten)."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import VariantVal

from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.partition_values import url_decode_path
from delta_core.model.variant_shredding import UNSHREDDED, has_shredded
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import commit_info
from tests.variant_values import metadata, short_string, small_object

pytestmark = pytest.mark.spark

FIXTURE = MODERN_DIR / "rs-spark-shredded-variant-preview-delta"
SHREDDED_FILE = "part-00000-shredded-by-test.snappy.parquet"
META = metadata("key", "extra")
NEW_IDS = range(1000, 1006)
# nullCount only for variant columns (PROTOCOL.md "Statistics for Variant Columns")
SHREDDED_FILE_STATS = {
    "numRecords": 6, "minValues": {"id": 1000}, "maxValues": {"id": 1005},
    "nullCount": {"id": 0, "v": 1, "array_of_variants": 1, "struct_of_variants": {"v": 0}, "map_of_variants": 0,
                  "array_of_struct_of_variants": 0, "struct_of_array_of_variants": {"v": 0}}}


def _object(**fields: bytes) -> bytes:
    return small_object({"key": 0, "extra": 1}, **fields)


def _slot(values: list[bytes | None], typed: pa.Array) -> pa.StructArray:
    return pa.StructArray.from_arrays([pa.array(values, pa.binary()), typed], names=["value", "typed_value"])


def _objects(keys: list[int | None], residual: list[bytes | None], *, mask: list[bool] | None = None) -> pa.StructArray:
    """Variants shredded as objects with field ``key`` typed int64 (``residual``: the rest)."""
    key = _slot([None] * len(keys), pa.array(keys, pa.int64()))
    typed = pa.StructArray.from_arrays([key], names=["key"], mask=pa.array(mask) if mask else None)
    n = len(keys)
    return pa.StructArray.from_arrays([pa.array([META] * n, pa.binary()), pa.array(residual, pa.binary()), typed],
                                      names=["metadata", "value", "typed_value"])


def _shredded_rows() -> tuple[pa.Table, list[dict[str, Any]]]:
    """Six rows whose variants are all shredded, and each row's expected JSON values."""
    ids = list(NEW_IDS)
    # v: fully shredded {"key": i}; partially shredded {"key": i, "extra": "x"}; missing key
    # ({"extra": "y"}); a string that is no object; a variant null; SQL null.
    v = _objects([1000, 1001, None, None, None, None],
                 [None, _object(extra=short_string("x")), _object(extra=short_string("y")), short_string("plain"), b"\x00", None],
                 mask=[False, False, False, True, True, True])
    v = pa.StructArray.from_arrays([v.field(i) for i in range(3)], names=["metadata", "value", "typed_value"],
                                   mask=pa.array([False] * 5 + [True]))
    v_json: list[Any] = [{"key": 1000}, {"key": 1001, "extra": "x"}, {"extra": "y"}, "plain", None, "SQL NULL"]
    # elements of arrays of variants: each a variant group shredded as a primitive int64
    elems = pa.StructArray.from_arrays(
        [pa.array([META] * 4, pa.binary()), pa.array([None, b"\x00", None, short_string("s")], pa.binary()),
         pa.array([7, None, 8, None], pa.int64())], names=["metadata", "value", "typed_value"],
        mask=pa.array([False, False, True, False]))
    arrays = pa.ListArray.from_arrays(pa.array([0, 2, 4, 4, 4, 4, 4], pa.int32()), elems,
                                      mask=pa.array([False, False, False, True, False, False]))
    arrays_json: list[Any] = [[7, None], ["SQL NULL", "s"], [], "SQL NULL", [], []]
    in_struct = pa.StructArray.from_arrays([_objects([5, 6, None, None, None, None], [None] * 6,
                                                     mask=[False, False, True, True, True, True])], names=["v"])
    in_struct_json: list[Any] = [{"v": {"key": 5}}, {"v": {"key": 6}}, {"v": None}, {"v": None}, {"v": None},
                                 {"v": None}]
    # a present group with both value and typed_value missing reads as Variant null
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 1, 1, 1, 1, 1], pa.int32()), pa.array(["k"]),
                                   _objects([9], [None]))
    maps_json: list[Any] = [{"k": {"key": 9}}, {}, {}, {}, {}, {}]
    in_list_of_structs = pa.ListArray.from_arrays(
        pa.array([0, 1, 1, 1, 1, 1, 1], pa.int32()),
        pa.StructArray.from_arrays([_objects([3], [_object(extra=short_string("e"))])], names=["v"]))
    in_list_json: list[Any] = [[{"v": {"key": 3, "extra": "e"}}], [], [], [], [], []]
    in_struct_of_list = pa.StructArray.from_arrays(
        [pa.ListArray.from_arrays(pa.array([0, 1, 1, 1, 1, 1, 1], pa.int32()), _objects([4], [None]))], names=["v"])
    in_struct_of_list_json: list[Any] = [{"v": [{"key": 4}]}] + [{"v": []}] * 5
    data = pa.table({"id": pa.array(ids, pa.int64()), "v": v, "array_of_variants": arrays,
                     "struct_of_variants": in_struct, "map_of_variants": maps,
                     "array_of_struct_of_variants": in_list_of_structs,
                     "struct_of_array_of_variants": in_struct_of_list})
    expected = [{"id": i, "v": a, "array_of_variants": b, "struct_of_variants": c, "map_of_variants": d,
                 "array_of_struct_of_variants": e, "struct_of_array_of_variants": f}
                for i, a, b, c, d, e, f in zip(ids, v_json, arrays_json, in_struct_json, maps_json, in_list_json,
                                               in_struct_of_list_json)]
    return data, expected


def _decoded(value: Any) -> Any:
    """A row's value with every variant decoded by pyspark's VariantVal; SQL null as "SQL NULL"."""
    if value is None:
        return "SQL NULL"
    if isinstance(value, dict) and set(value) == {"value", "metadata"}:
        return json.loads(VariantVal(value["value"], value["metadata"]).toJson())
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


def _map(entries: list | None) -> Any:
    """A map column's value: (key, value) pairs from pyarrow, {key, value} structs from kernel-rs."""
    if entries is None:
        return "SQL NULL"
    pairs = [(e["key"], e["value"]) if isinstance(e, dict) else e for e in entries]
    return {k: _decoded(v) for k, v in pairs}


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = [{k: v if k == "id" else _map(v) if k == "map_of_variants" else _decoded(v) for k, v in r.items()}
            for r in table.to_pylist()]
    return sorted(rows, key=lambda r: r["id"])


def _table_rows(root: str) -> list[dict[str, Any]]:
    """Every live row, each file read through delta_core's reader (shredded files rebuilt)."""
    table = DeltaTable(root)
    snap = table.snapshot()
    parts = [read_data_file(table.storage, a.path, snap.metadata) for a in snap.add_actions()]
    return _rows(pa.concat_tables(parts))


def _commit(root: pathlib.Path, version: int, actions: list[dict[str, Any]]) -> None:
    with open(root / "_delta_log" / f"{version:020d}.json", "x", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(a) + "\n" for a in actions))


def _table_with_a_shredded_file(tmp_path: pathlib.Path, *, shredding: bool,
                                stats: bool = True) -> tuple[pathlib.Path, list[dict]]:
    """The fixture copied, plus commit 3 adding a file whose variants are all shredded (with its
    ``stats`` or none), then with ``shredding`` false commit 4 unsetting
    ``delta.enableVariantShredding``. Returns the root and the expected JSON of the added rows."""
    root = tmp_path / "t"
    shutil.copytree(FIXTURE, root)
    data, expected = _shredded_rows()
    pq.write_table(data, root / SHREDDED_FILE)
    size = (root / SHREDDED_FILE).stat().st_size
    add = {"path": SHREDDED_FILE, "partitionValues": {}, "size": size, "modificationTime": 1747170300000,
           "dataChange": True}
    if stats:
        add["stats"] = json.dumps(SHREDDED_FILE_STATS)
    _commit(root, 3, [
        {"commitInfo": {"timestamp": 1747170300000, "operation": "WRITE", "operationParameters": {"mode": "Append"},
                        "isBlindAppend": True}},
        {"add": add}])
    if not shredding:
        first = [json.loads(line) for line in (root / "_delta_log" / f"{0:020d}.json").read_text().splitlines()]
        (metadata,) = [a["metaData"] for a in first if "metaData" in a]
        del metadata["configuration"]["delta.enableVariantShredding"]
        _commit(root, 4, [
            {"commitInfo": {"timestamp": 1747170400000, "operation": "UNSET TBLPROPERTIES",
                            "operationParameters": {}, "isBlindAppend": False}},
            {"metaData": metadata}])
    return root, expected


def _shredded_layouts(root: pathlib.Path) -> dict[str, bool]:
    snap = DeltaTable(str(root)).snapshot()
    schemas = {a.path: pq.read_schema(root / url_decode_path(a.path)) for a in snap.add_actions()}
    return {p: any(has_shredded(f.type) for f in s) for p, s in schemas.items()}


def test_the_fixture_reads_as_kernel_rs_reads_it():
    """Every row of Spark's table, through delta_core's reader, equals delta-kernel-rs's read,
    both decoded by VariantVal."""
    ours = _table_rows(str(FIXTURE))
    assert len(ours) == 102
    assert _rows(kernel_rows(str(FIXTURE))) == ours
    assert ours[0]["v"] == {"key": 0} and ours[0]["map_of_variants"] == {"0": {"key": 0}, "nullKey": "SQL NULL"}


@pytest.mark.parametrize("shredding", [False, True], ids=["shredding-unset", "shredding-enabled"])
def test_compaction_rebuilds_shredded_values_unshredded(spark, tmp_path, shredding):
    root, expected_new = _table_with_a_shredded_file(tmp_path, shredding=shredding)
    before = _table_rows(str(root))
    assert [r for r in before if r["id"] in NEW_IDS] == expected_new  # the shredded file, rebuilt
    assert _shredded_layouts(root) == {**{p: False for p in _shredded_layouts(FIXTURE)}, SHREDDED_FILE: True}
    table = DeltaTable(str(root))
    version = table.snapshot().version

    metrics = compact(table, spark)

    assert (metrics.num_removed_files, metrics.num_added_files) == (5, 1)
    assert commit_info(table, version + 1)["operation"] == "OPTIMIZE"
    # Every new file holds unshredded variants only, in the table's layout.
    layouts = _shredded_layouts(root)
    assert len(layouts) == 1 and not any(layouts.values())
    (add,) = table.snapshot().add_actions()
    written = pq.read_schema(root / url_decode_path(add.path))
    assert written.field("v").type == UNSHREDDED
    # Stats: nullCount only for variant columns (PROTOCOL.md "Statistics for Variant Columns").
    stats = json.loads(add.stats or "{}")
    assert stats["numRecords"] == 108
    assert set(stats["minValues"]) == {"id"} and set(stats["maxValues"]) == {"id"}
    assert stats["nullCount"]["v"] == 1 and stats["nullCount"]["struct_of_variants"] == {"v": 0}
    after = _table_rows(str(root))
    assert after == before
    assert _rows(kernel_rows(str(root))) == after  # delta-kernel-rs reads the rewritten table alike


def test_analyze_of_a_shredded_file_writes_null_counts_only_for_variants(spark, tmp_path):
    root, _ = _table_with_a_shredded_file(tmp_path, shredding=True, stats=False)
    table = DeltaTable(str(root))

    metrics = analyze(table, spark)

    assert metrics.files_analyzed == 1
    (add,) = [a for a in table.snapshot().add_actions() if a.path == SHREDDED_FILE]
    got = json.loads(add.stats or "{}")
    assert {k: got[k] for k in SHREDDED_FILE_STATS} == SHREDDED_FILE_STATS


def test_zorder_rebuilds_shredded_values_unshredded(spark, tmp_path):
    """Z-order moves rows through Spark: the shredded file's values reach the new files rebuilt."""
    root, _ = _table_with_a_shredded_file(tmp_path, shredding=False)
    before = _table_rows(str(root))
    table = DeltaTable(str(root))

    zorder(table, spark, ["id"])

    assert not any(_shredded_layouts(root).values())
    after = _table_rows(str(root))
    assert after == before
    assert _rows(kernel_rows(str(root))) == after
