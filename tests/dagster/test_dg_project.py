"""The repository root is a ``dg`` project (``[tool.dg]`` in pyproject.toml): ``dg check defs``
run there, as the README says, loads the code location ``workspace.yaml`` names (the module
``definitions``, working directory the root) and refuses a bad tables.yaml, without Dagster's
SupersessionWarning that ``dagster definitions validate`` prints."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
import yaml

from tests.conftest import DG
from tests.dagster.conftest import REPO_ROOT


def test_tool_dg_names_the_workspace_location():
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["dg"]
    (entry,) = yaml.safe_load((REPO_ROOT / "workspace.yaml").read_text(encoding="utf-8"))["load_from"]
    location = entry["python_file"]
    assert project["directory_type"] == "project"
    assert project["project"]["code_location_name"] == location["location_name"]
    assert f"{project['project']['code_location_target_module']}.py" == location["relative_path"]
    assert location["working_directory"] == "."


def _check_defs(tables: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "VIRTUAL_ENV": sys.prefix,  # as after `source .venv/bin/activate`
           "DELTA_MAINTENANCE_TABLES": tables, "DAGSTER_DISABLE_TELEMETRY": "1"}
    env.pop("DAGSTER_HOME", None)
    return subprocess.run([DG, "check", "defs"], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.dg
def test_dg_check_defs_loads_the_location_from_the_root(tmp_path):
    tables = tmp_path / "tables.yaml"
    tables.write_text("tables:\n  events:\n    uri: ./events\n    compact: {target_size: 64MB}\n", encoding="utf-8")
    proc = _check_defs(str(tables))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All definitions loaded successfully" in proc.stdout + proc.stderr
    assert "SupersessionWarning" not in proc.stdout + proc.stderr
    assert "virtual environment does not match" not in proc.stdout + proc.stderr

    tables.write_text("tables:\n  events:\n    uri: ./events\n    vaccum: {retention_hours: 200}\n", encoding="utf-8")
    bad = _check_defs(str(tables))
    assert bad.returncode != 0 and "vaccum" in bad.stdout + bad.stderr
