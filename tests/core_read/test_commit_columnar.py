"""The columnar commit decoder (Arrow's JSON reader) gives exactly what the per-line decoder
gives: same Arrow tables (map entries in the line's key order), same line numbers, same
non-file actions, on real tables and on hand-made edge cases; and where it cannot, it steps
aside so the per-line decoder reads the commit or raises its precise error."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pyarrow as pa
import pytest

from delta_core.errors import CorruptLogError
from delta_core.log.commit_read import COLUMNAR_MIN_BYTES, ParsedCommit, build_batch, parse_commit
from delta_core.log.log_path import LogFileKind, parse_log_name
from delta_core.log.table import DeltaTable
from tests.conftest import CONFORMANCE_DIR
from tests.core_read.conftest import add, commit_info, metadata, protocol, remove

NAMES = sorted(p.parent.name for p in CONFORMANCE_DIR.glob("*/expected.json"))
DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
      "cardinality": 6}


def _both(data: bytes, version: int = 0) -> tuple[ParsedCommit, ParsedCommit]:
    fast = parse_commit(data, version=version, source="commit", columnar=True)
    slow = parse_commit(data, version=version, source="commit", columnar=False)
    return fast, slow


def _assert_same(fast: ParsedCommit, slow: ParsedCommit) -> None:
    a, b = build_batch([fast], source="t"), build_batch([slow], source="t")
    assert a.adds.schema == b.adds.schema and a.removes.schema == b.removes.schema
    for col in a.adds.column_names:
        assert a.adds[col].to_pylist() == b.adds[col].to_pylist(), col
    for col in a.removes.column_names:
        assert a.removes[col].to_pylist() == b.removes[col].to_pylist(), col
    assert a.adds.equals(b.adds) and a.removes.equals(b.removes)
    assert a.add_order.equals(b.add_order) and a.remove_order.equals(b.remove_order)
    assert (fast.protocol, fast.metadata, fast.txns, fast.domain_metadata, fast.commit_info, fast.num_lines) == \
           (slow.protocol, slow.metadata, slow.txns, slow.domain_metadata, slow.commit_info, slow.num_lines)


def _commit_files(root: pathlib.Path) -> list[pathlib.Path]:
    out = []
    for p in sorted((root / "_delta_log").glob("*.json")):
        parsed = parse_log_name(p.name)
        if parsed is not None and parsed.kind is LogFileKind.COMMIT:
            out.append(p)
    return out


def _lines(*actions: dict, sep: str = "\n") -> bytes:
    return "".join(json.dumps(a, ensure_ascii=False, separators=(",", ":")) + sep for a in actions).encode()


@pytest.mark.parametrize("name", NAMES)
def test_conformance_commits_decode_identically(conformance_dir: pathlib.Path, name: str) -> None:
    for path in _commit_files(conformance_dir / name):
        data = path.read_bytes()
        try:
            slow = parse_commit(data, version=0, source=str(path), columnar=False)
            build_batch([slow], source="t")
        except CorruptLogError as exc:  # a deliberately broken commit: both report the same
            with pytest.raises(CorruptLogError) as info:
                build_batch([parse_commit(data, version=0, source=str(path), columnar=True)], source="t")
            assert str(info.value) == str(exc)
            continue
        fast = parse_commit(data, version=0, source=str(path), columnar=True)
        assert fast.columnar, f"{path.name} fell back to the per-line decoder"
        _assert_same(fast, slow)


def test_deltars_partitioned_table(tmp_path: pathlib.Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    n = 60
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "region": pa.array([[None, "eu west", "us/east", "a%2Fb=c", "ünï \"q\" \\ {x}:,", "plain"][i % 6]
                            for i in range(n)], pa.string()),
        "kind": pa.array([["x", None, "y z"][i % 3] for i in range(n)], pa.string()),
        "year": pa.array([[2020, None][i % 2] for i in range(n)], pa.int32()),
    })
    uri = str(tmp_path / "rs")
    deltalake.write_deltalake(uri, data, partition_by=["region", "kind", "year"])
    deltalake.write_deltalake(uri, data.slice(0, 20), partition_by=["region", "kind", "year"], mode="append")
    deltalake.DeltaTable(uri).delete("id < 10")
    commits = _commit_files(pathlib.Path(uri))
    assert len(commits) == 3
    seen_null = seen_orders = False
    for path in commits:
        fast, slow = _both(path.read_bytes())
        assert fast.columnar
        _assert_same(fast, slow)
        for pv in build_batch([fast], source="t").adds["partition_values"].to_pylist():
            seen_null |= any(v is None for _, v in pv)
            seen_orders |= [k for k, _ in pv] != ["region", "kind", "year"]
    assert seen_null
    # The snapshot (columnar or not) matches delta-rs's view of the files.
    ours = DeltaTable(uri).snapshot()
    theirs = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=False))
    assert sorted(ours.file_paths) == sorted(theirs["path"].to_pylist())


def test_mixed_commit_with_odd_shapes() -> None:
    data = _lines(
        commit_info("WRITE", operationParameters={"mode": "Append"}, engineInfo="test"),
        protocol(3, 7, readerFeatures=["deletionVectors"], writerFeatures=["deletionVectors"]),
        metadata(partition_columns=("part",), configuration={"delta.enableDeletionVectors": "true"}),
        {"txn": {"appId": "app-1", "version": 7, "lastUpdated": 1}},
        {"domainMetadata": {"domain": "d", "configuration": "{}", "removed": False}},
        {"futureAction": {"anything": [1, "two", {"three": None}]}},
        {"cdc": {"path": "_change_data/x.parquet", "partitionValues": {}, "size": 1, "dataChange": False}},
        add("part=a%2Fb/f1.parquet", partitionValues={"part": "a/b"}, tags={"INSERTION_TIME": "1"},
            futureField={"nested": [1, 2]}),
        add("part=__HIVE_DEFAULT_PARTITION__/f2.parquet", partitionValues={"part": None}),
        add("f3.parquet", partitionValues={}, dv=dict(DV, maxRowIndex=99), baseRowId=4,
            defaultRowCommitVersion=2, clusteringProvider="liquid", stats='{"numRecords": 3, "x": "\\u00e9"}'),
        add("f4.parquet", partitionValues={"part": "ü \"q\" \\ {}:,"}, stats=None, tags=None),
        remove("f0.parquet", dv=DV),
        {"remove": {"path": "old%20file.parquet", "extendedFileMetadata": True, "size": 5,
                    "partitionValues": {"part": None}, "tags": {}}},
        add("f5.parquet", partitionValues={"part": "late"}, dataChange=None),
    )
    fast, slow = _both(data, version=3)
    assert fast.columnar
    _assert_same(fast, slow)
    files = build_batch([fast], source="t").adds
    assert files["partition_values"].to_pylist()[1] == [("part", None)]
    assert files["partition_values"].to_pylist()[2] == []
    assert files["stats"].to_pylist()[2] == '{"numRecords": 3, "x": "\\u00e9"}'  # verbatim
    assert fast.txns[0].version == 7 and fast.metadata is not None and fast.protocol is not None


def test_missing_and_null_keys_and_key_order() -> None:
    rows = [add(f"f{i}", partitionValues=pv) for i, pv in enumerate([
        {"a": "1", "b": "2"}, {"b": "2", "a": "1"}, {"a": None}, {"b": None, "a": "x"}, {}, {"c": "new"},
        {"a": "1", "b": "2", "c": None},
    ])]
    for sep in ("\n", "\r\n"):
        fast, slow = _both(_lines(commit_info(), *rows, sep=sep))
        assert fast.columnar
        _assert_same(fast, slow)
    # Python's default separators put spaces after ':' and ','; it escapes non-ASCII keys.
    spaced = "".join(json.dumps(r) + "\n" for r in rows).encode()
    fast, slow = _both(spaced)
    assert fast.columnar
    _assert_same(fast, slow)
    # Keys that also name add fields, or that a writer escapes: order comes from json.loads.
    odd = [add(f"g{i}", partitionValues=pv) for i, pv in enumerate([
        {"path": "p", "size": None, "ü": "1"}, {"ü": "2", "size": "s", "path": "q"}, {"size": "t", "path": None},
    ])]
    for data in (_lines(*odd), "".join(json.dumps(r) + "\n" for r in odd).encode()):
        fast, slow = _both(data)
        assert fast.columnar
        _assert_same(fast, slow)


def test_date_like_map_values_stay_text() -> None:
    # The reader would infer "2024-01-01" as a timestamp for a key it was not told about.
    rows = [add("a", partitionValues={}), add("b", partitionValues={"d": "2024-01-01", "t": "2024-01-01 00:00:00"})]
    fast, slow = _both(_lines(*rows))
    assert fast.columnar
    _assert_same(fast, slow)


def test_blank_lines_keep_line_numbers() -> None:
    data = b"\n" + _lines(commit_info(), add("a")) + b"   \n\n" + _lines(remove("a"), add("b")) + b"\n\n"
    fast, slow = _both(data)
    assert fast.columnar
    _assert_same(fast, slow)
    assert build_batch([fast], source="t").add_order.to_pylist() == [3, 7]


@pytest.mark.parametrize("data", [
    _lines(add("a")) + b'{"add": {"path": "b", "size": "huge"}}\n',                      # wrong type
    _lines(add("a")) + b'{"add": {"path": "b", "size": 1.5}}\n',                         # not an integer
    _lines(add("a", partitionValues={"p": 5})),                                            # map value not text
    _lines(add("a")) + b'{"add": {"size": 1}}\n',                                           # no path
])
def test_odd_file_actions_take_the_per_line_path(data: bytes) -> None:
    fast, slow = _both(data, version=5)
    assert not fast.columnar
    try:
        want = build_batch([slow], source="t")
    except CorruptLogError as exc:
        with pytest.raises(CorruptLogError) as got:
            build_batch([fast], source="t")
        assert str(got.value) == str(exc) and got.value.version == 5
    else:
        assert build_batch([fast], source="t").adds.equals(want.adds)


@pytest.mark.parametrize("data, line", [
    (_lines(commit_info(), add("a")) + b"{this is not json}\n" + _lines(add("c")), 3),
    (_lines(add("a")) + b'{"add": {"path": "b"}} {"add": {"path": "c"}}\n', 2),            # two objects
    (_lines(add("a")) + b'{"add": {"path": "b"}, "remove": {"path": "c"}}\n', 2),         # two keys
    (_lines(add("a")) + b'{"x": 1, "add": {"path": "b"}, "remove": {"path": "c"}}\n', 2),  # two known
    (_lines(add("a")) + b'[{"add": {"path": "b"}}]\n', 2),                                  # not an object
    (_lines(add("a")) + b'{}\n', 2),                                                        # no action
    (_lines(add("a")) + b'{"add": null}\n', 2),
    (_lines(add("a")) + b'{"add": {"path": "\xff"}}\n', 2),                                 # not UTF-8
    (_lines(add("a")) + b'{"protocol": {"minReaderVersion": "x"}}\n', 2),
])
def test_corrupt_lines_raise_with_line_numbers(data: bytes, line: int) -> None:
    with pytest.raises(CorruptLogError) as want:
        parse_commit(data, version=2, source="c.json", columnar=False)
    with pytest.raises(CorruptLogError) as got:
        parse_commit(data, version=2, source="c.json", columnar=True)
    assert str(got.value) == str(want.value) and f"line {line}" in str(got.value)
    assert got.value.version == 2


def test_unknown_top_level_keys_beside_an_action_are_ignored_by_both_decoders() -> None:
    """Issue 9 §3: ``{"add": {...}, "someFutureKey": {...}}`` reads as the add (the future key
    ignored), in the columnar decoder and the per-line one; so do protocol/metaData/txn lines."""
    future = {"someFutureKey": {"a": [1, 2]}}
    lines = [{**commit_info(), **future}, {**protocol(), "x": 1}, {**metadata(), **future},
             {"txn": {"appId": "app", "version": 3}, **future}]
    lines += [{**add(f"f{i}.parquet", records=i), **future} for i in range(20)]
    lines += [{**remove("f0.parquet"), **future}, future]
    fast, slow = _both(_lines(*lines))
    assert fast.columnar  # the bulk reader took it, rather than stepping aside
    _assert_same(fast, slow)
    batch = build_batch([fast], source="t")
    assert batch.adds["path"].to_pylist() == [f"f{i}.parquet" for i in range(20)]
    assert batch.removes["path"].to_pylist() == ["f0.parquet"]
    assert [t.app_id for t in fast.txns] == ["app"] and fast.protocol is not None and fast.metadata is not None
    assert fast.metadata.extra == {} and fast.commit_info.get("operation") == "WRITE"
    # the unknown key first: the per-line decoder reads it (the bulk reader steps aside)
    odd = _lines(*lines[:4], {"someFutureKey": 1, **add("g.parquet")})
    fast, slow = _both(odd)
    _assert_same(fast, slow)
    assert build_batch([slow], source="t").adds["path"].to_pylist() == ["g.parquet"]


def test_large_commits_go_columnar_in_snapshots(log_writer) -> None:
    n = 400
    log_writer.commit(0, commit_info(), protocol(), metadata(partition_columns=("part",)))
    path = log_writer.commit(1, commit_info(), *[
        add(f"part={i % 7}/f{i}.parquet", partitionValues={"part": str(i % 7) if i % 5 else None}, records=i)
        for i in range(n)
    ], remove("part=1/f1.parquet"))
    data = path.read_bytes()
    assert len(data) >= COLUMNAR_MIN_BYTES
    assert parse_commit(data, version=1, source="c").columnar
    snap = DeltaTable(str(log_writer.root)).snapshot()
    slow = build_batch([parse_commit(data, version=1, source="c", columnar=False)], source="t")
    assert snap.num_files == n - 1 and snap.tombstones.num_rows == 1
    assert sorted(snap.files.to_pylist(), key=lambda r: r["path"]) == \
        sorted(slow.adds.filter(pa.compute.not_equal(slow.adds["path"], "part=1/f1.parquet")).to_pylist(),
               key=lambda r: r["path"])


def test_loading_a_snapshot_does_not_import_pandas(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(), metadata(partition_columns=("part",)))
    log_writer.commit(1, commit_info(), *[add(f"part=a/f{i}.parquet", partitionValues={"part": "a"})
                                          for i in range(400)])
    code = ("import sys; from delta_core.log.table import DeltaTable; "
            f"s = DeltaTable({str(log_writer.root)!r}).snapshot(); assert s.num_files == 400; "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=str(pathlib.Path(__file__).resolve().parents[2]))
    assert out.stdout.strip() == "False"


_DEFERRED_CASES = [
    _lines(commit_info(), add("a")) + b"{this is not json}\n" + _lines(add("c")),
    _lines(add("a")) + b'{"add": {"path": "b"}} {"add": {"path": "c"}}\n',
    _lines(add("a")) + b'{"add": {"path": "b"}, "remove": {"path": "c"}}\n',
    _lines(add("a")) + b'{"add": null}\n',
    _lines(add("a")) + b'{"add": {"path": "\xff"}}\n',
    _lines(add("a")) + b'{"add": {"path": "b", "size": "big"}}\n',  # a field of the wrong type
    _lines(add("a")) + b'{"protocol": {"minReaderVersion": "x"}}\n',
    _lines(commit_info(), add("a"), add("b")) + b'{"remove": {"path": "a", "deletionTimestamp": 5}}\n',  # valid
]


@pytest.mark.parametrize("data", _DEFERRED_CASES)
def test_deferred_file_lines_give_the_same_rows_and_errors(data: bytes) -> None:
    """Snapshot loading leaves small commits' add/remove lines undecoded until ``build_batch``
    decodes them together: the rows, or the error (same text), are those of the eager path."""
    def eager() -> object:
        return build_batch([parse_commit(data, version=2, source="c.json", columnar=False)], source="t")

    def deferred() -> object:
        parsed = [parse_commit(data, version=2, source="c.json", columnar=False, defer_file_lines=True),
                  parse_commit(_lines(add("z")), version=3, source="d.json", columnar=False, defer_file_lines=True)]
        return build_batch(parsed, source="t")

    try:
        want = eager()
    except CorruptLogError as exc:
        with pytest.raises(CorruptLogError) as got:
            deferred()
        assert str(got.value) == str(exc)
        return
    got_batch = deferred()
    assert got_batch.adds.slice(0, want.adds.num_rows).equals(want.adds)
    assert got_batch.removes.equals(want.removes)
    assert got_batch.add_order.slice(0, len(want.add_order)).equals(want.add_order)
    assert got_batch.adds["path"].to_pylist()[-1] == "z"
