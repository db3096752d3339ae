"""Rows packed as Arrow IPC bytes for Z-order's shuffle (pure, no Spark)."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa

from delta_core.maintenance.ipc_chunks import pack, unpack


def rows(n: int) -> pa.Table:
    # Types Spark's own row format would convert (decimals, timestamps without zone, nested).
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in range(n)], pa.decimal128(12, 2)),
        "at": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) for i in range(n)], pa.timestamp("us")),
        "tags": pa.array([{"k": str(i), "v": [i, None]} for i in range(n)],
                         pa.struct([("k", pa.string()), ("v", pa.list_(pa.int32()))])),
    })


def test_pack_splits_rows_by_size_and_unpack_restores_them_in_order():
    data = rows(1000)
    chunks = list(pack(data, max_bytes=data.nbytes // 7))
    # About seven chunks of about a seventh of the data each, and no rows lost or reordered.
    assert 7 <= len(chunks) <= 9
    assert all(len(c) < data.nbytes // 3 for c in chunks)
    back = unpack(chunks)
    assert back.schema == data.schema
    assert back.equals(data)


def test_pack_keeps_one_row_per_chunk_when_a_row_exceeds_the_bound_and_nothing_for_no_rows():
    data = rows(3)
    chunks = list(pack(data, max_bytes=1))
    assert len(chunks) == 3
    assert unpack(chunks).equals(data)
    assert list(pack(data.slice(0, 0))) == []
