"""tests/data/README.md gives every fixture table's source, as its expected.json or the modern
tables' README does, and the licence texts it names are there."""

from __future__ import annotations

import json
import re

from tests.conftest import CONFORMANCE_DIR, DATA_DIR, MODERN_DIR

ROW = re.compile(r"^\| `([^`]+)` \| ([\w.-]+/[\w.-]+) \| `([0-9a-f]{40})` \| `([^`]+)` \|$", re.M)


def _readme_sources() -> dict[str, str]:
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    return {m[1]: f"{m[2]}@{m[3]}:{m[4]}" for m in ROW.finditer(readme)}


def test_every_table_has_one_source_row():
    tables = {f"conformance/tables/{p.name}" for p in CONFORMANCE_DIR.iterdir()}
    tables |= {f"modern-tables/{p.name}" for p in MODERN_DIR.iterdir() if p.is_dir()}
    assert len(tables) == 67
    assert set(_readme_sources()) == tables


def test_conformance_sources_are_those_of_expected_json():
    sources = _readme_sources()
    for expected in CONFORMANCE_DIR.glob("*/expected.json"):
        assert sources[f"conformance/tables/{expected.parent.name}"] == json.loads(expected.read_text())["source"]


def test_modern_sources_are_those_of_the_modern_readme():
    sources = _readme_sources()
    # the modern tables' README abbreviates commits to 8 digits
    rows = re.findall(r"^\| ([\w-]+) \| ([\w-]+/[\w-]+)@([0-9a-f]{8}):(\S+) \|",
                      (MODERN_DIR / "README.md").read_text(encoding="utf-8"), re.M)
    assert len(rows) == 9
    for name, repo, short, path in rows:
        repo_at, rest = sources[f"modern-tables/{name}"].split("@", 1)
        commit, readme_path = rest.split(":", 1)
        assert (repo_at, commit[:8], readme_path) == (repo, short, path)


def test_the_licence_texts_named_are_there():
    readme = (DATA_DIR / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"`([\w.-]+\.(?:LICENSE|NOTICE)(?:\.txt)?)`", readme)
    assert len(named) == 6
    assert sorted(named) == sorted(p.name for p in (DATA_DIR / "conformance" / "LICENSES").iterdir())
    assert (DATA_DIR / "conformance" / "NOTICE").stat().st_size > 0
