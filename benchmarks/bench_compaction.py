"""Compaction of many small files: ours on Spark vs delta-rs ``optimize.compact()``.

One table of about ``--gb`` GB in ``--files`` small files (random numbers and strings, so Parquet
cannot shrink it much, in ``--partitions`` partitions) is written once through delta_core. Each
of ``--rounds`` rounds copies it twice, so both engines compact identical tables to the same
target size, and times both back to back (alternating which goes first, so neither always
meets a busier machine). Our time is measured with a warm Spark session (its start-up is
reported separately); the headline is the ratio of the medians ours / delta-rs (target: at
most 1x). Every result is checked to hold every row.

    python -m benchmarks.bench_compaction [--gb 0.5] [--files 1000] [--partitions 4] [--rounds 5]
        [--spark-master URL]
"""

from __future__ import annotations

import argparse
import shutil
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from benchmarks.harness import argument_parser, scratch_dir, warm_spark

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
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

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


def add_build_arguments(parser: argparse.ArgumentParser, *, gb: float, files: int, rounds: int) -> None:
    """The command-line arguments of ``build`` (``--gb``, ``--files``, ``--partitions``) and of timed
    Spark rounds over its table (``--rounds``, ``--spark-master``)."""
    parser.add_argument("--gb", type=float, default=gb, help=f"table size in GB (default {gb})")
    parser.add_argument("--files", type=int, default=files, help=f"number of small files (default {files})")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=rounds, help=f"timed rounds (default {rounds})")
    parser.add_argument("--spark-master", default="local[*]")


def _median(xs: Sequence[float]) -> float:
    ys = sorted(xs)
    mid = len(ys) // 2
    return ys[mid] if len(ys) % 2 else (ys[mid - 1] + ys[mid]) / 2


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    add_build_arguments(parser, gb=0.5, files=1000, rounds=5)
    args, _unknown = parser.parse_known_args(argv)

    import deltalake

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.compaction import compact

    with scratch_dir("bench_compaction_") as work:
        t0 = time.perf_counter()
        rows, size = build(f"{work}/source", args.gb, args.files, args.partitions)
        n_files = DeltaTable(f"{work}/source").snapshot().num_files
        print(f"table: {rows:,} rows, {size / 1e9:.2f} GB in {n_files} files, {args.partitions} partitions "
              f"(built in {time.perf_counter() - t0:.0f} s); target {TARGET_SIZE >> 20} MiB")

        spark = warm_spark(args.spark_master, "bench-compaction")

        def run_ours(uri: str) -> tuple[float, int, int]:
            t0 = time.perf_counter()
            metrics = compact(DeltaTable(uri), spark, target_size=TARGET_SIZE)
            return time.perf_counter() - t0, metrics.num_removed_files, metrics.num_added_files

        def run_deltars(uri: str) -> tuple[float, int, int]:
            t0 = time.perf_counter()
            result = deltalake.DeltaTable(uri).optimize.compact(target_size=TARGET_SIZE)
            return time.perf_counter() - t0, result.get("numFilesRemoved", 0), result.get("numFilesAdded", 0)

        engines = {"ours": run_ours, "delta-rs": run_deltars}
        times: dict[str, list[float]] = {name: [] for name in engines}
        files: dict[str, tuple[int, int]] = {}
        print(f"{'round':<7}{'engine':<10}{'files in':>9}{'files out':>10}{'seconds':>9}{'MB/s':>8}")
        for r in range(args.rounds):
            order = list(engines) if r % 2 == 0 else list(reversed(engines))
            for name in order:
                uri = f"{work}/{name}"
                shutil.copytree(f"{work}/source", uri)
                seconds, removed, added = engines[name](uri)
                count = deltalake.DeltaTable(uri).to_pyarrow_dataset().count_rows()
                assert count == rows, (name, count, rows)
                shutil.rmtree(uri)
                times[name].append(seconds)
                files[name] = (removed, added)
                print(f"{r + 1:<7}{name:<10}{removed:>9}{added:>10}{seconds:>9.2f}{size / 1e6 / seconds:>8.0f}",
                      flush=True)
        ours, theirs = _median(times["ours"]), _median(times["delta-rs"])
        print(f"median seconds: ours {ours:.2f}, delta-rs {theirs:.2f}; per-round ratios "
              + ", ".join(f"{a / b:.2f}" for a, b in zip(times["ours"], times["delta-rs"])))
        print(f"ratio ours / delta-rs wall time (medians): {ours / theirs:.2f}x (target <= 1x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
