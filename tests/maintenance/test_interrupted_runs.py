"""Maintenance killed with SIGKILL at each stage (issue 30, "Interrupted runs").

A real maintenance process (``interrupted_worker``: compaction on its own local Spark, one
commit per batch, or a checkpoint) is killed, with its Spark JVM and Python workers (the whole
process group, as a lost container is), when the stage is seen from outside: by the log lines it
prints, or by the files it writes. Afterwards the table reads the same rows for us, delta-rs and
delta-kernel-rs; what the killed run wrote and did not commit is left to vacuum, which deletes
it; and the next run proceeds.

The commit itself is atomic (a temporary file linked to the version's name), so a kill "during
the commit" either leaves the version absent (with a hidden temporary file in ``_delta_log``)
or present; the first state is built directly (``test_a_commit_killed_before_its_link``), the
second is the kill as the version appears, which lands in the ``.crc`` write.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.model.partition_values import url_decode_path
from tests.maintenance.conftest import make_table

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = pathlib.Path(__file__).resolve().parents[2]


def rows(uri: str) -> collections.Counter:
    """Rows as delta-rs's query engine reads them."""
    import deltalake

    dt = deltalake.DeltaTable(uri)
    t = pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def kernel_rows(uri: str) -> collections.Counter:
    """Rows as delta-kernel-rs reads them."""
    import polars_deltalake

    t = polars_deltalake.read_delta(uri).to_arrow()
    return collections.Counter(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def parquet_files(uri: str) -> set[str]:
    return {os.path.relpath(os.path.join(d, f), uri) for d, _, fs in os.walk(uri) for f in fs
            if f.endswith(".parquet") and "_delta_log" not in d}


def ever_referenced(uri: str) -> set[str]:
    table = DeltaTable(uri)
    out = set()
    for v in range(table.latest_version() + 1):
        out |= {url_decode_path(a.path) for a in table.commit_actions(v) if hasattr(a, "path")}
    return out


def run_until(op: str, uri: str, stage: Callable[[list[str]], bool], *, timeout: float = 180) -> list[str]:
    """Start the worker and SIGKILL its process group once ``stage(lines)`` holds (``lines``: its
    stderr so far); returns the lines. Fails if the worker ends first."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPARK_LOCAL_IP": "127.0.0.1"}
    proc = subprocess.Popen([sys.executable, "-m", "tests.maintenance.interrupted_worker", op, uri], cwd=REPO,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while not stage(lines):
            if proc.poll() is not None:
                reader.join(5)
                pytest.fail(f"the worker ended (exit {proc.returncode}) before the stage:\n{''.join(lines)[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"stage not reached in {timeout} s:\n{''.join(lines)[-3000:]}")
            time.sleep(0.0005)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    return list(lines)


def said(text: str) -> Callable[[list[str]], bool]:
    return lambda lines: any(text in line for line in list(lines))


def _new_parquet(uri: str, before: set[str]) -> Callable[[list[str]], bool]:
    return lambda lines: bool(parquet_files(uri) - before)


def _version_appears(uri: str, version: int) -> Callable[[list[str]], bool]:
    path = os.path.join(uri, "_delta_log", f"{version:020d}.json")
    return lambda lines: os.path.exists(path)


STAGES = {
    # the worker has started its work: snapshot and plan (killed before the plan is logged)
    "planning": lambda uri, before, v0: said("worker: started"),
    # a Spark task is writing its output file
    "tasks": lambda uri, before, v0: _new_parquet(uri, before),
    # the first batch is committed, the second not yet
    "between_batches": lambda uri, before, v0: said("batch 1/2 of"),
    # the first batch's version has just landed: the kill falls in its .crc write (or just after)
    "crc": lambda uri, before, v0: _version_appears(uri, v0 + 1),
}


@pytest.mark.parametrize("stage", list(STAGES))
def test_compaction_killed_at_each_stage(spark, tmp_path, stage):
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=6)  # 12 files: two partitions, two bins, two batches
    v0 = table.latest_version()
    before_rows, before_kernel, inputs = rows(uri), kernel_rows(uri), parquet_files(uri)

    lines = run_until("compact", uri, STAGES[stage](uri, inputs, v0))

    text = "".join(lines)
    if stage == "planning":
        assert "compaction plan" not in text and DeltaTable(uri).latest_version() == v0
    if stage == "between_batches":
        assert DeltaTable(uri).latest_version() == v0 + 1
    # Readable by all three readers, with the same rows.
    snapshot = DeltaTable(uri).snapshot()
    assert snapshot.version >= v0
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel
    # What the killed run wrote and did not commit: only vacuum deletes it.
    orphans = parquet_files(uri) - ever_referenced(uri)
    # The next run proceeds and finishes the work.
    metrics = compact(DeltaTable(uri), spark)
    assert metrics.batches_aborted == 0
    assert DeltaTable(uri).snapshot().num_files == 2
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel
    assert orphans <= parquet_files(uri)  # still there: nothing but vacuum deletes them
    dry = vacuum(DeltaTable(uri), retention_hours=0, force=True, dry_run=True)
    assert all(any(p.endswith("/" + o) for p in dry.paths) for o in orphans)
    vacuum(DeltaTable(uri), retention_hours=0, force=True)
    assert not (parquet_files(uri) - {url_decode_path(p) for p in DeltaTable(uri).snapshot().file_paths})
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel


def _log_only_table(uri: str, files: int) -> None:
    """A table whose one commit adds ``files`` files (paths only: no data is read here)."""
    log = pathlib.Path(uri, "_delta_log")
    log.mkdir(parents=True)
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}
    lines = [json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}),
             json.dumps({"metaData": {"id": "5e4d-interrupted", "format": {"provider": "parquet", "options": {}},
                                      "schemaString": json.dumps(schema), "partitionColumns": [],
                                      "configuration": {}, "createdTime": 0}})]
    lines += [json.dumps({"add": {"path": f"part-{i:07d}.parquet", "partitionValues": {}, "size": 1000 + i,
                                  "modificationTime": 0, "dataChange": True,
                                  "stats": json.dumps({"numRecords": 1, "minValues": {"id": i},
                                                       "maxValues": {"id": i}, "nullCount": {"id": 0}})}})
              for i in range(files)]
    (log / f"{0:020d}.json").write_text("\n".join(lines) + "\n")


def _hidden_temp(uri: str, name: str) -> Callable[[list[str]], bool]:
    log = os.path.join(uri, "_delta_log")
    return lambda lines: any(f.startswith(f".{name}.") and f.endswith(".tmp") for f in os.listdir(log))


def test_checkpoint_killed_while_writing(tmp_path):
    import deltalake

    uri = str(tmp_path / "t")
    _log_only_table(uri, 300_000)
    files = sorted(DeltaTable(uri).snapshot().file_paths)

    run_until("checkpoint", uri, _hidden_temp(uri, f"{0:020d}.checkpoint.parquet"))

    log = os.listdir(os.path.join(uri, "_delta_log"))
    assert f"{0:020d}.checkpoint.parquet" not in log and "_last_checkpoint" not in log  # never half-visible
    assert sorted(DeltaTable(uri).snapshot().file_paths) == files
    assert len(deltalake.DeltaTable(uri).file_uris()) == len(files)
    # The next checkpoint proceeds; readers use it.
    from delta_core.write.checkpoint_write import write_checkpoint

    write_checkpoint(DeltaTable(uri))
    assert DeltaTable(uri).snapshot().log_segment.checkpoint_version == 0
    assert sorted(DeltaTable(uri).snapshot().file_paths) == files
    assert len(deltalake.DeltaTable(uri).file_uris()) == len(files)
    # The killed write's hidden temporary file (as large as a checkpoint) stays until log
    # cleanup finds it more than a day old; nothing else of the log goes.
    from delta_core.write.log_cleanup import cleanup_log

    def temps() -> list[str]:
        return [f for f in os.listdir(os.path.join(uri, "_delta_log")) if f.endswith(".tmp")]

    (temp,) = temps()
    young = cleanup_log(DeltaTable(uri), retention=dt.timedelta(0))
    assert young.deleted == () and temps() == [temp]  # less than a day old: kept
    two_days = int(time.time() * 1000) + 2 * 86_400_000
    result = cleanup_log(DeltaTable(uri), clock=lambda: two_days, retention=dt.timedelta(0))
    assert temps() == [] and [k.rsplit("/", 1)[-1] for k in result.deleted] == [temp]
    assert sorted(DeltaTable(uri).snapshot().file_paths) == files


def test_a_commit_killed_before_its_link(spark, tmp_path):
    """The state a kill between writing a commit's temporary file and linking it leaves: the
    version is absent, its hidden temporary file is ignored by every reader, and the next run
    commits that version."""
    uri = str(tmp_path / "t")
    table = make_table(uri, appends=3)
    v0 = table.latest_version()
    before_rows, before_kernel = rows(uri), kernel_rows(uri)
    log = pathlib.Path(uri, "_delta_log")
    committed = (log / f"{v0:020d}.json").read_bytes()
    (log / f".{v0 + 1:020d}.json.{'0' * 32}.tmp").write_bytes(committed)  # a half-published commit

    assert DeltaTable(uri).latest_version() == v0
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel
    metrics = compact(DeltaTable(uri), spark, min_input_files=3)
    assert metrics.version == v0 + 1
    assert rows(uri) == before_rows and kernel_rows(uri) == before_kernel
