"""Stats coverage judged from a checkpoint's ``add.stats_parsed`` (PROTOCOL.md "Checkpoint Schema",
"Per-file Statistics"): on checkpoints our writer, delta-rs and Delta Spark (the fixtures in
tests/data) wrote with the struct, each file's coverage and ``numRecords`` are those the JSON
gives, and the health report is the one of the same table with the struct dropped; rows without
the struct's ``numRecords`` are judged from their JSON."""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import DeltaError
from delta_core.health.policy import HealthPolicy
from delta_core.health.report import table_health
from delta_core.log.snapshot import Snapshot
from delta_core.log.table import DeltaTable
from delta_core.maintenance.stats_coverage import required_stats_columns, snapshot_coverage, stats_coverage
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files, set_properties
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.health.conftest import add, write_log

NOW = 1_800_000_000_000
STRUCT = {"delta.checkpoint.writeStatsAsStruct": "true"}
POLICY = HealthPolicy(skip_ratio_floor=0.9, compact_min_small_files=1)


def _checkpoint_parts(root: pathlib.Path) -> list[pathlib.Path]:
    log = root / "_delta_log"
    return sorted([*log.glob("*.checkpoint*.parquet"), *log.glob("_sidecars/*.parquet")])


def _holds_struct(root: pathlib.Path) -> bool:
    for part in _checkpoint_parts(root):
        schema = pq.read_schema(part)
        if "add" in schema.names and schema.field("add").type.get_field_index("stats_parsed") >= 0:
            return True
    return False


def _snapshot(root: pathlib.Path) -> Snapshot:
    return DeltaTable(str(root), clock=lambda: NOW).snapshot()


def _json_judgement(root: pathlib.Path) -> tuple[list[bool], list[int | None]]:
    """Every file's coverage from the whole ``stats`` column (JSON, synthesised from the struct
    where a row has none) and the snapshot's own ``num_records``."""
    snapshot = _snapshot(root)
    covered = stats_coverage(snapshot.files, snapshot.metadata).covered.to_pylist()
    return covered, snapshot.file_columns("num_records").column(0).to_pylist()


def _coverage(root: pathlib.Path) -> tuple[list[bool], list[int | None]]:
    """What a health evaluation judges: coverage and counted records from one read."""
    snapshot = _snapshot(root)
    covered = snapshot_coverage(snapshot, count_records=True).covered.to_pylist()
    return covered, snapshot.file_columns("num_records").column(0).to_pylist()


def _without_struct(root: pathlib.Path, copy: pathlib.Path) -> pathlib.Path:
    """A copy of the table whose checkpoint parts hold no ``add.stats_parsed``."""
    shutil.copytree(root, copy)
    for part in _checkpoint_parts(copy):
        table = pq.read_table(part)
        if "add" not in table.column_names:
            continue
        add_col = table.column("add").combine_chunks()
        keep = [i for i, f in enumerate(add_col.type) if f.name != "stats_parsed"]
        stripped = pa.StructArray.from_arrays([add_col.field(i) for i in keep],
                                              fields=[add_col.type.field(i) for i in keep], mask=add_col.is_null())
        pq.write_table(table.set_column(table.column_names.index("add"), "add", stripped), part)
    assert not _holds_struct(copy)
    return copy


def _report(root: pathlib.Path) -> dict:
    report = table_health(DeltaTable(str(root), clock=lambda: NOW), policy=POLICY)
    out = dataclasses.replace(report, duration_seconds=0.0).to_dict()
    out.pop("table")
    return out


def _every_add_has_json(root: pathlib.Path) -> bool:
    for part in _checkpoint_parts(root):
        adds = pq.read_table(part, columns=["add"]).column("add").combine_chunks()
        if adds.type.get_field_index("stats") < 0:
            return False
        rows = adds.filter(adds.is_valid())
        if rows.field("stats").null_count:
            return False
    return True


