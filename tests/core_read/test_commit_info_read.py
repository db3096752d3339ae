"""``read_commit_info`` reads a commit's first bytes for its ``commitInfo`` (writers put it on the
first line) and the whole file only when they do not hold it: the same answer either way, on
commits far longer than the prefix."""

from __future__ import annotations

import json
import os

import pytest

from delta_core.errors import CorruptLogError, VersionNotFoundError
from delta_core.log.history import COMMIT_INFO_PREFIX, read_commit_info
from delta_core.storage import open_storage

INFO = {"commitInfo": {"timestamp": 5, "operation": "OPTIMIZE"}}


def _add(i: int) -> dict:
    return {"add": {"path": f"f{i:06d}.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1,
                    "dataChange": True}}


def _commit(tmp_path, lines: list[dict | str]) -> str:
    log_dir = tmp_path / "_delta_log"
    os.makedirs(log_dir, exist_ok=True)
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    (log_dir / f"{0:020d}.json").write_text(text)
    assert len(text) > 2 * COMMIT_INFO_PREFIX or len(lines) < 5
    return str(tmp_path)


ADDS = [_add(i) for i in range(3000)]  # ~360 KB of add lines


@pytest.mark.parametrize("where", ["first", "last", "absent", "short file"])
def test_the_commit_info_wherever_it_is(tmp_path, where):
    lines = {"first": [INFO, *ADDS], "last": [*ADDS, INFO], "absent": ADDS, "short file": [INFO]}[where]
    storage = open_storage(_commit(tmp_path, lines))
    assert read_commit_info(storage, 0) == ({} if where == "absent" else INFO["commitInfo"])


def test_a_first_line_longer_than_the_prefix(tmp_path):
    info = {"commitInfo": {"timestamp": 5, "operation": "WRITE", "note": "x" * (2 * COMMIT_INFO_PREFIX)}}
    storage = open_storage(_commit(tmp_path, [info, *ADDS]))
    assert read_commit_info(storage, 0) == info["commitInfo"]


def test_a_broken_commit_info_line_is_corrupt_and_a_missing_commit_is_not_found(tmp_path):
    storage = open_storage(_commit(tmp_path, ['{"commitInfo": {"timestamp": ', *ADDS]))
    with pytest.raises(CorruptLogError, match="line 1"):
        read_commit_info(storage, 0)
    with pytest.raises(VersionNotFoundError):
        read_commit_info(storage, 1)
