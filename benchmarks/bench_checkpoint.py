"""Checkpoint of a table with many files: wall time and peak RSS, ours vs delta-rs.

The log is generated directly (commit 0 with protocol/metaData, then ``--commits`` commits
holding ``--files`` add actions in total, each with partition values and JSON stats), then
hard-linked into two identical tables. Each engine runs in its own spawned process that
opens the table and writes the checkpoint of the latest version (``write_checkpoint`` vs
delta-rs ``DeltaTable.create_checkpoint()``), so the time includes reading the log and the
peak RSS (``VmHWM``) is that engine's alone; the CPU seconds (user + system, all
threads) of that work are shown too. On a machine shared with other work, wall times taken
minutes apart differ by 2x: ``--repeat N`` runs the engines alternately N times, each on a
fresh copy, and reports each engine's median run. Our checkpoint is then read back by
delta-rs to check it has every file.

A second run measures the steady state (issue 19's target: at most 0.5x delta-rs's time and
1.0x its peak RSS): the table already has a checkpoint (written by delta-rs) and ``--tail``
(100) commits of 100 files follow it, which is what an automatic checkpoint reads. ``--size
1M|3M`` picks the table size (``--files`` any other); ``--skip-json`` leaves out the first run
(at 3M delta-rs takes minutes on it). The load average is printed with each run's figures.
``bench_describe`` times the steady-state checkpoint as whole processes (``delta-core
checkpoint`` against a delta-rs script, interpreter start and imports included).

    python -m benchmarks.bench_checkpoint [--size 1M|3M | --files N] [--commits 4] [--tail 100]
                                          [--repeat 1] [--skip-json]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.harness import argument_parser, scratch_dir

SIZES = {"1M": 1_000_000, "3M": 3_000_000}

def _field(name: str, kind: str) -> dict[str, Any]:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


SCHEMA = {"type": "struct", "fields": [
    _field("id", "long"), _field("name", "string"), _field("value", "double"), _field("day", "string"),
]}
# ``wide``: four more data columns, so each add's stats name seven columns (as real tables do)
# instead of three.
WIDE_SCHEMA = {"type": "struct", "fields": [
    *SCHEMA["fields"], _field("ts", "timestamp"), _field("city", "string"), _field("amount", "double"),
    _field("flag", "boolean"),
]}


def _stats(i: int, wide: bool) -> str:
    lo: dict[str, Any] = {"id": i * 100, "name": f"a{i}", "value": i * 0.5}
    hi: dict[str, Any] = {"id": i * 100 + 99, "name": f"z{i}", "value": i * 0.5 + 10}
    nulls: dict[str, Any] = {"id": 0, "name": i % 3, "value": 0}
    if wide:
        lo |= {"ts": f"2024-01-01T00:{i % 60:02d}:00.000Z", "city": f"city{i % 1000:04d}", "amount": -(i % 9973) / 7}
        hi |= {"ts": f"2024-01-01T01:{i % 60:02d}:00.000Z", "city": f"town{i % 1000:04d}", "amount": (i % 9973) / 3}
        nulls |= {"ts": 0, "city": i % 5, "amount": i % 2, "flag": 0}
    return json.dumps({"numRecords": 100 + i % 50, "minValues": lo, "maxValues": hi, "nullCount": nulls},
                      separators=(",", ":"))


def _file(i: int, *, partitioned: bool = True) -> tuple[str, str, int]:
    """The path, partition value and size of generated file ``i`` (no ``day=`` directory in an
    unpartitioned table)."""
    day = f"2024-01-{i % 28 + 1:02d}"
    name = f"part-{i:08d}-{uuid.UUID(int=i)}.c000.snappy.parquet"
    return (f"day={day}/{name}" if partitioned else name), day, 10000 + i % 997


@dataclass(frozen=True, slots=True)
class Clustering:
    """A clustered, unpartitioned log (PROTOCOL.md "Clustered Table") on ``columns``: the files
    added before file ``clustered_below`` carry ``clusteringProvider: liquid`` and ZCube tags
    (one cube per commit, as our cluster run and Delta Spark's write them), the rest are
    unclustered appends, what an incremental clustering run rewrites."""

    columns: tuple[str, ...]
    clustered_below: int

    def file_fields(self, i: int, version: int) -> str:
        if i >= self.clustered_below:
            return ""
        tags = {"ZCUBE_ID": str(uuid.UUID(int=version)), "ZCUBE_ZORDER_BY": json.dumps(list(self.columns),
                                                                                       separators=(",", ":"))}
        return f',"clusteringProvider":"liquid","tags":{json.dumps(tags, separators=(",", ":"))}'


def _add_line(i: int, now: int, wide: bool = False, clustering: Clustering | None = None, version: int = 0) -> str:
    path, day, size = _file(i, partitioned=clustering is None)
    values = f'{{"day":"{day}"}}' if clustering is None else "{}"
    extra = clustering.file_fields(i, version) if clustering is not None else ""
    return (f'{{"add":{{"path":"{path}","partitionValues":{values},"size":{size},'
            f'"modificationTime":{now},"dataChange":true,"stats":{json.dumps(_stats(i, wide))}{extra}}}}}')


def _remove_line(i: int, now: int, partitioned: bool = True) -> str:
    path, day, size = _file(i, partitioned=partitioned)
    values = f'{{"day":"{day}"}}' if partitioned else "{}"
    return (f'{{"remove":{{"path":"{path}","deletionTimestamp":{now},"dataChange":true,'
            f'"extendedFileMetadata":true,"partitionValues":{values},"size":{size}}}}}')


def write_commit(root: str, version: int, first: int, n: int, *, wide: bool = False,
                 removed: Sequence[int] = (), clustering: Clustering | None = None) -> None:
    """Commit ``version`` adding files ``first .. first+n-1`` and removing files ``removed``."""
    now = int(time.time() * 1000)
    lines = [json.dumps({"commitInfo": {"timestamp": now + version, "operation": "WRITE"}})]
    lines += [_remove_line(i, now, clustering is None) for i in removed]
    lines += [_add_line(i, now, wide, clustering, version) for i in range(first, first + n)]
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


def generate_log(root: str, files: int, commits: int, *, removes: int = 0, wide: bool = False,
                 clustering: Clustering | None = None) -> int:
    """Write ``_delta_log`` with ``files`` adds spread over ``commits`` commits (no data files);
    with ``removes``, every ``files // removes``-th file is removed by the commit after the one
    that added it (the last commit's files stay). ``wide``: seven stats columns (``WIDE_SCHEMA``)
    instead of three. ``clustering``: a clustered table instead of one partitioned by ``day``.
    Returns the number of removes written."""
    log_dir = os.path.join(root, "_delta_log")
    os.makedirs(log_dir)
    now = int(time.time() * 1000)
    protocol: dict[str, Any] = {"minReaderVersion": 1, "minWriterVersion": 2}
    domains: list[dict[str, Any]] = []
    if clustering is not None:
        protocol = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["clustering", "domainMetadata"]}
        config = {"clusteringColumns": [[c] for c in clustering.columns]}
        domains = [{"domainMetadata": {"domain": "delta.clustering", "configuration": json.dumps(config),
                                       "removed": False}}]
    header = [
        {"commitInfo": {"timestamp": now, "operation": "CREATE TABLE"}},
        {"protocol": protocol},
        {"metaData": {"id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
                      "schemaString": json.dumps(WIDE_SCHEMA if wide else SCHEMA),
                      "partitionColumns": ["day"] if clustering is None else [],
                      "configuration": {}, "createdTime": now}},
        *domains,
    ]
    with open(os.path.join(log_dir, f"{0:020d}.json"), "w") as fh:
        fh.write("\n".join(json.dumps(a) for a in header) + "\n")
    per_commit = -(-files // commits)
    step = files // removes if removes else 0
    made = removed = 0
    previous = range(0)
    for v in range(1, commits + 1):
        n = min(per_commit, files - made)
        gone = [i for i in previous if i % step == 0] if step else []
        write_commit(root, v, made, n, wide=wide, removed=gone, clustering=clustering)
        removed += len(gone)
        previous = range(made, made + n)
        made += n
    return removed


def link_copy(src: str, dst: str) -> None:
    """Hard-link the log files (never rewritten) into a new table; ``_last_checkpoint`` is
    copied, since a writer may rewrite it in place, which would change every link."""
    os.makedirs(os.path.join(dst, "_delta_log"))
    for name in os.listdir(os.path.join(src, "_delta_log")):
        copy = shutil.copyfile if name == "_last_checkpoint" else os.link
        copy(os.path.join(src, "_delta_log", name), os.path.join(dst, "_delta_log", name))


def _peak_rss_mb() -> float:
    """This process's peak RSS in MiB: ``VmHWM``, the high-water mark of its own address space.
    Not ``ru_maxrss``: Linux carries the parent's peak into a spawned child's (fork, then exec),
    so a child of a parent that generated a log would report the parent's peak as its own."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except FileNotFoundError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_ours(path: str) -> dict[str, Any]:
    started = time.perf_counter()
    from delta_core.log.table import DeltaTable
    from delta_core.write.checkpoint_write import write_checkpoint

    imported, cpu = time.perf_counter(), _cpu_seconds()
    table = DeltaTable(path)
    snapshot = table.snapshot()
    loaded = time.perf_counter()
    result = write_checkpoint(table, snapshot=snapshot)
    done = time.perf_counter()
    return {"seconds": done - imported, "load_seconds": loaded - imported, "write_seconds": done - loaded,
            "cpu_seconds": _cpu_seconds() - cpu, "import_seconds": imported - started, "rss_mb": _peak_rss_mb(),
            "parts": 1, "bytes": result.size_in_bytes, "adds": result.num_add_files}


def run_deltars(path: str) -> dict[str, Any]:
    started = time.perf_counter()
    import deltalake

    imported, cpu = time.perf_counter(), _cpu_seconds()
    table = deltalake.DeltaTable(path)
    table.create_checkpoint()
    done = time.perf_counter()
    cpu = _cpu_seconds() - cpu
    prefix = f"{table.version():020d}.checkpoint."
    size = sum(os.path.getsize(os.path.join(path, "_delta_log", n))
               for n in os.listdir(os.path.join(path, "_delta_log")) if n.startswith(prefix))
    return {"seconds": done - imported, "cpu_seconds": cpu, "import_seconds": imported - started,
            "rss_mb": _peak_rss_mb(), "parts": 1, "bytes": size, "adds": None}


def count_files_deltars(path: str) -> int:
    """How many live files delta-rs sees (reads our checkpoint: commits before it are hidden)."""
    import deltalake
    import pyarrow as pa

    return pa.table(deltalake.DeltaTable(path).get_add_actions(flatten=False)).num_rows


def _load_average() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _print(runs: list[tuple[str, dict[str, Any]]]) -> None:
    ref = dict(runs)["delta-rs"]
    print(f"{'engine':<22}{'seconds':>9}{'CPU s':>8}{'peak RSS MB':>13}{'parts':>7}{'MB':>8}"
          f"{'time ratio':>12}{'RSS ratio':>11}")
    for name, r in runs:
        print(f"{name:<22}{r['seconds']:>9.2f}{r['cpu_seconds']:>8.2f}{r['rss_mb']:>13.0f}{r['parts']:>7}"
              f"{r['bytes'] / 1e6:>8.1f}{r['seconds'] / ref['seconds']:>11.2f}x{r['rss_mb'] / ref['rss_mb']:>10.2f}x")
    for name, r in runs:
        if "load_seconds" in r:
            print(f"  {name}: reading the log into a snapshot {r['load_seconds']:.2f} s, "
                  f"building and writing the checkpoint {r['write_seconds']:.2f} s")


def _check_complete(table: str, commits: Any, files: int, *, older_checkpoint: int | None = None) -> None:
    """Hide the commits (and older checkpoint) our checkpoint replaces; delta-rs must then see
    every file in it."""
    log_dir = os.path.join(table, "_delta_log")
    for v in commits:
        os.unlink(os.path.join(log_dir, f"{v:020d}.json"))
    if older_checkpoint is not None:
        os.unlink(os.path.join(log_dir, f"{older_checkpoint:020d}.checkpoint.parquet"))
    seen = _in_process(count_files_deltars, table)
    assert seen == files, f"delta-rs sees {seen} files in our checkpoint of {table}, expected {files}"


def _in_process(fn: Any, *args: Any) -> Any:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(fn, args)


def _median_run(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median wall time (its own RSS and CPU figures), plus every time seen."""
    ordered = sorted(results, key=lambda r: r["seconds"])
    out = dict(ordered[(len(ordered) - 1) // 2])
    out["all_seconds"] = [round(r["seconds"], 2) for r in results]
    return out


def _alternate(work: str, source: str, label: str, repeat: int,
               engines: list[tuple[str, Any, tuple[Any, ...]]]) -> list[tuple[str, dict[str, Any]]]:
    """Run each engine ``repeat`` times, alternating, each run on its own copy of ``source``."""
    results: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in engines}
    for i in range(repeat):
        for name, fn, extra in engines:
            copy = os.path.join(work, f"{label}_{name}_{i}".replace(" ", "_").replace("/", "_"))
            link_copy(source, copy)
            results[name].append(_in_process(fn, copy, *extra))
    return [(name, _median_run(rs)) for name, rs in results.items()]


def _print_all_seconds(runs: list[tuple[str, dict[str, Any]]]) -> None:
    if any(len(r["all_seconds"]) > 1 for _, r in runs):
        print("  every run (seconds, in order): "
              + "; ".join(f"{name} {r['all_seconds']}" for name, r in runs))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--files", type=int, default=1_000_000)
    parser.add_argument("--size", choices=sorted(SIZES), help="table size (overrides --files)")
    parser.add_argument("--skip-json", action="store_true",
                        help="only the checkpoint plus --tail commits, not the log of JSON commits")
    parser.add_argument("--commits", type=int, default=4)
    parser.add_argument("--tail", type=int, default=100,
                        help="commits after the previous checkpoint in the steady-state run")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the engines alternately this many times; report each one's median run")
    parser.add_argument("--keep", action="store_true", help="keep the generated tables")
    args, _unknown = parser.parse_known_args(argv)
    if args.size:
        args.files = SIZES[args.size]

    with scratch_dir("bench_checkpoint_", keep=args.keep) as work:
        base = os.path.join(work, "base")
        t0 = time.perf_counter()
        generate_log(base, args.files, args.commits)
        print(f"{args.files:,} add actions in {args.commits} commits "
              f"(log generated in {time.perf_counter() - t0:.1f} s)", flush=True)

        engines: list[tuple[str, Any, tuple[Any, ...]]] = [("ours", run_ours, ()), ("delta-rs", run_deltars, ())]
        if not args.skip_json:
            runs = _alternate(work, base, "full", args.repeat, engines)
            # Our checkpoint must be complete: delta-rs reading it sees every file.
            _check_complete(os.path.join(work, "full_ours_0"), range(args.commits + 1), args.files)
            print(f"\n1. checkpoint of a log of {args.files:,} adds in JSON commits (no checkpoint yet); "
                  f"load average {_load_average()}")
            _print(runs)
            _print_all_seconds(runs)

        # 2. Steady state: the previous checkpoint (written by delta-rs, the reference) plus
        # --tail small commits, which is what an automatic checkpoint every N commits reads.
        steady = os.path.join(work, "steady")
        link_copy(base, steady)
        _in_process(run_deltars, steady)
        for k in range(args.tail):
            write_commit(steady, args.commits + 1 + k, args.files + k * 100, 100)
        runs2 = _alternate(work, steady, "steady", args.repeat, engines[:2])
        _check_complete(os.path.join(work, "steady_ours_0"), range(args.commits + 1, args.commits + 1 + args.tail),
                        args.files + 100 * args.tail, older_checkpoint=args.commits)
        print(f"\n2. checkpoint after {args.tail} more commits, starting from the previous checkpoint "
              f"({args.files + 100 * args.tail:,} files); load average {_load_average()}")
        _print(runs2)
        _print_all_seconds(runs2)
        print("(seconds exclude interpreter/library import; peak RSS includes it; "
              "delta-rs read our checkpoint back: all files present)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
