"""``analyze`` (ANALYZE TABLE ... COMPUTE DELTA STATISTICS) on Spark, on real tables whose adds
lost their stats.

The oracle is independent of the code under test: each file's expected stats are computed here
from the Parquet file itself with pyarrow (row count from the footer; per leaf column the null
count, and min/max for the types that take bounds, strings short enough not to be truncated,
timestamps floored to milliseconds), under the rows a deletion vector keeps. Rows are checked
with delta-rs (its query engine applies deletion vectors) and delta-kernel-rs (``polars_deltalake``).
"""

from __future__ import annotations

import collections
import dataclasses
import decimal
import glob
import json
import os
import shutil
from collections.abc import Iterable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import MissingDataFileError
from delta_core.health.report import table_health
from delta_core.log.table import DeltaTable
from delta_core.log.version_checksum import verify_version_checksum
from delta_core.maintenance.skipping import probe_values, skipped_file_ratio
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.stats_coverage import snapshot_coverage
from delta_core.model.partition_values import url_decode_path
from delta_core.write.table_writes import set_properties
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.core_write.conftest import listing
from tests.dv_files import commit_deletion_vector, rows_applying_dvs
from tests.maintenance.conftest import commit_info, file_actions, make_table
from tests.row_tracking_tables import high_water_mark, stable_ids, turn_on_row_tracking

pytestmark = pytest.mark.spark

BOUNDED = {"byte", "short", "integer", "long", "float", "double", "date", "timestamp", "timestamp_ntz", "string"}


def no_spark():
    raise AssertionError("Spark must not start when every file's stats cover the table")


# --- the oracle ------------------------------------------------------------------------------


def leaves(schema_json: dict[str, Any], partition_columns: Iterable[str] = ()) -> list[tuple[tuple[str, ...], str]]:
    """(physical path, Delta type) of every leaf column stored in data files, in schema order."""
    out: list[tuple[tuple[str, ...], str]] = []

    def walk(fields: list[dict[str, Any]], path: tuple[str, ...]) -> None:
        for f in fields:
            if not path and f["name"] in partition_columns:
                continue
            name = f["metadata"].get("delta.columnMapping.physicalName", f["name"])
            t = f["type"]
            if isinstance(t, dict) and t["type"] == "struct":
                walk(t["fields"], (*path, name))
            else:
                out.append(((*path, name), t if isinstance(t, str) else t["type"]))

    walk(schema_json["fields"], ())
    return out


def _json_bound(value: Any, delta_type: str) -> Any:
    if delta_type == "date":
        return value.isoformat()
    if delta_type in ("timestamp", "timestamp_ntz"):
        text = value.replace(tzinfo=None).isoformat(timespec="microseconds")[:-3]  # floored to ms
        return text + ("Z" if delta_type == "timestamp" else "")
    if delta_type == "string":
        assert len(value) <= 32, "the oracle does not truncate: keep test strings short"
    if isinstance(value, float):
        return decimal.Decimal(repr(value))
    return value


