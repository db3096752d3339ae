"""One protocol gate for every write: a table other engines wrote, with an unknown writer
feature or a catalog owner, is refused by every writing command (Python API and CLI) before
anything is written or deleted."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time

import pyarrow as pa
import pytest

from delta_core.errors import UnsupportedProtocolError, UnsupportedWriterFeatureError
from delta_core.log.table import DeltaTable
from delta_core.maintenance.manifest import generate_manifests
from delta_core.maintenance.spark.analyze import analyze
from delta_core.maintenance.spark.compaction import compact
from delta_core.maintenance.spark.vacuum import vacuum
from delta_core.maintenance.spark.zorder import zorder
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append
from tests.conftest import MODERN_DIR
from tests.core_write.conftest import listing

DAY = 86400.0


def _other_engines_table(path: str, protocol: dict) -> DeltaTable:
    """delta-rs writes versions 0-3 with a checkpoint at 2; version 4 is a hand-written commit
    that sets ``protocol``. Every log file is 60 days old, so log cleanup has work to do."""
    import deltalake

    for i in range(4):
        deltalake.write_deltalake(path, pa.table({"a": [i, i + 10], "b": ["x", "y"]}), mode="append")
        if i == 2:
            deltalake.DeltaTable(path).create_checkpoint()
    commit = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "UPGRADE PROTOCOL"}},
              {"protocol": protocol}]
    log_dir = os.path.join(path, "_delta_log")
    with open(os.path.join(log_dir, f"{4:020d}.json"), "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(a) for a in commit) + "\n")
    old = time.time() - 60 * DAY
    for name in os.listdir(log_dir):
        os.utime(os.path.join(log_dir, name), (old, old))
    return DeltaTable(path)


FOO_BAR = {"minReaderVersion": 1, "minWriterVersion": 7,
           "writerFeatures": ["appendOnly", "invariants", "fooBarWriter"]}
CATALOG = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"],
           "writerFeatures": ["catalogManaged", "inCommitTimestamp", "appendOnly", "invariants"]}

# Every writing entry point, as the Python API exposes it.
WRITES = {
    "checkpoint": lambda t: write_checkpoint(t),
    "checkpoint_of_old_version": lambda t: write_checkpoint(t, version=3),
    "cleanup_log": lambda t: cleanup_log(t),
    "cleanup_log_explicit_retention": lambda t: cleanup_log(t, retention=dt.timedelta(0)),
    "manifest": lambda t: generate_manifests(t),
    "vacuum": lambda t: vacuum(t, retention_hours=0, force=True),
    "compact": lambda t: compact(t, None, min_file_size=1 << 30),
    "zorder": lambda t: zorder(t, None, ["a"]),
    "analyze": lambda t: analyze(t, None, full=True),
    "append": lambda t: append(t, pa.table({"a": [99], "b": ["z"]})),
}


# The protocols every write refuses: the error raised, what its message must say, and whether
# its ``path`` is the table's uri as given (the read gate, which refuses a catalog-managed table
# first, names it by its ``file://`` URI instead). For writes the message says why.
REFUSED = {
    "unknown_writer_feature": (FOO_BAR, UnsupportedWriterFeatureError,
                               ("fooBarWriter", "use a Delta engine that supports them"), True),
    "catalog_managed": (CATALOG, UnsupportedProtocolError, ("commits must go through the catalog",), False),
}


@pytest.mark.parametrize("operation", sorted(WRITES))
@pytest.mark.parametrize("protocol", sorted(REFUSED))
def test_every_write_refuses_the_table(tmp_path, protocol, operation):
    action, error, says, path_as_given = REFUSED[protocol]
    table = _other_engines_table(str(tmp_path / "t"), action)
    before = listing(table.uri)
    with pytest.raises(error) as ei:
        WRITES[operation](table)
    assert ei.value.kind == "unsupported_protocol"
    assert all(text in str(ei.value) for text in says), str(ei.value)
    if path_as_given:
        assert ei.value.path == table.uri
    assert listing(table.uri) == before


CLI = {
    "checkpoint": ["checkpoint"],
    "checkpoint_of_old_version": ["checkpoint", "--version", "3"],
    "cleanup-log": ["cleanup-log"],
    "cleanup-log_override": ["cleanup-log", "--ignore-log-cleanup-disabled"],
    "manifest": ["manifest"],
    "vacuum": ["vacuum", "--retention-hours", "0", "--force"],
    "compact": ["compact"],
    "zorder": ["zorder", "--columns", "a"],
}


@pytest.mark.parametrize("command", sorted(CLI))
def test_cli_refuses_with_exit_2_and_writes_nothing(tmp_path, command):
    table = _other_engines_table(str(tmp_path / "t"), FOO_BAR)
    before = listing(table.uri)
    name, *options = CLI[command]
    proc = subprocess.run([sys.executable, "-m", "delta_core", name, table.uri, *options, "--json"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    error = json.loads(proc.stdout)["error"]
    assert error["kind"] == "unsupported_protocol" and "fooBarWriter" in error["message"]
    assert listing(table.uri) == before


def test_supported_table_still_checkpoints_and_cleans_up(tmp_path):
    # The same history with a protocol we support: the gate lets every step through.
    table = _other_engines_table(str(tmp_path / "t"), {
        "minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "invariants"]})
    assert write_checkpoint(table).version == 4
    result = cleanup_log(table)
    assert result.checkpoint_version == 4 and result.skipped_reason is None
    assert sorted(os.path.basename(k) for k in result.deleted) == sorted(
        [f"{v:020d}.json" for v in range(4)] + [f"{2:020d}.checkpoint.parquet"])
    assert table.snapshot().num_records == 8


def test_in_commit_timestamp_table_passes_the_gate_of_every_command(tmp_path):
    # A Delta Spark table with in-commit timestamps enabled: compaction, vacuum and manifests
    # refused it only for want of caller plumbing; the one table of features now admits it.
    src = MODERN_DIR / "rs-cdc_ict_table"
    path = tmp_path / "t"
    shutil.copytree(src, path)
    table = DeltaTable(str(path))
    metrics = compact(table, None, min_file_size=1)  # nothing to pack: no Spark
    assert metrics.files_considered == 2 and metrics.num_bins == 0 and metrics.version is None
    assert vacuum(table, dry_run=True).num_files_to_delete == 0
    assert generate_manifests(table).manifests_written == 2
    result = write_checkpoint(table)
    assert result.version == 3 and table.snapshot().num_records == 2


def test_cleanup_log_with_explicit_retention_checks_reader_features(tmp_path):
    table = _other_engines_table(str(tmp_path / "t"), {
        "minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["fooBarReader"],
        "writerFeatures": ["fooBarReader", "appendOnly", "invariants"]})
    before = listing(table.uri)
    with pytest.raises(UnsupportedProtocolError, match="fooBarReader") as ei:
        cleanup_log(table, retention=dt.timedelta(days=1))
    assert ei.value.kind == "unsupported_protocol"
    assert listing(table.uri) == before
