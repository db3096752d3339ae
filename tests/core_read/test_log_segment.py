"""Log segments: listing from the ``_last_checkpoint`` hint, stale hints, incomplete
checkpoints, gaps (PROTOCOL.md "Checkpoints", "Last Checkpoint File")."""

from __future__ import annotations

import json
import pathlib

import pytest

from delta_core.errors import LogGapError, NotADeltaTableError, VersionNotFoundError
from delta_core.log.last_checkpoint import LastCheckpoint, encode_last_checkpoint
from delta_core.log.log_path import LOG_DIR, LogFileKind, parse_log_name
from delta_core.log.log_segment import LogSegment, build_log_segment, latest_checkpoint_version, latest_version
from delta_core.log.snapshot import load_snapshot
from delta_core.log.table import DeltaTable
from delta_core.storage import open_storage
from tests.core_read.conftest import RecordingStorage, add, commit_info, metadata, protocol


def _expected(root: pathlib.Path) -> dict:
    return json.loads((root / "expected.json").read_text(encoding="utf-8"))


def _log_names(storage: RecordingStorage) -> list[str]:
    return [s for d, s in storage.list_calls if d == LOG_DIR]


def test_listing_starts_at_the_hint(conformance_dir: pathlib.Path) -> None:
    # golden-checkpoint: commits 0..14, checkpoint at 10, _last_checkpoint -> 10
    storage = RecordingStorage(open_storage(str(conformance_dir / "golden-checkpoint")))
    snap = load_snapshot(storage)
    assert snap.version == 14 and snap.log_segment.checkpoint_version == 10
    assert _log_names(storage) == ["00000000000000000010"]
    # commits the checkpoint covers are never read
    assert not any(k.endswith(("00000000000000000003.json", "00000000000000000009.json")) for k in storage.reads)
    assert [c.version for c in snap.log_segment.commit_files] == [11, 12, 13, 14]


def test_latest_version_and_checkpoint_list_from_hint(conformance_dir: pathlib.Path) -> None:
    storage = RecordingStorage(open_storage(str(conformance_dir / "golden-checkpoint")))
    assert latest_version(storage) == 14
    assert latest_checkpoint_version(storage) == 10
    assert set(_log_names(storage)) == {"00000000000000000010"}


def test_time_travel_before_hint_lists_only_up_to_target(conformance_dir: pathlib.Path) -> None:
    storage = RecordingStorage(open_storage(str(conformance_dir / "golden-checkpoint")))
    segment = build_log_segment(storage, version=4)
    assert segment.checkpoint_version is None and segment.version == 4
    assert _log_names(storage) == [""]


def test_hint_pointing_at_missing_checkpoint_falls_back_to_full_listing(copy_table, caplog) -> None:
    root = copy_table("golden-checkpoint")
    (root / "_delta_log" / "00000000000000000010.checkpoint.parquet").unlink()
    storage = RecordingStorage(open_storage(str(root)))
    snap = load_snapshot(storage)
    assert _log_names(storage) == ["00000000000000000010", ""]
    assert snap.log_segment.checkpoint_version is None
    assert sorted(snap.file_paths) == _expected(root)["latest"]["files"]
    assert "no complete checkpoint" in caplog.text


def test_stale_hint_at_older_checkpoint_uses_newest(copy_table) -> None:
    root = copy_table("golden-only-checkpoint-files")  # checkpoints at 1 and 2
    (root / "_delta_log" / "_last_checkpoint").write_bytes(encode_last_checkpoint(LastCheckpoint(version=1, size=12)))
    storage = RecordingStorage(open_storage(str(root)))
    snap = load_snapshot(storage)
    assert _log_names(storage) == ["00000000000000000001"]
    assert snap.log_segment.checkpoint_version == 2
    assert sorted(snap.file_paths) == _expected(root)["latest"]["files"]


def test_hint_beyond_the_log_is_ignored(copy_table) -> None:
    root = copy_table("golden-checkpoint")
    (root / "_delta_log" / "_last_checkpoint").write_text('{"version": 99, "size": 1}')
    storage = RecordingStorage(open_storage(str(root)))
    assert load_snapshot(storage).version == 14
    assert _log_names(storage) == ["00000000000000000099", ""]


