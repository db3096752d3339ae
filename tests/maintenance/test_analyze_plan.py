"""Analyze without Spark: stats coverage (which files need new stats), the plan, the proof of an
in-place stats update and its commit under a concurrent change, on hand-written logs and on
tables our writer wrote."""

from __future__ import annotations

import json
import os

import pytest

from delta_core.errors import RewriteVerificationError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.analyze_commit import commit_stats
from delta_core.maintenance.analyze_plan import plan_analyze
from delta_core.maintenance.stats_coverage import required_stats_columns, snapshot_coverage
from delta_core.maintenance.stats_recompute import files_stats_json
from delta_core.model.actions import Add
from delta_core.write.rewrite_proof import verify_restats
from delta_core.write.table_writes import delete_files, set_properties
from tests.maintenance.conftest import commit_lines, make_table

T0 = 1_700_000_000_000
SCHEMA = {"type": "struct", "fields": [
    {"name": "i", "type": "long", "nullable": True, "metadata": {}},
    {"name": "f", "type": "double", "nullable": True, "metadata": {}},
    {"name": "s", "type": "string", "nullable": True, "metadata": {}},
    {"name": "b", "type": "boolean", "nullable": True, "metadata": {}},
    {"name": "st", "type": {"type": "struct", "fields": [
        {"name": "d", "type": "date", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}},
]}
FULL = {"numRecords": 10, "minValues": {"i": 1, "f": 0.5, "s": "a", "st": {"d": "2024-01-01"}},
        "maxValues": {"i": 9, "f": 2.5, "s": "z", "st": {"d": "2024-02-01"}},
        "nullCount": {"i": 0, "f": 0, "s": 0, "b": 1, "st": {"d": 0}}}


def stats_without(*keys: str, **changes: object) -> str:
    """``FULL`` with ``keys`` ("minValues.i", "nullCount.st.d", ...) dropped and ``changes`` set."""
    stats = json.loads(json.dumps(FULL))
    for key in keys:
        *parents, leaf = key.split(".")
        node = stats
        for p in parents:
            node = node[p]
        del node[leaf]
    stats.update(changes)
    return json.dumps(stats)


def write_table(root: str, stats: dict[str, str | None], *, configuration: dict[str, str] | None = None,
                dv_cardinality: dict[str, int] | None = None) -> DeltaTable:
    """A one-commit log partitioned by ``p`` whose files (pointing at no data) carry ``stats``."""
    os.makedirs(os.path.join(root, "_delta_log"))
    lines = [{"commitInfo": {"timestamp": T0, "operation": "WRITE"}},
             {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                           "writerFeatures": ["deletionVectors"]}},
             {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps(SCHEMA), "partitionColumns": ["p"],
                           "configuration": configuration or {}, "createdTime": T0}}]
    for path, text in stats.items():
        body = {"path": path, "partitionValues": {"p": path[:1]}, "size": 100, "modificationTime": T0,
                "dataChange": True}
        if text is not None:
            body["stats"] = text
        if dv_cardinality and path in dv_cardinality:
            body["deletionVector"] = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1,
                                      "sizeInBytes": 36, "cardinality": dv_cardinality[path]}
        lines.append({"add": body})
    with open(os.path.join(root, "_delta_log", f"{0:020d}.json"), "w", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(line) + "\n" for line in lines))
    return DeltaTable(root)


def covered(table: DeltaTable) -> dict[str, bool]:
    snapshot = table.snapshot()
    return dict(zip(snapshot.files.column("path").to_pylist(), snapshot_coverage(snapshot).covered.to_pylist()))


