"""Vacuum of a table with many unreferenced files: files deleted per second, ours vs delta-rs.

A small live table gets ``--files`` unreferenced files (100k by default) spread over
``--dirs`` partition directories, all older than the retention; an identical copy goes to
delta-rs ``vacuum(full=True)`` (its mode that also deletes files the log never mentioned).
Both must delete exactly the orphans and keep every live file.

    python -m benchmarks.bench_vacuum [--files 100000] [--dirs 100] [--threads 16] [--rounds 1]

With ``--rounds N`` each round builds fresh copies and the engines take turns to go first; the
medians are reported, with the load average (the machine may be shared). The copies are flushed
to disk (``sync``) before either engine runs: unlinking files that only the page cache holds is
a different, cheaper operation than the one a real vacuum of week-old files performs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence


def add_orphans(root: str, files: int, dirs: int, mtime: float) -> None:
    per_dir = max(1, files // dirs)
    made = 0
    d = 0
    while made < files:
        directory = os.path.join(root, f"part={d % dirs}")
        os.makedirs(directory, exist_ok=True)
        for i in range(min(per_dir, files - made)):
            path = os.path.join(directory, f"orphan-{d}-{i}.parquet")
            with open(path, "wb") as fh:
                fh.write(b"PAR1")
            os.utime(path, (mtime, mtime))
        made += min(per_dir, files - made)
        d += 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    args, _unknown = parser.parse_known_args(argv)

    ours_times, deltars_times = [], []
    for round_ in range(max(1, args.rounds)):
        ours_s, deltars_s = _round_times(args, first_ours=round_ % 2 == 0)
        ours_times.append(ours_s)
        deltars_times.append(deltars_s)
        print(f"  round {round_ + 1}: ours {ours_s:.2f} s, delta-rs {deltars_s:.2f} s, "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    ours_s, deltars_s = statistics.median(ours_times), statistics.median(deltars_times)
    print(f"{'engine':<10}{'deleted':>9}{'seconds':>9}{'files/s':>10}   (medians of {len(ours_times)})")
    print(f"{'ours':<10}{args.files:>9}{ours_s:>9.2f}{args.files / ours_s:>10.0f}")
    print(f"{'delta-rs':<10}{args.files:>9}{deltars_s:>9.2f}{args.files / deltars_s:>10.0f}")
    print(f"ratio ours / delta-rs throughput: {deltars_s / ours_s:.2f}x")
    return 0


def _round_times(args: argparse.Namespace, *, first_ours: bool) -> tuple[float, float]:
    import deltalake
    import pyarrow as pa

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum
    from delta_core.write.table_writes import append, create_table

    work = tempfile.mkdtemp(prefix="bench_vacuum_")
    try:
        ours = f"{work}/ours"
        data = pa.table({"x": pa.array(range(1000), pa.int64()), "part": pa.array([i % 4 for i in range(1000)],
                                                                                  pa.int32())})
        create_table(ours, data.schema, partition_columns=["part"])
        append(DeltaTable(ours), data)
        t0 = time.perf_counter()
        add_orphans(ours, args.files, args.dirs, time.time() - 30 * 86400)
        shutil.copytree(ours, f"{work}/deltars")
        print(f"{args.files:,} unreferenced files in {args.dirs} directories + 4 live files "
              f"(setup {time.perf_counter() - t0:.0f} s)")

        # Orphans older than the retention have long been written back to disk in any real
        # table: flush them first, so neither engine unlinks files that only the page cache holds.
        os.sync()

        def run_ours() -> float:
            t0 = time.perf_counter()
            metrics = vacuum(DeltaTable(ours), threads=args.threads)
            assert metrics.num_deleted_files == args.files, metrics
            return time.perf_counter() - t0

        def run_deltars() -> float:
            t0 = time.perf_counter()
            deleted = deltalake.DeltaTable(f"{work}/deltars").vacuum(retention_hours=168, dry_run=False, full=True)
            assert len(deleted) == args.files, len(deleted)
            return time.perf_counter() - t0

        if first_ours:
            ours_s, deltars_s = run_ours(), run_deltars()
        else:
            deltars_s, ours_s = run_deltars(), run_ours()
        assert deltalake.DeltaTable(ours).to_pyarrow_table().num_rows == 1000
        return ours_s, deltars_s
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