def _ours(root: pathlib.Path, *, mapping: str = "none") -> pathlib.Path:
    """Our writer, writeStatsAsStruct on (column mapping ``mapping``: the struct keyed by physical
    names): all-null, NaN, long-string, timestamp and nested columns; a checkpoint, then a file
    removed (replay keeps a subset of its rows) and one added."""
    schema = pa.schema([("i", pa.int64()), ("f", pa.float64()), ("s", pa.string()),
                        ("ts", pa.timestamp("us", tz="UTC")), ("n", pa.struct([("d", pa.date32())])),
                        ("b", pa.bool_())])
    # The first file's stats cover two columns, the others' all six: some files are not covered.
    table = create_table(str(root), schema, properties={**STRUCT, "delta.dataSkippingNumIndexedCols": "2",
                                                        "delta.columnMapping.mode": mapping})
    rows = [
        {"i": [1, 2], "f": [0.5, float("nan")], "s": ["a", "b"], "ts": [0, 10**12], "n": [{"d": 1}, {"d": 2}],
         "b": [True, None]},
        {"i": [None, None], "f": [1.0, 2.0], "s": ["\uffff" * 40, "x"], "ts": [None, 5], "n": [None, {"d": None}],
         "b": [None, None]},
        {"i": [3, None], "f": [float("inf"), None], "s": [None, None], "ts": [1, 2], "n": [{"d": 3}, None],
         "b": [False, True]},
    ]
    for r in rows:
        append(table, pa.table(r, schema=schema))
        set_properties(table, {"delta.dataSkippingNumIndexedCols": "6"})
    write_checkpoint(table)
    delete_files(table, [table.snapshot().file_paths[1]])
    append(table, pa.table(rows[0], schema=schema))
    return root


def _ours_mapped(root: pathlib.Path) -> pathlib.Path:
    return _ours(root, mapping="name")


def _delta_rs(root: pathlib.Path) -> pathlib.Path:
    import deltalake

    first = pa.table({"x": pa.array([1, None, 3], pa.int64()), "s": ["a", "b", None],
                      "f": [1.0, float("nan"), 2.0], "p": ["u", "u", "v"]})
    deltalake.write_deltalake(str(root), first, partition_by=["p"],
                              configuration={**STRUCT, "delta.dataSkippingNumIndexedCols": "1"})
    deltalake.DeltaTable(str(root)).alter.set_table_properties({"delta.dataSkippingNumIndexedCols": "3"})
    deltalake.write_deltalake(str(root), pa.table({"x": pa.array([None, None], pa.int64()), "s": ["c", "d"],
                                                   "f": [3.0, 4.0], "p": ["u", "w"]}), mode="append")
    deltalake.DeltaTable(str(root)).create_checkpoint()
    deltalake.write_deltalake(str(root), first, mode="append")
    return root


def _mixed(root: pathlib.Path) -> pathlib.Path:
    """Hand-written adds, some without stats and some whose JSON our parse cannot read but the
    numRecords reader can (``5.0``): their struct has no ``numRecords``, so their JSON judges
    them and counts their records."""
    odd = add("c.parquet", 1_000, records=None)
    odd["add"]["stats"] = json.dumps({"numRecords": 5.0, "minValues": {"x": 1}, "maxValues": {"x": 2},
                                      "nullCount": {"x": 0}})
    write_log(str(root), [[add("a.parquet", 1_000), add("b.parquet", 1_000, records=None), odd,
                           add("d.parquet", 1_000, records=7, lo=3, hi=4)]], configuration={
        **STRUCT, "delta.dataSkippingStatsColumns": "x"})
    write_checkpoint(DeltaTable(str(root)))
    return root


FIXTURES = sorted(p for p in [*CONFORMANCE_DIR.iterdir(), *MODERN_DIR.iterdir()]
                  if p.is_dir() and _holds_struct(p))


def test_fixtures_with_struct_stats_are_found():
    # Delta Spark 1.2.1 (struct only, no JSON) and V2 sidecars among them
    names = {p.name for p in FIXTURES}
    assert {"rs-delta-1.2.1-only-struct-stats", "rs-checkpoint-v2-table", "rs-table_with_deletion_logs"} <= names


