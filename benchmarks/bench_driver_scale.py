"""What the Spark driver holds for a table of many files: the snapshot and each operation's plan.

A log of ``--files`` add actions (partitioned by day, JSON stats; generated as in
``bench_checkpoint``, no data files) is read in a fresh spawned process per size, which times
and measures (peak RSS) each driver-side step in turn: the snapshot (log replay), a checkpoint
write, the snapshot again from that checkpoint, the compaction plan (every file is small, so
every file is in a bin), the Z-order plan, and vacuum's set of referenced keys. docs/scaling.md
extrapolates these figures to 10M files.

    python -m benchmarks.bench_driver_scale [--files 1000000 3000000] [--commits 4]
"""

from __future__ import annotations

import argparse
import multiprocessing
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from benchmarks.bench_checkpoint import _peak_rss_mb, generate_log


def measure(path: str) -> list[tuple[str, float, float]]:
    """(step, seconds, peak RSS MB after it) for each driver-side step on the table at ``path``."""
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.compaction_plan import plan_compaction
    from delta_core.maintenance.spark.vacuum import referenced_keys
    from delta_core.maintenance.zorder_plan import plan_zorder
    from delta_core.write.checkpoint_write import write_checkpoint

    out: list[tuple[str, float, float]] = []

    def step(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        value = fn()
        out.append((name, time.perf_counter() - t0, _peak_rss_mb()))
        return value

    table = DeltaTable(path)
    snapshot = step("snapshot from JSON commits", table.snapshot)
    step("write checkpoint", lambda: write_checkpoint(table, snapshot=snapshot))
    snapshot = step("snapshot from the checkpoint", lambda: DeltaTable(path).snapshot())
    plan = step("compaction plan", lambda: plan_compaction(snapshot, target_size=128 * 1024 * 1024))
    assert plan.num_input_files == snapshot.num_files, (plan.num_input_files, snapshot.num_files)
    step("Z-order plan", lambda: plan_zorder(snapshot, ["id"], target_size=128 * 1024 * 1024))
    step("vacuum referenced keys", lambda: referenced_keys(snapshot, 0, table.uri, []))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, nargs="+", default=[1_000_000, 3_000_000])
    parser.add_argument("--commits", type=int, default=4)
    args, _unknown = parser.parse_known_args(argv)
    ctx = multiprocessing.get_context("spawn")
    for files in args.files:
        work = tempfile.mkdtemp(prefix="bench_driver_scale_")
        try:
            t0 = time.perf_counter()
            generate_log(f"{work}/t", files, args.commits)
            print(f"{files:,} add actions in {args.commits} commits (generated in {time.perf_counter() - t0:.0f} s)",
                  flush=True)
            with ctx.Pool(1) as pool:
                steps = pool.apply(measure, (f"{work}/t",))
            for name, seconds, rss in steps:
                print(f"  {name:<30}{seconds:>8.1f} s   peak RSS {rss:>7.0f} MB", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
