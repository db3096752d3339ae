"""Files that Spark itself shreds (``spark.sql.variant.writeShredding.enabled``, one forced
shredding schema per file: object fields of nested kinds, an array, a primitive, none, and an
object with a field of every primitive type Spark shreds) make one Delta table with
``variantShredding``: the same variant column in five physical layouts.
Every row read through delta_core equals Spark's own ``to_json`` of it, before and after a
compaction that writes them unshredded into one file, which delta-kernel-rs then reads alike."""

from __future__ import annotations

import glob
import json
import os
import pathlib
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql.types import VariantVal

from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import read_data_file
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.variant_shredding import UNSHREDDED, has_shredded
from tests.kernel_oracle import kernel_rows

pytestmark = pytest.mark.spark

JSON_ROWS = """select id, parse_json(case id % 5
    when 0 then '{"a": ' || id || ', "b": "s' || id || '", "z": null}'
    when 1 then '{"a": "not a long", "c": [1, 2, "q"], "d": {"e": 1.25, "f": true}}'
    when 2 then '["u", 2.5, "t", null]'
    when 3 then '-17'
    else 'null' end) as v from range(START, STOP)"""
TYPED_ROWS = """select id, case when id % 2 = 0 then to_variant_object(named_struct('a', id,
    't', timestamp'2024-01-02 03:04:05.123456', 'n', timestamp_ntz'2024-01-02 03:04:05.000001',
    'f', cast(1.5 as float), 'd', cast(2.25 as double), 'x', id % 4 = 0, 'y', X'0102FF',
    'i', cast(-3 as tinyint), 's', cast(300 as smallint), 'k', cast(70000 as int), 'm', cast(1.25 as decimal(5,2)),
    'e', cast(123456789012.345 as decimal(15,3)), 'l', cast(-123456789012345678901234567.891 as decimal(30,3)),
    'g', date'2024-01-02', 'u', repeat('x', 60 + cast(id as int) % 10)))
    else cast(id as variant) end as v from range(START, STOP)"""
TYPED_SCHEMA = ("a long, t timestamp, n timestamp_ntz, f float, d double, x boolean, y binary, i tinyint, s smallint, "
                "k int, m decimal(5,2), e decimal(15,3), l decimal(30,3), g date, u string")
# One file per shredding schema ("" writes no shredding), with the rows of its query.
FILES = (("a long, b string, c array<int>, d struct<e: decimal(10,2), g: date>", JSON_ROWS),
         ("array<string>", JSON_ROWS), ("long", JSON_ROWS), ("", JSON_ROWS), (TYPED_SCHEMA, TYPED_ROWS))
SHREDDING_CONFS = ("spark.sql.variant.writeShredding.enabled", "spark.sql.variant.forceShreddingSchemaForTest")


def _write_shredded_files(spark: Any, root: pathlib.Path) -> dict[int, Any]:
    """Spark's shredded Parquet files in ``root`` (one per schema) and its JSON of every row."""
    expected: dict[int, Any] = {}
    try:
        spark.conf.set(SHREDDING_CONFS[0], "true")
        for n, (schema, rows) in enumerate(FILES):
            spark.conf.set(SHREDDING_CONFS[1], schema)
            out = root.parent / f"spark-{n}"  # Spark's own output directory, beside the table
            spark.sql(rows.replace("START", str(n * 10)).replace("STOP", str(n * 10 + 10))).coalesce(1) \
                .write.parquet(str(out))
            (written,) = glob.glob(str(out / "*.parquet"))
            os.rename(written, root / f"part-{n}.parquet")
            expected |= {r["id"]: json.loads(r["j"]) for r in
                         spark.read.parquet(str(root / f"part-{n}.parquet")).selectExpr("id", "to_json(v) j").collect()}
    finally:
        for key in SHREDDING_CONFS:
            spark.conf.unset(key)
    return expected


def _make_table(root: pathlib.Path) -> None:
    """Commit 0 of a table with ``variantShredding``, adding the Parquet files in ``root``."""
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}},
                                           {"name": "v", "type": "variant", "nullable": True, "metadata": {}}]}
    actions: list[dict[str, Any]] = [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
                      "readerFeatures": ["variantType", "variantShredding"],
                      "writerFeatures": ["variantType", "variantShredding"]}},
        {"metaData": {"id": "6a1c2d52-5c49-4b0b-9d2c-1f5c1a0f0a11", "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(schema), "partitionColumns": [],
                      "configuration": {"delta.enableVariantShredding": "true"}, "createdTime": 1764000000000}}]
    for path in sorted(root.glob("*.parquet")):
        actions.append({"add": {"path": path.name, "partitionValues": {}, "size": path.stat().st_size,
                                "modificationTime": 1764000000000, "dataChange": True}})
    (root / "_delta_log").mkdir()
    (root / "_delta_log" / f"{0:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))


def _json_rows(table: pa.Table) -> dict[int, Any]:
    return {r["id"]: json.loads(VariantVal(r["v"]["value"], r["v"]["metadata"]).toJson()) for r in table.to_pylist()}


def _our_rows(root: pathlib.Path) -> dict[int, Any]:
    table = DeltaTable(str(root))
    snap = table.snapshot()
    return _json_rows(pa.concat_tables(read_data_file(table.storage, a.path, snap.metadata)
                                       for a in snap.add_actions()))


def test_files_spark_shredded_differently_read_and_compact_as_spark_reads_them(spark, tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    expected = _write_shredded_files(spark, root)
    _make_table(root)
    layouts = [pq.read_schema(p).field("v").type for p in sorted(root.glob("*.parquet"))]
    assert [has_shredded(t) for t in layouts] == [True, True, True, False, True]
    assert len(set(layouts)) == 5  # five physical layouts of one column
    assert len(expected) == 50 and expected[0] == {"a": 0, "b": "s0", "z": None}
    assert expected[40]["t"] == "2024-01-02 03:04:05.123456+00:00" and expected[40]["y"] == "AQL/"

    assert _our_rows(root) == expected

    metrics = compact(DeltaTable(str(root)), spark)

    assert (metrics.num_removed_files, metrics.num_added_files) == (5, 1)
    (add,) = DeltaTable(str(root)).snapshot().add_actions()
    assert pq.read_schema(root / add.path).field("v").type == UNSHREDDED
    assert json.loads(add.stats or "{}")["nullCount"] == {"id": 0, "v": 0}
    assert _our_rows(root) == expected
    assert _json_rows(kernel_rows(str(root))) == expected