def _put(tree: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        tree = tree.setdefault(part, {})
    tree[path[-1]] = value


def expected_stats(file: str, schema_json: dict[str, Any], *, partition_columns: Iterable[str] = (),
                   columns: set[tuple[str, ...]] | None = None, deleted: Iterable[int] = ()) -> dict[str, Any]:
    """The stats of the Parquet ``file`` computed with pyarrow: ``numRecords`` its physical rows,
    the rest over the rows not ``deleted``; ``columns`` (physical paths) limits the columns."""
    data = pq.read_table(file, coerce_int96_timestamp_unit="us")
    gone = set(deleted)
    data = data.filter(pa.array([i not in gone for i in range(data.num_rows)]))
    out: dict[str, Any] = {"numRecords": pq.read_metadata(file).num_rows, "minValues": {}, "maxValues": {},
                           "nullCount": {}}
    for path, delta_type in leaves(schema_json, partition_columns):
        if columns is not None and path not in columns:
            continue
        col = data.column(path[0]).combine_chunks()
        for part in path[1:]:  # flatten() gives a child the nulls of its parent struct
            col = col.flatten()[[f.name for f in col.type].index(part)]
        _put(out["nullCount"], path, col.null_count)
        if (delta_type in BOUNDED or delta_type.startswith("decimal")) and col.null_count < len(col):
            lo, hi = pc.min_max(col).values()
            _put(out["minValues"], path, _json_bound(lo.as_py(), delta_type))
            _put(out["maxValues"], path, _json_bound(hi.as_py(), delta_type))
    return {k: v for k, v in out.items() if v != {}}


def logged_stats(table: DeltaTable) -> dict[str, dict[str, Any]]:
    """Each live file's stats as logged (decimals and floats as Decimal, ``tightBounds`` apart)."""
    out = {}
    for add in table.snapshot().add_actions():
        out[add.path] = json.loads(add.stats, parse_float=decimal.Decimal) if add.stats else None
    return out


def assert_stats_match_files(table: DeltaTable, *, columns: set[tuple[str, ...]] | None = None,
                             deleted: dict[str, list[int]] | None = None, tight: bool | None = None) -> None:
    snapshot = table.snapshot()
    schema = json.loads(snapshot.metadata.schema_string)
    for path, stats in logged_stats(table).items():
        assert stats is not None
        assert stats.pop("tightBounds", None) is tight
        expected = expected_stats(os.path.join(table.uri, url_decode_path(path)), schema,
                                  partition_columns=snapshot.partition_columns, columns=columns,
                                  deleted=(deleted or {}).get(path, ()))
        assert stats == expected, path


# --- helpers -------------------------------------------------------------------------------


def strip_stats(root: str, *, keep_num_records: Iterable[str] = ()) -> None:
    """Drop ``stats`` from every ``add`` of every commit (keep only ``numRecords`` for the paths in
    ``keep_num_records``), as a writer with stats turned off leaves them; the version checksums,
    which would now disagree, go too."""
    keep = set(keep_num_records)
    for name in sorted(glob.glob(os.path.join(root, "_delta_log", "*.json"))):
        with open(name, encoding="utf-8") as fh:
            lines = [json.loads(line) for line in fh if line.strip()]
        for line in lines:
            add = line.get("add")
            if add and "stats" in add:
                records = json.loads(add.pop("stats")).get("numRecords")
                if add["path"] in keep:
                    add["stats"] = json.dumps({"numRecords": records})
        with open(name, "w", encoding="utf-8") as fh:
            fh.write("".join(json.dumps(line) + "\n" for line in lines))
    for name in glob.glob(os.path.join(root, "_delta_log", "*.crc")):
        os.remove(name)


def copy(source, tmp_path) -> str:
    uri = str(tmp_path / "t")
    shutil.copytree(source, uri)
    return uri


def rows(uri: str) -> collections.Counter:
    """The rows delta-rs reads (deletion vectors applied), as canonical JSON."""
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in rows_applying_dvs(uri).to_pylist())


def filtered(uri: str) -> collections.Counter:
    """Rows delta-rs's query engine finds for a filter on stats columns (it prunes files by stats)."""
    import deltalake

    query = "select * from t where id between 5 and 30 and name = 'n7' and ts >= '2023-11-14T22:13:20Z'"
    got = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute(query).read_all()
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in pa.table(got).to_pylist())


def kernel_rows(uri: str) -> collections.Counter:
    import polars_deltalake

    return collections.Counter(json.dumps(r, sort_keys=True, default=str)
                               for r in polars_deltalake.read_delta(uri).to_arrow().to_pylist())


def adds_by_path(table: DeltaTable) -> dict[str, dict[str, Any]]:
    return {a.path: dataclasses.asdict(a) for a in table.snapshot().add_actions()}


def without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


# --- tests ---------------------------------------------------------------------------------


