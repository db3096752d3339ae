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
- checkpoint: ``delta-core checkpoint --force --json`` vs a delta-rs script calling
  ``create_checkpoint()``, each on its own hard-linked copy of the table (what an automatic
  checkpoint after ``--tail`` commits costs, start-up included). Ours runs twice: over
  delta-rs's checkpoint (``ours checkpoint``: JSON statistics only, so ours parses every file's
  into the ``stats_parsed`` it writes), and over our own checkpoint of the same version (``ours,
  after ours``: the steady state of a table we checkpoint, whose ``stats_parsed`` is carried over
  and only the tail's files parsed); delta-rs runs over its own. ``ours, JSON only`` writes
  what delta-rs writes, JSON statistics only, over delta-rs's checkpoint: its copy has one more
  commit, setting ``delta.checkpoint.writeStatsAsStruct=false``. A ``--table`` has one
  checkpoint, whoever wrote it: ``ours checkpoint`` runs over that one;
- ``delta-core --help`` and ``describe`` of a 10-file table (targets 0.3 s and 0.5 s).

The measured processes keep their compiled bytecode (``PYTHONPYCACHEPREFIX`` in the scratch
directory; warmed by one untimed run of each command), as an installed package does, even where
the environment sets ``PYTHONDONTWRITEBYTECODE`` (it does in our sessions: every process then
compiles delta_core's sources, ~0.1 s of CPU); ``--compile`` measures with the environment as it is.

Engines alternate, ``--repeat`` rounds; each figure is the median run (all runs are listed).
Several sizes in one run: ``--files 100000 --files 1000000``. ``--table PATH`` measures an
existing table as it is (neither generated nor removed), e.g. a hard-linked copy of the 10M-file
log of ``bench_driver_scale`` after ``delta-core checkpoint``: generating 10M files the way
above takes delta-rs's checkpoint of the JSON commits, which this machine cannot hold. The run
closes with a summary per size: describe's and checkpoint's time, peak RSS and CPU time as ratios
of delta-rs's (the target: at most 0.4x its time and 0.5x its peak RSS at 1M files).

    python -m benchmarks.bench_describe [--files 100000]... [--table PATH]... [--tail 100] [--repeat 3]
                                        [--compile]
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

from benchmarks.bench_checkpoint import _in_process, generate_log, link_copy, run_deltars, write_commit
from benchmarks.harness import argument_parser, scratch_dir

FILES_PER_TAIL_COMMIT = 100
# The siblings of a generated table (``build_table``): with our checkpoint, and with a last
# commit that asks for checkpoints of JSON statistics only.
OURS = ".ours"
JSON_ONLY = ".json"
# The checkpoint runs: over delta-rs's checkpoint (the reference table), over our own, and
# over delta-rs's writing what it writes.
AFTER_DELTARS = "ours checkpoint"
AFTER_OURS = "ours, after ours"
AS_DELTARS = "ours, JSON only"

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

_DELTARS_CHECKPOINT = """
import sys
import deltalake
deltalake.DeltaTable(sys.argv[1]).create_checkpoint()
"""


class Run(NamedTuple):
    """One process: wall seconds, peak RSS (MB), CPU seconds and its stdout's last line."""

    seconds: float
    mb: float
    cpu: float
    tail: str


# The measured processes' environment (``_bytecode_cache``); None: this process's.
_ENV: dict[str, str] | None = None


def _bytecode_cache(work: str) -> None:
    """Let the measured processes keep their compiled bytecode, in ``work``."""
    global _ENV
    _ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    _ENV["PYTHONPYCACHEPREFIX"] = os.path.join(work, "pycache")


def _timed(argv: list[str]) -> Run:
    # stdout goes to a file: a describe of millions of files prints hundreds of MB
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf, tempfile.TemporaryFile("w+b") as out:
        proc = subprocess.run(["/usr/bin/time", "-o", tf.name, "-f", "%e %M %U %S", *argv],
                              stdout=out, stderr=subprocess.PIPE, text=True, check=False, env=_ENV)
        if proc.returncode:
            raise RuntimeError(f"{argv[:4]} failed: {proc.stderr[-2000:]}")
        seconds, kib, user, system = tf.read().split()[-4:]
        out.seek(max(0, out.seek(0, os.SEEK_END) - 200))
        tail = out.read().decode(errors="replace").strip().splitlines()
    return Run(float(seconds), int(kib) / 1024, float(user) + float(system), tail[-1] if tail else "")


def _write_our_checkpoint(root: str) -> None:
    from delta_core.log.table import DeltaTable
    from delta_core.write.checkpoint_write import write_checkpoint

    write_checkpoint(DeltaTable(root))


def _ask_json_only(root: str) -> None:
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import set_properties

    set_properties(DeltaTable(root), {"delta.checkpoint.writeStatsAsStruct": "false"})


def build_table(root: str, files: int, tail: int) -> None:
    """``files - tail*100`` adds in 4 commits, a delta-rs checkpoint, then ``tail`` commits;
    beside it at ``root + OURS``, the same log with our checkpoint of version 4 instead; and at
    ``root + JSON_ONLY``, the first log with one more commit setting
    ``delta.checkpoint.writeStatsAsStruct=false``."""
    base = files - tail * FILES_PER_TAIL_COMMIT
    generate_log(root, base, 4)
    link_copy(root, root + OURS)
    _in_process(run_deltars, root)  # writes the checkpoint of version 4
    _in_process(_write_our_checkpoint, root + OURS)
    for table in (root, root + OURS):
        for k in range(tail):
            write_commit(table, 5 + k, base + k * FILES_PER_TAIL_COMMIT, FILES_PER_TAIL_COMMIT)
    link_copy(root, root + JSON_ONLY)
    _in_process(_ask_json_only, root + JSON_ONLY)


def _rounds(commands: dict[str, list[str]], repeat: int, *, fresh_copy: str | None = None,
            copies_of: dict[str, str] | None = None) -> dict[str, list[Run]]:
    """Each command ``repeat`` times, alternating; with ``fresh_copy``, every run gets its own
    hard-linked copy of that table as its last argument (a checkpoint writes into it), of the
    table ``copies_of`` names for the command where it names one."""
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    for i in range(repeat):
        for j, (name, argv) in enumerate(commands.items()):
            if fresh_copy is None:
                runs[name].append(_timed(argv))
                continue
            source = (copies_of or {}).get(name, fresh_copy)
            copy = f"{fresh_copy}.copy{i}_{j}"
            link_copy(source, copy)
            try:
                runs[name].append(_timed([*argv, copy]))
            finally:
                shutil.rmtree(copy, ignore_errors=True)
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


def _summary(rows: list[tuple[str, Medians, Medians]]) -> None:
    """describe and checkpoint against delta-rs per table, as ratios (the target: at most 0.4x
    its time and 0.5x its peak RSS)."""
    print("\nsummary: whole processes against delta-rs (medians): describe --json vs opening the table and "
          "listing its adds; checkpoint vs create_checkpoint()")
    print(f"{'table':<28}{'engine':<22}{'s':>8}{'MB':>8}{'delta-rs s':>12}{'MB':>8}{'time ratio':>12}"
          f"{'RSS ratio':>11}{'CPU ratio':>11}")
    for label, describe, checkpoint in rows:
        for med, names in ((describe, ("ours --files", "ours, no file list")),
                           (checkpoint, (AFTER_DELTARS, AFTER_OURS, AS_DELTARS))):
            rs = med["delta-rs"]
            for name in (n for n in names if n in med):
                m = med[name]
                print(f"{label:<28}{name:<22}{m.seconds:>8.2f}{m.mb:>8.0f}{rs.seconds:>12.2f}{rs.mb:>8.0f}"
                      f"{m.seconds / rs.seconds:>11.2f}x{m.mb / rs.mb:>10.2f}x{m.cpu / rs.cpu:>10.2f}x")


def _measure(label: str, root: str, files: int | None, repeat: int) -> tuple[int, Medians, Medians]:
    """Snapshot load, describe and checkpoint of the table at ``root`` (``files`` live files
    when known): its number of live files, describe's medians and checkpoint's."""
    py = sys.executable
    load = _rounds({"ours": [py, "-c", _OURS_LOAD, root], "delta-rs": [py, "-c", _DELTARS_LOAD, root]}, repeat)
    counts = {name: {int(r.tail.split()[1]) for r in rs} for name, rs in load.items()}
    assert counts["ours"] == counts["delta-rs"] and len(counts["ours"]) == 1, counts
    assert files is None or counts["ours"] == {files}, counts
    _report(f"snapshot load, {label}", load, "delta-rs")
    describe = _report(f"describe --json, {label}", _rounds({
        "ours --files": [py, "-m", "delta_core", "describe", root, "--json", "--files"],
        "ours, no file list": [py, "-m", "delta_core", "describe", root, "--json"],
        "delta-rs": [py, "-c", _DELTARS_DESCRIBE, root],
    }, repeat), "delta-rs")
    ours = [py, "-m", "delta_core", "checkpoint", "--force", "--json"]
    siblings = {name: root + suffix for name, suffix in ((AFTER_OURS, OURS), (AS_DELTARS, JSON_ONLY))
                if os.path.isdir(root + suffix)}
    checkpoint = _report(f"checkpoint, {label} (each run on its own hard-linked copy)", _rounds({
        AFTER_DELTARS: ours, **dict.fromkeys(siblings, ours), "delta-rs": [py, "-c", _DELTARS_CHECKPOINT],
    }, repeat, fresh_copy=root, copies_of=siblings), "delta-rs")
    return counts["ours"].pop(), describe, checkpoint


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, action="append", help="live files (repeatable; default 100000 "
                                                                       "unless --table is given)")
    parser.add_argument("--table", action="append", default=[], metavar="PATH",
                        help="also measure this existing table as it is (repeatable)")
    parser.add_argument("--tail", type=int, default=100, help="commits after the checkpoint")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    parser.add_argument("--compile", action="store_true",
                        help="measure with this environment's bytecode setting (PYTHONDONTWRITEBYTECODE: "
                             "every process compiles delta_core's sources)")
    args, _unknown = parser.parse_known_args(argv)
    py = sys.executable
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    with scratch_dir("bench_describe_", keep=args.keep) as work:
        summary: list[tuple[str, Medians, Medians]] = []
        small = os.path.join(work, "small")
        generate_log(small, 10, 2)
        if not args.compile:
            _bytecode_cache(work)
        print("bytecode: " + ("as the environment says (PYTHONDONTWRITEBYTECODE="
                              f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})" if args.compile
                              else "kept, as an installed package's"))
        # untimed: compiles what describe and checkpoint import
        _rounds({"describe": [py, "-m", "delta_core", "describe", "--json"],
                 "checkpoint": [py, "-m", "delta_core", "checkpoint", "--force", "--json"]}, 1, fresh_copy=small)
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
            summary.append((f"{files:,} files", *_measure(f"{files:,} files", root, files, args.repeat)[1:]))
            if not args.keep:
                shutil.rmtree(root, ignore_errors=True)
                for suffix in (OURS, JSON_ONLY):
                    shutil.rmtree(root + suffix, ignore_errors=True)
        for root in args.table:
            print(f"\n{root}: load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
            n, describe, checkpoint = _measure(root, root, None, args.repeat)
            summary.append((f"{os.path.basename(os.path.normpath(root))} ({n:,})", describe, checkpoint))
        _summary(summary)
        print(f"\nload average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
