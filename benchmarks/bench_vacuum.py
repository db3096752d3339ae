"""Vacuum of a table with many files to delete: files deleted per second, ours vs delta-rs.

Two modes, each on its own pair of identical tables (a small live table plus ``--files`` files
spread over ``--dirs`` partition directories, all past the retention):

- ``full``: the files are unreferenced (the log never names them). Ours runs ``vacuum()``,
  delta-rs ``vacuum(full=True)`` (its mode that lists the table).
- ``lite``: the files were added by one commit and removed by the next. Ours runs
  ``vacuum(mode="lite")`` (Delta's VACUUM LITE: the files named by expired removes, no listing),
  delta-rs ``vacuum(full=False)`` (its lite mode: the tombstones of its snapshot). Both with
  retention 0 and the retention check off.

Both engines must delete exactly those files and keep every live file.

    python -m benchmarks.bench_vacuum [--files 100000] [--dirs 100] [--threads 16] [--rounds 1]
                                      [--mode full --mode lite]

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
import time
from collections.abc import Iterable, Sequence
from typing import Any

from benchmarks.harness import argument_parser, scratch_dir


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
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--dirs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mode", action="append", choices=("full", "lite"), help="repeatable; default both")
    args, _unknown = parser.parse_known_args(argv)

    for mode in args.mode or ["full", "lite"]:
        print(f"{mode} vacuum")
        ours_times, deltars_times = [], []
        for round_ in range(max(1, args.rounds)):
            ours_s, deltars_s = _round_times(args, mode, first_ours=round_ % 2 == 0)
            ours_times.append(ours_s)
            deltars_times.append(deltars_s)
            print(f"  round {round_ + 1}: ours {ours_s:.2f} s, delta-rs {deltars_s:.2f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        ours_s, deltars_s = statistics.median(ours_times), statistics.median(deltars_times)
        print(f"{'engine':<10}{'deleted':>9}{'seconds':>9}{'files/s':>10}   ({mode}, medians of {len(ours_times)})")
        print(f"{'ours':<10}{args.files:>9}{ours_s:>9.2f}{args.files / ours_s:>10.0f}")
        print(f"{'delta-rs':<10}{args.files:>9}{deltars_s:>9.2f}{args.files / deltars_s:>10.0f}")
        print(f"ratio ours / delta-rs throughput ({mode}): {deltars_s / ours_s:.2f}x\n", flush=True)
    return 0


def log_then_remove(table: Any, files: Iterable[tuple[str, str]], *, column: str, size: int, mtime_ms: int) -> None:
    """Name ``files`` (path, value of the partition ``column``) in one commit's adds, then
    remove them all in the next (through our transactions, as any writer would)."""
    from delta_core.model.actions import Add
    from delta_core.model.delta_operations import WRITE
    from delta_core.write.operation_records import WriteParameters
    from delta_core.write.table_writes import delete_files
    from delta_core.write.transaction import Transaction

    adds = [Add(path=path, partition_values={column: value}, size=size, modification_time=mtime_ms, data_change=True)
            for path, value in files]
    txn = Transaction(table, operation=WRITE, operation_parameters=WriteParameters(mode="Append"))
    txn.add_actions(adds)
    txn.commit()
    delete_files(table, [a.path for a in adds])


def _local_orphans(root: str) -> list[tuple[str, str]]:
    return [(f"{entry}/{name}", entry.partition("=")[2])
            for entry in sorted(os.listdir(root)) if entry.startswith("part=")
            for name in sorted(os.listdir(os.path.join(root, entry))) if name.startswith("orphan-")]


def _round_times(args: argparse.Namespace, mode: str, *, first_ours: bool) -> tuple[float, float]:
    import deltalake
    import pyarrow as pa

    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark.vacuum import vacuum
    from delta_core.write.table_writes import append, create_table

    with scratch_dir("bench_vacuum_") as work:
        ours = f"{work}/ours"
        data = pa.table({"x": pa.array(range(1000), pa.int64()), "part": pa.array([i % 4 for i in range(1000)],
                                                                                  pa.int32())})
        create_table(ours, data.schema, partition_columns=["part"])
        append(DeltaTable(ours), data)
        t0 = time.perf_counter()
        add_orphans(ours, args.files, args.dirs, time.time() - 30 * 86400)
        if mode == "lite":
            log_then_remove(DeltaTable(ours), _local_orphans(ours), column="part", size=4,
                            mtime_ms=int((time.time() - 30 * 86400) * 1000))
        shutil.copytree(ours, f"{work}/deltars")
        what = "added then removed" if mode == "lite" else "unreferenced"
        print(f"{args.files:,} {what} files in {args.dirs} directories + 4 live files "
              f"(setup {time.perf_counter() - t0:.0f} s)")
        # Files past the retention have long been written back to disk in any real table: flush
        # them first, so neither engine unlinks files that only the page cache holds.
        os.sync()

        def run_ours() -> float:
            t0 = time.perf_counter()
            if mode == "lite":
                metrics = vacuum(DeltaTable(ours), retention_hours=0, force=True, mode="lite", threads=args.threads)
            else:
                metrics = vacuum(DeltaTable(ours), threads=args.threads)
            assert metrics.num_deleted_files == args.files, metrics
            return time.perf_counter() - t0

        def run_deltars() -> float:
            t0 = time.perf_counter()
            dt = deltalake.DeltaTable(f"{work}/deltars")
            if mode == "lite":
                deleted = dt.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=False)
            else:
                deleted = dt.vacuum(retention_hours=168, dry_run=False, full=True)
            assert len(deleted) == args.files, len(deleted)
            return time.perf_counter() - t0

        if first_ours:
            ours_s, deltars_s = run_ours(), run_deltars()
        else:
            deltars_s, ours_s = run_deltars(), run_ours()
        for root in (ours, f"{work}/deltars"):
            assert deltalake.DeltaTable(root).to_pyarrow_table().num_rows == 1000
            assert not any(name.startswith("orphan-") for _, _, names in os.walk(root) for name in names)
        return ours_s, deltars_s


if __name__ == "__main__":
    raise SystemExit(main())
