"""Deletion vectors built for tests in the real layout (PROTOCOL.md "Deletion Vector Format").

A DV file: version byte 1, then per vector a big-endian 4-byte size, the data (little-endian
magic 1681511377 + pyroaring's portable 64-bit RoaringBitmap) and the big-endian CRC-32 of the
data. Inline vectors hold the data only, Z85-encoded. Written here independently of
``delta_core.log.deletion_vectors`` (an encoder is not a decoder), so the tests check the reader.
"""

from __future__ import annotations

import os
import struct
import uuid
import zlib
from collections.abc import Iterable, Sequence

import pyarrow as pa
from pyroaring import BitMap64

from delta_core.log.table import DeltaTable
from delta_core.model.actions import Add, DeletionVectorDescriptor
from delta_core.write.transaction import Transaction

MAGIC = 1681511377
_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def z85_encode(data: bytes) -> str:
    """Z85 of ``data`` zero-padded to whole 4-byte words."""
    data += b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        v = int.from_bytes(data[i:i + 4], "big")
        chunk = ""
        for _ in range(5):
            chunk = _Z85[v % 85] + chunk
            v //= 85
        out.append(chunk)
    return "".join(out)


def dv_data(rows: Iterable[int]) -> bytes:
    """Magic number + portable 64-bit RoaringBitmap of ``rows``."""
    return struct.pack("<I", MAGIC) + BitMap64(list(rows)).serialize()


def dv_file_bytes(vectors: Sequence[bytes]) -> tuple[bytes, list[int]]:
    """A DV file holding ``vectors`` (data as ``dv_data`` makes it) and the offset of each."""
    out = bytearray([1])
    offsets = []
    for data in vectors:
        offsets.append(len(out))
        out += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
    return bytes(out), offsets


def write_uuid_dv(table_root: str, rows_per_vector: Sequence[Iterable[int]], *, prefix: str = "",
                  ) -> list[DeletionVectorDescriptor]:
    """One ``u`` DV file under ``table_root`` (in directory ``prefix``) holding one vector per
    entry of ``rows_per_vector``; their descriptors."""
    u = uuid.uuid4()
    datas = [dv_data(rows) for rows in rows_per_vector]
    content, offsets = dv_file_bytes(datas)
    directory = os.path.join(table_root, prefix) if prefix else table_root
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, f"deletion_vector_{u}.bin"), "wb") as fh:
        fh.write(content)
    return [DeletionVectorDescriptor("u", prefix + z85_encode(u.bytes), len(data), len(BitMap64(list(rows))),
                                     offset=off)
            for data, off, rows in zip(datas, offsets, rows_per_vector)]


def write_path_dv(file_path: str, rows: Iterable[int], *, spelled: str | None = None) -> DeletionVectorDescriptor:
    """A ``p`` DV file at ``file_path`` (absolute; logged as ``spelled`` when given)."""
    rows = list(rows)
    data = dv_data(rows)
    content, offsets = dv_file_bytes([data])
    os.makedirs(os.path.dirname(file_path), exist_ok=True)
    with open(file_path, "wb") as fh:
        fh.write(content)
    return DeletionVectorDescriptor("p", spelled or file_path, len(data), len(set(rows)), offset=offsets[0])


def inline_dv(rows: Iterable[int]) -> DeletionVectorDescriptor:
    """An ``i`` DV of ``rows``."""
    rows = list(rows)
    data = dv_data(rows)
    return DeletionVectorDescriptor("i", z85_encode(data), len(data), len(set(rows)))


def rows_applying_dvs(uri: str, version: int | None = None) -> pa.Table:
    """The table's rows as delta-rs's query engine reads them (deletion vectors applied;
    ``DeltaTable.to_pyarrow_table()`` refuses tables with deletion vectors)."""
    import deltalake

    dt = deltalake.DeltaTable(uri, version=version)
    return pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())


def commit_deletion_vector(table: DeltaTable, path: str, rows: list[int]) -> int:
    """Another engine's DELETE: the file stays, a deletion vector hides ``rows`` of it."""
    txn = Transaction(table, operation="DELETE", operation_parameters={"predicate": "[]"})
    victim = next(a for a in txn.snapshot.add_actions() if a.path == path)
    with txn:
        txn.add_actions([
            victim.to_remove(victim.modification_time, data_change=True),
            Add(victim.path, victim.partition_values, victim.size, victim.modification_time, True, victim.stats,
                deletion_vector=inline_dv(rows)),
        ])
        return txn.commit().version
