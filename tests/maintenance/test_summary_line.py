"""The one summary line (``report.summary_line``) on real runs' reports: a rewrite, a vacuum and a
checkpoint each say what they did, their files and bytes and how long they took, and the command
line prints that line first."""

from __future__ import annotations

import re

import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.operations import CHECKPOINT, COMPACT, VACUUM
from delta_core.maintenance.report import summary_line
from delta_core.model.sizes import format_size
from tests.maintenance.conftest import make_table

# "<files> (<size>) removed, <files> (<size>) added; <duration>"
FILES_AND_TIME = re.compile(r"; \d+ files? \([^)]+\) removed, \d+ files? \([^)]+\) added; [\d.]+ seconds?$")


@pytest.mark.spark
def test_rewrite_vacuum_and_checkpoint_lines(spark, tmp_path):
    table = make_table(str(tmp_path / "t"), appends=6)
    compacted = COMPACT.run(table, COMPACT.options_type(), lambda: spark)
    line = summary_line(COMPACT.title, compacted)
    assert line.startswith(f"Compaction: committed version {compacted.version}; "
                           f"{compacted.num_removed_files} files ({format_size(compacted.removed_bytes)}) removed, "
                           f"{compacted.num_added_files} file")
    assert FILES_AND_TIME.search(line), line

    vacuumed = VACUUM.run(DeltaTable(table.uri), VACUUM.options_type(retention_hours=0, force=True), None)
    line = summary_line(VACUUM.title, vacuumed)
    assert line.startswith(f"Vacuum: deleted {compacted.num_removed_files} of {vacuumed.files_listed} listed files, "
                           f"committed version {vacuumed.version}; {compacted.num_removed_files} files "
                           f"({format_size(compacted.removed_bytes)}) removed, 0 files (0 B) added; ")
    assert FILES_AND_TIME.search(line), line

    latest = table.latest_version()
    assert latest < 10  # the default delta.checkpointInterval: none due yet
    due = CHECKPOINT.run(DeltaTable(table.uri), CHECKPOINT.options_type(), None)
    assert summary_line(CHECKPOINT.title, due).startswith(
        f"Checkpoint: no checkpoint written: {latest} commit(s) since the last checkpoint, fewer than the interval 10 "
        "(delta.checkpointInterval); run with force to write one anyway; 0 files (0 B) removed, 0 files (0 B) added")
    written = CHECKPOINT.run(DeltaTable(table.uri), CHECKPOINT.options_type(force=True), None)
    line = summary_line(CHECKPOINT.title, written)
    assert line.startswith(f"Checkpoint: checkpoint written at version {latest} (")
    assert f"; 0 files (0 B) removed, 1 file ({format_size(written.added_bytes)}) added; " in line


def test_cli_prints_the_summary_line_first(tmp_path, capsys):
    table = make_table(str(tmp_path / "t"), appends=2)
    assert main(["vacuum", table.uri, "--dry-run"]) == 0
    first, *rest = capsys.readouterr().out.splitlines()
    assert first.startswith("Vacuum: dry run: would delete 0 of ") and FILES_AND_TIME.search(first), first
    assert any(line.startswith("dry_run: True") or line.startswith("dry_run: true") for line in rest)
    assert main(["checkpoint", table.uri, "--force"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Checkpoint: checkpoint written at version 2 (") and FILES_AND_TIME.search(first), first
