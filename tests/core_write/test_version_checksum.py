"""Version checksum files (PROTOCOL.md "Version Checksum File"): every commit we write leaves a
``<version>.crc`` that agrees with a full replay of that version, computed without reading the
log again; an existing ``.crc`` is never overwritten; a wrong one warns but never makes the
table unreadable; ``.crc`` files other engines wrote (``histogramOpt`` included) read back."""

from __future__ import annotations

import json
import logging
import os
import pathlib
import shutil

import deltalake
import pyarrow as pa
import pytest

from delta_core.cli.main import main
from delta_core.log.history import read_commit_info
from delta_core.log.table import DeltaTable
from delta_core.log.version_checksum import (
    checksum_key,
    checksum_of_state,
    read_version_checksum,
    verify_version_checksum,
)
from delta_core.model.file_size_histogram import DEFAULT_BIN_BOUNDARIES, FileSizeHistogram
from delta_core.write.table_writes import append, create_table, delete_files, overwrite, set_properties
from delta_core.write.transaction import Transaction
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
REQUIRED = {"tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol"}


def rows(ids: list[int], part: str = "a") -> pa.Table:
    return pa.table({"id": ids, "p": [part] * len(ids)}, schema=SCHEMA)


def crc_json(root: str, version: int) -> dict:
    with open(os.path.join(root, checksum_key(version)), encoding="utf-8") as f:
        return json.load(f)


def assert_matches_replay(table: DeltaTable, version: int) -> dict:
    """The .crc of ``version`` equals what a full replay of that version gives."""
    written = crc_json(table.uri, version)
    assert REQUIRED <= set(written)
    replayed = checksum_of_state(table.snapshot(version).replay_state).to_json()
    for key in ("tableSizeBytes", "numFiles", "numMetadata", "numProtocol", "metadata", "protocol",
                "fileSizeHistogram", "domainMetadata"):
        assert written[key] == replayed[key], (version, key)
    assert written["setTransactions"] == replayed["setTransactions"]
    return written


def test_every_commit_writes_a_crc_that_matches_replay(table_dir):
    t = create_table(table_dir, SCHEMA, partition_columns=["p"])
    append(t, rows([1, 2]), app_id="loader", app_version=1)
    append(t, rows([3], "b"))
    set_properties(t, {"delta.enableInCommitTimestamps": "true"})
    delete_files(t, [t.snapshot().file_paths[0]])
    overwrite(t, rows([7, 8, 9], "c"))
    latest = t.latest_version()
    assert latest == 5
    for v in range(latest + 1):
        written = assert_matches_replay(t, v)
        assert written["setTransactions"] == ([] if v == 0 else [
            {"appId": "loader", "version": 1, "lastUpdated": written["setTransactions"][0]["lastUpdated"]}])
        ict = read_commit_info(t.storage, v).get("inCommitTimestamp")
        # present exactly from the version that turned in-commit timestamps on (3)
        assert written.get("inCommitTimestampOpt") == ict and (ict is not None) == (v >= 3)
        assert written["txnId"] == read_commit_info(t.storage, v)["txnId"]
        assert verify_version_checksum(t.snapshot(v)).status == "ok"
        # delta-rs reads every version we wrote, .crc files beside them, with the same rows
        ours = t.snapshot(v)
        theirs = deltalake.DeltaTable(table_dir, version=v).to_pyarrow_table()
        assert theirs.num_rows == (ours.num_records or 0)
        assert sorted(theirs["id"].to_pylist()) == sorted(
            i for f in ours.add_actions() for i in _ids(table_dir, f.path))
    hist = crc_json(table_dir, latest)["fileSizeHistogram"]
    assert hist["sortedBinBoundaries"] == list(DEFAULT_BIN_BOUNDARIES) and sum(hist["fileCounts"]) == 1


def _ids(root: str, path: str) -> list[int]:
    import pyarrow.parquet as pq

    from delta_core.model.partition_values import url_decode_path

    return pq.read_table(os.path.join(root, url_decode_path(path)), columns=["id"])["id"].to_pylist()


