"""Usage errors through the real ``delta-core`` console script: one ``delta-core: error (usage):``
prefix and nothing of argparse's own, the nearest command, choice or option suggested ("did you
mean"), the same in the ``--json`` error document, exit status 2, and nothing written."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from tests.core_write.conftest import listing
from tests.maintenance.conftest import make_table

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = pathlib.Path(sys.executable).parent / "delta-core"
PREFIX = "delta-core: error (usage): "


def delta_core(*args: str) -> subprocess.CompletedProcess:
    assert SCRIPT.is_file(), f"console script missing at {SCRIPT}; pip install -e . in the venv"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture()
def table(tmp_path) -> str:
    uri = str(tmp_path / "t")
    make_table(uri, appends=2)
    return uri


@pytest.mark.parametrize("argv, message", [
    (["compact", "{t}", "--target-sise", "1MB"],
     "unrecognized arguments: --target-sise 1MB (did you mean --target-size?); see delta-core compact --help"),
    (["compact", "{t}", "--target-sise=1MB"],
     "unrecognized arguments: --target-sise=1MB (did you mean --target-size?); see delta-core compact --help"),
    (["describe", "{t}", "--fils"], "unrecognized arguments: --fils (did you mean --files?); see delta-core describe --help"),
    (["compcat", "{t}"], "argument COMMAND: invalid choice: 'compcat'; did you mean 'compact'? (choose from describe,"),
    (["vacuum", "{t}", "--mode", "ful"],
     "argument --mode: invalid choice: 'ful'; did you mean 'full'? (choose from full, lite); see delta-core vacuum --help"),
])
def test_a_typo_gets_one_prefix_and_a_suggestion(table, argv, message):
    before = listing(table)
    args = [a.replace("{t}", table) for a in argv]
    proc = delta_core(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(PREFIX + message), proc.stderr
    assert proc.stderr.count("delta-core:") == 1  # one prefix, not argparse's program name again
    as_json = delta_core(*args, "--json")
    assert as_json.returncode == 2 and as_json.stderr == ""
    doc = json.loads(as_json.stdout)  # exactly one JSON document
    assert doc == {"error": {"kind": "usage", "message": doc["error"]["message"]}}
    assert doc["error"]["message"].startswith(message) and not doc["error"]["message"].startswith("delta-core")
    assert listing(table) == before


def test_nothing_close_suggests_nothing(table):
    proc = delta_core("describe", table, "--zzzzzz")
    assert proc.returncode == 2
    assert proc.stderr == f"{PREFIX}unrecognized arguments: --zzzzzz; see delta-core describe --help\n"
    unknown = delta_core("qqqqqq")
    assert unknown.returncode == 2 and "did you mean" not in unknown.stderr
    assert unknown.stderr.startswith(f"{PREFIX}argument COMMAND: invalid choice: 'qqqqqq' (choose from describe,")
