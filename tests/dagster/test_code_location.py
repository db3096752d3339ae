"""Issue 10 §5: only ``delta_core`` is installed and the code location uses public Dagster API only.

Loading the code location from the repository root through ``workspace.yaml`` (no PYTHONPATH,
another working directory) is tested by ``test_schedules_jobs.test_definitions_validate_with_the_cli``."""

from __future__ import annotations

import ast
import pathlib
import shutil
import subprocess
import sys
import zipfile
from typing import Any

from dagster import AssetKey, build_sensor_context, instance_for_test

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# What the code location and the demo are made of: loaded from the root, never installed.
CODE_LOCATION = ("definitions.py", "resources", "assets", "jobs", "schedules", "sensors", "fleet", "demo")


def _python_files() -> list[pathlib.Path]:
    out: list[pathlib.Path] = []
    for name in CODE_LOCATION:
        path = REPO_ROOT / name
        out.extend([path] if path.is_file() else sorted(path.rglob("*.py")))
    return out


def _runtime_imports(tree: ast.Module) -> list[str]:
    """Modules imported when the file runs (``if TYPE_CHECKING:`` blocks are for mypy only)."""
    names: list[str] = []
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(n) for child in node.body for n in ast.walk(child))
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_code_location_imports_public_dagster_api_only() -> None:
    private = {f"{path.relative_to(REPO_ROOT)}: {name}"
               for path in _python_files()
               for name in _runtime_imports(ast.parse(path.read_text(), str(path)))
               if name.startswith("dagster") and any(part.startswith("_") for part in name.split("."))}
    assert len(_python_files()) > 10
    assert private == set()


def test_wheel_installs_only_delta_core_with_py_typed(tmp_path: pathlib.Path) -> None:
    # Build from a copy so the checkout gets no build/ or *.egg-info.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(REPO_ROOT / name, src / name)
    for name in ("delta_core", *CODE_LOCATION):
        path = REPO_ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(path, src / name)
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path / "dist"), str(src)],
                         capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout + out.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top_level == {"delta_core"}
    assert "delta_core/py.typed" in names
    assert "delta_core/maintenance/spark/quiet-log4j2.properties" in names  # the CLI's quiet Spark logging
    assert "delta_core/log/snapshot.py" in names  # subpackages are found, not only the top


def test_sensor_observation_carries_the_data_version_dagster_reads(make_events_table: Any,
                                                                   tables_yaml: Any) -> None:
    # The sensor spells Dagster's data-version tag itself; the instance must read it back as the
    # table asset's data version (what staleness is computed from), once recorded as the daemon does.
    from definitions import build_definitions
    from delta_core.write.table_writes import append
    from demo.data import event_batch

    table = make_events_table(rows=40, appends=2, days=1, delete_fraction=0)
    defs = build_definitions(tables_yaml(f"tables:\n  events:\n    uri: {table.uri}\n"))
    sensor = defs.resolve_sensor_def("events_delta_log_sensor")
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    key = AssetKey(["events", "delta_table"])
    with instance_for_test() as instance:
        cursor: str | None = "0"
        for expected in (2, 3):
            with build_sensor_context(cursor=cursor, instance=instance, definitions=defs,
                                      resources=resources) as context:
                tick = sensor.evaluate_tick(context)
            (event,) = tick.asset_events
            instance.report_runless_asset_event(event)
            record = instance.get_latest_data_version_record(key)
            assert record is not None and record.asset_observation is not None
            assert record.asset_observation.data_version == str(expected) == str(table.latest_version())
            cursor = tick.cursor
            append(table, event_batch(5, days=1, seed=expected))