def test_crc_after_a_lost_race_counts_the_winning_commits(table_dir):
    t = create_table(table_dir, SCHEMA)
    append(t, rows([1]))
    stale = t.snapshot()
    txn = Transaction(t, read_snapshot=stale, operation="WRITE")
    from delta_core.write.data_writer import write_data_file

    add = write_data_file(t.storage, rows([2]), metadata=stale.metadata, partition_values={})
    txn.add_written_files([add])
    append(DeltaTable(table_dir), rows([3, 4]))  # a concurrent writer takes version 2
    result = txn.commit()
    assert result.version == 3 and len(result.conflicts) == 1
    written = assert_matches_replay(t, 3)
    assert written["numFiles"] == 3


def test_an_existing_crc_is_never_overwritten_and_a_bad_one_only_warns(table_dir, caplog):
    t = create_table(table_dir, SCHEMA)
    foreign = b'{"numFiles": 99}'  # another writer's (broken) checksum for the next version
    with open(os.path.join(table_dir, checksum_key(1)), "wb") as f:
        f.write(foreign)
    assert append(t, rows([1, 2])).version == 1
    with open(os.path.join(table_dir, checksum_key(1)), "rb") as f:
        assert f.read() == foreign
    with caplog.at_level(logging.WARNING, logger="delta_core.log.version_checksum"):
        snap = t.snapshot()
    assert snap.num_records == 2  # still readable
    assert "corrupt" in caplog.text
    assert verify_version_checksum(snap).status == "corrupt"