def test_required_columns_are_the_writers_indexed_leaves(tmp_path):
    table = write_table(str(tmp_path / "a"), {})
    # every leaf but the partition column, nested ones by their dotted path
    assert [c.name for c in required_stats_columns(table.snapshot().metadata)] == ["i", "f", "s", "b", "st.d"]
    two = write_table(str(tmp_path / "b"), {}, configuration={"delta.dataSkippingNumIndexedCols": "2"})
    assert [c.name for c in required_stats_columns(two.snapshot().metadata)] == ["i", "f"]
    named = write_table(str(tmp_path / "c"), {}, configuration={"delta.dataSkippingStatsColumns": "st,s"})
    assert [c.name for c in required_stats_columns(named.snapshot().metadata)] == ["s", "st.d"]


def test_coverage_rules(tmp_path):
    table = write_table(str(tmp_path / "t"), {
        "a/full.parquet": json.dumps(FULL),
        "a/none.parquet": None,
        "a/records-only.parquet": json.dumps({"numRecords": 10}),
        "a/no-records.parquet": stats_without("numRecords"),
        "a/no-null-count.parquet": stats_without("nullCount.st.d"),
        "a/no-int-max.parquet": stats_without("maxValues.i"),
        # absent bounds that are no gap: a float may hold NaN, a string max may have no short bound,
        # a column whose live rows are all null has nothing to bound
        "b/no-float-bounds.parquet": stats_without("minValues.f", "maxValues.f"),
        "b/no-string-max.parquet": stats_without("maxValues.s"),
        "b/no-string-min.parquet": stats_without("minValues.s"),
        "b/all-null-int.parquet": stats_without("minValues.i", "maxValues.i", nullCount={**FULL["nullCount"], "i": 10}),
        # 10 rows, 4 deleted, 6 null: every live row is null
        "b/all-live-null-dv.parquet": stats_without("minValues.i", "maxValues.i",
                                                    nullCount={**FULL["nullCount"], "i": 6}),
        "b/some-null-int.parquet": stats_without("minValues.i", "maxValues.i", nullCount={**FULL["nullCount"], "i": 6}),
        "b/unparsable-date.parquet": json.dumps({**FULL, "minValues": {**FULL["minValues"], "st": {"d": "soon"}}}),
        "b/wide.parquet": json.dumps({**FULL, "tightBounds": False}),
    }, dv_cardinality={"b/all-live-null-dv.parquet": 4, "b/wide.parquet": 2})
    assert covered(table) == {
        "a/full.parquet": True, "a/none.parquet": False, "a/records-only.parquet": False,
        "a/no-records.parquet": False, "a/no-null-count.parquet": False, "a/no-int-max.parquet": False,
        "b/no-float-bounds.parquet": True, "b/no-string-max.parquet": True, "b/no-string-min.parquet": False,
        "b/all-null-int.parquet": True, "b/all-live-null-dv.parquet": True, "b/some-null-int.parquet": False,
        "b/unparsable-date.parquet": False, "b/wide.parquet": True,
    }
    assert snapshot_coverage(table.snapshot()).ratio == round(6 / 14, 6)


def test_fewer_indexed_columns_need_fewer_stats(tmp_path):
    table = write_table(str(tmp_path / "t"), {"a/1.parquet": json.dumps({"numRecords": 3, "nullCount": {"i": 0},
                                                                         "minValues": {"i": 1}, "maxValues": {"i": 2}}),
                                              "a/2.parquet": json.dumps({"numRecords": 3})},
                        configuration={"delta.dataSkippingNumIndexedCols": "1"})
    assert covered(table) == {"a/1.parquet": True, "a/2.parquet": False}
    zero = write_table(str(tmp_path / "z"), {"a/1.parquet": json.dumps({"numRecords": 3}), "a/2.parquet": None},
                       configuration={"delta.dataSkippingNumIndexedCols": "0"})
    assert covered(zero) == {"a/1.parquet": True, "a/2.parquet": False}  # numRecords is still needed
    plan = plan_analyze(zero.snapshot())
    assert plan.columns == () and plan.read_columns == ("i",)  # one column, to count the rows


