"""Raw log content of the conformance tables, read with ``json`` only.

The leaf modules are tested against what writers really wrote, without going through replay,
so these helpers parse commit files directly (checkpoint-only state is not needed here).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

from tests.conftest import CONFORMANCE_DIR


def table_dirs() -> list[pathlib.Path]:
    return sorted(p.parent for p in CONFORMANCE_DIR.glob("*/expected.json"))


def expected(table: pathlib.Path) -> dict[str, Any]:
    return json.loads((table / "expected.json").read_text(encoding="utf-8"))


def commit_lines(table: pathlib.Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(version, action object) for every parseable line of every JSON commit, in order."""
    log = table / "_delta_log"
    if not log.is_dir():
        return
    for f in sorted(log.glob("*.json")):
        stem = f.name.split(".")[0]
        if not (stem.isdigit() and f.name == f"{stem}.json"):
            continue
        for line in f.read_text(encoding="utf-8").splitlines():
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                yield int(stem), obj


def actions(table: pathlib.Path, kind: str) -> list[dict[str, Any]]:
    return [obj[kind] for _, obj in commit_lines(table) if isinstance(obj.get(kind), dict)]


def last_metadata(table: pathlib.Path) -> dict[str, Any] | None:
    mds = [m for m in actions(table, "metaData") if m.get("schemaString")]
    return mds[-1] if mds else None
