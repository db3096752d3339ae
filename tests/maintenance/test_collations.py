"""Tables with collated string columns (protocol RFC "Collated String Type"; writer features
``collations`` and ``collations-preview``): every command reads them, rewrites keep the schema's
``__COLLATIONS`` and write UTF-8 binary stats, which the RFC allows. ``statsWithCollation``
stays only where it stays true: files re-added unchanged (checkpoint, restore) keep theirs; new
files (compaction) and recomputed stats (analyze) carry none, since we collect no collated
bounds. The golden tables are empty: rows are appended by our writer, and Delta Spark's
collated stats are put on those files as a ``COMPUTE STATS`` commit would."""

from __future__ import annotations

import collections
import dataclasses
import json
import shutil

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.read import describe_record
from delta_core.health.checks import CheckStatus, check_protocol_supported
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from delta_core.maintenance.restore import restore
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, set_properties
from delta_core.write.transaction import Transaction
from tests.conftest import MODERN_DIR
from tests.kernel_oracle import kernel_rows
from tests.maintenance.conftest import file_actions

pytestmark = pytest.mark.spark

FIXTURES = {"collations": "golden-collations-table", "collations-preview": "golden-collations-preview-table"}
COLLATED = {"utf8_lcase_col": "spark.UTF8_LCASE", "unicode_col": "icu.UNICODE"}
# Bounds under each collation, as Delta Spark would record them (keys carry the version).
WITH_COLLATION = {
    "spark.UTF8_LCASE.75.1": {"minValues": {"utf8_lcase_col": "a"}, "maxValues": {"utf8_lcase_col": "C"}},
    "icu.UNICODE.75.1": {"minValues": {"unicode_col": "e"}, "maxValues": {"unicode_col": "Z"}},
}


def rows(first: int) -> pa.Table:
    return pa.table({"id": pa.array([first, first + 1, first + 2], pa.int32()),
                     "utf8_binary_col": ["b", "A", "c"], "utf8_lcase_col": ["B", "a", "C"],
                     "unicode_col": ["é", "e", "Z"]})


def both_oracles(root: str) -> tuple[collections.Counter, collections.Counter]:
    kernel = collections.Counter(repr(sorted(r.items())) for r in kernel_rows(root).to_pylist())
    dt_ = deltalake.DeltaTable(root)
    got = pa.table(deltalake.QueryBuilder().register("t", dt_).execute("select * from t").read_all())
    return kernel, collections.Counter(repr(sorted(r.items())) for r in got.to_pylist())


def collated_table(tmp_path, feature: str) -> tuple[str, DeltaTable]:
    """The golden table with two appended files, whose stats then gain ``statsWithCollation``."""
    root = str(tmp_path / "t")
    shutil.copytree(MODERN_DIR / FIXTURES[feature], root)
    table = DeltaTable(root)
    assert feature in table.snapshot().protocol.writer_features
    append(table, rows(1))
    append(table, rows(4))
    txn = Transaction(table, operation="COMPUTE STATS")
    with txn:
        txn.add_actions(dataclasses.replace(a, stats=json.dumps({**json.loads(a.stats or "{}"),
                                                                 "statsWithCollation": WITH_COLLATION}),
                                            data_change=False)
                        for a in table.snapshot().add_actions())
        txn.commit()
    return root, table


def collations_in_schema(table: DeltaTable) -> dict[str, str]:
    out: dict[str, str] = {}
    for f in table.snapshot().schema.fields:
        out.update(f.metadata.get("__COLLATIONS", {}))
    return out


def stats_of(table: DeltaTable) -> list[dict]:
    return [json.loads(a.stats or "{}") for a in table.snapshot().add_actions()]


@pytest.mark.parametrize("feature", sorted(FIXTURES))
def test_compaction_keeps_the_collations_and_drops_collated_stats(spark, tmp_path, feature):
    root, table = collated_table(tmp_path, feature)
    schema_before = table.snapshot().metadata.schema_string
    before = both_oracles(root)
    assert all(s["statsWithCollation"] == WITH_COLLATION for s in stats_of(table))
    m = compact(table, spark)
    assert (m.num_removed_files, m.num_added_files) == (2, 1)
    assert table.snapshot().metadata.schema_string == schema_before  # no metaData action at all
    assert collations_in_schema(table) == COLLATED
    (add,), removes = file_actions(table, m.version)
    stats = json.loads(add["stats"])
    assert "statsWithCollation" not in stats  # not collected, so not claimed
    # UTF-8 binary bounds: 'B' < 'a' and 'Z' < 'e' < 'é' byte-wise
    assert stats["minValues"] == {"id": 1, "utf8_binary_col": "A", "utf8_lcase_col": "B", "unicode_col": "Z"}
    assert stats["maxValues"] == {"id": 6, "utf8_binary_col": "c", "utf8_lcase_col": "a", "unicode_col": "é"}
    assert len(removes) == 2
    assert both_oracles(root) == before
    # restore re-adds the old files as they were: their collated stats are still true
    restore(table, version=m.version - 1)
    assert all(s["statsWithCollation"] == WITH_COLLATION for s in stats_of(table))
    assert both_oracles(root) == before


def test_analyze_recomputes_stats_without_collated_bounds(spark, tmp_path):
    root, table = collated_table(tmp_path, "collations")
    before = both_oracles(root)
    m = analyze(table, spark, full=True)
    assert m.files_analyzed == 2
    assert [sorted(s) for s in stats_of(table)] == [["maxValues", "minValues", "nullCount", "numRecords"]] * 2
    assert collations_in_schema(table) == COLLATED
    assert both_oracles(root) == before


def test_describe_health_checkpoint_and_vacuum_read_collated_tables(tmp_path):
    root, table = collated_table(tmp_path, "collations")
    snap = table.snapshot()
    record = describe_record(snap)
    assert record["num_files"] == 2 and "collations" in record["writer_features"]
    report = table_health(table, columns=["utf8_lcase_col"])
    assert report.metrics.num_files == 2 and report.metrics.skip_ratio is not None
    check = check_protocol_supported(snap.protocol, snap.metadata, uri=root)
    assert check.status is CheckStatus.PASS
    set_properties(table, {"delta.checkpoint.writeStatsAsStruct": "true"})
    result = write_checkpoint(table)
    # the checkpoint carries each file's stats JSON whole, collated bounds included, and
    # stats_parsed with the binary bounds
    parsed = pq.read_table(f"{root}/_delta_log/{result.version:020d}.checkpoint.parquet").column("add")
    mins = [a["stats_parsed"]["minValues"] for a in parsed.to_pylist() if a is not None]
    assert sorted(m["id"] for m in mins) == [1, 4] and {m["utf8_lcase_col"] for m in mins} == {"B"}
    fresh = DeltaTable(root).snapshot()
    assert fresh.log_segment.checkpoint_version == result.version
    assert all(s["statsWithCollation"] == WITH_COLLATION for s in stats_of(DeltaTable(root)))
    metrics = vacuum(table, dry_run=True)
    assert metrics.num_files_to_delete == 0
