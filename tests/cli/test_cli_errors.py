"""Issue 9 §6: every error a user can cause is a typed ``DeltaError``: exit status 2, one line
of advice on stderr, or exactly one JSON document on stdout with ``--json``; no traceback
unless ``--verbose``. Argument errors, out-of-range numbers and permission denied included.

Permission tests run the CLI as ``nobody`` (``setpriv``) when the suite runs as root, since
root bypasses file modes; the table lives in a world-traversable directory for that user.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest

from delta_core.cli.main import main
from tests.conftest import CONFORMANCE_DIR
from tests.core_write.conftest import listing

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
NOBODY = 65534


def _one_json(out: str) -> dict:
    doc = json.loads(out)  # raises unless stdout is exactly one JSON document
    assert set(doc) == {"error"} and set(doc["error"]) == {"kind", "message"}
    return doc["error"]


@pytest.fixture()
def table_dir(tmp_path) -> pathlib.Path:
    dest = tmp_path / "t"
    shutil.copytree(CONFORMANCE_DIR / "dat-basic_partitioned", dest)
    return dest


@pytest.mark.parametrize("argv", [
    ["describe", "--json"],                                  # missing TABLE_URI
    ["describe", "{t}", "--json", "--no-such-option"],       # unknown option
    ["history", "{t}", "--json", "--limit", "ten"],          # not a number
    ["vacuum", "{t}", "--json", "--retention-hours"],        # option without its value
    ["no-such-command", "--json"],                           # unknown command
])
def test_argument_errors_are_one_json_document(capsys, table_dir, argv):
    status = main([a.replace("{t}", str(table_dir)) for a in argv])
    out, err = capsys.readouterr()
    assert status == 2
    error = _one_json(out)
    assert error["kind"] == "usage" and "--help" in error["message"]
    assert err == ""  # no usage text spewed


def test_argument_error_without_json_is_one_line(capsys, table_dir):
    status = main(["compact", str(table_dir), "--target-size", "12MB-ish"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("delta-core: error (usage): ")
    assert "'12MB-ish' is not a size" in err and "KiB/MiB/GiB/TiB binary" in err


@pytest.mark.parametrize("argv, words", [
    (["compact", "{t}", "--target-size", "999999999999999999999999999"],
     "argument --target-size: '999999999999999999999999999' is too large: a size must be below 8 EiB"),
    (["compact", "{t}", "--min-file-size", "0"], "argument --min-file-size: a size must be positive, got 0 bytes"),
    (["zorder", "{t}", "--columns", "number", "--target-size", "-5"],
     "argument --target-size: a size must be positive, got -5 bytes"),
    (["vacuum", "{t}", "--retention-hours", "1e300"], "out of range: give a number of hours from 0 to"),
    (["vacuum", "{t}", "--retention-hours", "inf"], "out of range: give a number of hours from 0 to"),
    (["vacuum", "{t}", "--retention-hours", "nan"], "out of range: give a number of hours from 0 to"),
])
def test_numbers_out_of_range_are_refused_and_nothing_is_written(capsys, table_dir, argv, words):
    before = listing(str(table_dir))
    status = main([a.replace("{t}", str(table_dir)) for a in argv] + ["--json"])
    error = _one_json(capsys.readouterr().out)
    assert status == 2 and error["kind"] == "usage"
    assert words in error["message"]
    assert listing(str(table_dir)) == before


def test_verbose_adds_the_traceback(capsys, tmp_path):
    assert main(["describe", str(tmp_path)]) == 2
    quiet = capsys.readouterr().err
    assert "Traceback" not in quiet and quiet.count("\n") == 1 and "not_a_table" in quiet
    assert main(["describe", str(tmp_path), "--verbose"]) == 2
    verbose = capsys.readouterr().err
    assert "Traceback (most recent call last)" in verbose and "NotADeltaTableError" in verbose
    assert verbose.rstrip().splitlines()[-1] == quiet.rstrip()


# --- permission denied, as an unprivileged user -----------------------------------------------


@pytest.fixture()
def public_table() -> pathlib.Path:
    """A copy of a conformance table in a directory the unprivileged user can reach."""
    top = pathlib.Path(tempfile.mkdtemp(prefix="h5-perm-", dir="/tmp"))
    try:
        top.chmod(0o755)
        dest = top / "t"
        shutil.copytree(CONFORMANCE_DIR / "dat-basic_partitioned", dest)
        for dirpath, dirs, files in os.walk(dest):
            for name in dirs:
                os.chmod(os.path.join(dirpath, name), 0o755)
            for name in files:
                os.chmod(os.path.join(dirpath, name), 0o644)
        yield dest
    finally:
        for dirpath, dirs, _files in os.walk(top):
            for name in dirs:  # give access back so the tree can be removed
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(top)


def run_unprivileged(*args: str) -> subprocess.CompletedProcess:
    drop = (["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
            if os.geteuid() == 0 else [])
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([*drop, sys.executable, "-m", "delta_core", *args], capture_output=True,
                          text=True, timeout=120, env=env, cwd="/tmp")


def test_unreadable_log_directory_names_the_path_and_read_access(public_table):
    log_dir = public_table / "_delta_log"
    log_dir.chmod(0o700)  # owner only: the unprivileged user cannot list it
    proc = run_unprivileged("describe", str(public_table), "--json")
    assert proc.returncode == 2, proc.stderr
    error = _one_json(proc.stdout)
    assert error["kind"] == "permission_denied"
    assert f"read access to {log_dir} is needed" in error["message"]
    assert "Traceback" not in proc.stderr


def test_unwritable_log_directory_names_the_path_and_write_access(public_table):
    log_dir = public_table / "_delta_log"
    log_dir.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)  # 755
    before = listing(str(public_table))
    proc = run_unprivileged("checkpoint", str(public_table), "--json", "--force")
    assert proc.returncode == 2, proc.stderr
    error = _one_json(proc.stdout)
    assert error["kind"] == "permission_denied"
    assert f"write access to {log_dir} is needed" in error["message"]
    assert "Traceback" not in proc.stderr and proc.stderr == ""
    assert listing(str(public_table)) == before
    # Without --json: one line of advice on stderr.
    proc = run_unprivileged("checkpoint", str(public_table), "--force")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "error (permission_denied)" in proc.stderr
