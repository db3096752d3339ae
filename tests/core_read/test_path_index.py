"""The path index of a table state (``log.path_index``): a rewrite run's repeated lookups of its
inputs, and the states it advances by its own commits, find exactly the rows a scan of the path
column finds, and an updated snapshot holds exactly the files a fresh load does."""

from __future__ import annotations

import json
import pathlib
import random
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from delta_core.log.path_index import PathIndex
from delta_core.log.replay import TOMBSTONE_INDEX
from delta_core.log.snapshot import Snapshot
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
DV = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40,
      "cardinality": 2}


def _filtered(files: pa.Table, paths: list[str]) -> pa.Table:
    return files.filter(pc.is_in(files["path"], value_set=pa.array(paths, pa.string())))


def _index(snapshot: Snapshot) -> PathIndex | None:
    return snapshot.replay_state.path_index(wait=True)


def test_lookups_through_the_index_equal_the_scan_on_every_fixture_table() -> None:
    indexed = 0
    for root in sorted(d.parent for d in [*CONFORMANCE_DIR.rglob("_delta_log"), *MODERN_DIR.rglob("_delta_log")]):
        try:
            snapshot = DeltaTable(str(root)).snapshot()
        except Exception:  # noqa: BLE001 (fixtures of bad logs: their own tests check the errors)
            continue
        files, rnd = snapshot.files, random.Random(root.name)
        for share in (1, 3):  # the first lookup scans, the next ones go through the index
            paths = rnd.sample(snapshot.file_paths, len(snapshot.file_paths) // share) + ["not/a/file.parquet"]
            assert snapshot.files_of(paths).equals(_filtered(files, paths)), root.name
        indexed += _index(snapshot) is not None
    assert indexed > 50


def _add(path: str, size: int, *, dv: dict[str, object] | None = None) -> dict[str, object]:
    add: dict[str, object] = {"path": path, "partitionValues": {}, "size": size, "modificationTime": 1,
                              "dataChange": True, "stats": json.dumps({"numRecords": size})}
    return {"add": add if dv is None else {**add, "deletionVector": dv}}


def _remove(path: str, *, dv: dict[str, object] | None = None) -> dict[str, object]:
    remove: dict[str, object] = {"path": path, "deletionTimestamp": int(time.time() * 1000), "dataChange": True}
    return {"remove": remove if dv is None else {**remove, "deletionVector": dv}}


def _commit(root: pathlib.Path, version: int, actions: list[dict[str, object]]) -> None:
    lines = [{"commitInfo": {"timestamp": version, "operation": "WRITE"}}, *actions]
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def _created(root: pathlib.Path, *, files: int) -> pathlib.Path:
    """A table whose first commit adds ``f0.parquet`` .. ``f{files - 1}.parquet``."""
    (root / "_delta_log").mkdir(parents=True)
    _commit(root, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                      {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                                    "schemaString": json.dumps(SCHEMA), "partitionColumns": [],
                                    "configuration": {}}},
                      *[_add(f"f{i}.parquet", 100 + i) for i in range(files)]])
    return root


