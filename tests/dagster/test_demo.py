"""The demo command end to end on a temporary folder (small size)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.dagster.conftest import REPO_ROOT

pytestmark = [pytest.mark.slow, pytest.mark.spark]


def test_demo_command_prints_before_after_summary(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DAGSTER_HOME", "DELTA_MAINTENANCE_TABLES")}
    env.update(PYTHONPATH=str(REPO_ROOT), SPARK_LOCAL_IP="127.0.0.1", SPARK_MASTER="local[1]",
               JAVA_HOME=os.environ.get("JAVA_HOME", "/usr/lib/jvm/java-17-openjdk-amd64"))
    out = subprocess.run(
        [sys.executable, "-m", "demo", "--root", str(tmp_path), "--rows", "3000", "--appends", "15",
         "--days", "3"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = out.stdout
    assert "Delta maintenance of 'events' — before / after" in text
    for label in ("Delta version", "live files", "total size", "median file size", "partitions"):
        assert label in text
    assert "succeeded" in text
    # its vacuum retention (0 hours) is below the table's 168: the demo says so (issue 13 §14)
    assert "SHORT retention (0 hours, below the table's 168 hours)" in text
    for step in ("compact", "zorder", "vacuum", "checkpoint", "manifest"):
        assert f"  {step} " in text
    assert "dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000" in text

    from delta_core.log.table import DeltaTable

    table = DeltaTable(str(tmp_path / "demo_data" / "events"))
    snap = table.snapshot()
    assert snap.num_records == 3000 - _deleted_rows(table)
    # the checkpoint step writes one only when tables.yaml's interval (10) of commits follow the last
    checkpoint = table.last_checkpoint_version()
    if checkpoint == snap.version:
        assert f"checkpoint at version {snap.version}" in text
    else:
        assert checkpoint is not None and snap.version - checkpoint < 10
        assert "no checkpoint due" in text
    assert (tmp_path / ".dagster_home" / "dagster.yaml").exists()
    files_line = next(line for line in text.splitlines() if "live files" in line)
    before, after = (int(x) for x in files_line.split()[2:5:2])
    assert after < before


def _deleted_rows(table) -> int:
    return sum(int(c.commit_info.get("operationMetrics", {}).get("numDeletedRows", 0))
               for c in table.history() if c.commit_info.get("operation") == "DELETE")
