"""Snapshot load and ``describe`` of a large table, and the CLI's start-up: ours vs delta-rs.

The table is what a reader meets in steady state: a checkpoint (written by delta-rs, the
reference) plus ``--tail`` commits after it (100 files each), ``--files`` live files in all,
its log generated like ``bench_checkpoint``'s (partition values and JSON stats on every add).
Every measurement is a fresh process run under ``/usr/bin/time``: its wall time (interpreter
start and imports included, which is what a user waits for), its peak RSS, and its CPU time
(user + system, all threads; steadier than wall time on a shared machine, where a process
waits for a core).

- load: ``DeltaTable(path).snapshot()`` vs ``deltalake.DeltaTable(path)`` (which loads the
  file list too); the time after imports is shown as well;
- describe: ``delta-core describe --json --files`` vs a delta-rs script printing the same record
  (version, protocol, metadata, sorted file paths, record count from ``get_add_actions``), and
  ``describe --json`` without the file list (what ``describe`` prints by default);
- ``delta-core --help`` and ``describe`` of a 10-file table (targets 0.3 s and 0.5 s).

Engines alternate, ``--repeat`` rounds; each figure is the median run (all runs are listed).
Several sizes in one run: ``--files 100000 --files 1000000``. ``--table PATH`` measures an
existing table as it is (neither generated nor removed), e.g. a hard-linked copy of the 10M-file
log of ``bench_driver_scale`` after ``delta-core checkpoint``: generating 10M files the way
above takes delta-rs's checkpoint of the JSON commits, which this machine cannot hold. The run
closes with a summary per size: describe's time and peak RSS as ratios of delta-rs's (issue
31's target: at most 0.5x both), with the file list and without.

    python -m benchmarks.bench_describe [--files 100000]... [--table PATH]... [--tail 100] [--repeat 3]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import NamedTuple

from benchmarks.bench_checkpoint import _in_process, generate_log, run_deltars, write_commit
from benchmarks.harness import argument_parser, scratch_dir

FILES_PER_TAIL_COMMIT = 100

_OURS_LOAD = """
import sys, time
t0 = time.perf_counter()
from delta_core.log.table import DeltaTable
t1 = time.perf_counter()
s = DeltaTable(sys.argv[1]).snapshot()
print(f"{time.perf_counter() - t1:.3f} {s.num_files}")
"""

_DELTARS_LOAD = """
import sys, time
import deltalake
t1 = time.perf_counter()
t = deltalake.DeltaTable(sys.argv[1])
n = len(t.file_uris())
print(f"{time.perf_counter() - t1:.3f} {n}")
"""

# The ``describe --json`` record, as a delta-rs user would build it.
_DELTARS_DESCRIBE = """
import json, sys
import deltalake
import pyarrow as pa
import pyarrow.compute as pc
t = deltalake.DeltaTable(sys.argv[1])
p, m = t.protocol(), t.metadata()
actions = pa.table(t.get_add_actions(flatten=False))
nr = actions["num_records"]
print(json.dumps({
    "version": t.version(), "min_reader_version": p.min_reader_version,
    "min_writer_version": p.min_writer_version, "reader_features": p.reader_features,
    "writer_features": p.writer_features, "partition_columns": m.partition_columns,
    "schema_field_names": [f.name for f in t.schema().fields], "configuration": m.configuration,
    "num_files": actions.num_rows, "files": sorted(actions["path"].to_pylist()),
    "num_records": None if nr.null_count else pc.sum(nr).as_py(),
}))
"""


class Run(NamedTuple):
    """One process: wall seconds, peak RSS (MB), CPU seconds and its stdout's last line."""

    seconds: float
    mb: float
    cpu: float
    tail: str


def _timed(argv: list[str]) -> Run:
    # stdout goes to a file: a describe of millions of files prints hundreds of MB
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf, tempfile.TemporaryFile("w+b") as out:
        proc = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %M %U %S", *argv],
                              stdout=out, stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode:
            raise RuntimeError(f"{argv[:4]} failed: {proc.stderr[-2000:]}")
        seconds, kib, user, system = tf.read().split()[-4:]
        out.seek(max(0, out.seek(0, os.SEEK_END) - 200))
        tail = out.read().decode(errors="replace").strip().splitlines()
    return Run(float(seconds), int(kib) / 1024, float(user) + float(system), tail[-1] if tail else "")


def build_table(root: str, files: int, tail: int) -> None:
    """``files - tail*100`` adds in 4 commits, a delta-rs checkpoint, then ``tail`` commits."""
    base = files - tail * FILES_PER_TAIL_COMMIT
    generate_log(root, base, 4)
    _in_process(run_deltars, root)  # writes the checkpoint of version 4
    for k in range(tail):
        write_commit(root, 5 + k, base + k * FILES_PER_TAIL_COMMIT, FILES_PER_TAIL_COMMIT)


def _rounds(commands: dict[str, list[str]], repeat: int) -> dict[str, list[Run]]:
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            runs[name].append(_timed(argv))
    return runs


Medians = dict[str, Run]  # per engine: the median of each figure (tail: the first run's)