@pytest.mark.parametrize("root", FIXTURES, ids=lambda p: p.name)
def test_fixture_coverage_is_the_json_judgement(root: pathlib.Path, tmp_path: pathlib.Path):
    try:
        expected = _json_judgement(root)
    except DeltaError:
        pytest.skip("a table we refuse to read")
    assert _coverage(root) == expected
    if _every_add_has_json(root):
        assert _report(root) == _report(_without_struct(root, tmp_path / "plain"))


@pytest.mark.parametrize("build", [_ours, _ours_mapped, _delta_rs, _mixed],
                         ids=["ours", "ours-column-mapping", "delta-rs", "mixed"])
def test_written_struct_coverage_is_the_json_judgement(build, tmp_path: pathlib.Path):
    root = build(tmp_path / "t")
    assert _holds_struct(root)
    covered, records = _coverage(root)
    assert (covered, records) == _json_judgement(root)
    assert True in covered and False in covered  # both judgements are exercised
    plain = _without_struct(root, tmp_path / "plain")
    assert _coverage(plain) == (covered, records)
    assert _report(root) == _report(plain)


def test_mixed_rows_are_judged_by_their_json(tmp_path: pathlib.Path):
    covered, records = _coverage(_mixed(tmp_path / "t"))
    assert covered == [True, False, False, True]
    assert records == [100, None, 5, 7]  # 5 from the JSON: the struct has none


def test_the_struct_is_what_is_read(tmp_path: pathlib.Path):
    # The checkpoint's JSON emptied where its struct holds the stats: the struct judges.
    root = _ours(tmp_path / "t")
    expected = _coverage(root)
    for part in _checkpoint_parts(root):
        table = pq.read_table(part)
        adds = table.column("add").combine_chunks()
        stats = adds.field("stats")
        emptied = pa.array(["{}" if s is not None else None for s in stats.to_pylist()], pa.string())
        fields = list(adds.type)
        arrays = [emptied if f.name == "stats" else adds.field(i) for i, f in enumerate(fields)]
        rebuilt = pa.StructArray.from_arrays(arrays, fields=fields, mask=adds.is_null())
        pq.write_table(table.set_column(table.column_names.index("add"), "add", rebuilt), part)
    assert _coverage(root) == expected
    assert _json_judgement(root)[0] != expected[0]  # the JSON alone now covers nothing


def test_a_column_added_after_the_checkpoint_is_judged_from_the_json(tmp_path: pathlib.Path):
    # The struct has no stats of the new column: the checkpoint's files are judged from their JSON.
    import deltalake

    root = _delta_rs(tmp_path / "t")
    deltalake.DeltaTable(str(root)).alter.set_table_properties({"delta.dataSkippingNumIndexedCols": "4"})
    deltalake.write_deltalake(str(root), pa.table({"x": pa.array([9], pa.int64()), "s": ["e"], "f": [5.0], "p": ["u"],
                                                   "y": pa.array([1], pa.int32())}), mode="append", schema_mode="merge")
    snapshot = _snapshot(root)
    reader = snapshot.replay_state.checkpoint_stats
    assert reader is not None and [c.name for c in required_stats_columns(snapshot.metadata)] == ["x", "s", "f", "y"]
    assert not reader.holds_struct_stats([("nullCount", "y")])
    covered, records = _coverage(root)
    assert (covered, records) == _json_judgement(root)
    assert covered.count(True) == 1  # the new file only


def test_which_leaves_a_struct_holds(tmp_path: pathlib.Path):
    reader = _snapshot(_ours(tmp_path / "t")).replay_state.checkpoint_stats
    assert reader is not None
    assert reader.holds_struct_stats([("nullCount", "i"), ("minValues", "i"), ("maxValues", "ts"),
                                      ("minValues", "n", "d")])
    assert not reader.holds_struct_stats([("nullCount", "nope")])
    assert not reader.holds_struct_stats([("minValues", "b")])  # no bounds for booleans in the struct
    assert not reader.holds_struct_stats([("minValues", "n")])  # a struct, not a leaf
