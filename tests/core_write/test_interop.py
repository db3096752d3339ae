"""Tables we write are read by delta-rs (every version: same files, stats, rows), and tables
delta-rs writes are read and extended by us."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import shutil

import pyarrow as pa

from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files, overwrite, set_properties
from tests.core_write.conftest import deltars_files, deltars_rows, our_files

UTC = dt.UTC

ALL_TYPES = pa.schema([
    ("id", pa.int64()),
    ("i8", pa.int8()), ("i16", pa.int16()), ("i32", pa.int32()),
    ("f32", pa.float32()), ("f64", pa.float64()),
    ("dec", pa.decimal128(10, 2)), ("bigdec", pa.decimal128(38, 6)),
    ("s", pa.string()), ("b", pa.bool_()), ("bin", pa.binary()),
    ("d", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")), ("ntz", pa.timestamp("us")),
    ("st", pa.struct([("x", pa.int32()), ("y", pa.struct([("z", pa.string())]))])),
    ("arr", pa.list_(pa.field("element", pa.string()))),
    ("arr_st", pa.list_(pa.field("element", pa.struct([("k", pa.int64())])))),
    ("m", pa.map_(pa.string(), pa.int64())),
])


def rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": ids,
        "i8": [i % 100 for i in ids], "i16": [i * 3 for i in ids], "i32": [None if i % 5 == 0 else -i for i in ids],
        "f32": [i / 4 for i in ids], "f64": [i * 1.5 if i % 3 else None for i in ids],
        "dec": [decimal.Decimal(i) / 100 for i in ids],
        "bigdec": [decimal.Decimal("123456789012.123456") + i for i in ids],
        "s": [("long-" * 10 + str(i)) if i % 2 else f"s{i}" for i in ids],
        "b": [i % 2 == 0 for i in ids], "bin": [bytes([i % 256]) for i in ids],
        "d": [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in ids],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i, microseconds=7) for i in ids],
        "ntz": [dt.datetime(2023, 6, 1) + dt.timedelta(minutes=i) for i in ids],
        "st": [{"x": i, "y": {"z": f"z{i}"}} if i % 4 else None for i in ids],
        "arr": [[f"a{i}", None] for i in ids],
        "arr_st": [[{"k": i}] for i in ids],
        "m": [[("k", i)] for i in ids],
    }, schema=ALL_TYPES)


def _cmp_rows(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        for k in x:
            vx, vy = x[k], y[k]
            if isinstance(vx, list) and vx and isinstance(vx[0], tuple):
                vx = dict(vx)
            if isinstance(vy, list) and vy and isinstance(vy[0], tuple):
                vy = dict(vy)
            assert vx == vy, (k, vx, vy)


def test_all_types_every_version_readable_by_deltars(table_dir):
    t = create_table(table_dir, ALL_TYPES, properties={"delta.dataSkippingNumIndexedCols": "-1"})
    snap0 = t.snapshot()
    assert snap0.protocol.reader_features == ("timestampNtz",)
    expected = {0: []}
    live = []
    for i in range(3):
        append(t, rows(i * 10, 10))
        live.extend(rows(i * 10, 10).to_pylist())
        expected[t.latest_version()] = sorted(live, key=lambda r: r["id"])
    first = t.snapshot().file_paths[0]
    delete_files(t, [first])
    gone = set(pa.table(__import__("pyarrow.parquet", fromlist=["x"]).read_table(
        os.path.join(table_dir, first)).select(["id"])).column("id").to_pylist())
    live = [r for r in live if r["id"] not in gone]
    expected[t.latest_version()] = sorted(live, key=lambda r: r["id"])
    overwrite(t, rows(100, 5))
    expected[t.latest_version()] = rows(100, 5).to_pylist()
    for v in range(t.latest_version() + 1):
        assert deltars_files(table_dir, v) == our_files(t, v)
        if v:
            _cmp_rows(deltars_rows(table_dir, v), expected[v])


def test_partitioned_table_values_and_directories(table_dir):
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("region", pa.string()),
                        ("n", pa.int32()), ("ts", pa.timestamp("us", tz="UTC"))])
    t = create_table(table_dir, schema, partition_columns=["day", "region"])
    data = pa.table({
        "id": [1, 2, 3, 4, 5],
        "day": [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 1, 2), None, dt.date(2024, 1, 2)],
        "region": ["eu", "us/east", "eu", "eu", "a b=c%"],
        "n": [1, 2, 3, 4, 5],
        "ts": [dt.datetime(2024, 1, 1, tzinfo=UTC)] * 5,
    }, schema=schema)
    append(t, data)
    snap = t.snapshot()
    assert snap.num_files == 5
    pv = {(a.partition_values["day"], a.partition_values["region"]) for a in snap.add_actions()}
    assert (None, "eu") in pv and ("2024-01-01", "us/east") in pv and ("2024-01-02", "a b=c%") in pv
    dirs = {os.path.dirname(os.path.relpath(os.path.join(r, f), table_dir))
            for r, _, fs in os.walk(table_dir) for f in fs if f.endswith(".parquet")}
    assert "day=__HIVE_DEFAULT_PARTITION__/region=eu" in dirs
    assert "day=2024-01-01/region=us%2Feast" in dirs
    got = deltars_rows(table_dir, 1)
    assert [(r["id"], r["day"], r["region"]) for r in got] == [
        (r["id"], r["day"], r["region"]) for r in data.to_pylist()]
    assert deltars_files(table_dir, 1) == our_files(t, 1)


def test_column_mapping_writes_physical_names(table_dir):
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.int64()), ("Name With Space", pa.string()),
                        ("st", pa.struct([("inner", pa.int32())])), ("p", pa.string())])
    t = create_table(table_dir, schema, partition_columns=["p"],
                     properties={"delta.columnMapping.mode": "name"})
    snap = t.snapshot()
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (2, 5)
    data = pa.table({"id": [1, 2], "Name With Space": ["a", "b"], "st": [{"inner": 1}, {"inner": 2}],
                     "p": ["x", "y"]}, schema=schema)
    append(t, data)
    snap = t.snapshot()
    phys = {f.name: f.physical_name for f in snap.schema.fields}
    add = next(snap.add_actions())
    assert set(add.partition_values) == {phys["p"]}
    stats = json.loads(add.stats)
    assert phys["Name With Space"] in stats["minValues"] and phys["st"] in stats["minValues"]
    file_schema = pq.read_schema(os.path.join(table_dir, add.path.replace("%20", " ")))
    assert file_schema.names == [phys["id"], phys["Name With Space"], phys["st"]]
    import deltalake

    # delta-rs's SQL engine resolves physical names (its pyarrow dataset path does not)
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(table_dir))
    got = pa.table(qb.execute("select * from t order by id").read_all()).to_pylist()
    assert got == data.to_pylist()


def test_set_properties_and_metadata_roundtrip(table_dir):
    import deltalake

    schema = pa.schema([("id", pa.int64())])
    t = create_table(table_dir, schema, properties={"delta.logRetentionDuration": "interval 2 days"},
                     name="tbl", description="d")
    set_properties(t, {"delta.appendOnly": "true", "delta.checkpointInterval": "5"})
    dl = deltalake.DeltaTable(table_dir)
    conf = dl.metadata().configuration
    assert conf["delta.appendOnly"] == "true" and conf["delta.logRetentionDuration"] == "interval 2 days"
    assert dl.metadata().name == "tbl"
    hist = dl.history()
    assert hist[0]["operation"] == "SET TBLPROPERTIES" and hist[0]["readVersion"] == 0


def test_commit_info_fields(table_dir):
    from delta_core import ENGINE_INFO

    t = create_table(table_dir, pa.schema([("id", pa.int64())]))
    append(t, pa.table({"id": [1, 2]}))
    info = t.history(1)[0].commit_info
    for key in ("timestamp", "operation", "operationParameters", "operationMetrics", "readVersion",
                "isolationLevel", "isBlindAppend", "engineInfo"):
        assert key in info
    assert info["engineInfo"] == ENGINE_INFO and info["isBlindAppend"] is True
    assert info["operation"] == "WRITE" and info["operationParameters"]["mode"] == "Append"
    assert info["operationMetrics"]["numOutputRows"] == "2" and info["readVersion"] == 0


def test_we_read_and_extend_deltars_tables(tmp_path):
    import deltalake

    path = str(tmp_path / "rs")
    schema = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.float64())])
    for i in range(4):
        deltalake.write_deltalake(path, pa.table({"id": [i], "p": ["a" if i % 2 else "b"], "v": [i * 1.0]},
                                                 schema=schema), partition_by=["p"], mode="append")
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.write_deltalake(path, pa.table({"id": [9], "p": ["c"], "v": [9.0]}, schema=schema),
                              partition_by=["p"], mode="append")
    t = DeltaTable(path)
    snap = t.snapshot()
    assert snap.version == 4 and snap.num_files == 5 and snap.log_segment.checkpoint_version == 3
    append(t, pa.table({"id": [10], "p": ["a"], "v": [10.0]}, schema=schema))
    res = write_checkpoint(t)
    assert res.version == 5 and res.num_add_files == 6
    dl = deltalake.DeltaTable(path)
    assert dl.version() == 5
    assert sorted(pa.table(dl.to_pyarrow_table()).column("id").to_pylist()) == [0, 1, 2, 3, 9, 10]
    # delta-rs reads our checkpoint alone (commits before it gone)
    copy = str(tmp_path / "copy")
    shutil.copytree(path, copy)
    for v in range(5):
        os.unlink(os.path.join(copy, "_delta_log", f"{v:020d}.json"))
    assert sorted(pa.table(deltalake.DeltaTable(copy).to_pyarrow_table()).column("id").to_pylist()) == \
        [0, 1, 2, 3, 9, 10]


def test_partition_value_types_roundtrip(table_dir):
    schema = pa.schema([("id", pa.int64()), ("pi", pa.int32()), ("pb", pa.bool_()),
                        ("pd", pa.decimal128(6, 2)), ("pts", pa.timestamp("us", tz="UTC")),
                        ("pdate", pa.date32()), ("ps", pa.string())])
    parts = ["pi", "pb", "pd", "pts", "pdate", "ps"]
    t = create_table(table_dir, schema, partition_columns=parts)
    data = pa.table({
        "id": [1, 2, 3],
        "pi": [-5, None, 7], "pb": [True, False, None],
        "pd": [decimal.Decimal("12.50"), None, decimal.Decimal("-0.01")],
        "pts": [dt.datetime(2024, 3, 4, 5, 6, 7, 890123, tzinfo=UTC), None,
                dt.datetime(1970, 1, 1, tzinfo=UTC)],
        "pdate": [dt.date(2024, 2, 29), None, dt.date(1999, 1, 1)],
        "ps": ["a:b/c", "", "ü %"],
    }, schema=schema)
    append(t, data)
    import deltalake

    # delta-rs's SQL engine (its pyarrow-dataset path mis-parses negative decimal partitions)
    qb = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(table_dir))
    got = pa.table(qb.execute("select * from t order by id").read_all()).to_pylist()
    want = data.to_pylist()
    want[1]["ps"] = None  # an empty string partition value is null in Delta
    assert got == want
    ours = pa.table(t.snapshot().partition_values_typed()).sort_by("path").num_rows
    assert ours == 3