def test_analyze_recomputes_the_stats_our_writer_left_out(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3, rows=20)  # six files, partitioned by region
    some = sorted(table.snapshot().file_paths)[:2]
    strip_stats(uri, keep_num_records=some)  # the proof compares these two files' numRecords
    table = DeltaTable(uri)
    before_adds, before_rows, before_kernel = adds_by_path(table), rows(uri), kernel_rows(uri)
    before_filtered = filtered(uri)
    assert 0 < sum(before_filtered.values()) < sum(before_rows.values())
    assert snapshot_coverage(table.snapshot()).ratio == 0.0
    assert {r.operation: r.estimated_gain for r in table_health(table).recommendations}["analyze"] == 6.0
    assert skipped_file_ratio(table.snapshot(), {"id": pa.array([5, 50], pa.int64())}) == 0.0  # nothing skips
    read_version = table.latest_version()

    eu = analyze(table, spark, where="region = 'eu'")

    assert (eu.version, eu.files_considered, eu.files_analyzed, eu.files_updated) == (read_version + 1, 3, 3, 3)
    info = commit_info(table, eu.version)
    assert info["operation"] == "COMPUTE STATS" and info["isBlindAppend"] is False
    assert info["readVersion"] == read_version
    assert json.loads(info["operationParameters"]["predicate"]) == [eu.predicate]
    assert eu.predicate is not None and "eu" in eu.predicate

    rest = analyze(table, spark)

    assert (rest.files_considered, rest.files_covered, rest.files_analyzed, rest.num_batches) == (6, 3, 3, 1)
    assert rest.columns == ("id", "x", "name", "day", "ts")
    assert commit_info(table, rest.version)["operationParameters"] == {"predicate": '["true"]'}
    adds, removes = file_actions(table, rest.version)
    assert removes == [] and len(adds) == 3 and all(a["dataChange"] is False for a in adds)
    after_adds = adds_by_path(table)
    assert after_adds.keys() == before_adds.keys()
    for path, add in after_adds.items():  # every field kept but the stats
        assert without(add, "stats", "data_change") == without(before_adds[path], "stats", "data_change")
    assert_stats_match_files(table)
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel
    # readers that skip on the new stats find the same rows as before, when nothing could be skipped
    assert filtered(uri) == before_filtered
    assert verify_version_checksum(table.snapshot()).status == "ok"  # the commit wrote its .crc
    # data skipping works again: a point query on id skips files
    snapshot = table.snapshot()
    assert snapshot_coverage(snapshot).ratio == 1.0
    health = table_health(table)
    assert health.metrics.stats_coverage == 1.0 and "analyze" not in {r.operation for r in health.recommendations}
    assert skipped_file_ratio(snapshot, probe_values(snapshot, ["id"])) > 0.5

    again = analyze(table, no_spark)
    assert again.version is None and again.files_analyzed == 0 and table.latest_version() == rest.version


@pytest.mark.parametrize("source", [MODERN_DIR / "rs-cdc_ict_table", CONFORMANCE_DIR / "dat-no_stats"],
                         ids=lambda p: p.name)
def test_covered_table_commits_nothing_and_starts_no_spark(tmp_path, source):
    # dat-no_stats logs numRecords only, with delta.dataSkippingNumIndexedCols=0: that is covered.
    uri = copy(source, tmp_path)
    table = DeltaTable(uri)
    version = table.latest_version()
    before = listing(uri)
    metrics = analyze(table, no_spark)
    assert metrics.version is None and metrics.versions == () and metrics.files_analyzed == 0
    assert metrics.files_covered == metrics.files_considered == table.snapshot().num_files
    assert table.latest_version() == version and listing(uri) == before


def test_columns_indexed_after_the_files_were_written(spark, tmp_path):
    uri = copy(CONFORMANCE_DIR / "dat-no_stats", tmp_path)
    table = DeltaTable(uri)
    before = rows(uri)
    set_properties(table, {"delta.dataSkippingNumIndexedCols": "2"})

    metrics = analyze(table, spark)

    assert metrics.columns == ("letter", "int") and metrics.files_updated == 1
    assert_stats_match_files(table, columns={("letter",), ("int",)})
    assert rows(uri) == before and kernel_rows(uri) == before


def test_stats_columns_property(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=2, rows=20, properties={"delta.dataSkippingStatsColumns": "ts,name"})
    strip_stats(uri)
    table = DeltaTable(uri)

    metrics = analyze(table, spark)

    assert metrics.columns == ("name", "ts") and metrics.files_updated == 4
    assert_stats_match_files(table, columns={("name",), ("ts",)})
    assert all(set(s["nullCount"]) == {"name", "ts"} for s in logged_stats(table).values())


@pytest.mark.parametrize("name", ["golden-table-with-columnmapping-mode-name",
                                  "golden-table-with-columnmapping-mode-id"])
