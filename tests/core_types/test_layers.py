"""The layers of delta_core point one way (docs/architecture.md): each subpackage imports only
those before it, and the library imports no Dagster or pydantic, and pyspark only under
``maintenance/spark``. Read from the code's own import statements, so a new upward arrow fails here."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "delta_core"
LAYERS = ("model", "storage", "log", "write", "maintenance", "health", "config", "cli")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "delta_core" and parts[1] in LAYERS else None


def _imports(path: pathlib.Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def _modules() -> list[tuple[str, pathlib.Path]]:
    return [(".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts), p) for p in PACKAGE.rglob("*.py")]


def test_each_layer_imports_only_the_layers_before_it():
    upward = []
    for name, path in _modules():
        own = _layer(name)
        if own is None:
            continue
        for imported in _imports(path):
            other = _layer(imported)
            if other is not None and LAYERS.index(other) > LAYERS.index(own):
                upward.append(f"{name} imports {imported}")
    assert upward == []
    assert len(_modules()) > 60  # the walk saw the package


def test_no_dagster_or_pydantic_and_spark_only_in_maintenance_spark():
    found = []
    for name, path in _modules():
        for imported in _imports(path):
            root = imported.split(".")[0]
            if root in ("dagster", "pydantic") or (
                root == "pyspark" and not name.startswith("delta_core.maintenance.spark")
            ):
                found.append(f"{name} imports {imported}")
    assert found == []


REWRITES = ("compaction", "zorder", "cluster", "purge")


def test_no_rewrite_operation_imports_another():
    """compact, zorder, cluster and purge each pair a plan with a task executor (``spark.driver``):
    what two of them share lives in an executor or plan module, never in another operation."""
    found = []
    for name in REWRITES:
        own = f"delta_core.maintenance.spark.{name}"
        for imported in _imports(PACKAGE / "maintenance" / "spark" / f"{name}.py"):
            if imported != own and imported in {f"delta_core.maintenance.spark.{other}" for other in REWRITES}:
                found.append(f"{own} imports {imported}")
    assert found == []
    assert _imports(PACKAGE / "maintenance" / "spark" / "compaction.py") >= {"delta_core.maintenance.spark.driver"}
