"""The read path on an in-memory fsspec store (``memory://``): same results as on disk."""

from __future__ import annotations

import json
import pathlib
import uuid

import fsspec
import pytest

from delta_core.log.table import DeltaTable
from delta_core.storage import open_storage
from tests.core_read.conftest import RecordingStorage


def _to_memory(src: pathlib.Path) -> str:
    fs = fsspec.filesystem("memory")
    root = f"/conformance-{uuid.uuid4().hex[:8]}/{src.name}"
    for path in src.rglob("*"):
        if path.is_file():
            fs.pipe_file(f"{root}/{path.relative_to(src).as_posix()}", path.read_bytes())
    return f"memory://{root}"


@pytest.mark.parametrize("name", ["golden-checkpoint", "golden-v2-checkpoint-json", "golden-multi-part-checkpoint",
                                  "rs-delta-1.2.1-only-struct-stats", "dat-multi_partitioned"])
def test_memory_store_reads_like_local(conformance_dir: pathlib.Path, name: str) -> None:
    uri = _to_memory(conformance_dir / name)
    want = json.loads((conformance_dir / name / "expected.json").read_text(encoding="utf-8"))["latest"]
    storage = RecordingStorage(open_storage(uri))
    snap = DeltaTable(storage=storage).snapshot()
    assert snap.version == want["version"]
    assert sorted(snap.file_paths) == want["files"]
    assert snap.num_records == want["num_records"]
    assert snap.tombstones.num_rows == want["num_tombstones"]
    if name == "golden-checkpoint":
        assert [s for _, s in storage.list_calls] == ["00000000000000000010"]
    local = DeltaTable(str(conformance_dir / name)).snapshot()
    assert snap.files.drop_columns(["modification_time"]).sort_by("path").equals(
        local.files.drop_columns(["modification_time"]).sort_by("path"))