def test_an_updated_snapshot_advances_the_index_and_holds_the_files_of_a_fresh_load(tmp_path: pathlib.Path) -> None:
    root = _created(tmp_path / "t", files=40)
    _commit(root, 1, [_add(f"g{i}.parquet", 200 + i) for i in range(20)])
    write_checkpoint(DeltaTable(str(root)))  # the base: checkpoint rows, statistics deferred
    _commit(root, 2, [_remove("f0.parquet"), _add("h0.parquet", 300)])
    snapshot = DeltaTable(str(root)).snapshot()
    inputs = ["f1.parquet", "f2.parquet", "g3.parquet", "h0.parquet"]
    for _ in range(2):  # a scan, then the index is built (the same paths: the first lookup's rows)
        assert snapshot.files_of(inputs)["path"].to_pylist() == inputs
    base_index = _index(snapshot)
    assert base_index is not None and base_index.plain
    for wanted in (inputs[1:], inputs):  # other paths, then the first ones again: through the index
        assert snapshot.files_of(wanted)["path"].to_pylist() == wanted
    # A rewrite: inputs removed, one output added; a file re-added with another size; a file
    # given a deletion vector; a file removed by its absolute path (its canonical form is the
    # base's relative one); more appends.
    _commit(root, 3, [*[_remove(p) for p in inputs], _add("out0.parquet", 999), _add("f5.parquet", 555),
                      _remove("f6.parquet"), _add("f6.parquet", 106, dv=DV),
                      _remove(f"{root.as_posix()}/f7.parquet"), _add("f0.parquet", 100)])
    _commit(root, 4, [_add(f"k{i}.parquet", 400 + i) for i in range(5)])
    updated = snapshot.update()
    advanced = _index(updated)
    assert advanced is not None and advanced.plain  # advanced, not rebuilt
    fresh = DeltaTable(str(root)).snapshot()
    assert updated.files.equals(fresh.files)
    assert updated.tombstones.equals(fresh.tombstones)
    every = [*fresh.file_paths, *inputs, "f7.parquet", "nope.parquet"]
    for wanted in (every, ["f5.parquet", "f6.parquet", "out0.parquet"], ["f7.parquet"], inputs):
        assert updated.files_of(wanted).equals(_filtered(fresh.files, wanted)), wanted
    # The index finds each live row under its own path.
    assert advanced.candidates(updated.replay_state.rows["path"]).tolist() == list(range(updated.num_files))  # type: ignore[union-attr]
    # A commit naming a file by an absolute path that is not plain: the next state has no index
    # and still finds every file.
    _commit(root, 5, [_add(f"{root.as_posix()}/abs.parquet", 7)])
    newest = updated.update()
    assert _index(newest) is None or not _index(newest).plain  # type: ignore[union-attr]
    again = DeltaTable(str(root)).snapshot()
    assert newest.files.equals(again.files)
    wanted = [*again.file_paths, "nope.parquet"]
    for _ in range(2):
        assert newest.files_of(wanted).equals(_filtered(again.files, wanted))


def test_candidates_are_every_row_of_a_wanted_path() -> None:
    paths = pa.chunked_array([pa.array(["a", "b", "c"]), pa.array(["d", "a/b", ""])])
    index = PathIndex.build(paths)
    assert index is not None
    assert index.candidates(pa.array(["a/b", "c", "zz", ""])).tolist() == [2, 4, 5]
    assert index.candidates(pa.array(["zz"])).tolist() == []
    assert index.candidates(pa.array(["a", None])) is None  # cannot be hashed: the caller scans
    assert PathIndex.build(pa.array(["a", None])) is None
    advanced = index.advanced(np.array([1, 4]), pa.array(["e", "b"]))  # rows: a c d "" e b
    assert advanced is not None
    assert advanced.candidates(pa.array(["c", "e", "b", "a/b"])).tolist() == [1, 4, 5]
    again = advanced.advanced(np.array([0, 4]), pa.array(["a"]))  # rows: c d "" b a
    assert again is not None
    assert again.candidates(pa.array(["a", "b", "c", "e", ""])).tolist() == [0, 2, 3, 4]


def test_tombstones_are_matched_through_their_own_index_across_updates(tmp_path: pathlib.Path) -> None:
    root = _created(tmp_path / "t", files=30)
    _commit(root, 1, [_remove(f"f{i}.parquet") for i in range(10)])
    write_checkpoint(DeltaTable(str(root)))
    snapshot = DeltaTable(str(root)).snapshot()
    for _ in range(2):
        snapshot.files_of(["f12.parquet"])
    # A removed path added back (its tombstone goes), more removes, then a removed file's
    # tombstone replaced by a newer remove.
    for version, actions in ((2, [_add("f3.parquet", 3), _remove("f20.parquet"), _remove("f21.parquet")]),
                             (3, [_remove("f3.parquet"), _remove("f4.parquet"), _add("n.parquet", 1)]),
                             (4, [_add("f20.parquet", 20), _remove("f22.parquet")])):
        _commit(root, version, actions)
        snapshot = snapshot.update()
        fresh = DeltaTable(str(root)).snapshot()
        tombstones: PathIndex | None = snapshot.replay_state._cache.get(TOMBSTONE_INDEX)
        assert tombstones is not None and tombstones.plain
        assert snapshot.files.equals(fresh.files) and snapshot.tombstones.equals(fresh.tombstones), version
        assert snapshot.files_of(fresh.file_paths).equals(fresh.files), version
