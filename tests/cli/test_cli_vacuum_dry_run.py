"""``vacuum --dry-run`` tells a person what a vacuum would free: file counts and bytes, with
nothing deleted and nothing committed."""

from __future__ import annotations

import json
import os
import pathlib

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.model.sizes import format_size
from tests.core_write.conftest import listing


@pytest.fixture()
def table(tmp_path) -> pathlib.Path:
    """Two overwrites by delta-rs: the first two files are removed, one file is live."""
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "t"
    deltalake.write_deltalake(str(root), pa.table({"id": list(range(100))}))
    deltalake.write_deltalake(str(root), pa.table({"id": list(range(50))}), mode="overwrite")
    deltalake.write_deltalake(str(root), pa.table({"id": [1]}), mode="overwrite")
    return root


def _removed_bytes(root: pathlib.Path) -> tuple[int, int]:
    live = set(deltalake_files(root))
    sizes = [os.path.getsize(p) for p in root.glob("*.parquet") if p.name not in live]
    return len(sizes), sum(sizes)


def deltalake_files(root: pathlib.Path) -> list[str]:
    import deltalake

    return [pathlib.Path(f).name for f in deltalake.DeltaTable(str(root)).file_uris()]


def test_dry_run_json_reports_counts_and_bytes(table, capsys):
    count, size = _removed_bytes(table)
    assert count == 2 and size > 0
    before = listing(str(table))
    assert main(["vacuum", str(table), "--dry-run", "--retention-hours", "0", "--force", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["dry_run"] is True and out["version"] is None
    assert out["files_listed"] == 3 and out["num_files_to_delete"] == count
    assert out["bytes_to_delete"] == size and out["young_kept"] == 0
    assert listing(str(table)) == before


def test_dry_run_text_leads_with_counts_and_bytes(table, capsys):
    count, size = _removed_bytes(table)
    before = listing(str(table))
    assert main(["vacuum", str(table), "--dry-run", "--retention-hours", "0", "--force"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"Vacuum: dry run: would delete {count} of 3 listed files ({format_size(size)}); ")
    # with the table's own 7-day retention the tombstones still protect the removed files
    assert main(["vacuum", str(table), "--dry-run"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert "would delete 0 of 3 listed files (0 B);" in first
    assert "unreferenced files younger than the retention (7 days) kept" in second
    assert listing(str(table)) == before
