"""The command line imports only what a command needs: building the parser and printing help
must not load pyarrow, fsspec, numpy or pandas, which cost most of a second; a command builds
only its own part of the parser, so ``describe`` loads neither the operation registry, the
tables.yaml reader nor health, and ``checkpoint`` no health unless its run is recorded. Each
probe runs ``main`` in a fresh interpreter and lists the modules it loaded."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pyarrow as pa

from delta_core.write.table_writes import append, create_table

HEAVY = ("pyarrow", "fsspec", "numpy", "pandas", "pyspark")
# Loaded by no command that reads or checkpoints a local table: Spark, pandas, other pyarrow
# readers, the YAML and JSON Schema libraries, progress bars, fsspec (local stores use os alone).
NEVER_BY_READS = ("pyspark", "pandas", "pyarrow.dataset", "pyarrow.csv", "pyarrow.orc", "pyarrow.flight",
                  "yaml", "jsonschema", "tqdm", "fsspec", "delta_core.maintenance.spark", "delta_core.health.report")

_PROBE = """
import contextlib, io, json, sys
from delta_core.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        status = main(sys.argv[1:])
    except SystemExit as exc:
        status = exc.code
print(json.dumps({"status": status, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def _probe(*argv: str) -> dict:
    # A fresh interpreter: this test process has imported pyarrow long ago. Not recorded in a
    # maintenance history: a recorded run scores the table's health before and after.
    env = {k: v for k, v in os.environ.items() if k != "DELTA_MAINTENANCE_HISTORY"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True,
                          timeout=120, env=env, check=True)
    result = json.loads(proc.stdout.splitlines()[-1])
    return result


def _loaded(result: dict, names: tuple[str, ...]) -> list[str]:
    """The modules of ``names`` (or below them) that the probe loaded."""
    return [m for m in result["modules"] if any(m == n or m.startswith(n + ".") for n in names)]


def _table(root: pathlib.Path) -> str:
    table = create_table(str(root), pa.schema([("id", pa.int64()), ("day", pa.string())]), partition_columns=["day"])
    for day in ("2024-01-01", "2024-01-02"):
        append(table, pa.table({"id": [1, 2], "day": [day, day]}))
    return str(root)


def test_help_loads_no_heavy_library() -> None:
    result = _probe("--help")
    assert "describe" in result["out"] and "checkpoint" in result["out"]
    assert _loaded(result, HEAVY) == []
    assert _loaded(result, ("importlib.metadata",)) == []  # --version only


def test_command_help_loads_no_heavy_library() -> None:
    for command in ("describe", "checkpoint", "cleanup-log", "vacuum"):
        result = _probe(command, "--help")
        assert "TABLE_URI" in result["out"] or "table" in result["out"].lower()
        assert _loaded(result, HEAVY) == [], command


def test_describe_loads_only_the_read_path(tmp_path: pathlib.Path) -> None:
    uri = _table(tmp_path / "t")
    result = _probe("describe", uri, "--json", "--files")
    assert result["status"] == 0 and json.loads(result["out"])["num_files"] == 2
    assert _loaded(result, NEVER_BY_READS) == []
    # Only the read path's own command module: no registry, no tables.yaml reader, no health.
    assert _loaded(result, ("delta_core.maintenance", "delta_core.config", "delta_core.health",
                            "delta_core.write", "delta_core.cli.operations", "delta_core.cli.policy",
                            "delta_core.cli.health")) == []


def test_checkpoint_loads_no_health_or_spark(tmp_path: pathlib.Path) -> None:
    uri = _table(tmp_path / "t")
    result = _probe("checkpoint", uri, "--force", "--json")
    assert result["status"] == 0 and json.loads(result["out"])["checkpoint_version"] == 2
    assert _loaded(result, NEVER_BY_READS) == []
    assert _loaded(result, ("delta_core.health.report", "delta_core.health.metrics", "delta_core.cli.health")) == []


def test_a_command_opened_by_an_option_still_sees_every_command() -> None:
    """``-h`` before a command asks for the whole command line's help, not one module's."""
    result = _probe("-h", "describe")
    assert all(command in result["out"] for command in ("describe", "checkpoint", "health", "vacuum"))