def _report(title: str, runs: dict[str, list[Run]], ref: str | None) -> Medians:
    """Print each engine's median time, peak RSS and CPU time (and their ratios to ``ref``'s);
    returns the medians."""
    print(f"\n{title}")
    med = {name: Run(statistics.median(r.seconds for r in rs), statistics.median(r.mb for r in rs),
                     statistics.median(r.cpu for r in rs), rs[0].tail) for name, rs in runs.items()}
    print(f"{'engine':<24}{'median s':>10}{'peak RSS MB':>13}{'CPU s':>8}{'time ratio':>12}{'RSS ratio':>11}"
          f"{'CPU ratio':>11}   every run (s)")
    for name, rs in runs.items():
        m = med[name]
        ratios = (f"{m.seconds / med[ref].seconds:>11.2f}x{m.mb / med[ref].mb:>10.2f}x{m.cpu / med[ref].cpu:>10.2f}x"
                  if ref else f"{'':>12}{'':>11}{'':>11}")
        inner = ""
        if m.tail and m.tail.split()[0].replace(".", "", 1).isdigit():
            inner = f"   (after imports: median {statistics.median(float(r.tail.split()[0]) for r in rs):.2f} s)"
        print(f"{name:<24}{m.seconds:>10.2f}{m.mb:>13.0f}{m.cpu:>8.2f}{ratios}   {[r.seconds for r in rs]}{inner}")
    return med


def _summary(rows: list[tuple[str, Medians]]) -> None:
    """describe against delta-rs per table, as ratios (the issue's target: at most 0.5x)."""
    print("\nsummary: describe --json vs delta-rs opening the table and listing its adds (medians)")
    print(f"{'table':<28}{'engine':<22}{'s':>8}{'MB':>8}{'delta-rs s':>12}{'MB':>8}{'time ratio':>12}"
          f"{'RSS ratio':>11}{'CPU ratio':>11}")
    for label, med in rows:
        rs = med["delta-rs"]
        for name in ("ours --files", "ours, no file list"):
            m = med[name]
            print(f"{label:<28}{name:<22}{m.seconds:>8.2f}{m.mb:>8.0f}{rs.seconds:>12.2f}{rs.mb:>8.0f}"
                  f"{m.seconds / rs.seconds:>11.2f}x{m.mb / rs.mb:>10.2f}x{m.cpu / rs.cpu:>10.2f}x")


def _measure(label: str, root: str, files: int | None, repeat: int) -> tuple[int, Medians]:
    """Snapshot load and describe of the table at ``root`` (``files`` live files when known):
    its number of live files and describe's medians."""
    py = sys.executable
    load = _rounds({"ours": [py, "-c", _OURS_LOAD, root], "delta-rs": [py, "-c", _DELTARS_LOAD, root]}, repeat)
    counts = {name: {int(r.tail.split()[1]) for r in rs} for name, rs in load.items()}
    assert counts["ours"] == counts["delta-rs"] and len(counts["ours"]) == 1, counts
    assert files is None or counts["ours"] == {files}, counts
    _report(f"snapshot load, {label}", load, "delta-rs")
    return counts["ours"].pop(), _report(f"describe --json, {label}", _rounds({
        "ours --files": [py, "-m", "delta_core", "describe", root, "--json", "--files"],
        "ours, no file list": [py, "-m", "delta_core", "describe", root, "--json"],
        "delta-rs": [py, "-c", _DELTARS_DESCRIBE, root],
    }, repeat), "delta-rs")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, action="append", help="live files (repeatable; default 100000 "
                                                                       "unless --table is given)")
    parser.add_argument("--table", action="append", default=[], metavar="PATH",
                        help="also measure this existing table as it is (repeatable)")
    parser.add_argument("--tail", type=int, default=100, help="commits after the checkpoint")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    args, _unknown = parser.parse_known_args(argv)
    py = sys.executable
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    with scratch_dir("bench_describe_", keep=args.keep) as work:
        summary: list[tuple[str, Medians]] = []
        small = os.path.join(work, "small")
        generate_log(small, 10, 2)
        _report("CLI start-up (targets: --help 0.3 s, describe of a 10-file table 0.5 s)", _rounds({
            "delta-core --help": [py, "-m", "delta_core", "--help"],
            "describe, 10 files": [py, "-m", "delta_core", "describe", small, "--json"],
        }, args.repeat), None)
        for files in args.files or ([] if args.table else [100_000]):
            root = os.path.join(work, f"t{files}")
            t0 = time.perf_counter()
            build_table(root, files, args.tail)
            print(f"\n{files:,} files: a checkpoint plus {args.tail} commits "
                  f"(built in {time.perf_counter() - t0:.1f} s); load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            summary.append((f"{files:,} files", _measure(f"{files:,} files", root, files, args.repeat)[1]))
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
        for root in args.table:
            print(f"\n{root}: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            n, med = _measure(root, root, None, args.repeat)
            summary.append((f"{os.path.basename(os.path.normpath(root))} ({n:,})", med))
        _summary(summary)
        print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
