"""Damaged or unsupported logs fail with a typed error that says what to do."""

from __future__ import annotations

import pathlib

import pytest

from delta_core.errors import (
    CorruptLogError,
    DeltaError,
    MissingMetadataError,
    MissingProtocolError,
    UnsupportedProtocolError,
)
from delta_core.log.table import DeltaTable
from tests.core_read.conftest import add, commit_info, metadata, protocol


def test_truncated_commit_line(copy_table) -> None:
    root = copy_table("dat-basic_append")
    commit = root / "_delta_log" / "00000000000000000001.json"
    data = commit.read_bytes()
    commit.write_bytes(data[: len(data) - 40])  # a write cut off mid-line
    table = DeltaTable(str(root))
    with pytest.raises(CorruptLogError) as info:
        table.snapshot()
    err = info.value
    assert err.kind == "corrupt_log" and err.version == 1
    assert "00000000000000000001.json" in str(err) and "restore" in str(err)
    assert table.snapshot(0).version == 0  # the version before still reads


def test_invalid_json_line_in_the_middle(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a"))
    path = log_writer.commit(1, commit_info(), add("b"))
    path.write_text(path.read_text() + "{this is not json}\n" + '{"add": {"path": "c", "size": 1}}\n')
    with pytest.raises(CorruptLogError) as info:
        DeltaTable(str(log_writer.root)).snapshot()
    assert "line 3" in str(info.value) and info.value.version == 1


def test_file_action_with_wrong_types(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(), metadata(), add("a", size="huge"))
    with pytest.raises(CorruptLogError) as info:
        DeltaTable(str(log_writer.root)).snapshot()
    assert "size" in str(info.value) and info.value.version == 0


def test_add_without_path(log_writer) -> None:
    log_writer.commit(0, protocol(), metadata(), {"add": {"size": 3, "partitionValues": {}}})
    with pytest.raises(CorruptLogError):
        DeltaTable(str(log_writer.root)).snapshot()


def test_unknown_reader_feature(log_writer) -> None:
    log_writer.commit(0, commit_info(), protocol(3, 7, readerFeatures=["deletionVectors", "hyperSpace"],
                                                  writerFeatures=["deletionVectors", "hyperSpace"]),
                      metadata(), add("a"))
    with pytest.raises(UnsupportedProtocolError) as info:
        DeltaTable(str(log_writer.root)).snapshot()
    assert "hyperSpace" in str(info.value) and "use a Delta engine" in str(info.value)
    assert info.value.kind == "unsupported_protocol"


def test_reader_version_too_new(log_writer) -> None:
    log_writer.commit(0, protocol(4, 7), metadata(), add("a"))
    with pytest.raises(UnsupportedProtocolError):
        DeltaTable(str(log_writer.root)).snapshot()


def test_error_order_protocol_before_metadata(log_writer) -> None:
    # no metaData and an unsupported protocol: the protocol error comes first
    log_writer.commit(0, protocol(9, 9), add("a"))
    with pytest.raises(UnsupportedProtocolError):
        DeltaTable(str(log_writer.root)).snapshot()


def test_missing_protocol_before_missing_metadata(log_writer) -> None:
    log_writer.commit(0, commit_info(), add("a"))
    with pytest.raises(MissingProtocolError) as info:
        DeltaTable(str(log_writer.root)).snapshot()
    assert "no protocol action" in str(info.value)


def test_missing_metadata(log_writer) -> None:
    log_writer.commit(0, protocol(), add("a"))
    with pytest.raises(MissingMetadataError) as info:
        DeltaTable(str(log_writer.root)).snapshot()
    assert info.value.version == 0


def test_missing_sidecar(copy_table) -> None:
    root = copy_table("golden-v2-checkpoint-parquet")
    sidecar = sorted((root / "_delta_log" / "_sidecars").glob("0*.parquet"))[0]
    sidecar.unlink()
    with pytest.raises(CorruptLogError) as info:
        DeltaTable(str(root)).snapshot()
    assert "sidecar" in str(info.value) and "delete it" in str(info.value)


def test_unreadable_checkpoint(copy_table) -> None:
    root = copy_table("dat-with_checkpoint")
    (root / "_delta_log" / "00000000000000000002.checkpoint.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(CorruptLogError) as info:
        DeltaTable(str(root)).snapshot()
    assert "not readable Parquet" in str(info.value)


def test_every_error_is_a_delta_error_with_a_path(tmp_path: pathlib.Path) -> None:
    with pytest.raises(DeltaError) as info:
        DeltaTable(str(tmp_path / "nowhere")).snapshot()
    assert info.value.path and info.value.path.startswith("file://")
