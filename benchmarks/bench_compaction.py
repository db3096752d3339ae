"""Compaction of many small files: ours on Spark vs delta-rs ``optimize.compact()``.

One table of about ``--gb`` GB in ``--files`` small files (random numbers and strings, so Parquet
cannot shrink it much, in ``--partitions`` partitions) is written once through delta_core and
copied, so both engines compact identical tables to the same target size. Our time is measured
with a warm Spark session (its start-up is reported separately); the ratio ours / delta-rs is
the headline (target: at most 1x). Both results are checked to hold every row.

    python -m benchmarks.bench_compaction [--gb 1] [--files 2000] [--partitions 4] [--spark-master URL]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from typing import Sequence

import numpy as np
import pyarrow as pa

TARGET_SIZE = 128 * 1024 * 1024


def make_rows(rows: int, partitions: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
    text = letters[rng.integers(0, len(letters), rows * 16)].tobytes()
    return pa.table({
        "id": pa.array(rng.integers(0, 2**62, rows, dtype=np.int64)),
        "a": pa.array(rng.random(rows)),
        "b": pa.array(rng.integers(0, 2**31, rows, dtype=np.int64).astype(np.int32)),
        "s": pa.array([text[i * 16:(i + 1) * 16].decode() for i in range(rows)], pa.string()),
        "part": pa.array((np.arange(rows) % partitions).astype(np.int32)),
    })


def build(uri: str, gb: float, files: int, partitions: int) -> tuple[int, int]:
    """Write the table in ``files`` small files; returns (rows, bytes)."""
    from delta_core.table import DeltaTable
    from delta_core.write import append, create_table

    bytes_per_row = 44  # on disk, roughly: random values barely compress
    total_rows = int(gb * 1e9 / bytes_per_row)
    rows_per_file = max(1, total_rows // files)
    sample = make_rows(1000, partitions, 0)
    # The writer splits by in-memory size: aim each split at one file's worth of rows.
    mem_per_row = sample.drop_columns(["part"]).nbytes / sample.num_rows
    create_table(uri, sample.schema, partition_columns=["part"],
                 properties={"delta.targetFileSize": str(int(rows_per_file * mem_per_row))})
    table = DeltaTable(uri)
    per_commit = rows_per_file * partitions * 25
    written = 0
    seed = 1
    while written < total_rows:
        n = min(per_commit, total_rows - written)
        append(table, make_rows(n, partitions, seed))
        written += n
        seed += 1
    snap = DeltaTable(uri).snapshot()
    return written, snap.size_in_bytes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=0.5, help="table size in GB (default 0.5)")
    parser.add_argument("--files", type=int, default=1000, help="number of small files (default 1000)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--spark-master", default="local[*]")
    args, _unknown = parser.parse_known_args(argv)

    import deltalake

    from delta_core.maintenance.compaction import compact
    from delta_core.maintenance.spark_exec import warm_up
    from delta_core.maintenance.spark_session import build_spark_session
    from delta_core.table import DeltaTable

    work = tempfile.mkdtemp(prefix="bench_compaction_")
    try:
        t0 = time.perf_counter()
        rows, size = build(f"{work}/ours", args.gb, args.files, args.partitions)
        n_files = DeltaTable(f"{work}/ours").snapshot().num_files
        shutil.copytree(f"{work}/ours", f"{work}/deltars")
        print(f"table: {rows:,} rows, {size / 1e9:.2f} GB in {n_files} files, {args.partitions} partitions "
              f"(built in {time.perf_counter() - t0:.0f} s); target {TARGET_SIZE >> 20} MiB")

        t0 = time.perf_counter()
        spark = build_spark_session(master=args.spark_master, app_name="bench-compaction")
        warm_up(spark)
        session_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        metrics = compact(DeltaTable(f"{work}/ours"), spark, target_size=TARGET_SIZE)
        ours_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        result = deltalake.DeltaTable(f"{work}/deltars").optimize.compact(target_size=TARGET_SIZE)
        deltars_s = time.perf_counter() - t0

        ours_rows = deltalake.DeltaTable(f"{work}/ours").to_pyarrow_dataset().count_rows()
        theirs_rows = deltalake.DeltaTable(f"{work}/deltars").to_pyarrow_dataset().count_rows()
        assert ours_rows == theirs_rows == rows, (ours_rows, theirs_rows, rows)
        print(f"spark session start (not in the timing): {session_s:.1f} s, master {args.spark_master}")
        print(f"{'engine':<12}{'files in':>9}{'files out':>10}{'seconds':>9}{'MB/s':>8}")
        print(f"{'ours':<12}{metrics.num_removed_files:>9}{metrics.num_added_files:>10}{ours_s:>9.1f}"
              f"{size / 1e6 / ours_s:>8.0f}")
        print(f"{'delta-rs':<12}{result.get('numFilesRemoved', 0):>9}{result.get('numFilesAdded', 0):>10}"
              f"{deltars_s:>9.1f}{size / 1e6 / deltars_s:>8.0f}")
        print(f"ratio ours / delta-rs wall time: {ours_s / deltars_s:.2f}x (target <= 1x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
