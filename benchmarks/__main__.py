"""Run every benchmark, each in its own process (so peak memory is its own), in one command.

    python -m benchmarks                 # default sizes (minutes)
    python -m benchmarks --only bench_zorder
    python -m benchmarks -- --files 1000000   # these args instead of each run's own

Each benchmark prints its own table with ratios against delta-rs measured in the same run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

BENCHMARKS = ("bench_commit", "bench_checkpoint", "bench_compaction", "bench_zorder", "bench_vacuum",
              "bench_deletion_vectors", "bench_cluster", "bench_health",
              "bench_describe", "bench_vacuum_s3", "bench_vacuum_inventory", "bench_vacuum_s3_inventory",
              "bench_soak", "bench_fleet", "bench_day")
# The runs of the one-command default (issue 19's figures): name and its own arguments.
PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bench_commit", ()),
    ("bench_checkpoint", ()),  # 1M: from JSON commits, and from a checkpoint plus 100 commits
    ("bench_checkpoint", ("--size", "3M", "--skip-json")),
    ("bench_compaction", ()),
    ("bench_zorder", ()),
    ("bench_vacuum", ()),
    ("bench_deletion_vectors", ()),
    ("bench_cluster", ()),
    ("bench_health", ()),
    ("bench_describe", ("--files", "100000", "--files", "1000000", "--files", "3000000")),
    ("bench_vacuum_s3", ()),
    ("bench_vacuum_inventory", ()),  # 1M objects: a dry run from an inventory against one from a listing
    ("bench_vacuum_s3_inventory", ()),  # 200K objects: by listing against from an S3 Inventory report
    ("bench_soak", ()),  # 3 minutes; the closing figures need --minutes 10 or more
    ("bench_fleet", ()),  # the code location over 100, 500 and 2,000 discovered tables
    ("bench_day", ()),  # a simulated day of writes and automated maintenance: 96 ticks, minutes
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", action="append", choices=BENCHMARKS, help="run just these")
    parser.add_argument("extra", nargs="*", help="arguments passed to each benchmark (after --)")
    args = parser.parse_args(argv)
    failed = []
    # Extra arguments replace each run's own (e.g. --files N for every benchmark).
    runs = [(name, tuple(args.extra) or own) for name, own in PLAN if not args.only or name in args.only]
    for name, run_args in runs:
        print(f"\n=== {name} {' '.join(run_args)} ===", flush=True)
        started = time.perf_counter()
        rc = subprocess.call([sys.executable, "-m", f"benchmarks.{name}", *run_args])
        print(f"--- {name}: exit {rc} in {time.perf_counter() - started:.1f} s", flush=True)
        if rc:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
