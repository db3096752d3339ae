"""``delta-core health`` against ``delta-core describe`` on tables with many files, cold and warm.

Each ``--files`` size gets a log generated as in ``bench_checkpoint`` (adds with partition values
and JSON stats, in ``--commits`` commits), checkpointed and followed by ``--tail`` small
commits, the steady state of a table under maintenance. All files are small, so health also
plans a compaction over every file. Every command runs as a user runs it (a fresh
``python -m delta_core`` process under ``/usr/bin/time``, ``--json`` to a file), from the
scratch directory (no ``./tables.yaml`` policy to look up), the commands alternating,
``--repeat`` rounds; each figure is the median run:

- ``describe --files``: the reference (the file list, as describe's JSON was when the bar was
  set), and ``describe`` without it;
- ``health``: no health cache (every figure from the log);
- ``health, cold``: ``--cache-dir`` of an empty directory (a miss: the log replayed, the
  version's figures stored);
- ``health, warm``: the same directory again (a hit: one listing of the log, no replay);
- ``health, next version``: the same directory after a new commit of 100 files (what a sensor
  tick after a write meets: the version misses, the checkpoint's stats coverage is reused).

It prints health / describe ratios of wall time and peak RSS per size (the target: at most 1.2x
both); the sizes run one after the other in the same run, ``--files 1000000 --files 10000000``.

The checkpoint is our writer's default: JSON ``stats`` and ``add.stats_parsed`` beside them (as
Delta Spark writes by default). ``--json-only`` measures a second flavour of each size too,
after the first: the same log (hard links, but commit 0 sets ``delta.checkpoint.writeStatsAsStruct``
to false) checkpointed with JSON ``stats`` only, as delta-rs writes by default, where a cold
health must parse every file's JSON; the summary gives both flavours' ratios.

    python -m benchmarks.bench_health [--files 1000000]... [--commits 4] [--tail 10] [--repeat 3]
                                      [--json-only]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence

from benchmarks.bench_checkpoint import generate_log, link_copy, write_commit
from benchmarks.bench_describe import Run, _timed
from benchmarks.harness import argument_parser, scratch_dir

REFERENCE = "describe --files"
STATS_AS_STRUCT = "delta.checkpoint.writeStatsAsStruct"
FLAVOURS = ("json+struct", "json")  # the checkpoint's stats: our writer's default (Delta Spark's), delta-rs's
NEXT = "health, next version"  # run after a new commit
TARGET = 1.2


def _commands(table: str, cache_root: str, repeat: int) -> dict[str, list[list[str]]]:
    """Each command's argv per round (a cold round gets a cache directory of its own)."""
    py = [sys.executable, "-m", "delta_core"]
    warm = os.path.join(cache_root, "warm")
    return {
        REFERENCE: [[*py, "describe", table, "--json", "--files"]] * repeat,
        "describe": [[*py, "describe", table, "--json"]] * repeat,
        "health": [[*py, "health", table, "--json"]] * repeat,
        "health, cold": [[*py, "health", table, "--json", "--cache-dir", os.path.join(cache_root, f"cold{i}")]
                         for i in range(repeat)],
        "health, warm": [[*py, "health", table, "--json", "--cache-dir", warm]] * repeat,
        NEXT: [[*py, "health", table, "--json", "--cache-dir", warm]] * repeat,
    }


def _with_json_stats_only(table: str, copy: str) -> None:
    """``table``'s log (no checkpoint yet) hard-linked into ``copy``, whose commit 0 sets
    ``delta.checkpoint.writeStatsAsStruct`` to false."""
    link_copy(table, copy)
    first = os.path.join(copy, "_delta_log", f"{0:020d}.json")
    with open(first) as fh:
        actions = [json.loads(line) for line in fh]
    os.unlink(first)  # a link: the original stays as it is
    for action in actions:
        if "metaData" in action:
            action["metaData"]["configuration"][STATS_AS_STRUCT] = "false"
    with open(first, "w") as fh:
        fh.write("".join(json.dumps(a) + "\n" for a in actions))


