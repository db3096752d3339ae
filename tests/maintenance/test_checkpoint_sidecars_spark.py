"""Sidecars of a V2 checkpoint written by Spark tasks (``spark_sidecar_writer``), through the
table's storage, and the CLI's ``checkpoint --spark-master`` starting Spark only when sidecars
are due. delta-kernel-rs reads the table through the checkpoint and its sidecars, with the
commits before it gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.checkpoint_sidecars import spark_sidecar_writer
from delta_core.model.actions import Protocol
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.table_writes import append, create_table
from delta_core.write.transaction import Transaction
from tests.kernel_oracle import kernel_rows

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _v2_table(path: str, files: int) -> DeltaTable:
    t = create_table(path, pa.schema([("id", pa.int64())]))
    txn = Transaction(t, operation="UPGRADE PROTOCOL")
    txn.add_action(Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint")))
    txn.commit()
    for i in range(files):
        append(t, pa.table({"id": [i]}))
    return t


@pytest.mark.spark
def test_sidecars_written_by_spark_tasks(spark, tmp_path):
    path = str(tmp_path / "t")
    t = _v2_table(path, 5)
    expected = sorted(t.snapshot().file_paths)
    kernel_before = kernel_rows(path)
    sc = spark.sparkContext
    sc.setJobGroup("v2ckpt-sidecars", "sidecar test")
    try:
        res = write_checkpoint(t, sidecar_threshold=2, sidecar_writer=spark_sidecar_writer(spark))
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    assert sc.statusTracker().getJobIdsForGroup("v2ckpt-sidecars")  # the sidecars were a Spark job
    assert res.sidecars == 3 and res.num_add_files == 5
    names = sorted(os.listdir(os.path.join(path, "_delta_log", "_sidecars")))
    last = json.loads(open(os.path.join(path, "_delta_log", "_last_checkpoint")).read())
    assert sorted(s["path"] for s in last["v2Checkpoint"]["sidecarFiles"]) == names
    for v in range(res.version + 1):
        os.unlink(os.path.join(path, "_delta_log", f"{v:020d}.json"))
    assert sorted(DeltaTable(path).snapshot().file_paths) == expected
    assert kernel_rows(path) == kernel_before


@pytest.mark.spark
def test_cli_checkpoint_on_spark(spark, tmp_path, capsys):
    path = str(tmp_path / "t")
    _v2_table(path, 3)
    kernel_before = kernel_rows(path)
    assert main(["checkpoint", path, "--json", "--force", "--sidecar-threshold", "1", "--spark-master", "local[2]"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sidecars"] == 3 and len(os.listdir(os.path.join(path, "_delta_log", "_sidecars"))) == 3
    for v in range(out["checkpoint_version"]):
        os.unlink(os.path.join(path, "_delta_log", f"{v:020d}.json"))
    assert kernel_rows(path) == kernel_before


def test_cli_checkpoint_starts_no_spark_without_sidecars(tmp_path):
    """An unreachable master is never contacted when the checkpoint needs no sidecars."""
    path = str(tmp_path / "t")
    _v2_table(path, 2)
    proc = subprocess.run([sys.executable, "-m", "delta_core", "checkpoint", path, "--json", "--force",
                           "--spark-master", "spark://127.0.0.1:9"], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sidecars"] == 0 and out["path"].endswith(f"{3:020d}.checkpoint.parquet")
    assert "pyspark" not in proc.stderr.lower()
