"""Z-order data skipping on the Delta Lake paper's setup, against delta-rs's ``z_order``.

Four columns of uniformly random values — two 32-bit IPv4 addresses and two 16-bit ports —
written in random order into ``--files`` files (100 by default). Each table is clustered on all
four columns into about the same number of files: our Z-order, our Hilbert curve, and delta-rs
``optimize.z_order`` on an identical copy. For each column, ``--probes`` point queries
``col = v`` (v drawn from the data) count the files whose min/max stats exclude v
(``delta_core.maintenance.skipping``); the share of files skipped per column and on average is
printed (the paper reports 43%+ per column and 54% on average for Z-order). Stats of every
table are read with delta_core, so the measure is the same for all.

Each of ``--rounds`` rounds clusters fresh copies with all three (alternating the order, so
none always meets a busier machine) and the times reported are medians, with every round's
time and the load average printed too. The first round also pays Spark's one-off cost of a
session's first shuffle and code generation (its session start is reported separately).

    python -m benchmarks.bench_zorder [--rows N] [--files N] [--probes N] [--rounds N] [--spark-master URL]
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from benchmarks.harness import argument_parser, scratch_dir, warm_spark

COLUMNS = ("src_ip", "dst_ip", "src_port", "dst_port")


def make_data(rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({
        "src_ip": pa.array(rng.integers(0, 2**32, rows, dtype=np.int64)),
        "dst_ip": pa.array(rng.integers(0, 2**32, rows, dtype=np.int64)),
        "src_port": pa.array(rng.integers(0, 2**16, rows, dtype=np.int64).astype(np.int32)),
        "dst_port": pa.array(rng.integers(0, 2**16, rows, dtype=np.int64).astype(np.int32)),
    })


def write_in_files(uri: str, data: pa.Table, files: int) -> tuple[int, int]:
    """Write ``data`` (random order) as a new table of about ``files`` files through our write path;
    returns the table's size in bytes and a rewrite target size giving about ``files`` files again."""
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    create_table(uri, data.schema, properties={"delta.targetFileSize": str(max(1, data.nbytes // files + 1))})
    append(DeltaTable(uri), data)
    size = DeltaTable(uri).snapshot().size_in_bytes
    return size, size // files + 1


def skipping(uri: str, data: pa.Table, probes: int, seed: int = 11) -> tuple[int, dict[str, float]]:
    """(number of files, share of files skipped per column for point queries on data values)."""
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.skipping import skipped_shares

    snapshot = DeltaTable(uri).snapshot()
    rng = np.random.default_rng(seed)
    values = {col: data.column(col).take(pa.array(rng.integers(0, data.num_rows, probes))) for col in COLUMNS}
    shares = skipped_shares(snapshot, values)
    return snapshot.num_files, {col: sum(s) / len(s) for col, s in shares.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per layout (default 3)")
    parser.add_argument("--spark-master", default="local[*]")
    args, _unknown = parser.parse_known_args(argv)

    import deltalake

    from benchmarks.bench_compaction import _median
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.zorder import zorder

    with scratch_dir("bench_zorder_") as work:
        data = make_data(args.rows)
        base = f"{work}/base"
        size, target = write_in_files(base, data, args.files)

        spark = warm_spark(args.spark_master, "bench-zorder")

        def run(name: str) -> None:
            uri = f"{work}/{name}"
            if name == "deltars":
                deltalake.DeltaTable(uri).optimize.z_order(list(COLUMNS), target_size=target)
            else:
                zorder(DeltaTable(uri), spark, list(COLUMNS), curve=name, target_size=target)

        rounds: dict[str, list[float]] = {name: [] for name in ("zorder", "hilbert", "deltars")}
        for r in range(args.rounds):
            for name in (list(rounds) if r % 2 == 0 else list(reversed(rounds))):
                shutil.rmtree(f"{work}/{name}", ignore_errors=True)
                shutil.copytree(base, f"{work}/{name}")
                t0 = time.perf_counter()
                run(name)
                rounds[name].append(time.perf_counter() - t0)
            print(f"round {r + 1}: " + ", ".join(f"{n} {ts[-1]:.2f} s" for n, ts in rounds.items())
                  + f"; load average {os.getloadavg()[0]:.1f}", flush=True)
        times = {name: _median(ts) for name, ts in rounds.items()}

        print(f"rows={args.rows:,} files={args.files} table={size / 1e6:.1f} MB probes/column={args.probes}")
        print(f"{'layout':<22}{'files':>6}" + "".join(f"{c:>10}" for c in COLUMNS) + f"{'average':>10}{'time s':>9}")
        results = {}
        for name, label in (("base", "unclustered"), ("zorder", "ours z-order"), ("hilbert", "ours hilbert"),
                            ("deltars", "delta-rs z_order")):
            n, skip = skipping(f"{work}/{name}", data, args.probes)
            avg = sum(skip.values()) / len(skip)
            results[name] = avg
            t = f"{times[name]:9.2f}" if name in times else f"{'':>9}"
            print(f"{label:<22}{n:>6}" + "".join(f"{skip[c]:>10.1%}" for c in COLUMNS) + f"{avg:>10.1%}" + t)
        print(f"ratio ours z-order / delta-rs: skipping {results['zorder'] / max(results['deltars'], 1e-9):.2f}x, "
              f"time {times['zorder'] / times['deltars']:.2f}x (medians of {args.rounds} rounds; target <= 1x)")
        print(f"ratio ours hilbert / ours z-order: skipping {results['hilbert'] / max(results['zorder'], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
