"""Issue 28: compaction whose Spark task cannot read a data file names the real cause on the
command line (it said "An error occurred while calling o76.getResult."): permission denied, a
missing file, a directory where the file should be. Exit status 2, one line (one JSON document
with ``--json``), the table unchanged, no temporary file left (checked on the run in its own
process, given its own TMPDIR: an in-process run shares the test session's JVM and process).

Permission denied needs a process that file modes bind: root reads a ``chmod 000`` file, so
under root the command runs with the capabilities that bypass file modes dropped from its
bounding set (``setpriv``), which makes the kernel refuse the read as it would for any user."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from delta_core.cli.main import main
from tests.core_write.conftest import listing
from tests.maintenance.conftest import make_table

pytestmark = pytest.mark.spark

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DROP_FILE_MODE_BYPASS = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]


def _data_files(table_uri: str) -> list[pathlib.Path]:
    return sorted(pathlib.Path(table_uri).glob("region=*/*.parquet"))


def _bound_by_file_modes(victim: pathlib.Path) -> list[str]:
    """The command prefix under which ``victim`` (mode 000) cannot be read, or a skip."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a chmod 000 file stays readable")
    probe = subprocess.run([*DROP_FILE_MODE_BYPASS, "cat", str(victim)], capture_output=True, text=True)
    if probe.returncode == 0 or "Permission denied" not in probe.stderr:
        pytest.skip(f"root cannot give up reading past file modes here: {probe.stderr.strip()}")
    return DROP_FILE_MODE_BYPASS


def test_unreadable_data_file_is_named_as_permission_denied(tmp_path, table_uri):
    make_table(table_uri, appends=2)
    victim = _data_files(table_uri)[0]
    victim.chmod(0)
    temp = tmp_path / "tmp"  # the command's own temporary directory: other processes share /tmp
    temp.mkdir()
    try:
        prefix = _bound_by_file_modes(victim)
        before = listing(table_uri)
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(temp)}
        command = [*prefix, sys.executable, "-m", "delta_core", "compact", table_uri, "--spark-master", "local[1]"]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        # One line of ours, the last; no Spark log nor traceback. (The JVM's own start-up line
        # "WARNING: Using incubator modules" may precede it: Spark's stderr is another issue's.)
        ours = [line for line in proc.stderr.splitlines() if line.startswith("delta-core:")]
        assert ours == proc.stderr.splitlines()[-1:], proc.stderr
        assert ours[0].startswith("delta-core: error (permission_denied): permission denied: read access to "
                                  f"{victim} is needed")
        for noise in ("Traceback", "\tat ", " ERROR ", "o76", "getResult"):
            assert noise not in proc.stderr, proc.stderr
        proc = subprocess.run([*command, "--json"], capture_output=True, text=True, timeout=300, env=env)
        error = json.loads(proc.stdout)["error"]  # exactly one JSON document
        assert proc.returncode == 2 and error["kind"] == "permission_denied" and str(victim) in error["message"]
        assert listing(table_uri) == before and list(temp.iterdir()) == []
    finally:
        victim.chmod(0o644)


def test_missing_data_file_is_named(spark, capsys, table_uri):
    make_table(table_uri, appends=2)
    gone = _data_files(table_uri)[0]
    gone.unlink()
    before = listing(table_uri)
    assert main(["compact", table_uri, "--spark-master", "local[2]"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("delta-core: error (missing_data_file): compaction batch 1/1 of ")
    assert f"are missing from storage, e.g. file://{gone} (deleted outside the Delta log?)" in err
    assert listing(table_uri) == before


def test_a_directory_in_place_of_a_data_file_is_named(spark, capsys, table_uri):
    make_table(table_uri, appends=2)
    victim = _data_files(table_uri)[0]
    victim.unlink()
    victim.mkdir()
    before = listing(table_uri)
    assert main(["compact", table_uri, "--spark-master", "local[2]", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "storage"
    assert error["message"] == f"cannot read file://{victim}: [Errno 21] Is a directory: '{victim}'"
    assert listing(table_uri) == before
