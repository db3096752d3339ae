"""Issue 9 §6 for the maintenance commands: an unknown column is named as missing from the
schema, and a failed Spark task reaches the user typed, with the executor's Python exception,
without Spark's log or a Java stack on stderr; issue 30 §5: nor a Python worker's traceback."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.cli.main import main
from delta_core.errors import MaintenanceError
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.jvm_stderr import copy_stderr
from tests.core_write.conftest import listing
from tests.maintenance.conftest import make_table

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def _error(capsys) -> dict:
    return json.loads(capsys.readouterr().out)["error"]


def test_unknown_column_in_where_is_missing_from_the_schema(capsys, table_uri):
    make_table(table_uri, appends=1)
    before = listing(table_uri)
    assert main(["compact", table_uri, "--where", "nosuch = 1", "--json"]) == 2
    error = _error(capsys)
    assert error["kind"] == "config"
    assert "nosuch, which does not exist in the table schema" in error["message"]
    assert "the table's columns are id, x, name, day, ts, region" in error["message"]
    assert "not a partition column" not in error["message"]
    # A data column that exists is still refused as not a partition column.
    assert main(["zorder", table_uri, "--columns", "x", "--where", "id = 1", "--json"]) == 2
    assert "id, which is not a partition column" in _error(capsys)["message"]
    assert listing(table_uri) == before


def test_unknown_zorder_column_is_missing_from_the_schema(capsys, table_uri):
    # Already worked before issue 9: pinned.
    make_table(table_uri, appends=1)
    assert main(["zorder", table_uri, "--columns", "nosuch", "--json"]) == 2
    error = _error(capsys)
    assert error["kind"] == "config"
    assert "'nosuch' is not in the table schema (id, x, name, day, ts, region)" in error["message"]


def _data_files(table_uri: str) -> list[pathlib.Path]:
    return sorted(pathlib.Path(table_uri).glob("region=*/*.parquet"))


@pytest.mark.spark
def test_failed_spark_task_through_the_cli(table_uri, tmp_path):
    make_table(table_uri, appends=2)
    victim = _data_files(table_uri)[0]
    victim.write_bytes(b"not a parquet file")  # the task's parquet read fails in the executor
    log_before = listing(os.path.join(table_uri, "_delta_log"))
    # A temporary directory of its own: other processes on the machine write to /tmp meanwhile.
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(private_tmp)}
    proc = subprocess.run([sys.executable, "-m", "delta_core", "compact", table_uri, "--json",
                           "--spark-master", "local[1]"], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)["error"]  # exactly one JSON document
    assert error["kind"] == "task_failed"
    assert "raised pyarrow.lib.ArrowInvalid: Parquet magic bytes not found" in error["message"]
    assert "\tat " not in error["message"] and "Traceback" not in error["message"]
    # Nothing from Spark's log4j (WARN lines, executor stack traces) nor from us on stderr.
    for noise in ("\tat ", "Traceback", " WARN ", " ERROR ", "Setting default log level", "Exception"):
        assert noise not in proc.stderr, proc.stderr
    assert listing(os.path.join(table_uri, "_delta_log")) == log_before
    # Nothing left in the temporary directory (the quiet log4j2 configuration ships in the package).
    assert list(private_tmp.iterdir()) == []


def _is_java(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.NoSuchProcess):
        return "java" in process.name()
    return False


@pytest.mark.spark
def test_a_cli_terminated_while_spark_runs_leaves_nothing_in_tmp(table_uri, tmp_path):
    # SIGTERM runs no atexit handler: what the command wrote to /tmp before it was stopped stays there.
    make_table(table_uri, appends=2)
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(private_tmp)}
    proc = subprocess.Popen([sys.executable, "-m", "delta_core", "compact", table_uri, "--json",
                             "--spark-master", "local[1]"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    cli = psutil.Process(proc.pid)
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 180
        while not any(_is_java(child) for child in children):
            assert proc.poll() is None and time.monotonic() < deadline, "the CLI never started Spark's JVM"
            time.sleep(0.2)
            children = cli.children(recursive=True)
        proc.terminate()
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        proc.kill()
        proc.wait()
        for child in children:  # the JVM stops once its parent is gone; this makes sure
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
    assert list(private_tmp.glob("delta-core-*")) == []


@pytest.mark.spark
@pytest.mark.parametrize("command, as_json", [(["compact"], False), (["zorder", "--columns", "x"], True)])
def test_missing_data_file_leaves_only_the_error_on_stderr(table_uri, command, as_json):
    # Issue 30 item 5. Enough files for two tasks at once: when the task missing its file fails,
    # Spark cancels the other, whose worker found its socket closed and pyspark's daemon printed
    # a BrokenPipeError traceback; and the JVM announced its incubator module on every start.
    make_table(table_uri, appends=12, rows=5000)
    _data_files(table_uri)[3].unlink()
    log_before = listing(os.path.join(table_uri, "_delta_log"))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "delta_core", *command, table_uri, "--spark-master", "local[2]",
                           *(["--json"] if as_json else [])], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 2, proc.stderr
    if as_json:
        assert proc.stderr == ""
        assert json.loads(proc.stdout)["error"]["kind"] == "missing_data_file"  # one JSON document
    else:
        assert proc.stdout == ""
        assert proc.stderr.startswith("delta-core: error (missing_data_file): ")
        assert proc.stderr.count("\n") == 1 and proc.stderr.endswith("\n"), proc.stderr
    assert listing(os.path.join(table_uri, "_delta_log")) == log_before


def test_quiet_driver_stderr_loses_only_the_incubator_notice(capfd):
    # What else the JVM (or a Python worker through it) writes still reaches the console.
    read_end, write_end = os.pipe()
    os.write(write_end, b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                        b"spark-class: line 71: /nonexistent/bin/java: No such file or directory\n"
                        b"Fatal Python error: Segmentation fault\n")
    os.close(write_end)
    copy_stderr(read_end)
    assert capfd.readouterr().err == ("spark-class: line 71: /nonexistent/bin/java: No such file or directory\n"
                                      "Fatal Python error: Segmentation fault\n")


@pytest.mark.spark
def test_delta_error_in_an_executor_keeps_its_kind(spark, table_uri):
    table = make_table(table_uri, appends=2)
    victim = _data_files(table_uri)[0]
    rows = pq.read_table(victim)
    # The same rows with `id` as text that is no number: the task's cast to the table's long fails.
    broken = rows.set_column(rows.schema.get_field_index("id"), "id",
                             pa.array([f"row-{i}" for i in range(rows.num_rows)]))
    pq.write_table(broken, victim)
    with pytest.raises(MaintenanceError) as info:
        compact(table, spark)
    assert type(info.value) is MaintenanceError  # the executor's own error class, not a wrapper
    assert str(info.value).startswith("column 'id' of ")
    assert "holds string values, but the table's schema says int64" in str(info.value)


@pytest.mark.spark
def test_failed_mapinarrow_task_is_typed(spark, capsys, table_uri):
    # Z-order's tasks run through the DataFrame API (mapInArrow), not the RDD runner.
    make_table(table_uri, appends=2)
    _data_files(table_uri)[-1].write_bytes(b"junk")
    log_before = listing(os.path.join(table_uri, "_delta_log"))
    assert main(["zorder", table_uri, "--columns", "x", "--json", "--spark-master", "local[2]"]) == 2
    error = _error(capsys)
    assert error["kind"] == "task_failed"
    assert "failed in a Spark task, which raised pyarrow.lib.ArrowInvalid: Parquet file size is 4 bytes" \
        in error["message"]
    assert listing(os.path.join(table_uri, "_delta_log")) == log_before


_CLOSED_BEFORE_HANDSHAKE = """
import os, socket
from delta_core.maintenance.spark import quiet_daemon
os.environ["PYTHON_WORKER_FACTORY_SECRET"] = "secret"
ours, jvm = socket.socketpair()
jvm.close()  # the JVM gave up on the task before sending its secret
print(quiet_daemon.serve_task(ours, False))
"""


def test_a_worker_whose_task_was_given_up_before_its_handshake_ends_quietly():
    # The CI flake behind this: a worker forked for a task Spark cancelled read the end of its
    # socket where the secret should be, and pyspark's daemon printed the EOFError.
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", _CLOSED_BEFORE_HANDSHAKE], capture_output=True, text=True,
                          timeout=60, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "1\n", "")
