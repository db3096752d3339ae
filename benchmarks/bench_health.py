"""``delta-core health`` against ``delta-core describe`` on a table with many files.

The log is generated as in ``bench_checkpoint`` (``--files`` adds with partition values and JSON
stats, in ``--commits`` commits), then checkpointed and followed by ``--tail`` small commits,
the steady state of a table under maintenance. Both commands run as a user runs them (a fresh
``python -m delta_core`` process each, ``--json`` to /dev/null; describe with ``--files``, as
its JSON was when the bar was set), alternately ``--repeat`` times;
the median wall times and their ratio are printed. The issue's bar: health costs at most 1.5x
a describe. All files are small there, so health also plans a compaction over every file.

    python -m benchmarks.bench_health [--files 1000000] [--commits 4] [--tail 10] [--repeat 3]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

from benchmarks.bench_checkpoint import generate_log, write_commit
from benchmarks.harness import argument_parser, scratch_dir


def _run(command: str, table: str) -> float:
    # describe with its file list, as when the bar was set (describe --json printed it then)
    extra = ["--files"] if command == "describe" else []
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "delta_core", command, table, "--json", *extra], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--commits", type=int, default=4)
    parser.add_argument("--tail", type=int, default=10, help="small commits after the checkpoint")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated table")
    args, _unknown = parser.parse_known_args(argv)

    from delta_core.log.table import DeltaTable
    from delta_core.write.checkpoint_write import write_checkpoint

    with scratch_dir("bench_health_", keep=args.keep) as work:
        table = os.path.join(work, "t")
        t0 = time.perf_counter()
        generate_log(table, args.files, args.commits)
        write_checkpoint(DeltaTable(table))
        for k in range(args.tail):
            write_commit(table, args.commits + 1 + k, args.files + k * 100, 100)
        total = args.files + 100 * args.tail
        print(f"{total:,} files: checkpoint at version {args.commits} + {args.tail} commits "
              f"(built in {time.perf_counter() - t0:.1f} s)", flush=True)
        times: dict[str, list[float]] = {"describe": [], "health": []}
        for _ in range(args.repeat):
            for command in times:
                times[command].append(_run(command, table))
        describe, health = (statistics.median(times[c]) for c in ("describe", "health"))
        print(f"{'command':<10}{'median s':>10}  every run (s)")
        for command, runs in times.items():
            print(f"{command:<10}{statistics.median(runs):>10.2f}  {[round(r, 2) for r in runs]}")
        print(f"health / describe: {health / describe:.2f}x (bar: 1.5x; wall time of the whole command, "
              "imports included)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
