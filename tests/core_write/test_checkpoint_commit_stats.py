"""A checkpoint written from JSON commits holds each live file's ``stats`` and ``tags`` exactly as
its newest ``add`` wrote them (PROTOCOL.md "Per-file Statistics", "Action Reconciliation"): replay
keeps the commits' stats and tags packed (``commit_stats``) and the checkpoint writer streams them
back, for
commits read by either decoder, files re-added with a new deletion vector, paths removed and
added again, and snapshots brought forward by ``Snapshot.update()`` over a checkpoint and over
commits; and a checkpoint written from a checkpoint and commits holds the checkpoint's own rows'
stats and tags (read from it only while writing) byte for byte."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pyarrow.parquet as pq

from delta_core.log.commit_read import COLUMNAR_MIN_BYTES, build_batch, read_commits
from delta_core.log.log_path import LogFileKind
from delta_core.log.log_segment import list_log
from delta_core.log.replay import ReplayState, reconcile
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from tests.core_read.conftest import LogWriter, add, commit_info, metadata, protocol, remove

DV1 = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 4, "sizeInBytes": 40, "cardinality": 6}
DV2 = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 90, "sizeInBytes": 40, "cardinality": 9}
DV_PROTOCOL = protocol(3, 7, readerFeatures=["deletionVectors"], writerFeatures=["deletionVectors"])


def _stats(i: int, tag: str) -> str:
    # Escapes, quotes and non-ASCII text: the strings must come back exactly as written.
    low = f'a"{tag}\\é☃\t{i}'
    return json.dumps({"numRecords": i, "minValues": {"id": i, "part": low}, "maxValues": {"id": i + 9, "part": "z"},
                       "nullCount": {"id": 0, "part": i % 3}}, ensure_ascii=i % 2 == 0)


def _add(path: str, i: int, tag: str, dv: dict | None = None) -> dict:
    # Two files in three carry ZCube-like tags, a few cubes per commit; the third has none.
    tags = {} if i % 3 == 0 else {"tags": {"ZCUBE_ID": f"cube-{tag}-{i % 4}", "ZCUBE_ZORDER_BY": '["id"]'}}
    return add(path, dv=dv, stats=_stats(i, tag), **tags)


def _tags(entries: list[tuple[str, str]] | None) -> dict[str, str] | None:
    return None if entries is None else dict(entries)


Described = tuple[str, "dict[str, str] | None"]  # a file's stats and tags


def _dv_id(dv: dict | None) -> str | None:
    if dv is None:
        return None
    return dv["storageType"] + dv["pathOrInlineDv"] + (f"@{dv['offset']}" if "offset" in dv else "")


def _expected(log: pathlib.Path, version: int) -> dict[str, Described]:
    """Path -> (stats, tags) of the live files at ``version``, replayed in plain Python from the JSON."""
    live: dict[tuple[str, str | None], Described] = {}
    for v in range(version + 1):
        for line in (log / f"{v:020d}.json").read_text(encoding="utf-8").splitlines():
            action = json.loads(line)
            if "add" in action:
                body = action["add"]
                live = {k: s for k, s in live.items() if k[0] != body["path"]}  # adds are unique by path
                live[(body["path"], _dv_id(body.get("deletionVector")))] = (body["stats"], body.get("tags"))
            elif "remove" in action:
                body = action["remove"]
                live.pop((body["path"], _dv_id(body.get("deletionVector"))), None)
    return {path: stats for (path, _), stats in live.items()}


def _checkpoint_stats(path: str) -> dict[str, Described]:
    adds = [a for a in pq.read_table(path.removeprefix("file://")).column("add").to_pylist() if a is not None]
    assert len({a["path"] for a in adds}) == len(adds)
    return {a["path"]: (a["stats"], _tags(a["tags"])) for a in adds}


def _described(files: pa.Table) -> dict[str, Described]:
    return dict(zip(files["path"].to_pylist(), zip(files["stats"].to_pylist(), map(_tags, files["tags"].to_pylist()))))


def _unpacked_replay(root: pathlib.Path, version: int) -> dict[str, Described]:
    """Path -> (stats, tags) by replay with the stats and tags kept in the rows (how every commit
    was replayed before they were packed)."""
    storage = LogWriter(root).storage()
    commits = [f for f in list_log(storage) if f.kind is LogFileKind.COMMIT and f.version <= version]
    batch = build_batch(read_commits(storage, commits), source=storage.root)
    assert batch.add_stats is None
    state = reconcile(ReplayState.empty(), batch, table_root=storage.root)
    assert not state.stats_deferred
    return _described(state.rows)


def _write_log(w: LogWriter) -> None:
    big = [_add(f"f{i}", i, "one") for i in range(900)]
    assert len("".join(json.dumps(a) for a in big)) > COLUMNAR_MIN_BYTES  # read by Arrow's JSON reader
    w.commit(0, commit_info(), DV_PROTOCOL, metadata())
    w.commit(1, commit_info(), *big)
    w.commit(2, commit_info(), remove("f1"), remove("f2"), _add("g0", 7, "dv1", DV1))  # per-line decoder
    # f1 comes back with new stats; g0 is re-added with a new deletion vector; f5 is added again
    # over itself (the newest add wins).
    w.commit(3, commit_info(), _add("f1", 11, "back"), remove("g0", dv=DV1), _add("g0", 8, "dv2", DV2),
             _add("f5", 55, "again"))


def _write_more(w: LogWriter) -> None:
    w.commit(4, commit_info(), *[remove(f"f{i}") for i in range(10, 300)],
             *[_add(f"h{i}", i, "four") for i in range(600)], _add("f2", 22, "back"))
    w.commit(5, commit_info(), remove("g0", dv=DV2), _add("g0", 9, "plain"), remove("h3"), _add("f10", 3, "back"))


def test_checkpoint_from_json_commits_has_the_commits_stats(tmp_path) -> None:
    w = LogWriter(tmp_path / "t")
    _write_log(w)
    snapshot = DeltaTable(str(w.root)).snapshot()
    assert snapshot.replay_state.stats_deferred  # the commits' stats were packed, not in the rows
    # ... and so were their tags
    assert snapshot.replay_state.rows["tags"].null_count == snapshot.num_files
    expected = _expected(w.log, 3)
    assert any(tags for _, tags in expected.values()) and expected == _unpacked_replay(w.root, 3)
    assert _described(snapshot.files) == expected
    assert _described(snapshot.file_columns("path", "stats", "tags")) == expected
    result = write_checkpoint(DeltaTable(str(w.root)))
    assert _checkpoint_stats(result.path) == expected
    assert snapshot.num_records == sum(json.loads(s)["numRecords"] for s, _ in expected.values())


def test_update_over_a_checkpoint_and_commits_keeps_each_files_stats(tmp_path) -> None:
    w = LogWriter(tmp_path / "t")
    _write_log(w)
    table = DeltaTable(str(w.root))
    write_checkpoint(table)
    from_checkpoint = table.snapshot()
    _write_more(w)
    updated = from_checkpoint.update()
    assert updated.version == 5 and updated.replay_state.commit_stats is not None
    expected = _expected(w.log, 5)
    assert expected == _unpacked_replay(w.root, 5)
    streamed = [s for piece in updated.iter_stats() for s in piece.to_pylist()]
    tags = [_tags(t) for piece in updated.iter_tags() for t in piece.to_pylist()]
    assert dict(zip(updated.files["path"].to_pylist(), zip(streamed, tags))) == expected
    result = write_checkpoint(table, snapshot=updated)
    assert _checkpoint_stats(result.path) == expected


def test_update_over_commits_keeps_each_files_stats(tmp_path) -> None:
    # A snapshot replayed from JSON commits, then brought forward by more commits: the packed
    # stats of both runs of commits line up with their rows.
    w = LogWriter(tmp_path / "t")
    _write_log(w)
    table = DeltaTable(str(w.root))
    at_two = table.snapshot(2)
    _write_more(w)
    updated = at_two.update()
    assert updated.version == 5 and updated.replay_state.checkpoint_stats is None
    # Commit 2's only file (g0 with DV1) was replaced in commit 3: its packed stats are dropped.
    pieces = updated.replay_state.commit_stats.pieces
    assert [p.data is None for p in pieces].count(True) == 1
    expected = _expected(w.log, 5)
    result = write_checkpoint(table, snapshot=updated)
    assert _checkpoint_stats(result.path) == expected
    assert _described(updated.files) == expected


def _checkpoint_adds(path: str) -> dict[str, tuple[str, list[tuple[str, str]] | None]]:
    """Path -> (stats, tags as their entries in order) of the checkpoint's ``add`` rows, as written."""
    adds = [a for a in pq.read_table(path.removeprefix("file://")).column("add").to_pylist() if a is not None]
    return {a["path"]: (a["stats"], a["tags"]) for a in adds}