def test_checksum_mismatch_hint_is_ignored_and_table_reads(copy_table) -> None:
    root = copy_table("golden-checkpoint")
    hint = root / "_delta_log" / "_last_checkpoint"
    obj = json.loads(hint.read_text())
    obj["numOfAddFiles"] = 12345  # checksum no longer matches
    hint.write_text(json.dumps(obj))
    storage = RecordingStorage(open_storage(str(root)))
    snap = load_snapshot(storage)
    assert _log_names(storage) == [""]  # no hint: one full listing
    assert snap.version == 14 and snap.log_segment.checkpoint_version == 10
    assert sorted(snap.file_paths) == _expected(root)["latest"]["files"]


def test_empty_last_checkpoint_still_reads(copy_table) -> None:
    root = copy_table("golden-checkpoint")
    (root / "_delta_log" / "_last_checkpoint").write_bytes(b"")
    snap = DeltaTable(str(root)).snapshot()
    assert snap.version == 14 and snap.log_segment.checkpoint_version == 10


def test_multipart_checkpoint_with_missing_part_falls_back_to_commits(copy_table) -> None:
    root = copy_table("golden-multi-part-checkpoint")
    want = _expected(root)["latest"]
    (root / "_delta_log" / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    snap = DeltaTable(str(root)).snapshot()
    assert snap.log_segment.checkpoint_version is None
    assert [c.version for c in snap.log_segment.commit_files] == [0, 1]
    assert sorted(snap.file_paths) == want["files"] and snap.num_records == want["num_records"]


def test_multipart_checkpoint_with_missing_part_and_no_commits_is_a_gap(copy_table) -> None:
    root = copy_table("golden-multi-part-checkpoint")
    (root / "_delta_log" / "00000000000000000001.checkpoint.0000000002.0000000002.parquet").unlink()
    (root / "_delta_log" / "00000000000000000000.json").unlink()
    with pytest.raises(LogGapError) as info:
        DeltaTable(str(root)).snapshot()
    assert info.value.version == 0
    assert "restore" in str(info.value) and "00000000000000000000.json" in str(info.value)


def test_missing_commit_after_checkpoint_is_a_gap(copy_table) -> None:
    root = copy_table("golden-basic-with-inserts-deletes-checkpoint")  # cp 10, latest 13
    (root / "_delta_log" / "00000000000000000012.json").unlink()
    table = DeltaTable(str(root))
    with pytest.raises(LogGapError) as info:
        table.snapshot()
    assert info.value.version == 12 and info.value.kind == "log_gap"
    assert table.snapshot(11).version == 11  # versions before the gap still read


def test_missing_commit_before_checkpoint_only_breaks_older_versions(copy_table) -> None:
    root = copy_table("golden-basic-with-inserts-deletes-checkpoint")
    (root / "_delta_log" / "00000000000000000005.json").unlink()
    table = DeltaTable(str(root))
    assert table.snapshot().version == 13
    assert table.snapshot(10).version == 10
    with pytest.raises(LogGapError):
        table.snapshot(7)


def test_cleaned_up_versions_are_not_found(copy_table) -> None:
    root = copy_table("golden-checkpoint")
    for v in range(4):
        (root / "_delta_log" / f"{v:020d}.json").unlink()
    table = DeltaTable(str(root))
    assert table.snapshot(10).version == 10
    with pytest.raises(VersionNotFoundError) as info:
        table.snapshot(6)
    assert info.value.version == 6


def test_version_beyond_latest(conformance_dir: pathlib.Path) -> None:
    with pytest.raises(VersionNotFoundError) as info:
        DeltaTable(str(conformance_dir / "golden-checkpoint")).snapshot(15)
    assert "latest version is 14" in str(info.value)
    with pytest.raises(VersionNotFoundError):
        DeltaTable(str(conformance_dir / "golden-checkpoint")).snapshot(-1)


def test_not_a_table(tmp_path: pathlib.Path) -> None:
    with pytest.raises(NotADeltaTableError) as info:
        DeltaTable(str(tmp_path)).snapshot()
    assert "not a Delta table" in str(info.value) and info.value.kind == "not_a_table"
    (tmp_path / "_delta_log").mkdir()
    (tmp_path / "_delta_log" / "00000000000000000000.crc").write_text("{}")
    with pytest.raises(NotADeltaTableError):
        DeltaTable(str(tmp_path)).latest_version()


def test_checkpoint_only_log(conformance_dir: pathlib.Path) -> None:
    segment = build_log_segment(open_storage(str(conformance_dir / "rs-table-with-domain-metadata")))
    assert segment.version == 108 and segment.checkpoint_version == 108 and segment.commit_files == ()


def test_compacted_files_replace_the_commits_they_cover(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a"))
    log_writer.commit(1, commit_info(), add("b"))
    log_writer.commit(2, commit_info(), add("c"))
    log_writer.commit(3, commit_info(), add("d"))
    (log_writer.log / "00000000000000000001.00000000000000000002.compacted.json").write_text(
        json.dumps(add("b")) + "\n" + json.dumps(add("c")) + "\n")
    table = DeltaTable(str(log_writer.root))
    snap = table.snapshot()
    assert [f.name for f in snap.log_segment.replay_files] == [
        f"{0:020d}.json", f"{1:020d}.{2:020d}.compacted.json", f"{3:020d}.json"]
    assert sorted(snap.file_paths) == ["a", "b", "c", "d"]
    # time travel inside the compacted range reads the commits
    older = table.snapshot(1)
    assert [f.name for f in older.log_segment.replay_files] == [f"{0:020d}.json", f"{1:020d}.json"]
    assert sorted(older.file_paths) == ["a", "b"]


def _lp(name: str):
    return parse_log_name(name)


def test_segment_compactions_must_lie_inside_its_commits() -> None:
    c = [_lp(f"{v:020d}.json") for v in range(5)]
    cp = _lp("00000000000000000001.checkpoint.parquet")
    inside = _lp(f"{2:020d}.{3:020d}.compacted.json")
    seg = LogSegment(4, 1, (cp,), tuple(c[2:]), compactions=(inside,))
    assert [f.name for f in seg.replay_files] == [inside.name, c[4].name]
    for bad in (_lp(f"{1:020d}.{3:020d}.compacted.json"),  # reaches into the checkpoint
                _lp(f"{3:020d}.{5:020d}.compacted.json")):  # past the segment's version
        with pytest.raises(LogGapError, match="not inside commits 2..4"):
            LogSegment(4, 1, (cp,), tuple(c[2:]), compactions=(bad,))
    with pytest.raises(LogGapError):  # overlapping
        LogSegment(4, 1, (cp,), tuple(c[2:]), compactions=(inside, _lp(f"{3:020d}.{4:020d}.compacted.json")))


def test_segment_invariants_are_checked() -> None:
    c = [_lp(f"{v:020d}.json") for v in range(4)]
    cp = _lp("00000000000000000001.checkpoint.parquet")
    part1 = _lp("00000000000000000001.checkpoint.0000000001.0000000002.parquet")
    assert LogSegment(3, 1, (cp,), tuple(c[2:])).version == 3
    with pytest.raises(LogGapError):
        LogSegment(3, None, (), (c[0], c[1], c[3]))  # gap
    with pytest.raises(LogGapError):
        LogSegment(3, 1, (cp,), (c[3],))  # commits must start right after the checkpoint
    with pytest.raises(LogGapError):
        LogSegment(3, 1, (part1,), tuple(c[2:]))  # incomplete multi-part checkpoint
    with pytest.raises(LogGapError):
        LogSegment(3, 1, (), tuple(c[2:]))  # checkpoint version without files
    assert all(f.kind is LogFileKind.COMMIT for f in c)


def test_incomplete_hinted_checkpoint_with_newer_complete_one(copy_table) -> None:
    # hint -> 1 (multi-part, a part missing), complete classic checkpoint at 2 (copied from the
    # other table's layout): latest uses 2, time travel to 1 falls back to the commits
    root = copy_table("golden-only-checkpoint-files")  # checkpoints at 1 and 2, commits 0..2
    log = root / "_delta_log"
    (log / "00000000000000000001.checkpoint.parquet").rename(
        log / "00000000000000000001.checkpoint.0000000001.0000000002.parquet")
    (log / "_last_checkpoint").write_text('{"version": 1, "size": 12, "parts": 2}')
    table = DeltaTable(str(root))
    assert table.snapshot().log_segment.checkpoint_version == 2
    one = table.snapshot(1)
    assert one.log_segment.checkpoint_version is None and one.version == 1
    assert sorted(one.file_paths) == _expected(root)["versions"]["1"]["files"]
