"""Maintenance of Spark 4 variant tables (PROTOCOL.md "Variant Data Type"): the golden table
``spark-variant-checkpoint`` of delta-io/delta and kernel-rs's copy of it (``unshredded-variant``),
with variants at the top level and inside structs, arrays and maps.

Every rewrite (compact, zorder, cluster, purge) keeps the rows that delta-rs (``QueryBuilder``)
and delta-kernel-rs (``polars_deltalake``) read, the variant values decoded by pyspark's
``VariantVal`` straight from the files, and each variant's two binaries byte for byte; new files
hold the struct of required binaries ``value, metadata`` that Spark writes, and stats with a
``nullCount`` and no bounds for variant columns. Analyze writes the same stats, checkpoints write
``stats_parsed`` as Delta Spark's stats schema has it, restore re-adds the files as they were.
Ordering or partitioning by a variant is refused with a typed error and nothing written.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.errors import ConfigError, CorruptLogError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.cluster_by import cluster_by
from delta_core.maintenance.restore import restore
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.spark.cluster import cluster
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.purge import purge
from delta_core.maintenance.spark.zorder import zorder
from delta_core.model.actions import Add
from delta_core.write.table_writes import set_properties
from delta_core.write.transaction import Transaction
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing
from tests.dv_files import commit_deletion_vector
from tests.maintenance.test_analyze import strip_stats
from tests.variant_rows import deltars_rows, file_rows, kernel_rows

GOLDEN = MODERN_DIR / "golden-spark-variant-checkpoint"
KERNEL_COPY = MODERN_DIR / "krs-unshredded-variant"
VARIANT_COLUMNS = ("v", "array_of_variants", "struct_of_variants", "map_of_variants",
                   "array_of_struct_of_variants", "struct_of_array_of_variants")
# Delta Spark's stats for these files: bounds for id only; a nullCount for every column, variants
# (and arrays and maps) as one count, structs nesting
NULL_COUNT_SHAPE = {"id": 0, "v": 0, "array_of_variants": 0, "struct_of_variants": {"v": 0}, "map_of_variants": 0,
                    "array_of_struct_of_variants": 0, "struct_of_array_of_variants": {"v": 0}}


# Spark wrote the fixtures in 2024-2025; a git checkout gives their files the checkout's time,
# so the copies get an old one back (log cleanup and vacuum judge age by modification time).
FIXTURE_MTIME = 1_735_689_600  # 2025-01-01


def copy(root, tmp_path) -> str:
    uri = str(tmp_path / "t")
    shutil.copytree(root, uri)
    for directory, _, names in os.walk(uri):
        for name in names:
            os.utime(os.path.join(directory, name), (FIXTURE_MTIME, FIXTURE_MTIME))
    return uri


def observed(uri: str) -> dict[str, Any]:
    """What every rewrite must keep: rows by both readers and from the files, decoded and raw."""
    return {"deltars": deltars_rows(uri), "kernel": kernel_rows(uri), "files": file_rows(uri),
            "raw": file_rows(uri, raw=True), "deltars_raw": deltars_rows(uri, raw=True)}


def assert_variant_layout(uri: str, path: str) -> None:
    """Every variant of the file at ``path`` is the struct of required binaries value, metadata."""
    schema = pq.ParquetFile(os.path.join(uri, path)).schema
    groups = {}
    for i in range(len(schema)):
        column = schema.column(i)
        if column.name in ("value", "metadata") and column.path.split(".")[-2] != "key_value":
            groups.setdefault(column.path.rsplit(".", 1)[0], []).append(
                (column.name, column.physical_type, column.max_definition_level))
    assert len(groups) == 6  # one struct per variant position in the schema
    for parent, children in groups.items():
        assert [c[:2] for c in children] == [("value", "BYTE_ARRAY"), ("metadata", "BYTE_ARRAY")], parent
        assert children[0][2] == children[1][2], parent  # both required: no definition level of their own


def new_adds(table: DeltaTable, version: int) -> list[Add]:
    return [a for a in table.commit_actions(version) if isinstance(a, Add)]


def assert_rewrite_kept_everything(uri: str, before: dict[str, Any], version: int) -> None:
    table = DeltaTable(uri)
    assert observed(uri) == before
    adds = new_adds(table, version)
    assert adds
    for add in adds:
        assert_variant_layout(uri, add.path)
        stats = json.loads(add.stats or "{}")
        assert set(stats["minValues"]) == set(stats["maxValues"]) == {"id"}
        assert stats["nullCount"] == NULL_COUNT_SHAPE


def test_every_command_runs_on_a_variant_table(tmp_path, capsys):
    uri = copy(GOLDEN, tmp_path)
    before = observed(uri)

    def run(command: str, *argv: str) -> Any:
        assert main([command, uri, *argv, "--json"]) == 0
        return json.loads(capsys.readouterr().out)

    detail = run("describe")
    assert detail["reader_features"] == ["variantType-preview"] and detail["num_records"] == 102
    assert detail["schema_field_names"] == ["id", *VARIANT_COLUMNS]
    assert [c["version"] for c in run("history")] == [2, 1, 0]
    checks = {c["name"]: c for c in run("health")["checks"]}
    assert checks["protocol_supported"]["status"] == "pass"
    assert run("set-properties", "delta.checkpoint.writeStatsAsStruct=true")["version"] == 3
    assert run("checkpoint", "--force")["checkpoint_version"] == 3
    assert run("compact-log")["commits_compacted"] == 0  # one commit since the checkpoint: nothing to compact
    cleaned = run("cleanup-log")  # the copies keep the fixture's old mtimes: commits 0 and 1 expired
    assert (cleaned["checkpoint_version"], cleaned["files_deleted"]) == (2, 2)
    assert run("manifest")["data_files_listed"] == 4
    assert run("vacuum")["num_deleted_files"] == 1  # the generator's notes, no file of the table
    assert not os.path.exists(os.path.join(uri, "info.txt"))
    assert observed(uri) == before


def test_checkpoint_writes_stats_parsed_as_delta_spark(tmp_path):
    uri = copy(GOLDEN, tmp_path)
    table = DeltaTable(uri)
    set_properties(table, {"delta.checkpoint.writeStatsAsStruct": "true"})
    assert main(["checkpoint", uri, "--force"]) == 0
    parsed = pq.read_table(os.path.join(uri, "_delta_log", f"{3:020d}.checkpoint.parquet")).column("add").combine_chunks()
    stats_type = parsed.type.field("stats_parsed").type
    # Delta Spark's statsSchema without shredding: no bounds for variants, a long nullCount for each
    assert stats_type.field("minValues").type == stats_type.field("maxValues").type == pa.struct([("id", pa.int64())])
    assert stats_type.field("nullCount").type == pa.struct([
        ("id", pa.int64()), ("v", pa.int64()), ("array_of_variants", pa.int64()),
        ("struct_of_variants", pa.struct([("v", pa.int64())])), ("map_of_variants", pa.int64()),
        ("array_of_struct_of_variants", pa.int64()),
        ("struct_of_array_of_variants", pa.struct([("v", pa.int64())]))])
    live = [s for s in parsed.field("stats_parsed").to_pylist() if s is not None]
    assert sorted(s["numRecords"] for s in live) == [1, 1, 50, 50]
    assert all(s["nullCount"] == NULL_COUNT_SHAPE for s in live)
    assert observed(uri) == observed(str(GOLDEN))


def test_a_variant_partition_column_makes_the_table_invalid(tmp_path, capsys):
    uri = copy(GOLDEN, tmp_path)
    first = os.path.join(uri, "_delta_log", f"{0:020d}.json")
    lines = [json.loads(line) for line in open(first, encoding="utf-8")]
    for line in lines:
        if "metaData" in line:
            line["metaData"]["partitionColumns"] = ["v"]
    with open(first, "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
    for stale in glob.glob(os.path.join(uri, "_delta_log", "*.checkpoint.parquet")) + \
            glob.glob(os.path.join(uri, "_delta_log", "_last_checkpoint")):
        os.remove(stale)
    with pytest.raises(CorruptLogError, match="'v' is a variant, which is not a comparable type"):
        DeltaTable(uri).snapshot()
    before = listing(uri)
    assert main(["compact", uri, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "corrupt_log"
    assert listing(uri) == before


@pytest.mark.spark
@pytest.mark.parametrize("root", [GOLDEN, KERNEL_COPY], ids=lambda p: p.name)
def test_compaction_carries_variants_byte_for_byte(spark, tmp_path, root):
    uri = copy(root, tmp_path)
    before = observed(uri)
    assert before["files"] == before["deltars"] == before["kernel"]  # the decoder agrees with both readers
    metrics = compact(DeltaTable(uri), spark)
    assert (metrics.num_removed_files, metrics.num_added_files) == (4, 1)
    assert_rewrite_kept_everything(uri, before, metrics.version)


@pytest.mark.spark
def test_zorder_and_cluster_refuse_variant_columns_and_rewrite_on_others(spark, tmp_path):
    uri = copy(GOLDEN, tmp_path)
    table = DeltaTable(uri)
    before, files = observed(uri), listing(uri)
    for column in ("v", "V"):
        with pytest.raises(ConfigError, match=r"cannot Z-order: column 'v' is a variant, which is not a comparable"):
            zorder(table, spark, [column])
    with pytest.raises(ConfigError, match=r"cannot cluster: column 'v' is a variant"):
        cluster_by(table, ["v"])
    with pytest.raises(ConfigError, match="nested clustering column"):
        cluster_by(table, ["struct_of_variants.v"])
    with pytest.raises(ConfigError, match="only primitive, orderable columns"):
        zorder(table, spark, ["array_of_variants"])
    assert listing(uri) == files  # refused before anything was written

    z = zorder(table, spark, ["id"])
    assert_rewrite_kept_everything(uri, before, z.version)
    cluster_by(table, ["id"])
    with pytest.raises(ConfigError, match=r"cannot cluster: column 'v' is a variant"):
        cluster(table, spark, columns=["v"])
    c = cluster(table, spark, full=True)
    assert_rewrite_kept_everything(uri, before, c.version)


@pytest.mark.spark
def test_purge_and_restore(spark, tmp_path):
    uri = copy(GOLDEN, tmp_path)
    table = DeltaTable(uri)
    set_properties(table, {"delta.enableDeletionVectors": "true"})
    original = {a.path: a for a in table.snapshot().add_actions()}
    big = next(p for p, a in original.items() if a.size > 7000)
    commit_deletion_vector(table, big, [0, 3, 49])
    before = observed(uri)
    assert sum(before["deltars"].values()) == 99
    metrics = purge(table, spark)
    assert metrics.num_removed_files == metrics.num_added_files == 1
    assert_rewrite_kept_everything(uri, before, metrics.version)

    restored = restore(table, version=3)  # before the deletion vector
    again = {a.path: a for a in table.snapshot().add_actions()}
    assert restored.version == table.latest_version()
    assert {p: (a.size, a.stats, a.deletion_vector) for p, a in again.items()} == \
        {p: (a.size, a.stats, a.deletion_vector) for p, a in original.items()}
    assert observed(uri) == observed(str(GOLDEN))


@pytest.mark.spark
def test_analyze_writes_null_counts_only_for_variants(spark, tmp_path):
    uri = copy(GOLDEN, tmp_path)
    spark_stats = {a.path: json.loads(a.stats or "{}") for a in DeltaTable(uri).snapshot().add_actions()}
    for stale in glob.glob(os.path.join(uri, "_delta_log", "*checkpoint*")):
        os.remove(stale)
    strip_stats(uri)
    table = DeltaTable(uri)
    assert all(a.stats is None for a in table.snapshot().add_actions())
    before = observed(uri)
    metrics = analyze(table, spark)
    assert metrics.version == 3
    recomputed = {a.path: json.loads(a.stats or "{}") for a in table.snapshot().add_actions()}
    assert recomputed == spark_stats  # Delta Spark's own stats for these files, key for key
    assert observed(uri) == before


def _write_foreign_file(uri: str, name: str, variant: pa.DataType, v: pa.Array, ids: list[int]) -> Add:
    """A file as another writer lays variant ``v`` out (the other variant columns null)."""
    spark_schema = pq.read_schema(next(GOLDEN.glob("part-*.parquet")))
    schema = pa.schema([pa.field("v", variant) if f.name == "v" else f.remove_metadata() for f in spark_schema])
    columns = {"id": pa.array(ids, pa.int64()), "v": v}
    data = pa.table([columns.get(f.name, pa.array([None] * len(ids), f.type)) for f in schema], schema=schema)
    pq.write_table(data, os.path.join(uri, name))
    stats = {"numRecords": len(ids), "minValues": {"id": min(ids)}, "maxValues": {"id": max(ids)},
             "nullCount": {**{c: len(ids) for c in NULL_COUNT_SHAPE}, "id": 0, "v": 0,
                           "struct_of_variants": {"v": len(ids)}, "struct_of_array_of_variants": {"v": len(ids)}}}
    return Add(name, {}, os.path.getsize(os.path.join(uri, name)), 1_700_000_000_000, True, json.dumps(stats))


def _append(uri: str, add: Add) -> None:
    txn = Transaction(DeltaTable(uri), operation="WRITE", operation_parameters={"mode": "Append"})
    with txn:
        txn.add_action(add)
        txn.commit()


@pytest.mark.spark
def test_a_rewrite_aligns_variant_fields_by_name(spark, tmp_path):
    """kernel-rs and delta-rs expose ``metadata, value``: a file in that order is rewritten as the
    protocol's ``value, metadata`` with the same bytes."""
    uri = copy(GOLDEN, tmp_path)
    flipped = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary(), False)])
    key = bytes.fromhex("010100036b6579")
    values = pa.array([{"metadata": key, "value": bytes.fromhex("02010000020c") + bytes([i])} for i in (7, 8)],
                      flipped)
    _append(uri, _write_foreign_file(uri, "flipped.parquet", flipped, values, [500, 501]))
    before = observed(uri)
    assert '{"variant": "{\\"key\\":8}"}' in next(r for r in before["files"] if '"id": 501' in r)
    metrics = compact(DeltaTable(uri), spark)
    assert metrics.num_removed_files == 5
    table = DeltaTable(uri)
    assert observed(uri) == before
    [add] = new_adds(table, metrics.version)
    assert_variant_layout(uri, add.path)


@pytest.mark.spark
def test_a_shredded_file_in_a_table_without_shredding_is_rewritten_unshredded(spark, tmp_path):
    """Its writer broke the protocol (no variantShredding feature), but its value is well defined
    (VariantShredding.md): a rewrite rebuilds it and leaves the table valid."""
    uri = copy(GOLDEN, tmp_path)
    shredded = pa.struct([pa.field("metadata", pa.binary(), False), pa.field("value", pa.binary()),
                          pa.field("typed_value", pa.int64())])
    values = pa.array([{"metadata": bytes.fromhex("010000"), "value": None, "typed_value": 5}], shredded)
    _append(uri, _write_foreign_file(uri, "shredded.parquet", shredded, values, [600]))
    metrics = compact(DeltaTable(uri), spark)
    [add] = new_adds(DeltaTable(uri), metrics.version)
    assert_variant_layout(uri, add.path)
    assert '{"variant": "5"}' in next(r for r in file_rows(uri) if '"id": 600' in r)
