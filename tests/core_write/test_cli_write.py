"""``delta-core checkpoint`` and ``delta-core cleanup-log`` through ``delta_core.cli.main.main``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from delta_core.cli.main import main
from delta_core.write.table_writes import append, create_table
from tests.core_write import workers


def _table(table_dir: str, n: int = 3):
    t = create_table(table_dir, workers.SCHEMA, properties={"delta.checkpointInterval": "1000"})
    for i in range(n):
        append(t, workers.rows([i], 0))
    return t


def test_checkpoint_json(table_dir, capsys):
    _table(table_dir)
    # 3 commits, interval 1000: none due, nothing written; --force writes one now
    assert main(["checkpoint", table_dir, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checkpoint_written"] is False and "fewer than the interval 1000" in out["checkpoint_skipped_reason"]
    assert main(["checkpoint", table_dir, "--json", "--force"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"checkpoint_written", "checkpoint_version", "checkpoint_version_before",
                        "checkpoint_skipped_reason", "size", "size_in_bytes", "path", "sidecars", "num_add_files",
                        "duration_seconds"}
    assert out["checkpoint_version"] == 3 and out["sidecars"] == 0 and out["size"] == 5
    assert out["path"].endswith(f"_delta_log/{3:020d}.checkpoint.parquet")
    assert os.path.getsize(os.path.join(table_dir, "_delta_log", f"{3:020d}.checkpoint.parquet")) == out["size_in_bytes"]
    assert main(["checkpoint", table_dir, "--json", "--version", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["checkpoint_version"] == 2 and out["path"].endswith(f"{2:020d}.checkpoint.parquet")


def test_checkpoint_error_is_json(tmp_path, capsys):
    assert main(["checkpoint", str(tmp_path / "nothing"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "not_a_table"


def test_cleanup_log_dry_run_and_real(table_dir, capsys):
    t = _table(table_dir)
    main(["checkpoint", table_dir, "--json", "--force"])
    capsys.readouterr()
    old = time.time() - 40 * 86400
    log_dir = os.path.join(table_dir, "_delta_log")
    for name in os.listdir(log_dir):
        os.utime(os.path.join(log_dir, name), (old, old))
    assert main(["cleanup-log", table_dir, "--dry-run", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # three commits and their version checksums
    assert out["dry_run"] is True and out["files_deleted"] == 6 and out["checkpoint_version"] == 3
    assert len(os.listdir(log_dir)) == 10
    assert main(["cleanup-log", table_dir, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files_deleted"] == 6
    assert t.snapshot().version == 3


def test_console_script_human_output(table_dir):
    _table(table_dir, 1)
    proc = subprocess.run([sys.executable, "-m", "delta_core", "checkpoint", table_dir, "--force"],
                          capture_output=True, text=True, timeout=120,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert proc.returncode == 0, proc.stderr
    # one summary line first (what was done, files and bytes, how long), then the details
    first, second = proc.stdout.splitlines()[:2]
    assert first.startswith("Checkpoint: checkpoint written at version 1 (3 actions); 0 files (0 B) removed, "
                            "1 file (") and first.endswith("seconds"), first
    assert second == "previous checkpoint: none"
    assert "checkpoint_version: 1" in proc.stdout and "sidecars: 0" in proc.stdout
