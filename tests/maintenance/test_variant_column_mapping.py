"""Variant columns under column mapping mode ``id`` (PROTOCOL.md "Column Mapping", "Variant Data
Type"): a variant's ``value`` and ``metadata`` are no columns of the schema and carry no field ids,
so a reader that matches columns by id matches the variant itself by id and its two binaries by
name, in whichever order the file has them. A compaction keeps every value byte for byte (files
decoded by pyspark's ``VariantVal``, and the rows delta-kernel-rs reads) and writes the protocol's
``value, metadata``; a shredded file is rebuilt unshredded.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.model.actions import Add, Metadata, Protocol, encode_actions
from tests.variant_rows import file_rows, kernel_rows

pytestmark = pytest.mark.spark

KEY = bytes.fromhex("010100036b6579")  # variant metadata with the one key "key"


def _cm(field_id: int) -> dict:
    return {"delta.columnMapping.id": field_id, "delta.columnMapping.physicalName": f"col-{field_id}"}


SCHEMA = {"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": _cm(1)},
    {"name": "v", "type": "variant", "nullable": True, "metadata": _cm(2)},
    {"name": "vs", "type": {"type": "array", "elementType": "variant", "containsNull": True}, "nullable": True,
     "metadata": _cm(3)},
    {"name": "s", "type": {"type": "struct", "fields": [
        {"name": "inner", "type": "variant", "nullable": True, "metadata": _cm(5)}]}, "nullable": True,
     "metadata": _cm(4)},
]}


def _variant(i: int) -> dict:
    return {"metadata": KEY, "value": bytes.fromhex("02010000020c") + bytes([i])}  # {"key": i}


def _file(variant: pa.DataType, ids: list[int]) -> pa.Table:
    """A file as a writer lays it out with field ids on every schema column, none inside variants."""
    def fid(name: str, typ: pa.DataType, i: int) -> pa.Field:
        return pa.field(name, typ, metadata={b"PARQUET:field_id": str(i).encode()})

    schema = pa.schema([fid("col-1", pa.int64(), 1), fid("col-2", variant, 2),
                        fid("col-3", pa.list_(pa.field("element", variant)), 3),
                        fid("col-4", pa.struct([fid("col-5", variant, 5)]), 4)])
    return pa.table([pa.array(ids, pa.int64()),
                     pa.array([_variant(i) for i in ids], variant),
                     pa.array([[_variant(i), None] for i in ids], schema.field("col-3").type),
                     pa.array([{"col-5": _variant(i)} if i % 2 else None for i in ids], schema.field("col-4").type)],
                    schema=schema)


def _table(root, files: list[pa.Table]) -> str:
    (root / "_delta_log").mkdir(parents=True)
    adds = []
    for n, data in enumerate(files):
        pq.write_table(data, root / f"f{n}.parquet")
        adds.append(Add(f"f{n}.parquet", {}, (root / f"f{n}.parquet").stat().st_size, 1_700_000_000_000, True,
                        json.dumps({"numRecords": data.num_rows})))
    config = {"delta.columnMapping.mode": "id", "delta.columnMapping.maxColumnId": "5"}
    meta = Metadata(id="11111111-2222-3333-4444-555555555555", schema_string=json.dumps(SCHEMA),
                    configuration=config, created_time=1_700_000_000_000)
    protocol = Protocol(3, 7, ("columnMapping", "variantType"), ("columnMapping", "variantType"))
    (root / "_delta_log" / f"{0:020d}.json").write_bytes(encode_actions([protocol, meta, *adds]))
    return str(root)


SPARK_ORDER = pa.struct([pa.field("value", pa.binary(), False), pa.field("metadata", pa.binary(), False)])
KERNEL_ORDER = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])


def test_compaction_matches_variants_by_id_then_by_name(spark, tmp_path):
    uri = _table(tmp_path / "t", [_file(SPARK_ORDER, [1, 2]), _file(KERNEL_ORDER, [3, 4, 5])])
    before = {"kernel": kernel_rows(uri), "files": file_rows(uri), "raw": file_rows(uri, raw=True)}
    assert sum(before["kernel"].values()) == 5
    metrics = compact(DeltaTable(uri), spark)
    assert (metrics.num_removed_files, metrics.num_added_files) == (2, 1)
    assert {"kernel": kernel_rows(uri), "files": file_rows(uri), "raw": file_rows(uri, raw=True)} == before
    [add] = [a for a in DeltaTable(uri).snapshot().add_actions()]
    written = pq.read_schema(tmp_path / "t" / add.path)
    for variant in (written.field("col-2").type, written.field("col-3").type.value_type,
                    written.field("col-4").type.field("col-5").type):
        assert variant == SPARK_ORDER
    assert json.loads(add.stats or "{}")["nullCount"] == {"col-1": 0, "col-2": 0, "col-3": 0, "col-4": {"col-5": 2}}


def test_a_shredded_variant_is_rebuilt_by_id_too(spark, tmp_path):
    shredded = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()),
                          pa.field("typed_value", pa.int64())])
    data = _file(SPARK_ORDER, [1, 2])
    data = data.set_column(1, data.schema.field("col-2").with_type(shredded),
                           pa.array([{"metadata": KEY, "value": None, "typed_value": 7}] * 2, shredded))
    uri = _table(tmp_path / "t", [_file(SPARK_ORDER, [3]), data])
    compact(DeltaTable(uri), spark)
    [add] = DeltaTable(uri).snapshot().add_actions()
    assert pq.read_schema(tmp_path / "t" / add.path).field("col-2").type == SPARK_ORDER
    rebuilt = [r for r in file_rows(uri) if '"col-2": {"variant": "7"}' in r]
    assert sum(file_rows(uri)[r] for r in rebuilt) == 2