def _build(tables: list[str], files: int, commits: int, tail: int) -> None:
    """The first of ``tables`` generated, the others (``FLAVOURS``) copied from it; each then
    checkpointed and followed by ``tail`` commits."""
    from delta_core.log.table import DeltaTable
    from delta_core.write.checkpoint_write import write_checkpoint

    generate_log(tables[0], files, commits)
    for copy in tables[1:]:
        _with_json_stats_only(tables[0], copy)
    for table in tables:
        write_checkpoint(DeltaTable(table))
        for k in range(tail):
            write_commit(table, commits + 1 + k, files + k * 100, 100)


def _measure(table: str, work: str, repeat: int, *, version: int, first_file: int) -> dict[str, Run]:
    """Median run of each command (``health, warm``'s cache filled first, outside the timing);
    ``NEXT`` runs after a commit ``version + 1 ...`` adding files ``first_file ...``."""
    cache_root = tempfile.mkdtemp(prefix="health_cache_", dir=work)
    commands = _commands(table, cache_root, repeat)
    _timed(commands["health, warm"][0])
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for i in range(repeat):
        for name, argvs in commands.items():
            if name == NEXT:
                write_commit(table, version + 1 + i, first_file + i * 100, 100)
            runs[name].append(_timed(argvs[i]))
    shutil.rmtree(cache_root, ignore_errors=True)
    print(f"{'command':<20}{'median s':>10}{'peak RSS MB':>13}{'CPU s':>8}   every run (s)")
    for name, rs in runs.items():
        print(f"{name:<20}{statistics.median(r.seconds for r in rs):>10.2f}{statistics.median(r.mb for r in rs):>13.0f}"
              f"{statistics.median(r.cpu for r in rs):>8.2f}   {[r.seconds for r in rs]}", flush=True)
    return {name: Run(statistics.median(r.seconds for r in rs), statistics.median(r.mb for r in rs),
                      statistics.median(r.cpu for r in rs), "") for name, rs in runs.items()}


def _summary(rows: list[tuple[int, str, dict[str, Run]]]) -> None:
    print(f"\nsummary: health / {REFERENCE} (and / describe without the file list), medians; target {TARGET}x")
    print(f"{'files':>12}  {'checkpoint':<12}{'health':<22}{'time':>8}{'RSS':>8}{'CPU':>8}   {'time':>8}{'RSS':>8}"
          "  (/ describe)")
    for files, flavour, med in rows:
        ref, plain = med[REFERENCE], med["describe"]
        for name in ("health", "health, cold", "health, warm", NEXT):
            m = med[name]
            print(f"{files:>12,}  {flavour:<12}{name:<22}{m.seconds / ref.seconds:>7.2f}x{m.mb / ref.mb:>7.2f}x"
                  f"{m.cpu / ref.cpu:>7.2f}x   {m.seconds / plain.seconds:>7.2f}x{m.mb / plain.mb:>7.2f}x")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, action="append", help="live files before the tail (repeatable; "
                                                                   "default 1000000)")
    parser.add_argument("--commits", type=int, default=4)
    parser.add_argument("--tail", type=int, default=10, help="small commits after the checkpoint")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    parser.add_argument("--json-only", action="store_true",
                        help="also measure each size with JSON stats only in the checkpoint (delta-rs's default)")
    args, _unknown = parser.parse_known_args(argv)
    os.environ.pop("DELTA_HEALTH_CACHE", None)
    # The commands run from the scratch directory: they must import this checkout's delta_core.
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p)
    os.environ.pop("DELTA_MAINTENANCE_TABLES", None)
    flavours = FLAVOURS if args.json_only else FLAVOURS[:1]
    rows: list[tuple[int, str, dict[str, Run]]] = []
    with scratch_dir("bench_health_", keep=args.keep) as work:
        os.chdir(work)  # the commands look for ./tables.yaml: there is none here
        for files in args.files or [1_000_000]:
            tables = [os.path.join(work, f"t{files}_{flavour}") for flavour in flavours]
            t0 = time.perf_counter()
            _build(tables, files, args.commits, args.tail)
            total = files + 100 * args.tail
            for flavour, table in zip(flavours, tables, strict=True):
                print(f"\n{total:,} files, {flavour} checkpoint: at version {args.commits} + {args.tail} commits "
                      f"(built in {time.perf_counter() - t0:.1f} s); load average "
                      f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
                rows.append((total, flavour, _measure(table, work, args.repeat, version=args.commits + args.tail,
                                                      first_file=total)))
                if not args.keep:
                    shutil.rmtree(table, ignore_errors=True)
        _summary(rows)
        print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