def test_column_mapping_table(spark, tmp_path, name):
    uri = copy(CONFORMANCE_DIR / name, tmp_path)
    spark_stats = logged_stats(DeltaTable(uri))  # what Delta Spark wrote
    strip_stats(uri)
    table = DeltaTable(uri)
    before, before_kernel = rows(uri), kernel_rows(uri)

    metrics = analyze(table, spark)

    assert metrics.files_updated == 2 and "nested_struct.ac.aca" in metrics.columns
    assert_stats_match_files(table)  # keyed by physical names: the oracle reads the files' own names
    assert logged_stats(table) == spark_stats  # and the same as Delta Spark's stats of these files
    assert rows(uri) == before and kernel_rows(uri) == before_kernel


def test_deletion_vectors_count_physical_rows_and_bound_live_ones(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=2, rows=20, properties={"delta.enableDeletionVectors": "true"})
    victim = sorted(table.snapshot().file_paths)[0]  # 10 rows
    commit_deletion_vector(table, victim, [0, 3, 4])
    strip_stats(uri)
    table = DeltaTable(uri)
    before, before_kernel = rows(uri), kernel_rows(uri)
    assert sum(before.values()) == 40 - 3

    metrics = analyze(table, spark)

    assert metrics.files_updated == 4
    stats = logged_stats(table)
    assert stats[victim]["numRecords"] == 10  # the file's rows, deleted ones included
    assert_stats_match_files(table, deleted={victim: [0, 3, 4]}, tight=True)
    assert table.snapshot().files.filter(pc.is_valid(table.snapshot().files.column("deletion_vector"))) \
        .column("path").to_pylist() == [victim]  # the vector is kept
    assert rows(uri) == before and kernel_rows(uri) == before_kernel


def test_full_tightens_wide_bounds_of_a_file_with_a_deletion_vector(spark, tmp_path):
    # delta-kernel-rs's table: file 0 has 5 rows, a vector deleting 3 and wide bounds; file 1 none.
    uri = copy(MODERN_DIR / "krs-with-short-dv", tmp_path)
    table = DeltaTable(uri)
    wide, plain = sorted(table.snapshot().file_paths)
    assert logged_stats(table)[wide]["tightBounds"] is False
    assert analyze(table, no_spark).files_analyzed == 0  # wide bounds cover: nothing to do
    before, before_kernel = rows(uri), kernel_rows(uri)

    metrics = analyze(table, spark, full=True)

    assert metrics.full and metrics.files_analyzed == metrics.files_updated == 2
    stats = logged_stats(table)
    assert stats[wide]["numRecords"] == 5 and stats[wide]["tightBounds"] is True
    # the live rows of the wide file: the ids delta-rs reads, less the other file's (ids are unique)
    ids = {json.loads(r)["id"] for r in before} - set(pq.read_table(os.path.join(uri, plain)).column("id").to_pylist())
    assert len(ids) == 2 and (stats[wide]["minValues"]["id"], stats[wide]["maxValues"]["id"]) == (min(ids), max(ids))
    assert stats[wide]["nullCount"] == {"id": 0, "value": 0, "timestamp": 0, "rand": 0}
    assert rows(uri) == before and kernel_rows(uri) == before_kernel


def test_row_tracking_ids_are_kept(spark, tmp_path):
    uri = str(tmp_path / "t")
    make_table(uri, appends=2, rows=20)
    turn_on_row_tracking(uri)
    strip_stats(uri, keep_num_records=DeltaTable(uri).snapshot().file_paths)
    table = DeltaTable(uri)
    ids, mark, adds = stable_ids(uri, key_columns=("id",)), high_water_mark(uri), adds_by_path(table)

    metrics = analyze(table, spark)

    assert metrics.files_updated == 4
    after = adds_by_path(table)
    assert {p: (a["base_row_id"], a["default_row_commit_version"]) for p, a in after.items()} == \
        {p: (a["base_row_id"], a["default_row_commit_version"]) for p, a in adds.items()}
    assert stable_ids(uri, key_columns=("id",)) == ids and high_water_mark(uri) == mark
    assert_stats_match_files(table)


def test_a_missing_file_is_named_and_nothing_is_committed(spark, tmp_path):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=1, rows=20)
    gone = sorted(table.snapshot().file_paths)[0]
    strip_stats(uri)
    os.remove(os.path.join(uri, url_decode_path(gone)))
    version, before = table.latest_version(), listing(uri)
    with pytest.raises(MissingDataFileError, match="FSCK REPAIR TABLE") as err:
        analyze(table, spark)
    assert url_decode_path(gone) in str(err.value)
    assert table.latest_version() == version and listing(uri) == before
