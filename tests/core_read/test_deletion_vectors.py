"""Reading deletion vectors (PROTOCOL.md "Deletion Vectors", "Deletion Vector Format").

Real ``u`` vectors of Delta Spark, delta-rs and kernel tables are checked against what delta-rs's
query engine reads; ``i`` and ``p`` vectors are built in the real layout (``tests.dv_files``);
every kind of damage is a ``DeletionVectorError`` naming the file.
"""

from __future__ import annotations

import os
import struct
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_core.errors import DeletionVectorError
from delta_core.log.deletion_vectors import dv_file_key, read_deletion_vector
from delta_core.log.table import DeltaTable
from delta_core.maintenance.data_io import DataFileReader
from delta_core.model.actions import DeletionVectorDescriptor
from delta_core.storage import open_storage
from tests.conftest import CONFORMANCE_DIR, MODERN_DIR
from tests.dv_files import dv_data, inline_dv, rows_applying_dvs, write_path_dv, write_uuid_dv
from tests.maintenance.conftest import make_table, multiset

CONFORMANCE = str(CONFORMANCE_DIR)
MODERN = str(MODERN_DIR)
DV_TABLES = [
    f"{MODERN}/golden-dv-partitioned-with-checkpoint",
    f"{MODERN}/krs-with-short-dv",
    f"{MODERN}/rs-cdf-table-with-cdc-and-dvs",
    f"{CONFORMANCE}/golden-dv-with-columnmapping",
    f"{CONFORMANCE}/golden-log-replay-dv-key-cases",
    f"{CONFORMANCE}/rs-table_with_deletion_logs",
]


def _real(path: str) -> str:
    if not os.path.isdir(path):
        pytest.skip(f"{path} not present")
    return path


@pytest.mark.parametrize("root", DV_TABLES, ids=os.path.basename)
def test_real_vectors_read_to_the_rows_delta_rs_reads(root):
    """Every live file's vector passes its checks, and the files read through ``DataFileReader``
    with their vectors hold exactly delta-rs's rows (data columns; partition values aside)."""
    table = DeltaTable(_real(root))
    snap = table.snapshot()
    adds = list(snap.add_actions())
    with_dv = [a for a in adds if a.deletion_vector is not None]
    assert with_dv and all(a.deletion_vector.storage_type == "u" for a in with_dv)
    for a in with_dv:
        assert len(read_deletion_vector(table.storage, a.deletion_vector)) == a.deletion_vector.cardinality
    reader = DataFileReader(table.storage, snap.metadata)
    ours = pa.concat_tables([reader.read(a.path, size=a.size, deletion_vector=a.deletion_vector) for a in adds])
    theirs = rows_applying_dvs(root).select(ours.column_names)
    assert multiset(ours) == multiset(theirs)


def test_short_dv_is_rows_0_to_2():
    table = DeltaTable(_real(f"{MODERN}/krs-with-short-dv"))
    dv = next(a.deletion_vector for a in table.snapshot().add_actions() if a.deletion_vector is not None)
    assert sorted(read_deletion_vector(table.storage, dv)) == [0, 1, 2]


def test_uuid_vectors_with_prefix_and_offsets(tmp_path):
    root = str(tmp_path)
    rows = [[0, 5, 70_000], [3], [2**33 + 7, 1]]  # second bucket of the 64-bit bitmap too
    dvs = write_uuid_dv(root, rows, prefix="ab")
    storage = open_storage(root)
    assert dv_file_key(dvs[0], root).startswith("ab/deletion_vector_")
    assert [sorted(read_deletion_vector(storage, dv)) for dv in dvs] == [sorted(r) for r in rows]


def test_inline_vector():
    dv = inline_dv([1, 4, 9, 100_000])
    assert sorted(read_deletion_vector(open_storage("memory://dv-inline"), dv)) == [1, 4, 9, 100_000]


@pytest.mark.parametrize("spelling", ["plain", "file:", "file://"])
def test_absolute_path_vector(tmp_path, spelling):
    root = tmp_path / "t"
    root.mkdir()
    file_path = str(root / "dvs" / "my.bin")
    spelled = {"plain": file_path, "file:": f"file:{file_path}", "file://": f"file://{file_path}"}[spelling]
    dv = write_path_dv(file_path, [2, 3], spelled=spelled)
    assert dv_file_key(dv, str(root)) == "dvs/my.bin"
    assert sorted(read_deletion_vector(open_storage(str(root)), dv)) == [2, 3]


def test_absolute_path_outside_the_root_is_refused(tmp_path):
    (tmp_path / "t").mkdir()
    dv = write_path_dv(str(tmp_path / "elsewhere" / "dv.bin"), [1])
    with pytest.raises(DeletionVectorError, match="not certainly under the table root"):
        read_deletion_vector(open_storage(str(tmp_path / "t")), dv)


def _damaged(tmp_path, damage) -> tuple[object, DeletionVectorDescriptor, str]:
    root = str(tmp_path)
    (dv,) = write_uuid_dv(root, [[1, 2, 3]])
    key = dv_file_key(dv, root)
    path = os.path.join(root, key)
    data = bytearray(open(path, "rb").read())
    dv = damage(data, dv) or dv
    with open(path, "wb") as fh:
        fh.write(bytes(data))
    return open_storage(root), dv, path


