"""Log compaction files (PROTOCOL.md "Log Compaction Files"): ``compact_log`` writes
``x.y.compacted.json`` by Action Reconciliation of commits x..y, snapshots read it instead of
those commits, and every version reads the same with and without it, by us and by delta-rs."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import time

import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.errors import ConfigError, LogGapError
from delta_core.log.table import DeltaTable
from delta_core.write.checkpoint_write import write_checkpoint
from delta_core.write.log_cleanup import cleanup_log
from delta_core.write.log_compaction import compact_log
from delta_core.write.table_writes import append, create_table, delete_files, set_properties
from tests.core_write.conftest import listing

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": ids, "day": [f"2024-01-0{1 + i % 3}" for i in ids]}, schema=SCHEMA)


def _build(table_dir: str) -> DeltaTable:
    """Checkpoint at 2, then commits 3..9: appends, deletes, a re-added-then-deleted file, txns,
    a property change."""
    t = create_table(table_dir, SCHEMA, partition_columns=["day"], properties={"delta.checkpointInterval": "1000"})
    append(t, _rows([0, 1]))
    append(t, _rows([2]))
    write_checkpoint(t)
    append(t, _rows([3]), app_id="loader", app_version=1)  # 3
    delete_files(t, [t.snapshot().file_paths[0]])  # 4: removes a file from before the range
    append(t, _rows([4, 5]), app_id="loader", app_version=2)  # 5
    fresh = sorted(set(t.snapshot().file_paths) - set(t.snapshot(4).file_paths))
    delete_files(t, fresh[:1])  # 6: a file added inside the range is removed inside it
    set_properties(t, {"delta.logRetentionDuration": "interval 60 days"})  # 7
    append(t, _rows([6]))  # 8
    append(t, _rows([7]))  # 9
    return t


def _state(table_dir: str, version: int) -> dict:
    s = DeltaTable(table_dir).snapshot(version)
    return {"files": sorted(s.file_paths), "tombstones": sorted(s.tombstones.column("path").to_pylist()),
            "txns": {k: v.version for k, v in s.all_txns.items()}, "config": s.configuration,
            "protocol": s.protocol, "records": s.num_records}


def _deltars_ids(table_dir: str, version: int) -> list[int]:
    import deltalake

    return sorted(pa.table(deltalake.DeltaTable(table_dir, version=version).to_pyarrow_table())
                  .column("id").to_pylist())


def test_compaction_reads_the_same_at_every_version_for_us_and_delta_rs(table_dir, tmp_path):
    t = _build(table_dir)
    plain = str(tmp_path / "plain")
    shutil.copytree(table_dir, plain)
    res = compact_log(t)
    assert (res.start_version, res.end_version, res.commits_compacted) == (3, 9, 7)
    name = f"{3:020d}.{9:020d}.compacted.json"
    assert res.path.endswith("_delta_log/" + name)
    latest = DeltaTable(table_dir).snapshot()
    assert [f.name for f in latest.log_segment.replay_files] == [name]  # one read instead of seven
    for v in range(10):
        assert _state(table_dir, v) == _state(plain, v), v
        assert _deltars_ids(table_dir, v) == _deltars_ids(plain, v), v
    assert len(_deltars_ids(table_dir, 9)) == latest.num_records == 6
    assert latest.txns["loader"].version == 2


def test_compaction_content_is_reconciled(table_dir):
    t = _build(table_dir)
    res = compact_log(t)
    lines = [json.loads(x) for x in open(res.path.removeprefix("file://")).read().splitlines()]
    kinds = [next(iter(a)) for a in lines]
    assert "commitInfo" not in kinds and kinds.count("metaData") == 1 and "protocol" not in kinds
    assert [(a["txn"]["appId"], a["txn"]["version"]) for a in lines if "txn" in a] == [("loader", 2)]
    adds = {a["add"]["path"] for a in lines if "add" in a}
    removes = {a["remove"]["path"] for a in lines if "remove" in a}
    assert not adds & removes  # one action per file: the newest
    snap = t.snapshot()
    assert adds == set(snap.file_paths) - set(t.snapshot(2).file_paths)
    assert removes == set(snap.tombstones.column("path").to_pylist())
    assert len(removes) == 2  # the file from before the range, and the one added and removed in it
    assert res.actions == len(lines)


def test_domain_removal_inside_the_range_is_kept(tmp_path):
    """A removed domain must stay removed: the compaction replaces commits on top of an older state."""
    root = tmp_path / "t"
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})

    def commit(v: int, *actions: dict) -> None:
        (log / f"{v:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in actions))

    def add(p: str) -> dict:
        return {"add": {"path": p, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}

    commit(0, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["domainMetadata"]}},
           {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                         "partitionColumns": [], "configuration": {}}},
           {"domainMetadata": {"domain": "app.d1", "configuration": "{}", "removed": False}}, add("a"))
    commit(1, {"domainMetadata": {"domain": "app.d1", "configuration": "{}", "removed": True}}, add("b"))
    commit(2, add("c"))
    t = DeltaTable(str(root))
    before = t.snapshot()
    assert "app.d1" not in before.domain_metadata
    res = compact_log(t, start_version=1, end_version=2)
    assert res.commits_compacted == 2
    after = DeltaTable(str(root)).snapshot()
    assert after.log_segment.replay_files[-1].name == f"{1:020d}.{2:020d}.compacted.json"
    assert "app.d1" not in after.domain_metadata
    assert sorted(after.file_paths) == ["a", "b", "c"]


def test_bad_ranges_write_nothing(table_dir):
    t = _build(table_dir)
    before = listing(table_dir)
    with pytest.raises(ConfigError, match="0 <= from < to <= 9"):
        compact_log(t, start_version=5, end_version=3)
    with pytest.raises(ConfigError, match="0 <= from < to <= 9"):
        compact_log(t, start_version=5, end_version=12)
    with pytest.raises(ConfigError, match="minimum number of commits must be 2 or more, got 1"):
        compact_log(t, min_commits=1)
    os.unlink(os.path.join(table_dir, "_delta_log", f"{1:020d}.json"))
    before = listing(table_dir)
    with pytest.raises(LogGapError) as err:
        compact_log(t, start_version=0, end_version=4)
    assert err.value.version == 1
    assert listing(table_dir) == before


def test_nothing_to_compact_is_a_skip(table_dir):
    t = _build(table_dir)
    write_checkpoint(t)
    before = listing(table_dir)
    res = compact_log(t)
    assert res.path is None and "nothing to compact" in (res.skipped_reason or "")
    assert listing(table_dir) == before
    append(t, _rows([8]))
    append(t, _rows([9]))
    before = listing(table_dir)
    res = compact_log(t, min_commits=3)  # two commits after the checkpoint
    assert res.path is None and "fewer than the minimum of 3" in (res.skipped_reason or "")
    assert listing(table_dir) == before


def test_cli_compact_log(table_dir, capsys):
    _build(table_dir)
    assert main(["compact-log", table_dir, "--json", "--from", "4", "--to", "8"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["start_version"], out["end_version"], out["skipped_reason"]) == (4, 8, None)
    snap = DeltaTable(table_dir).snapshot()
    names = [f.name for f in snap.log_segment.replay_files]
    assert names == [f"{3:020d}.json", f"{4:020d}.{8:020d}.compacted.json", f"{9:020d}.json"]
    before = listing(table_dir)
    assert main(["compact-log", table_dir, "--json", "--from", "8", "--to", "4"]) == 2
    assert json.loads(capsys.readouterr().out)["error"]["kind"] == "config"
    assert listing(table_dir) == before


def test_ict_timestamp_of_a_compacted_version(table_dir):
    """The newest commit may be inside the compaction: its in-commit timestamp is still found."""
    t = create_table(table_dir, SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    append(t, _rows([1]))
    append(t, _rows([2]))
    expected = DeltaTable(table_dir).snapshot().timestamp
    compact_log(t)
    snap = DeltaTable(table_dir).snapshot()
    assert snap.log_segment.replay_files[0].name.endswith(".compacted.json")
    assert snap.timestamp == expected
    assert dt.datetime.fromtimestamp(expected / 1000, dt.UTC).year >= 2024


def test_cleanup_deletes_compactions_starting_at_or_before_the_kept_checkpoint(table_dir):
    """PROTOCOL.md "Metadata Cleanup" step 3; the compaction after the checkpoint stays in use."""
    t = _build(table_dir)
    early = compact_log(t, start_version=0, end_version=2)
    late = compact_log(t)
    when = time.time() - 90 * 86400  # _build sets delta.logRetentionDuration to 60 days
    log_dir = os.path.join(table_dir, "_delta_log")
    for name in os.listdir(log_dir):
        os.utime(os.path.join(log_dir, name), (when, when))
    expected = _state(table_dir, 9)
    res = cleanup_log(t)
    assert res.checkpoint_version == 2
    assert any(k.endswith(os.path.basename(early.path or "")) for k in res.deleted)
    names = os.listdir(log_dir)
    assert os.path.basename(early.path or "") not in names and os.path.basename(late.path or "") in names
    snap = DeltaTable(table_dir).snapshot()
    assert [f.name for f in snap.log_segment.replay_files] == [os.path.basename(late.path or "")]
    assert _state(table_dir, 9) == expected


def test_unreadable_compaction_falls_back_to_the_commits(table_dir, caplog):
    t = _build(table_dir)
    expected = _state(table_dir, 9)
    res = compact_log(t)
    with open((res.path or "").removeprefix("file://"), "w") as fh:
        fh.write('{"add": {"path": 5}}\nnot json\n')
    with caplog.at_level("WARNING"):
        assert _state(table_dir, 9) == expected
    assert "reading the commits it covers instead" in caplog.text


def _newest_first_compaction(table_dir: str, start: int, end: int) -> str:
    """A compaction file for ``start..end`` that is *not* reconciled: the commits' add/remove
    lines concatenated newest first (as a broken writer made one in a public test table)."""
    log_dir = os.path.join(table_dir, "_delta_log")
    lines: list[str] = []
    for v in range(end, start - 1, -1):
        with open(os.path.join(log_dir, f"{v:020d}.json")) as fh:
            lines += [ln for ln in fh.read().splitlines() if ln.strip() and '"commitInfo"' not in ln]
    path = os.path.join(log_dir, f"{start:020d}.{end:020d}.compacted.json")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def test_unreconciled_compaction_is_ignored_and_removed_files_stay_removed(table_dir, tmp_path, caplog):
    _build(table_dir)
    plain = str(tmp_path / "plain")
    shutil.copytree(table_dir, plain)
    bad = _newest_first_compaction(table_dir, 3, 9)
    with caplog.at_level("WARNING"):
        for v in range(3, 10):
            assert _state(table_dir, v) == _state(plain, v), v
    assert f"{os.path.basename(bad)} is not reconciled" in caplog.text
    assert "reading the commits it covers instead" in caplog.text
    # Replayed as written, the file would revive the file commit 6 removed (its add comes last).
    assert DeltaTable(table_dir).snapshot().num_records == 6


def test_reconciliation_defect_names_the_repeated_file(table_dir):
    from delta_core.log.commit_read import build_batch, parse_commit
    from delta_core.log.replay import reconciliation_defect

    t = _build(table_dir)
    good = compact_log(t)
    with open((good.path or "").removeprefix("file://"), "rb") as fh:
        parsed = parse_commit(fh.read(), version=3, source="good")
    assert reconciliation_defect(build_batch([parsed], source="good"), table_root=table_dir) is None
    bad = _newest_first_compaction(table_dir, 3, 9)
    with open(bad, "rb") as fh:
        parsed = parse_commit(fh.read(), version=3, source="bad")
    defect = reconciliation_defect(build_batch([parsed], source="bad"), table_root=table_dir)
    removed = sorted(set(DeltaTable(table_dir).snapshot(5).file_paths) - set(DeltaTable(table_dir).snapshot(6).file_paths))
    assert defect == f"{removed[0]!r} has more than one action"
