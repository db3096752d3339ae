"""Tags of checkpoint rows are read on demand (issue 31): a snapshot loads a Parquet checkpoint
without ``add.tags`` (a clustered table's ZCube tags, ~85 bytes a file), and ``files``,
``file_columns``, ``files_of`` and ``iter_tags`` read them from the checkpoint then. On every
fixture table they must equal the tags the log holds, read eagerly here: the checkpoint's Parquet
(parts and sidecars) by pyarrow, a JSON checkpoint's lines and the commits after it by ``json``.
A checkpoint replaced after the snapshot was loaded is refused when tags are read."""

from __future__ import annotations

import json
import pathlib
import random
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from delta_core.errors import CorruptLogError
from delta_core.log.file_actions import STRING_MAP
from delta_core.log.log_path import SIDECAR_DIR
from delta_core.log.snapshot import Snapshot
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table, delete_files
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR

Tags = list[tuple[str, str | None]] | None  # a map as pyarrow lists it: entries in order


def _fixture_snapshots() -> list[tuple[str, pathlib.Path]]:
    out = []
    for log in sorted([*CONFORMANCE_DIR.rglob("_delta_log"), *MODERN_DIR.rglob("_delta_log")]):
        try:
            DeltaTable(str(log.parent)).snapshot()
        except Exception:  # noqa: BLE001, S112 (fixtures of bad logs: their own tests check the errors)
            continue
        out.append((log.parent.name, log.parent))
    return out


def _parquet_tags(path: pathlib.Path) -> tuple[dict[str, Tags], list[str]]:
    """Path -> tags of the ``add`` rows of a checkpoint Parquet file (the map as pyarrow reads
    it, whatever its parts are named), and the sidecar names it points at."""
    data = pq.read_table(path)
    out: dict[str, Tags] = {}
    if "add" in data.column_names:
        adds = data.column("add").combine_chunks()
        has_tags = adds.type.get_field_index("tags") >= 0
        for row in range(len(adds)):
            body = adds[row]
            if body.is_valid and body["path"].is_valid:
                out[body["path"].as_py()] = body["tags"].as_py() if has_tags else None
    sidecars = [s["path"] for s in data.column("sidecar").to_pylist() if s] if "sidecar" in data.column_names else []
    return out, sidecars


def _json_tags(body: dict[str, Any]) -> Tags:
    tags = body.get("tags")
    return None if tags is None else list(tags.items())


def _logged_tags(snapshot: Snapshot, root: pathlib.Path) -> tuple[dict[str, Tags], set[str]]:
    """Path -> tags of the newest ``add`` of each path in the snapshot's log segment, read
    eagerly, and the paths whose newest add came from a JSON line (their key order is the
    decoder's: compared as dicts)."""
    log = root / "_delta_log"
    segment = snapshot.log_segment
    tags: dict[str, Tags] = {}
    from_json: set[str] = set()

    def json_lines(path: pathlib.Path) -> list[dict[str, Any]]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    sidecars: list[str] = []
    for f in segment.checkpoint_files:
        path = root / f.key
        if path.suffix == ".json":
            for action in json_lines(path):
                if "add" in action:
                    tags[action["add"]["path"]] = _json_tags(action["add"])
                    from_json.add(action["add"]["path"])
                elif "sidecar" in action:
                    sidecars.append(action["sidecar"]["path"])
        else:
            found, named = _parquet_tags(path)
            tags.update(found)
            sidecars += named
    for name in sidecars:
        tags.update(_parquet_tags(root / SIDECAR_DIR / name.rsplit("/", 1)[-1])[0])
    for f in segment.commit_files:
        for action in json_lines(log / pathlib.Path(f.key).name):
            if "add" in action:
                tags[action["add"]["path"]] = _json_tags(action["add"])
                from_json.add(action["add"]["path"])
    return tags, from_json


def _as_compared(value: Tags, by_dict: bool) -> object:
    return dict(value) if by_dict and value is not None else value


@pytest.mark.parametrize(("name", "root"), _fixture_snapshots(), ids=lambda v: v if isinstance(v, str) else "")
def test_tags_equal_the_logged_ones_on_every_fixture_table(name: str, root: pathlib.Path) -> None:
    snapshot = DeltaTable(str(root)).snapshot()
    logged, from_json = _logged_tags(snapshot, root)
    files = snapshot.files
    assert files.schema.field("tags").type == STRING_MAP
    got = dict(zip(files["path"].to_pylist(), files["tags"].to_pylist()))
    assert {p: _as_compared(t, p in from_json) for p, t in got.items()} == \
        {p: _as_compared(logged[p], p in from_json) for p in got}, name

    # Each way of reading the tags, from a snapshot that has read nothing yet, gives files' tags.
    assert DeltaTable(str(root)).snapshot().file_columns("path", "tags").equals(files.select(["path", "tags"]))
    pieces = list(DeltaTable(str(root)).snapshot().iter_tags())
    streamed = pa.chunked_array([c for p in pieces for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])],
                                STRING_MAP)
    assert streamed.equals(files["tags"]), name
    paths = random.Random(name).sample(snapshot.file_paths, len(snapshot.file_paths) // 3)
    wanted = pc.is_in(files["path"], value_set=pa.array(paths, pa.string()))
    assert DeltaTable(str(root)).snapshot().files_of(paths, ("path", "tags")).equals(
        files.filter(wanted).select(["path", "tags"])), name


def test_fixtures_cover_checkpoint_tags() -> None:
    """The fixtures hold checkpoint rows whose tags are deferred and not all null (delta-rs's
    checkpoints name the map's entries ``tags``, not ``key_value``)."""
    deferred_tagged = 0
    for _, root in _fixture_snapshots():
        snapshot = DeltaTable(str(root)).snapshot()
        state = snapshot.replay_state
        if state.checkpoint_stats is None or "checkpoint_row" not in state.rows.column_names:
            continue
        assert state.rows["tags"].slice(0, state.rows.num_rows - state.rows["checkpoint_row"].null_count) \
            .null_count == state.rows.num_rows - state.rows["checkpoint_row"].null_count  # none loaded
        deferred_tagged += snapshot.files["tags"].null_count < snapshot.num_files
    assert deferred_tagged >= 4


SCHEMA = pa.schema([("id", pa.int64())])


def test_a_rewritten_checkpoint_is_refused_when_tags_are_read(tmp_path: pathlib.Path) -> None:
    table_dir = str(tmp_path / "t")
    t = create_table(table_dir, SCHEMA, properties={"delta.checkpointInterval": "1000"})
    for i in range(6):
        append(t, pa.table({"id": [i]}, schema=SCHEMA))
    write_checkpoint(t)
    snap = t.snapshot()
    delete_files(t, [snap.file_paths[0]])
    checkpoint = next(pathlib.Path(table_dir, "_delta_log").glob("*.checkpoint.parquet"))
    newer = write_checkpoint(t)
    pathlib.Path(table_dir, "_delta_log", f"{newer.version:020d}.checkpoint.parquet").replace(checkpoint)
    # what was loaded still answers; the tags are read from the replaced file and refused
    assert snap.file_columns("path", "size").num_rows == 6
    with pytest.raises(CorruptLogError, match="reload the table"):
        list(snap.iter_tags())
    with pytest.raises(CorruptLogError, match="reload the table"):
        snap.file_columns("tags")
    with pytest.raises(CorruptLogError, match="reload the table"):
        snap.files_of(snap.file_paths[1:], ("path", "tags"))
