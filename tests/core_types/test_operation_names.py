"""No operation name is spelled outside the registry: the command line, health, the code location
(resources, assets, jobs, schedules, sensors) and the fleet take names from the registry's entries
(``delta_core.maintenance.operations``). Read from the code's string literals, so a new
``"compact"`` anywhere there fails here. Health's score parts (``checkpoint``, ``manifest``) read
like operations but name what a part judges; they are declared once, in ``health/score.py``."""

from __future__ import annotations

import ast
import pathlib

from delta_core.cli.operations import command_name
from delta_core.health.score import WEIGHTS
from delta_core.maintenance.operations import REGISTRY

ROOT = pathlib.Path(__file__).resolve().parents[2]
SEARCHED = ("delta_core/cli", "delta_core/health", "resources", "assets", "jobs", "schedules", "sensors", "fleet")
NAMES = {op.name for op in REGISTRY} | {command_name(op) for op in REGISTRY}
SCORE_PARTS = ROOT / "delta_core" / "health" / "score.py"


def _literals(path: pathlib.Path) -> list[tuple[int, str]]:
    """Every whole string literal in ``path`` (f-string pieces included), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _score_part_declarations() -> set[tuple[int, str]]:
    """The lines and values of ``score.py``'s module-level ``PART_* = "..."`` assignments."""
    tree = ast.parse(SCORE_PARTS.read_text(encoding="utf-8"))
    return {(node.lineno, node.value.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and all(isinstance(t, ast.Name) and t.id.startswith("PART_") for t in node.targets)}


def test_no_operation_name_as_a_string_literal():
    declared = _score_part_declarations()
    found = []
    files = [p for d in SEARCHED for p in sorted((ROOT / d).rglob("*.py"))]
    for path in files:
        where = path.relative_to(ROOT).as_posix()
        for line, value in _literals(path):
            if value not in NAMES:
                continue
            if path == SCORE_PARTS and (line, value) in declared:
                continue  # a score part's one declaration, not an operation
            found.append(f"{where}:{line}: {value!r}")
    assert found == []
    assert len(files) > 40  # the walk saw the code


def test_score_parts_are_told_apart_by_their_declaration():
    parts = {value for _, value in _score_part_declarations()}
    assert parts == set(WEIGHTS)  # every part declared once, as PART_<name>
    assert parts & NAMES == {"checkpoint", "manifest"}  # the two that read like operations
