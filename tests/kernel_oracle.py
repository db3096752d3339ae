"""delta-kernel-rs as a second oracle for rows (issue 30 item 9).

``polars-deltalake`` reads through delta-kernel-rs, which supports what delta-rs 1.6 refuses or
misreads: deletion vectors, column mapping, type widening, V2 checkpoints with sidecars, row
tracking, clustering and in-commit timestamps. A test that rewrites or checkpoints such a table
proves with it that the rows after equal the rows before, beside the oracle it already had.
"""

from __future__ import annotations

import multiprocessing

import pyarrow as pa


def kernel_rows(uri: str, *, version: int | None = None, storage_options: dict[str, str] | None = None) -> pa.Table:
    """The table's rows at ``version`` (default: the latest) as delta-kernel-rs reads them
    (deletion vectors applied, logical column names, current types), sorted by every column so
    that two reads compare with ``==``. Maps come as lists of key/value structs, strings as
    ``large_string``: compare these tables with each other."""
    import polars_deltalake

    frame = polars_deltalake.read_delta(uri, version=version, storage_options=storage_options)
    return frame.sort(frame.columns, nulls_last=True).to_arrow()


def kernel_rows_elsewhere(uri: str, *, version: int | None = None,
                          storage_options: dict[str, str] | None = None) -> pa.Table:
    """``kernel_rows`` read in a spawned process. polars-deltalake keeps the GIL while it reads, so
    it cannot reach a server that runs on threads of this process (the moto S3 server of
    ``tests/conftest.py``: its requests wait out object_store's retry timeout)."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(kernel_rows, (uri,), {"version": version, "storage_options": storage_options})
