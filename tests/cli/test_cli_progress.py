"""Progress of long ``delta-core`` commands: bars with files/actions, bytes, rate and ETA on a
terminal (a real pty), and nothing without a terminal or with ``--json``."""

from __future__ import annotations

import json
import os
import pathlib
import pty
import select
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from tests.cli.test_cli import run
from tests.core_write.conftest import listing

SCRIPT = pathlib.Path(sys.executable).parent / "delta-core"


@pytest.fixture()
def table(tmp_path) -> pathlib.Path:
    """delta-rs table: three overwrites leave two removed files, plus two old orphan files."""
    deltalake = pytest.importorskip("deltalake")
    root = tmp_path / "t"
    for rows in (100, 50, 1):
        deltalake.write_deltalake(str(root), pa.table({"id": list(range(rows))}), mode="overwrite")
    old = time.time() - 30 * 86400
    for name in ("orphan-1.parquet", "orphan-2.parquet"):
        (root / name).write_bytes(b"x" * 1000)
        os.utime(root / name, (old, old))
    return root


def run_on_pty(*args: str) -> tuple[int, str, str]:
    """The console script with stderr on a pseudo-terminal: (status, stdout, what the terminal got)."""
    main_fd, term_fd = pty.openpty()
    proc = subprocess.Popen([str(SCRIPT), *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=term_fd, env={**os.environ, "COLUMNS": "120"})
    os.close(term_fd)
    screen = b""
    while True:
        ready, _, _ = select.select([main_fd], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    out = proc.stdout.read().decode() if proc.stdout else ""
    status = proc.wait(timeout=60)
    os.close(main_fd)
    return status, out, screen.decode(errors="replace")


def test_vacuum_shows_listing_and_delete_progress_on_a_terminal(table):
    status, out, screen = run_on_pty("vacuum", str(table), "--retention-hours", "0", "--force")
    assert status == 0, screen
    assert out.startswith("Vacuum: deleted 4 of 5 listed files")
    listing_line = [s for s in screen.replace("\r", "\n").splitlines() if s.startswith("vacuum: listing")][-1]
    assert "5 files" in listing_line and "files/s" in listing_line  # count, rate, bytes beside
    deleting = [s for s in screen.replace("\r", "\n").splitlines() if s.startswith("vacuum: deleting")][-1]
    assert "100%" in deleting and "4/4 files" in deleting and "B/s" in deleting  # bytes, rate
    assert "<00:00" in deleting  # the ETA field


def test_checkpoint_shows_progress_on_a_terminal(table):
    status, out, screen = run_on_pty("checkpoint", str(table), "--force")
    assert status == 0, screen
    last = [s for s in screen.replace("\r", "\n").splitlines() if s.startswith("checkpoint v2")][-1]
    assert "actions" in last and "B" in last


def test_no_progress_with_json_or_without_a_terminal(table, tmp_path):
    before = listing(str(table))
    status, out, screen = run_on_pty("vacuum", str(table), "--dry-run", "--retention-hours", "0", "--force",
                                     "--json")
    assert status == 0 and json.loads(out)["num_files_to_delete"] == 4
    assert screen == ""
    proc = run("vacuum", str(table), "--retention-hours", "0", "--force")  # stderr is a pipe
    assert proc.returncode == 0 and proc.stderr == ""
    def kept(entries):
        return [e for e in entries if not e[0].endswith(".crc")]  # each commit also writes its .crc

    assert len(kept(listing(str(table)))) == len(kept(before)) - 4 + 2  # four deleted; two vacuum commits
