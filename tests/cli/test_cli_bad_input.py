"""Issue 28: the bad inputs a new user met, each an exit status 2 with one line of advice on
stderr (one JSON document with ``--json``), nothing written and no temporary file left: a file
given as a table, a size with a minus, a retention shorter than the table's. Messages write
sizes, durations and flags as a person does (``-5 MB``, ``7 days``, ``--force``).

The process-level checks run the real console entry (``python -m delta_core``) so that stderr
holds everything the user sees (warnings included); the sweep over every command runs
``main()`` in-process."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from delta_core.cli.main import main
from tests.core_write.conftest import listing
from tests.maintenance.conftest import make_table

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# every command that opens a table, with the arguments it needs besides TABLE_URI
COMMANDS = [
    ["describe"], ["history"], ["health"], ["checkpoint"], ["cleanup-log"], ["compact-log"],
    ["set-properties", "delta.appendOnly=true"], ["compact"], ["zorder", "--columns", "id"], ["vacuum"],
    ["manifest"], ["cluster"], ["cluster-by", "--columns", "id"], ["purge"],
]


@pytest.fixture()
def temp(tmp_path) -> pathlib.Path:
    """The commands' own TMPDIR (other processes share /tmp): empty when they are done."""
    path = tmp_path / "tmp"
    path.mkdir()
    yield path
    assert list(path.iterdir()) == []


def delta_core(temp: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "TMPDIR": str(temp)}
    return subprocess.run([sys.executable, "-m", "delta_core", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def _one_line(proc: subprocess.CompletedProcess, kind: str) -> str:
    """The one line of advice on stderr, for an exit status 2 with nothing on stdout."""
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1, proc.stderr
    prefix = f"delta-core: error ({kind}): "
    assert proc.stderr.startswith(prefix), proc.stderr
    return proc.stderr[len(prefix):].rstrip("\n")


def _one_json(proc: subprocess.CompletedProcess, kind: str) -> str:
    assert proc.returncode == 2 and proc.stderr == "", proc.stderr
    doc = json.loads(proc.stdout)  # exactly one JSON document
    assert set(doc) == {"error"} and set(doc["error"]) == {"kind", "message"} and doc["error"]["kind"] == kind
    return str(doc["error"]["message"])


@pytest.fixture()
def table(tmp_path) -> str:
    uri = str(tmp_path / "t")
    make_table(uri, appends=2)
    return uri


def test_a_file_given_as_a_table_is_not_a_table(a_file, temp):
    before = listing(str(a_file.parent))
    line = _one_line(delta_core(temp, "describe", str(a_file)), "not_a_table")
    assert line == (f"file://{a_file} is not a Delta table: there is no _delta_log/ with a commit or checkpoint "
                    "(check the path, or create the table first)")
    assert _one_json(delta_core(temp, "describe", str(a_file), "--json"), "not_a_table") == line
    assert listing(str(a_file.parent)) == before


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("where", ["afile.txt", "afile.txt/sub"])
def test_every_command_refuses_a_file_as_a_table(capsys, a_file, command, where):
    root = str(a_file.parent / where)
    before = listing(str(a_file.parent))
    assert main([command[0], root, *command[1:]]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("delta-core: error (not_a_table): ")
    assert main([command[0], root, *command[1:], "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "not_a_table"
    assert listing(str(a_file.parent)) == before


def test_a_log_that_is_a_file_is_not_a_table(log_is_a_file, temp):
    before = listing(str(log_is_a_file))
    _one_line(delta_core(temp, "history", str(log_is_a_file)), "not_a_table")
    assert listing(str(log_is_a_file)) == before


def test_a_negative_size_says_it_must_be_positive(table, temp):
    before = listing(table)
    line = _one_line(delta_core(temp, "compact", table, "--target-size", "-5MB"), "usage")
    assert line == ("argument --target-size: a size must be positive, got -5 MB; "
                    "see delta-core compact --help")
    message = _one_json(delta_core(temp, "compact", table, "--target-size", "-5MB", "--json"), "usage")
    assert message == line
    assert listing(table) == before


@pytest.mark.parametrize("argv, words", [
    (["zorder", "{t}", "--columns", "id", "--target-size", "-1.5GiB"],
     "argument --target-size: a size must be positive, got -1.5 GiB"),
    (["compact", "{t}", "--min-file-size", "-64KiB"], "argument --min-file-size: a size must be positive, got -64 KiB"),
    (["health", "{t}", "--target-size", "-1"], "argument --target-size: a size must be positive, got -1 bytes"),
    (["cluster", "{t}", "--target-size", "-5MB"], "argument --target-size: a size must be positive, got -5 MB"),
    (["vacuum", "{t}", "--retention-hours", "-1"], "argument --retention-hours: -1 hours is out of range"),
    (["compact-log", "{t}", "--min-commits", "-1"], "argument --min-commits: -1 is out of range: give a whole "
                                                    "number from 2"),
    (["checkpoint", "{t}", "--sidecar-threshold", "-3"], "argument --sidecar-threshold: -3 is out of range"),
    (["compact", "{t}", "--max-deleted-rows-ratio", "-0.5"], "argument --max-deleted-rows-ratio: -0.5 is out of range"),
    (["history", "{t}", "--limit", "-2"], "--limit -2 must be at least 1"),
])
def test_numbers_with_a_minus_reach_their_own_check(capsys, table, argv, words):
    before = listing(table)
    assert main([a.replace("{t}", table) for a in argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and words in err, err
    assert "expected one argument" not in err
    assert listing(table) == before


def test_short_retention_reads_as_people_write_it(table, temp):
    before = listing(table)
    line = _one_line(delta_core(temp, "vacuum", table, "--retention-hours", "0"), "retention_too_short")
    assert line.startswith("a retention of 0 seconds is shorter than the table's delta.deletedFileRetentionDuration "
                           "(7 days); ")
    assert "force it (--force on the command line, allow_short_retention: true in tables.yaml)" in line
    for python in ("0:00:00", "days, ", "force=True"):
        assert python not in line
    message = _one_json(delta_core(temp, "vacuum", table, "--retention-hours", "1.5", "--json"),
                        "retention_too_short")
    assert message.startswith("a retention of 1 hour 30 minutes is shorter than")
    assert listing(table) == before
