"""The command line imports only what a command needs (issue 19: ``delta-core --help`` within
0.3 s): building the parser and printing help must not load pyarrow, fsspec, numpy or pandas,
which cost most of a second; the commands import them when they run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("pyarrow", "fsspec", "numpy", "pandas", "pyspark")

_PROBE = """
import contextlib, io, json, sys
from delta_core.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(json.dumps({"help": out.getvalue(), "loaded": [m for m in HEAVY if m in sys.modules]}))
""".replace("HEAVY", repr(HEAVY))


def _probe(*argv: str) -> dict:
    # A fresh interpreter: this test process has imported pyarrow long ago.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                          timeout=120, env=env, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def test_help_loads_no_heavy_library() -> None:
    result = _probe("--help")
    assert "describe" in result["help"] and "checkpoint" in result["help"]
    assert result["loaded"] == []


def test_command_help_loads_no_heavy_library() -> None:
    for command in ("describe", "checkpoint", "cleanup-log", "vacuum"):
        result = _probe(command, "--help")
        assert "TABLE_URI" in result["help"] or "table" in result["help"].lower()
        assert result["loaded"] == [], command