def _flip_bitmap_byte(data: bytearray, dv):
    data[-6] ^= 0xFF  # inside the bitmap: the CRC no longer matches


def _bad_magic(data: bytearray, dv):
    body = bytearray(data[5:5 + dv.size_in_bytes])
    body[:4] = struct.pack("<I", 1681511376)  # the legacy magic of PROTOCOL.md's JSON example
    data[5:5 + dv.size_in_bytes] = body
    data[5 + dv.size_in_bytes:9 + dv.size_in_bytes] = struct.pack(">I", zlib.crc32(bytes(body)))


def _wrong_cardinality(data: bytearray, dv):
    return DeletionVectorDescriptor(dv.storage_type, dv.path_or_inline_dv, dv.size_in_bytes, 4, offset=dv.offset)


def _wrong_size(data: bytearray, dv):
    return DeletionVectorDescriptor(dv.storage_type, dv.path_or_inline_dv, dv.size_in_bytes - 1, 3, offset=dv.offset)


def _truncated(data: bytearray, dv):
    del data[-3:]


def _bad_version(data: bytearray, dv):
    data[0] = 2


@pytest.mark.parametrize(("damage", "message"), [
    (_flip_bitmap_byte, "CRC-32"),
    (_bad_magic, "magic number 1681511376"),
    (_wrong_cardinality, "cardinality 4"),
    (_wrong_size, "log says"),
    (_truncated, "ends before"),
    (_bad_version, "format version"),
])
def test_damaged_vector_is_a_typed_error_naming_the_file(tmp_path, damage, message):
    storage, dv, path = _damaged(tmp_path, damage)
    with pytest.raises(DeletionVectorError, match=message) as info:
        read_deletion_vector(storage, dv)
    assert info.value.path == storage.uri(dv_file_key(dv, str(tmp_path)))
    assert os.path.basename(path) in str(info.value)


def test_missing_vector_file(tmp_path):
    (dv,) = write_uuid_dv(str(tmp_path), [[1]])
    os.remove(os.path.join(str(tmp_path), dv_file_key(dv, str(tmp_path))))
    with pytest.raises(DeletionVectorError, match="missing") as info:
        read_deletion_vector(open_storage(str(tmp_path)), dv)
    assert info.value.path.endswith(".bin")


def test_corrupt_inline_vector():
    good = inline_dv([1, 2])
    bad_char = DeletionVectorDescriptor("i", "~" + good.path_or_inline_dv[1:], good.size_in_bytes, 2)
    with pytest.raises(DeletionVectorError, match="not a Z85 character"):
        read_deletion_vector(open_storage("memory://dv-bad"), bad_char)
    garbage = DeletionVectorDescriptor("i", inline_dv([1]).path_or_inline_dv, len(dv_data([1])), 2)
    with pytest.raises(DeletionVectorError, match="cardinality 2"):
        read_deletion_vector(open_storage("memory://dv-bad"), garbage)


def test_reader_applies_vector_across_row_groups_with_physical_row_index(tmp_path):
    """Chunked reads (row group by row group) keep a running physical offset: the vector's
    rows disappear and ``row_index_column`` gives each kept row's index in the file."""
    table = make_table(str(tmp_path / "t"), appends=1, rows=50, partition_columns=())
    add = next(table.snapshot().add_actions())
    # Rewrite the one file with 10-row row groups, same rows, so the reader has 5 chunks.
    file_path = os.path.join(str(tmp_path / "t"), add.path)
    pq.write_table(pq.read_table(file_path), file_path, row_group_size=10)
    deleted = [0, 9, 10, 25, 49]
    live = [i for i in range(50) if i not in deleted]
    dv = inline_dv(deleted)
    reader = DataFileReader(table.storage, table.snapshot().metadata, row_index_column="__row")
    chunks = list(reader.chunks(add.path, size=2**40, deletion_vector=dv))  # size: force row groups
    assert [c.num_rows for c in chunks] == [8, 9, 9, 10, 9]
    got = pa.concat_tables(chunks)
    assert got.schema.names == [*reader.logical.names, "__row"]
    assert got.column("__row").to_pylist() == live
    assert got.column("id").to_pylist() == live  # ids were written 0..49 in order
    whole = reader.read(add.path, deletion_vector=dv)  # small file: one read, same rows
    assert whole.equals(got)
    plain = DataFileReader(table.storage, table.snapshot().metadata).read(add.path)
    assert plain.num_rows == 50 and plain.schema.names == reader.logical.names


def test_vector_naming_rows_past_the_file_end_is_refused(tmp_path):
    table = make_table(str(tmp_path / "t"), appends=1, rows=5, partition_columns=())
    add = next(table.snapshot().add_actions())
    reader = DataFileReader(table.storage, table.snapshot().metadata)
    with pytest.raises(DeletionVectorError, match="has 5 rows"):
        reader.read(add.path, deletion_vector=inline_dv([1, 7]))


@pytest.mark.parametrize("text", ["short", "abcde~ghijklmnopqrst"])
def test_bad_uuid_path_is_a_typed_error(text):
    with pytest.raises(DeletionVectorError):
        dv_file_key(DeletionVectorDescriptor("u", text, 10, 1, offset=1), "/tmp/t")
