"""Maintenance on a real standalone Spark cluster and over Spark Connect (issue 14).

The cluster is a master and a worker started with ``spark-class``; the Connect server runs its
jobs on that worker. Compaction, Z-order, liquid clustering and vacuum's planning and deletes run in
the worker's executor processes, rows and results are checked with delta-rs, and a failing task over Connect reaches
the user as a typed error with nothing written. Slow: every application starts a JVM.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import deltalake
import pyarrow as pa
import pytest

from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from tests.cluster.conftest import executor_cores
from tests.core_write.conftest import listing
from tests.spark_servers import REPO_ROOT, server_env

pytestmark = [pytest.mark.slow, pytest.mark.spark]

ROWS = 120
TIMEOUT = 900  # seconds for one subprocess: an application may queue for the worker's core


def small_files_table(path: pathlib.Path) -> str:
    """A table of about a dozen tiny files (a tiny delta.targetFileSize splits the append)."""
    uri = str(path)
    data = pa.table({"id": pa.array(range(ROWS), pa.int64()), "v": pa.array([f"r{i}" for i in range(ROWS)])})
    create_table(uri, data.schema, properties={"delta.targetFileSize": str(data.slice(0, 10).nbytes)})
    append(DeltaTable(uri), data)
    assert DeltaTable(uri).snapshot().num_files >= 8
    return uri


def run_python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=TIMEOUT,
                          env=server_env(), cwd=REPO_ROOT)


ORPHAN = "sub/orphan.parquet"  # in a top-level directory: vacuum lists and plans it in a Spark task


def run_operations(master: str, uri: str) -> dict:
    orphan = os.path.join(uri, ORPHAN)
    os.makedirs(os.path.dirname(orphan))
    with open(orphan, "wb") as fh:
        fh.write(b"PAR1")
    os.utime(orphan, (0, 0))
    proc = run_python("-m", "tests.cluster.run_operations", master, uri)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_outcome(uri: str, out: dict) -> None:
    files_before = out["compact"]["num_removed_files"]
    assert files_before >= 8 and out["compact"]["num_added_files"] == 1
    assert out["zorder"]["num_removed_files"] >= 2 and out["zorder"]["num_added_files"] == 1
    # Vacuum deleted every file the rewrites removed and the orphan its task planned, as Spark tasks.
    removed = out["compact"]["num_removed_files"] + out["zorder"]["num_removed_files"]
    assert out["vacuum"]["num_deleted_files"] == removed + 1
    assert not os.path.exists(os.path.join(uri, ORPHAN))
    dt = deltalake.DeltaTable(uri)
    rows = dt.to_pyarrow_table()
    assert rows.num_rows == ROWS + 60
    assert sorted(rows.column("id").to_pylist()) == sorted(list(range(ROWS)) + list(range(60, 0, -1)))
    on_disk = [p for p, _size in listing(uri) if p.endswith(".parquet")]
    assert len(on_disk) == len(dt.file_uris()) == 1
    assert [h["operation"] for h in dt.history()][:4] == ["VACUUM END", "VACUUM START", "OPTIMIZE", "WRITE"]


def test_operations_run_in_the_standalone_clusters_executors(standalone_cluster, tmp_path):
    uri = small_files_table(tmp_path / "t")
    out = run_operations(standalone_cluster.url, uri)
    check_outcome(uri, out)
    assert not out["connect"] and out["jvm_in_process"]
    apps = {a["name"]: a for a in standalone_cluster.state()["completedapps"]}
    app = apps["delta-maintenance-cluster-test"]
    # The worker launched an executor for the application: the tasks ran there, not in the driver.
    assert executor_cores(standalone_cluster, app["id"])


def test_operations_run_over_spark_connect(connect_server, standalone_cluster, tmp_path):
    uri = small_files_table(tmp_path / "t")
    out = run_operations(connect_server.url, uri)
    check_outcome(uri, out)
    assert out["connect"] and not out["jvm_in_process"]  # this process started no JVM
    # The only application still running is the Connect server's; its executor is on the worker.
    (connect_app,) = standalone_cluster.state()["activeapps"]
    assert executor_cores(standalone_cluster, connect_app["id"]) == [1]


def test_cli_compacts_over_spark_connect(connect_server, tmp_path):
    uri = small_files_table(tmp_path / "t")
    proc = run_python("-m", "delta_core", "compact", uri, "--target-size", "128MB", "--spark-master",
                      connect_server.url, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(proc.stdout)
    assert metrics["num_added_files"] == 1 and metrics["num_removed_files"] >= 8
    assert deltalake.DeltaTable(uri).to_pyarrow_table().num_rows == ROWS


def test_failed_task_over_spark_connect_is_a_typed_error_and_writes_nothing(connect_server, tmp_path):
    uri = small_files_table(tmp_path / "t")
    victim = next(DeltaTable(uri).snapshot().add_actions()).path
    with open(os.path.join(uri, victim), "wb") as fh:
        fh.write(b"not parquet")  # the executor cannot read this input
    before = listing(uri)
    proc = run_python("-m", "delta_core", "compact", uri, "--target-size", "128MB", "--spark-master",
                      connect_server.url, "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    # The executor's exception, named; no Python traceback or JVM frames.
    assert error["kind"] == "task_failed" and "ArrowInvalid" in error["message"], error
    assert "Traceback" not in error["message"] and "\tat " not in error["message"]
    assert listing(uri) == before


@pytest.mark.parametrize("server", ["standalone_cluster", "connect_server"])
def test_cli_clusters_on_the_cluster(server, request, tmp_path):
    """Liquid clustering (cluster-by, then cluster) runs its key, shuffle and write tasks on the
    cluster: every live file ends up clustered, and delta-rs reads the same rows."""
    url = request.getfixturevalue(server).url
    uri = small_files_table(tmp_path / "t")
    expected = sorted(deltalake.DeltaTable(uri).to_pyarrow_table().column("id").to_pylist())
    proc = run_python("-m", "delta_core", "cluster-by", uri, "--columns", "id", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = run_python("-m", "delta_core", "cluster", uri, "--target-size", "128MB", "--spark-master", url, "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads(proc.stdout)
    assert metrics["unclustered_files"] >= 8 and metrics["num_added_files"] >= 1
    snapshot = DeltaTable(uri).snapshot()
    assert {a.clustering_provider for a in snapshot.add_actions()} == {"liquid"}
    assert sorted(deltalake.DeltaTable(uri).to_pyarrow_table().column("id").to_pylist()) == expected
