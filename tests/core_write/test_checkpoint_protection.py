"""checkpointProtection (delta-io/delta protocol_rfcs/checkpoint-protection.md): protected
checkpoints survive log cleanup, history of protocols we do not support goes only in one go
up to delta.requireCheckpointProtectionBeforeVersion, no checkpoint of such a protocol is written,
commits go before checkpoints. Tables: 12 real appends, then the log edited by hand as an engine
that dropped a feature would have left it."""

from __future__ import annotations

import json
import os
import time

import pytest

from delta_core.errors import UnsupportedWriterFeatureError
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.table_writes import append, create_table
from tests.core_write import workers
from tests.core_write.conftest import listing

DAY = 86400.0
BOUNDARY = 11
FEATURES = ["appendOnly", "invariants", "checkpointProtection"]


def _protocol(*extra: str) -> dict:
    return {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": FEATURES + list(extra)}


def _edit_commit(table_dir: str, version: int, protocol: dict, configuration: dict | None = None) -> None:
    """Put ``protocol`` into commit ``version`` (replacing its own) and merge ``configuration``
    into its metaData, keeping every other action as it was."""
    path = os.path.join(table_dir, "_delta_log", f"{version:020d}.json")
    with open(path, encoding="utf-8") as f:
        actions = [json.loads(line) for line in f if line.strip()]
    actions = [a for a in actions if "protocol" not in a]
    actions.insert(1, {"protocol": protocol})
    for a in actions:
        if "metaData" in a and configuration:
            a["metaData"]["configuration"] = {**a["metaData"].get("configuration", {}), **configuration}
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")


def _protected_table(table_dir: str, *, foo_bar: tuple[int, int] | None = None) -> DeltaTable:
    """Versions 0-12 (one row per append); the protocol gains checkpointProtection at version 0
    with delta.requireCheckpointProtectionBeforeVersion=11. ``foo_bar=(a, b)``: versions a..b-1
    have the unknown writer feature fooBarWriter (dropped again at b)."""
    t = create_table(table_dir, workers.SCHEMA, partition_columns=["p"],
                     properties={"delta.checkpointInterval": "1000"})
    for i in range(12):
        append(t, workers.rows([i], 0))
    _edit_commit(table_dir, 0, _protocol(),
                 {"delta.requireCheckpointProtectionBeforeVersion": str(BOUNDARY)})
    if foo_bar is not None:
        _edit_commit(table_dir, foo_bar[0], _protocol("fooBarWriter"))
        _edit_commit(table_dir, foo_bar[1], _protocol())
    return DeltaTable(table_dir)


def _age(table_dir: str, versions: range, days: float = 60) -> None:
    log_dir = os.path.join(table_dir, "_delta_log")
    when = time.time() - days * DAY
    for name in os.listdir(log_dir):
        if name[:20].isdigit() and int(name[:20]) in versions:
            os.utime(os.path.join(log_dir, name), (when, when))


def _log(table_dir: str, kind: str) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(os.path.join(table_dir, "_delta_log"))
                  if n[:20].isdigit() and n.endswith(kind))


def test_checkpoint_then_cleanup_keeps_protected_checkpoints_5_and_10(table_dir):
    t = _protected_table(table_dir)
    for v in (5, 10, 11):
        write_checkpoint(t, version=v)
    _age(table_dir, range(0, 13))
    assert write_checkpoint(t).version == 12
    res = cleanup_log(t)
    # Checkpoints below version 11 stay (rule a); 11 is not protected and goes...
    assert _log(table_dir, ".checkpoint.parquet") == [5, 10, 12]
    # ...as does every commit before the kept checkpoint 12: one go past the protected version.
    assert res.checkpoint_version == 12 and res.skipped_reason is None
    assert _log(table_dir, ".json") == [12]
    # Rule (d): commits are deleted before any checkpoint.
    kinds = ["checkpoint" in os.path.basename(k) for k in res.deleted if not k.endswith(".crc")]
    assert kinds == sorted(kinds) and kinds[-1]
    # The protected checkpoints still reconstruct their versions on their own.
    assert [DeltaTable(table_dir).snapshot(v).num_records for v in (5, 10, 12)] == [5, 10, 12]
    import deltalake

    assert deltalake.DeltaTable(table_dir).to_pyarrow_table().num_rows == 12


def test_cleanup_short_of_the_boundary_deletes_commits_but_no_checkpoint(table_dir):
    # Every protocol of versions 0..10 is supported: cleaning them up is allowed (rule c), but
    # the checkpoint at 5 lies below the protected version 11 and stays (rule a).
    t = _protected_table(table_dir)
    for v in (5, 10):
        write_checkpoint(t, version=v)
    _age(table_dir, range(0, 11))
    res = cleanup_log(t)
    assert _log(table_dir, ".checkpoint.parquet") == [5, 10]
    assert _log(table_dir, ".json") == list(range(10, 13))
    assert res.checkpoint_version == 10 and res.skipped_reason is None
    assert DeltaTable(table_dir).snapshot().num_records == 12
    # A second run has nothing left it may delete, and nothing to complain about.
    again = cleanup_log(t)
    assert again.files_deleted == 0 and again.skipped_reason is None
    assert _log(table_dir, ".checkpoint.parquet") == [5, 10]


def test_unsupported_history_is_cleaned_only_in_one_go(table_dir):
    # Versions 3..7 carry fooBarWriter: cleaning up to checkpoint 10 (< 11) is refused...
    t = _protected_table(table_dir, foo_bar=(3, 8))
    write_checkpoint(t, version=10)
    _age(table_dir, range(0, 11))
    before = listing(table_dir)
    res = cleanup_log(t)
    assert listing(table_dir) == before
    assert res.files_deleted == 0 and res.checkpoint_version is None
    assert "version 3" in res.skipped_reason and "fooBarWriter" in res.skipped_reason
    assert "delta.requireCheckpointProtectionBeforeVersion=11" in res.skipped_reason
    # ...while one cleanup past the boundary takes the whole unsupported history at once.
    write_checkpoint(t)
    _age(table_dir, range(0, 13))
    res = cleanup_log(t)
    assert res.checkpoint_version == 12 and res.skipped_reason is None
    assert _log(table_dir, ".json") == [12]
    assert _log(table_dir, ".checkpoint.parquet") == [10, 12]


def test_no_checkpoint_of_an_unsupported_protocol(table_dir):
    t = _protected_table(table_dir, foo_bar=(3, 8))
    before = listing(table_dir)
    with pytest.raises(UnsupportedWriterFeatureError, match="fooBarWriter") as ei:
        write_checkpoint(t, version=5)
    assert (ei.value.version, ei.value.path) == (5, t.uri)
    assert listing(table_dir) == before
    # Version 10's protocol is supported again: its checkpoint is allowed.
    assert write_checkpoint(t, version=10).version == 10
    assert DeltaTable(table_dir).snapshot(10).num_records == 10
