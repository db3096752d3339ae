"""Time travel by timestamp is bounded by the log, as Delta Spark's is: a time before the first
commit or after the latest one is a typed error that gives the commit's time in ISO 8601, and
``restore`` to such a time writes nothing. Tables written by delta-rs (file times) and by
delta_core with in-commit timestamps on; through the real ``delta-core`` console script and the
Python API."""

from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import re
import subprocess
import sys

import deltalake
import pyarrow as pa
import pytest

from delta_core.errors import TimestampAfterLatestCommitError, VersionNotFoundError
from delta_core.log.history import read_commit_info
from delta_core.log.table import DeltaTable
from delta_core.model.clock import iso_time
from delta_core.write.table_writes import append, set_properties
from tests.core_write.conftest import listing

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = pathlib.Path(sys.executable).parent / "delta-core"
EPOCH_MS = re.compile(r"\b\d{13}\b")  # a 2001-2286 time in epoch milliseconds


def delta_core_json(*args: str) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([str(SCRIPT), *args, "--json"], capture_output=True, text=True, timeout=120, env=env)
    return proc.returncode, json.loads(proc.stdout)


def _delta_rs(root: pathlib.Path) -> tuple[str, int]:
    """A delta-rs table of three commits, and its latest commit's time (file time, ms)."""
    for i in range(3):
        deltalake.write_deltalake(str(root), pa.table({"id": [i]}), mode="append")
    return str(root), DeltaTable(str(root)).history(1)[0].timestamp


def _with_ict(root: pathlib.Path) -> tuple[str, int]:
    """The same, then in-commit timestamps turned on: the latest time is a commitInfo field."""
    uri, _ = _delta_rs(root)
    version = set_properties(DeltaTable(uri), {"delta.enableInCommitTimestamps": "true"}).version
    append(DeltaTable(uri), pa.table({"id": pa.array([9], pa.int64())}))
    ict = read_commit_info(DeltaTable(uri).storage, version + 1)["inCommitTimestamp"]
    return uri, ict


@pytest.mark.parametrize("make", [_delta_rs, _with_ict], ids=["file_times", "in_commit_timestamps"])
def test_a_time_after_the_latest_commit_is_refused(tmp_path, make):
    uri, latest_ms = make(tmp_path / "t")
    table = DeltaTable(uri)
    latest = table.latest_version()
    assert table.snapshot(timestamp=latest_ms).version == latest  # the latest commit's own time
    with pytest.raises(TimestampAfterLatestCommitError) as caught:
        table.snapshot(timestamp=latest_ms + 1)
    assert isinstance(caught.value, VersionNotFoundError) and caught.value.version == latest
    assert f"committed {iso_time(latest_ms)}" in str(caught.value)

    status, out = delta_core_json("describe", uri, "--timestamp", "2999-01-01")
    assert status == 2 and out["error"]["kind"] == "timestamp_after_latest_commit"
    message = out["error"]["message"]
    assert "(2999-01-01T00:00:00.000+00:00) is after the latest version" in message
    assert f"at or before {iso_time(latest_ms)}" in message and not EPOCH_MS.search(message)


@pytest.mark.parametrize("make", [_delta_rs, _with_ict], ids=["file_times", "in_commit_timestamps"])
def test_restore_to_a_future_time_writes_nothing(tmp_path, make):
    uri, latest_ms = make(tmp_path / "t")
    before = listing(uri)
    status, out = delta_core_json("restore", uri, "--timestamp", "2999-01-01")
    assert status == 2 and out["error"]["kind"] == "timestamp_after_latest_commit"
    assert iso_time(latest_ms) in out["error"]["message"]
    assert listing(uri) == before


def test_a_time_before_the_first_commit_says_when_it_was_in_iso(tmp_path):
    uri, _ = _delta_rs(tmp_path / "t")
    first = DeltaTable(uri).history()[-1].timestamp
    status, out = delta_core_json("describe", uri, "--timestamp", "1990-01-01")
    assert status == 2 and out["error"]["kind"] == "version_not_found"
    assert out["error"]["message"].endswith(
        f"committed at or before 1990-01-01T00:00:00.000+00:00; the earliest available commit is at {iso_time(first)}")
    when = dt.datetime.fromisoformat(iso_time(first))
    assert when.tzinfo is not None and int(when.timestamp() * 1000) == first