def test_checkpoint_from_a_checkpoint_and_commits_carries_the_checkpoints_tags(tmp_path) -> None:
    # A snapshot loaded from a checkpoint reads its rows' tags (and stats) from that checkpoint
    # only while writing the next one: each file's entries come back byte for byte, in order.
    w = LogWriter(tmp_path / "t")
    _write_log(w)
    table = DeltaTable(str(w.root))
    first = _checkpoint_adds(write_checkpoint(table).path)
    assert sum(tags is not None for _, tags in first.values()) > 500
    _write_more(w)
    snapshot = DeltaTable(str(w.root)).snapshot()
    state = snapshot.replay_state
    assert snapshot.log_segment.checkpoint_version == 3 and state.checkpoint_stats is not None
    assert state.rows["tags"].null_count == snapshot.num_files  # none loaded: checkpoint's nor commits'
    expected = _expected(w.log, 5)
    second = _checkpoint_adds(write_checkpoint(table, snapshot=snapshot).path)
    assert {p: (s, _tags(t)) for p, (s, t) in second.items()} == expected
    kept = [p for p in first if p in second and not p.startswith(("g", "h")) and p not in ("f2", "f10")]
    assert len(kept) > 500 and all(second[p] == first[p] for p in kept)  # the checkpoint's own rows
    # ... and again from that checkpoint and one more commit: the same rows, and the new one
    w.commit(6, commit_info(), _add("k1", 1, "six"))
    again = _checkpoint_adds(write_checkpoint(DeltaTable(str(w.root))).path)
    assert again == {**second, "k1": again["k1"]} and _tags(again["k1"][1]) == _expected(w.log, 6)["k1"][1]