def test_plan_selects_uncovered_files_in_the_predicate(tmp_path):
    table = write_table(str(tmp_path / "t"), {"a/1.parquet": None, "a/2.parquet": json.dumps(FULL),
                                              "b/1.parquet": None, "b/2.parquet": json.dumps({"numRecords": 1})})
    plan = plan_analyze(table.snapshot())
    assert plan.files.column("path").to_pylist() == ["a/1.parquet", "b/1.parquet", "b/2.parquet"]
    assert (plan.files_considered, plan.files_covered, plan.num_files, plan.input_bytes) == (4, 1, 3, 300)
    assert plan.columns == ("i", "f", "s", "b", "st.d") and plan.read_columns == ("i", "f", "s", "b", "st")
    assert plan.operation_parameters().to_commit_info() == {"predicate": '["true"]'}

    in_a = plan_analyze(table.snapshot(), where="p = 'a'")
    assert in_a.files.column("path").to_pylist() == ["a/1.parquet"] and in_a.files_considered == 2
    assert json.loads(in_a.operation_parameters().to_commit_info()["predicate"]) == [in_a.predicate]
    full = plan_analyze(table.snapshot(), where="p = 'a'", full=True)
    assert full.files.column("path").to_pylist() == ["a/1.parquet", "a/2.parquet"]

    batches = plan.batches(200)  # 100-byte files: the third starts at byte 200, in a new commit
    assert [b.column("path").to_pylist() for b in batches] == [["a/1.parquet", "b/1.parquet"], ["b/2.parquet"]]
    assert [len(b) for b in plan.batches(max_files=1)] == [1, 1, 1]
    assert [b.column("size").to_pylist() for b in batches] == [[100, 100], [100]]


def test_a_covered_table_plans_nothing(tmp_path):
    table = make_table(str(tmp_path / "t"), appends=2, rows=10)
    plan = plan_analyze(table.snapshot())
    assert plan.is_empty and plan.batches() == [] and plan.files_covered == plan.files_considered == 4


def test_proof_of_an_in_place_stats_update():
    old = Add("a.parquet", {}, 10, T0, True, json.dumps({"numRecords": 5}), tags={"k": "v"}, base_row_id=7)
    good = Add("a.parquet", {}, 10, T0, False, json.dumps({**FULL, "numRecords": 5}), tags={"k": "v"}, base_row_id=7)
    verify_restats([old], [good])
    without_count = Add("a.parquet", {}, 10, T0, True, None)
    verify_restats([without_count], [Add("a.parquet", {}, 10, T0, False, json.dumps({"numRecords": 3}))])

    def refused(new: Add, match: str, before: Add = old) -> None:
        with pytest.raises(RewriteVerificationError, match=match) as err:
            verify_restats([before], [new], table="t", version=3)
        assert err.value.file == new.path and err.value.version == 3

    refused(Add("a.parquet", {}, 10, T0, False, json.dumps({"numRecords": 6}), tags={"k": "v"}, base_row_id=7),
            "held 5 rows by its stats, but 6")
    refused(Add("a.parquet", {}, 10, T0, False, json.dumps({"numRecords": 5}), tags={"k": "v"}, base_row_id=8),
            "more than its stats")
    refused(Add("a.parquet", {}, 11, T0, False, json.dumps({"numRecords": 5}), tags={"k": "v"}, base_row_id=7),
            "more than its stats")
    refused(Add("a.parquet", {}, 10, T0, True, json.dumps({"numRecords": 5}), tags={"k": "v"}, base_row_id=7),
            "dataChange=true")
    refused(Add("a.parquet", {}, 10, T0, False, json.dumps({"minValues": {}})), "None were counted",
            before=without_count)


