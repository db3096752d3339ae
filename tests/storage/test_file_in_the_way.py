"""A file where the table needs a directory (issue 28: ``delta-core describe afile.txt`` crashed
with ``NotADirectoryError``): below a file nothing exists, as on an object store, and a write
there is refused typed, with nothing written."""

from __future__ import annotations

import pyarrow as pa
import pytest

from delta_core.errors import BlockedPathError, NotADeltaTableError
from delta_core.log.table import DeltaTable
from delta_core.storage import open_storage
from delta_core.write.table_writes import create_table
from tests.core_write.conftest import listing

SCHEMA = pa.schema([("id", pa.int64())])


def _reads_find_nothing(store) -> None:
    for read in (store.read, store.head, store.open_input):
        with pytest.raises(FileNotFoundError):
            read("_delta_log/_last_checkpoint")
    assert list(store.list_from("_delta_log")) == []
    assert list(store.list_recursive("_delta_log")) == []
    assert store.list_directories("_delta_log") == []
    assert store.exists("_delta_log/00000000000000000000.json") is False
    store.delete("_delta_log/_last_checkpoint")  # deleting what is not there is no error
    store.delete_many(["_delta_log/_last_checkpoint", "_delta_log/00000000000000000000.json"])


@pytest.mark.parametrize("below", ["", "sub"])
def test_below_a_file_nothing_exists(a_file, below):
    _reads_find_nothing(open_storage(str(a_file / below) if below else str(a_file)))


def test_below_a_log_that_is_a_file_nothing_exists(log_is_a_file):
    _reads_find_nothing(open_storage(str(log_is_a_file)))


@pytest.mark.s3
def test_an_object_as_the_root_reads_the_same_on_s3(s3_table_uri, s3_storage_options):
    import s3fs

    s3fs.S3FileSystem(**s3_storage_options).pipe(s3_table_uri.removeprefix("s3://"), b"not a table\n")
    _reads_find_nothing(open_storage(s3_table_uri, s3_storage_options))
    with pytest.raises(NotADeltaTableError, match="there is no _delta_log/"):
        DeltaTable(s3_table_uri, s3_storage_options).snapshot()


@pytest.mark.parametrize("below", ["", "sub"])
def test_a_table_cannot_be_created_at_or_below_a_file(a_file, below):
    root = str(a_file / below) if below else str(a_file)
    before = listing(str(a_file.parent))
    with pytest.raises(NotADeltaTableError) as info:
        create_table(root, SCHEMA)
    message = str(info.value)
    assert f"{a_file} is a file, not a directory" in message and "check the path" in message
    assert listing(str(a_file.parent)) == before
    with pytest.raises(NotADeltaTableError, match="there is no _delta_log/"):
        DeltaTable(root).snapshot()


def test_a_commit_below_a_log_that_is_a_file_is_refused_at_once(log_is_a_file, caplog):
    before = listing(str(log_is_a_file))
    with pytest.raises(BlockedPathError) as info:
        create_table(str(log_is_a_file), SCHEMA)
    assert info.value.kind == "blocked_path" and info.value.path == str(log_is_a_file / "_delta_log")
    assert "is a file where a directory is needed" in str(info.value)
    assert "commit outcome unknown" not in caplog.text  # refused, not retried as a lost reply
    assert listing(str(log_is_a_file)) == before
    store = open_storage(str(log_is_a_file))
    for write in (lambda: store.write("_delta_log/x.json", b"{}"),
                  lambda: store.open_atomic_output("_delta_log/x.json")):
        with pytest.raises(BlockedPathError):
            write()
    assert listing(str(log_is_a_file)) == before
