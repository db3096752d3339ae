"""Scale-out: the Dagster maintenance job on Spark Connect with the multiprocess executor, against
the in-process executor on an embedded ``local[*]`` session; and the Spark task runner alone.

``--tables`` tables (default 10) of ``--files`` small files each (default 200) are written once
through delta_core and copied fresh for every timed run.

- ``runner``: one warm embedded session compacts every table in turn (Spark start-up is not in
  the timing). Run it with another checkout first on ``PYTHONPATH`` to time another task runner
  (the numbers in docs/scaling.md compare the RDD runner with the DataFrame one this way).
- ``dagster``: the ``all_tables_compact`` job, wall time from launch to the end of the run,
  (a) in-process executor, master ``local[*]`` (the default; the session starts inside the run)
  and (b) multiprocess executor, master ``sc://`` of a Spark Connect server started here (a
  ``local[*]`` driver on 127.0.0.1, started before the timing, not warmed, stopped by PID
  at the end). Every run is checked: each table ends with fewer files and all of its rows.

    python -m benchmarks.bench_scale [--part runner|dagster|all] [--tables 10] [--files 200]
        [--rounds 1] [--max-concurrent 2]
"""

from __future__ import annotations

import os
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence

import pyarrow as pa

from benchmarks.harness import argument_parser, scratch_dir

ROWS_PER_FILE = 20
# The tables are written with a tiny delta.targetFileSize (to get many files): compaction is
# given a real target instead.
TARGET_SIZE = 128 * 1024 * 1024


def build_tables(work: pathlib.Path, tables: int, files: int) -> list[str]:
    """``tables`` tables of ``files`` files each (one append, split by a tiny target size)."""
    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append, create_table

    uris = []
    for t in range(tables):
        uri = str(work / "source" / f"t{t}")
        rows = files * ROWS_PER_FILE
        data = pa.table({"id": pa.array(range(rows), pa.int64()),
                         "v": pa.array([f"row-{t}-{i}" for i in range(rows)], pa.string())})
        per_file = data.slice(0, ROWS_PER_FILE).nbytes
        create_table(uri, data.schema, properties={"delta.targetFileSize": str(per_file)})
        append(DeltaTable(uri), data)
        assert DeltaTable(uri).snapshot().num_files >= files * 0.9, DeltaTable(uri).snapshot().num_files
        uris.append(uri)
    return uris


def fresh_copies(sources: Sequence[str], dest: pathlib.Path) -> list[str]:
    shutil.rmtree(dest, ignore_errors=True)
    out = []
    for src in sources:
        target = dest / pathlib.Path(src).name
        shutil.copytree(src, target)
        out.append(str(target))
    return out


def check_compacted(uris: Sequence[str], files: int) -> None:
    import deltalake

    from delta_core.log.table import DeltaTable

    for uri in uris:
        snap = DeltaTable(uri).snapshot()
        assert snap.num_files < files / 10, (uri, snap.num_files)
        assert deltalake.DeltaTable(uri).to_pyarrow_dataset().count_rows() == files * ROWS_PER_FILE, uri


def bench_runner(sources: Sequence[str], work: pathlib.Path, files: int, rounds: int) -> None:
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.spark import tasks
    from delta_core.maintenance.spark.compaction import compact
    from delta_core.maintenance.spark.session import build_spark_session
    from delta_core.maintenance.spark.tasks import warm_up

    runner = "RDD (run_tasks over sc.parallelize)" if hasattr(tasks, "_task_runner") else "DataFrame (mapInArrow)"
    spark = build_spark_session(master="local[*]", app_name="bench-scale-runner")
    warm_up(spark)
    for r in range(rounds):
        uris = fresh_copies(sources, work / "runner")
        t0 = time.perf_counter()
        for uri in uris:
            compact(DeltaTable(uri), spark, target_size=TARGET_SIZE)
        seconds = time.perf_counter() - t0
        check_compacted(uris, files)
        print(f"runner {runner}, round {r + 1}: {len(uris)} tables x {files} files compacted in {seconds:.2f} s "
              f"({seconds / len(uris):.2f} s per table)", flush=True)
    spark.stop()


TABLES_YAML = """
spark:
  master: {master}
tables:
{tables}
"""


def _tables_yaml(uris: Sequence[str], master: str) -> str:
    entries = "\n".join(f"  {pathlib.Path(u).name}:\n    uri: {u}\n    compact: {{target_size: {TARGET_SIZE}}}\n    vacuum: false\n"
                        f"    checkpoint: false" for u in uris)
    return TABLES_YAML.format(master=master, tables=entries)


def _run_job(config_path: pathlib.Path, run_config: dict) -> float:
    """Wall time of one ``all_tables_compact`` run, launched as the Dagster CLI would."""
    from dagster import DagsterInstance, execute_job, reconstructable

    from tests.dagster.multiprocess_jobs import all_tables_compact

    os.environ["DELTA_MAINTENANCE_TABLES"] = str(config_path)
    with tempfile.TemporaryDirectory(prefix="bench_scale_dagster_") as home:
        with DagsterInstance.local_temp(home) as instance:
            t0 = time.perf_counter()
            result = execute_job(reconstructable(all_tables_compact), instance=instance, run_config=run_config)
            seconds = time.perf_counter() - t0
    assert result.success, [e.message for e in result.all_events if e.is_failure]
    return seconds


def bench_dagster(sources: Sequence[str], work: pathlib.Path, files: int, rounds: int, max_concurrent: int) -> None:
    from tests.spark_servers import ConnectServer

    with ConnectServer.start(work / "connect", master="local[*]") as server:
        print(f"Spark Connect server {server.url} (pid {server.pid}) ready in {server.started_seconds:.1f} s")
        for r in range(rounds):
            for label, master, run_config in (
                ("in-process executor, local[*]", "local[*]", {}),
                (f"multiprocess executor (max_concurrent {max_concurrent}), Spark Connect", server.url,
                 {"execution": {"config": {"multiprocess": {"max_concurrent": max_concurrent}}}}),
            ):
                uris = fresh_copies(sources, work / "dagster")
                config = work / "tables.yaml"
                config.write_text(_tables_yaml(uris, master))
                seconds = _run_job(config, run_config)
                check_compacted(uris, files)
                print(f"round {r + 1}: {label}: {len(uris)} tables x {files} files in {seconds:.1f} s", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--part", choices=("runner", "dagster", "all"), default="all")
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-concurrent", type=int, default=2)
    args, _unknown = parser.parse_known_args(argv)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with scratch_dir("bench_scale_") as scratch:
        work = pathlib.Path(scratch)
        t0 = time.perf_counter()
        sources = build_tables(work, args.tables, args.files)
        print(f"{args.tables} tables x {args.files} files of {ROWS_PER_FILE} rows written in "
              f"{time.perf_counter() - t0:.1f} s; python {sys.version.split()[0]}, {os.cpu_count()} cores", flush=True)
        if args.part in ("runner", "all"):
            bench_runner(sources, work, args.files, args.rounds)
        if args.part in ("dagster", "all"):
            bench_dagster(sources, work, args.files, args.rounds, args.max_concurrent)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