def test_commit_leaves_out_a_file_deleted_meanwhile(tmp_path):
    """The stats are computed in-process (what a task runs), then another writer deletes one of the
    files before the commit: the commit conflicts, is retried on the new version without that file,
    and the deleted file stays deleted."""
    table = make_table(str(tmp_path / "t"), appends=2, rows=10)
    snapshot = table.snapshot()
    adds = sorted(snapshot.add_actions(), key=lambda a: a.path)
    stats = files_stats_json(table.storage, snapshot.metadata, [a.path for a in adds], columns=snapshot.schema.field_names,
                             sizes=[a.size for a in adds], deletion_vectors=[None] * len(adds), tight_bounds=False)
    assert stats == [a.stats for a in adds]  # exactly what the writer wrote
    new = [Add(a.path, a.partition_values, a.size, a.modification_time, False, s) for a, s in zip(adds, stats)]
    gone = adds[1].path
    deleted = delete_files(table, [gone]).version

    outcome = commit_stats(table, snapshot, adds, new, parameters=plan_analyze(snapshot).operation_parameters())

    assert (outcome.version, outcome.files, outcome.dropped, outcome.attempts) == (deleted + 1, 3, 1, 2)
    after = table.snapshot()
    assert gone not in after.file_paths and after.num_files == 3
    lines = commit_lines(table, outcome.version)
    assert sorted(line["add"]["path"] for line in lines if "add" in line) == sorted(a.path for a in adds if a.path != gone)
    assert not any("remove" in line for line in lines)


def test_commit_is_abandoned_when_the_metadata_changed_meanwhile(tmp_path):
    # The columns the stats must cover may have changed: nothing is committed.
    table = make_table(str(tmp_path / "t"), appends=1, rows=10)
    snapshot = table.snapshot()
    adds = sorted(snapshot.add_actions(), key=lambda a: a.path)
    new = [Add(a.path, a.partition_values, a.size, a.modification_time, False, a.stats) for a in adds]
    changed = set_properties(table, {"delta.dataSkippingNumIndexedCols": "1"}).version

    outcome = commit_stats(table, snapshot, adds, new, parameters=plan_analyze(snapshot).operation_parameters())

    assert (outcome.version, outcome.files, outcome.dropped, outcome.reason) == (None, 0, 0, "metadata_changed")
    assert table.latest_version() == changed


@pytest.mark.parametrize("as_struct", [False, True])
def test_plan_of_a_checkpointed_table_judges_coverage_as_snapshot_coverage(tmp_path, as_struct):
    """Files checkpointed with stats on one column, then more indexed columns and files with
    all of them: a checkpoint with JSON stats only (parsed a slice at a time on threads) or with
    ``stats_parsed`` too (read without JSON) plans the files ``snapshot_coverage`` judges
    uncovered, in path order."""
    from delta_core.write.checkpoint_write import write_checkpoint
    from delta_core.write.table_writes import append
    from tests.maintenance.conftest import batch

    uri = str(tmp_path / "t")
    properties = {"delta.dataSkippingNumIndexedCols": "1",
                  "delta.checkpoint.writeStatsAsStruct": "true" if as_struct else "false"}
    table = make_table(uri, appends=4, properties=properties)
    write_checkpoint(table, version=table.snapshot().version)
    set_properties(DeltaTable(uri), {"delta.dataSkippingNumIndexedCols": "32"})
    for start in (1000, 2000):
        append(DeltaTable(uri), batch(start, 40))
    snapshot = DeltaTable(uri).snapshot()
    assert snapshot.replay_state.checkpoint_stats.holds_struct_stats(()) == as_struct
    coverage = snapshot_coverage(snapshot)
    assert (snapshot.num_files, coverage.num_covered) == (12, 4)
    full, partial = plan_analyze(snapshot, full=True), plan_analyze(snapshot)
    assert full.files_covered == partial.files_covered == 4
    assert full.files.column("path").to_pylist() == sorted(snapshot.file_columns("path").column(0).to_pylist())
    uncovered = [p for p, ok in zip(snapshot.file_columns("path").column(0).to_pylist(), coverage.covered.to_pylist())
                 if not ok]
    assert partial.files.column("path").to_pylist() == sorted(uncovered)