def test_a_mismatching_crc_warns_on_load_and_describe_reports_it(table_dir, caplog, capsys):
    t = create_table(table_dir, SCHEMA)
    append(t, rows([1, 2]))
    key = os.path.join(table_dir, checksum_key(1))
    body = crc_json(table_dir, 1)
    body["numFiles"] = 5
    with open(key, "w", encoding="utf-8") as f:
        json.dump(body, f)
    with caplog.at_level(logging.WARNING, logger="delta_core.log.version_checksum"):
        snap = t.snapshot()
    assert snap.num_files == 1 and "numFiles: the log gives 1, the .crc says 5" in caplog.text
    check = verify_version_checksum(snap)
    assert check.status == "mismatch" and len(check.problems) == 1
    assert main(["describe", table_dir, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checksum"] == "mismatch"
    assert main(["describe", table_dir, "--json", "--version", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["checksum"] == "ok"
    os.unlink(key)
    assert verify_version_checksum(t.snapshot()).status == "absent"


def _crc_files() -> list[pathlib.Path]:
    found = [*CONFORMANCE_DIR.glob("*/_delta_log/*.crc"), *MODERN_DIR.glob("*/_delta_log/*.crc")]
    return sorted(f for f in found if f.name[0].isdigit())  # not Hadoop's hidden .json.crc


def test_crc_files_of_other_engines_agree_with_our_replay():
    # delta-rs and Delta Spark wrote these; the older delta-rs ones name the histogram histogramOpt
    files = _crc_files()
    assert len(files) >= 70
    legacy = 0
    mismatched = []
    for f in files:
        root = f.parent.parent
        version = int(f.name[:20])
        legacy += "histogramOpt" in json.loads(f.read_bytes())
        snap = DeltaTable(str(root)).snapshot(version)
        crc = read_version_checksum(snap.storage, version)
        assert crc is not None
        check = verify_version_checksum(snap)
        if check.status != "ok":
            mismatched.append((root.name, version, check.status, check.problems))
        if crc.file_size_histogram is not None:
            assert sum(crc.file_size_histogram.file_counts) == snap.num_files
            assert sum(crc.file_size_histogram.total_bytes) == snap.size_in_bytes
            # our histogram of the replayed sizes, over their boundaries, is theirs
            assert FileSizeHistogram.of_sizes(
                snap.files["size"], boundaries=crc.file_size_histogram.sorted_bin_boundaries
            ) == crc.file_size_histogram, f
    assert legacy > 0
    # One real disagreement: delta-rs's cdc_ict_table has commit 1 carry an inCommitTimestamp
    # 100000000000 ms below the one its .crc records. Reported, and the table stays readable.
    assert mismatched == [("rs-cdc_ict_table", 1, "mismatch", (
        "inCommitTimestampOpt: the commit gives 1683874206883, the .crc says 1783874206883",))]


def test_deletion_vector_counts_continue_another_engines_crc(tmp_path):
    src = MODERN_DIR / "rs-cdf-table-with-cdc-and-dvs"
    root = tmp_path / "t"
    shutil.copytree(src, root)
    t = DeltaTable(str(root))
    before = read_version_checksum(t.storage, 25)
    assert before is not None and before.num_deletion_vectors and before.num_deleted_records
    snap = t.snapshot()
    new = pa.table({c: pa.nulls(1, snap.arrow_schema.field(c).type) for c in snap.arrow_schema.names})
    new = new.set_column(0, snap.arrow_schema.names[0], pa.array([42], snap.arrow_schema.field(0).type))
    assert append(t, new).version == 26
    after = read_version_checksum(t.storage, 26)
    assert after is not None
    assert (after.num_deletion_vectors, after.num_deleted_records) == (
        before.num_deletion_vectors, before.num_deleted_records)
    assert after.num_files == before.num_files + 1
    assert verify_version_checksum(t.snapshot()).status == "ok"


@pytest.mark.parametrize("boundary", [0, 8192, 4 * 1024 * 1024, 256 * 1024 ** 3])
def test_histogram_lower_bounds_are_inclusive(boundary):
    h = FileSizeHistogram.of_sizes([boundary, boundary + 1])
    i = DEFAULT_BIN_BOUNDARIES.index(boundary)
    assert h.file_counts[i] == 2 and h.total_bytes[i] == 2 * boundary + 1
    assert len(DEFAULT_BIN_BOUNDARIES) == 95 and DEFAULT_BIN_BOUNDARIES[-1] == 256 * 1024 ** 3


def test_crc_on_a_table_delta_rs_writes_too(table_dir):
    # delta-rs 1.6 writes no .crc: ours must follow from the state alone, whoever wrote it
    deltalake.write_deltalake(table_dir, rows([1, 2]), partition_by=["p"])
    t = DeltaTable(table_dir)
    assert append(t, rows([3], "b")).version == 1
    deltalake.write_deltalake(table_dir, rows([4, 5], "c"), mode="append")
    delete_files(t, [t.snapshot().file_paths[0]])
    assert [os.path.exists(os.path.join(table_dir, checksum_key(v))) for v in range(4)] == [
        False, True, False, True]
    for v in (1, 3):
        assert_matches_replay(t, v)
    assert crc_json(table_dir, 3)["numFiles"] == 2
    assert deltalake.DeltaTable(table_dir).to_pyarrow_table().num_rows == 3


def test_an_unreadable_crc_is_reported_and_the_table_reads(table_dir, capsys):
    t = create_table(table_dir, SCHEMA)
    append(t, rows([1]))
    key = os.path.join(table_dir, checksum_key(1))
    os.unlink(key)
    os.mkdir(key)  # something at the .crc name that cannot be read as a file
    snap = t.snapshot()
    assert snap.num_records == 1
    check = verify_version_checksum(snap)
    assert check.status == "unreadable" and check.problems
    assert main(["describe", table_dir, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["checksum"] == "unreadable"


def test_histogram_of_a_chunked_column_is_that_of_its_values():
    # A snapshot's sizes come in chunks (one per checkpoint batch or commit), some empty; their
    # histogram is counted chunk by chunk, byte totals summed as integers across them: 2**53 + 1
    # bytes in one bin, which a float sum over the whole column would round.
    big = 256 * 1024 ** 3
    sizes = [0, 8191, 8192, 5_000_000, 4 * 1024 * 1024, *[big] * 4, 2 ** 51 + 1]
    chunked = pa.chunked_array([pa.array(sizes[:3], pa.int64()), pa.array([], pa.int64()),
                                pa.array(sizes[3:8], pa.int64()), pa.array(sizes[8:], pa.int64())])
    expected = FileSizeHistogram.of_sizes(sizes)
    assert FileSizeHistogram.of_sizes(chunked) == expected == FileSizeHistogram.of_sizes(pa.array(sizes, pa.int64()))
    assert sum(expected.file_counts) == len(sizes) and sum(expected.total_bytes) == sum(sizes)
    halves = pa.chunked_array([pa.array([2 ** 52], pa.int64()), pa.array([2 ** 52 + 1], pa.int64())])
    assert FileSizeHistogram.of_sizes(halves).total_bytes[-1] == 2 ** 53 + 1
    assert FileSizeHistogram.of_sizes(pa.chunked_array([], pa.int64())).file_counts == (0,) * 95
