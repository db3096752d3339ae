"""The code location with many discovered tables: load time, sensor ticks and memory.

Small Delta tables (our writer: a create and one append each) are generated under a temporary
root as ``area{i % 10}/t{i}``, beside directories that are not tables (``area{k}/landing/raw``
holding a file), and a tables.yaml with one ``discover:`` entry points at the root. For each
size (default 2,000, 10,000 and 20,000 tables; the root grows from one size to the next) a fresh
Python process:

- imports ``definitions`` with ``$DELTA_MAINTENANCE_TABLES`` set (Dagster's imports, discovery,
  ``check_tables`` and ``build_definitions``: what ``dagster dev`` does to load the location),
  reporting the discovery and the rest apart;
- resolves the repository (``get_repository_def``) and its snapshot, what the webserver
  reads from a code location server;
- evaluates one tick of one table's log sensor (``build_sensor_context`` with a real
  ``instance_for_test`` and the table's resource), first (no cursor) and then with a new
  commit after the cursor;
- runs the health checks of that table (the fleet's checks job, the table's eight checks);
- evaluates one tick of ``fleet_advisor_sensor`` over every table (the defaults say
  ``advisor: {mode: auto}``), with the definitions' resources, how many tables it reached
  within its time budget, and the next ticks until one has reached every table (at most
  ``ADVISOR_TICKS``, ``$BENCH_FLEET_ADVISOR_TICKS``; no table moved: the reports are reused);
- evaluates the automation conditions (``dagster.evaluate_automation_conditions``) of every
  maintenance asset at once, and of the first automation sensor's assets (what one of its
  ticks evaluates: at most ``assets.automation.MAX_ASSETS_PER_SENSOR``);
- reports its peak RSS.

Dagster's default sensor tick timeout is 60 s (``dagster._grpc.utils.default_sensor_grpc_timeout``,
the gRPC deadline of a sensor evaluation; ``DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS`` overrides it).
The repository snapshot the webserver fetches at load has its own deadline
(180 s; ``DAGSTER_REPOSITORY_GRPC_TIMEOUT_SECONDS``).

Then, unless ``--no-s3``, the S3 stage (``s3_discovery``) at the same sizes. Last, each size's
figures against the targets at 10,000 tables (definitions load 30 s, repository snapshot 60 s,
discovery refresh on S3 60 s, advisor and automation ticks Dagster's 60 s, peak RSS 2 GB), as
ratios.

    python -m benchmarks.bench_fleet [--tables 2000,10000,20000] [--keep] [--shape partitions|assets]
                                     [--root DIR] [--no-s3]

Run it under ``flock /tmp/bench.lock``; ``--root /tmp/bench_fleet_root`` keeps the tables for the
next run. The default shape is the code location's (``partitions``); ``--shape assets`` (each
table its own assets) stops near 2,000 tables (``--tables 100,500,2000``). With ``partitions``
there is no per-table log sensor: "tick 1" is the discovery sensor's first tick (every table a new
partition), "tick 2" writing those partitions to the instance, the advisor ranks every partition, "autom." the
conditions of the partitioned assets over every partition (``evaluate_automation_conditions``, which
reads the partitions from the instance once per condition node), "autom.1" one tick of the automation
sensor as the code server evaluates it.

``--s3-discovery 10000[,20000]`` runs the S3 stage alone (``s3_discovery``): a discovery refresh
of that many tables on the S3-compatible server, and a load of the code location over them (the
requests it sends: the discovery's listings, and a read of each table listed under ``tables:``).

    python -m benchmarks.bench_fleet --s3-discovery 10000,20000
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.harness import argument_parser

REPO = Path(__file__).resolve().parent.parent
ADVISOR_TICKS = int(os.environ.get("BENCH_FLEET_ADVISOR_TICKS", "12"))  # ticks evaluated until one reaches all
# (figure, what it is held to, target) at 10,000 tables (seconds; the RSS in MB)
TARGETS = (("import_definitions_s", "definitions load", 30.0), ("snapshot_s", "repository snapshot", 60.0),
           ("s3_refresh_s", "discovery refresh on S3", 60.0), ("advisor_tick_s", "advisor tick", 60.0),
           ("automation_one_sensor_s", "automation tick", 60.0), ("peak_rss_mb", "peak RSS (MB)", 2048.0))


def generate(root: Path, start: int, stop: int) -> None:
    """Tables ``start..stop-1`` under ``root`` (``area{i % 10}/t{i}``), plus a non-table per area:
    one table written by our writer (a create and one append), copied byte for byte (tens of
    thousands of writes would take longer than the measurement)."""
    import pyarrow as pa

    from delta_core.write.table_writes import append, create_table

    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    template = root.parent / "table_template"  # beside the root: not discovered
    if not (template / "_delta_log").exists():
        shutil.rmtree(template, ignore_errors=True)
        table = create_table(str(template), schema)
        append(table, pa.table({"id": [0, 1], "name": ["a", "b"]}))
    for i in range(start, stop):
        target = root / f"area{i % 10}" / f"t{i}"
        shutil.rmtree(target, ignore_errors=True)  # a half-copied one from an interrupted run
        shutil.copytree(template, target)
    for k in range(10):
        landing = root / f"area{k}" / "landing" / "raw"
        landing.mkdir(parents=True, exist_ok=True)
        (landing / "dump.csv").write_text("id,name\n1,a\n")


def write_config(work: Path, *, shape: str = "partitions") -> Path:
    """tables.yaml over the root; ``shape``: ``fleet.discovered_as`` (each table its own assets, or
    one partition of the fleet's)."""
    path = work / "tables.yaml"
    path.write_text(f"fleet: {{discovered_as: {shape}}}\n"
                    "discover:\n  - root: lake\n    defaults:\n      compact: {target_size: 64KiB}\n"
                    "      zorder: {columns: [id]}\n      checkpoint: {interval: 10}\n"
                    "      advisor: {mode: auto}\n", encoding="utf-8")
    return path


def _already_made(lake: Path) -> int:
    """How many tables a kept root holds (``generate`` writes ``t0``.. in order)."""
    return sum(1 for _ in lake.glob("area*/t*/_delta_log")) if lake.exists() else 0


def _measure(config: str) -> dict[str, float | int]:
    """In a fresh process: import definitions, resolve the repository, one sensor tick, peak RSS."""
    os.environ["DELTA_MAINTENANCE_TABLES"] = config
    out: dict[str, float | int] = {}
    started = time.perf_counter()
    import dagster  # noqa: F401  (Dagster's own import cost, apart from ours)

    out["import_dagster_s"] = time.perf_counter() - started
    import resources.config as config_module

    t = time.perf_counter()
    loaded = config_module.load_config()
    out["discover_s"] = time.perf_counter() - t
    out["tables"] = len(loaded.tables)
    t = time.perf_counter()
    import definitions  # noqa: F401  (loads the config again: discovery, checks, build)

    out["import_definitions_s"] = time.perf_counter() - t
    out["load_total_s"] = time.perf_counter() - started
    defs = definitions.defs
    t = time.perf_counter()
    repo = defs.get_repository_def()
    out["resolve_s"] = time.perf_counter() - t
    from dagster._core.remote_representation.external_data import RepositorySnap

    t = time.perf_counter()
    RepositorySnap.from_def(repo)
    out["snapshot_s"] = time.perf_counter() - t
    out["jobs"] = len(repo.get_all_jobs())
    out["sensors"] = len(repo.sensor_defs)
    out["schedules"] = len(repo.schedule_defs)

    import pyarrow as pa
    from dagster import build_sensor_context, instance_for_test

    from delta_core.log.table import DeltaTable
    from delta_core.write.table_writes import append
    from sensors import sensor_name

    table = loaded.tables[len(loaded.tables) // 2]
    if loaded.fleet.partitioned:
        out.update(_partition_evaluations(defs, table.name))
        out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return out
    sensor_def = defs.resolve_sensor_def(sensor_name(table.name))
    resources = {k: repo.get_top_level_resources()[k] for k in sensor_def.required_resource_keys}
    with instance_for_test() as instance:
        t = time.perf_counter()
        with build_sensor_context(instance=instance, definitions=defs, resources=resources) as ctx:
            first = sensor_def.evaluate_tick(ctx)
        out["tick_first_s"] = time.perf_counter() - t
        append(DeltaTable(str(table.uri)), pa.table({"id": [0], "name": ["c"]}))
        t = time.perf_counter()
        with build_sensor_context(instance=instance, definitions=defs, resources=resources,
                                  cursor=first.cursor) as ctx:
            second = sensor_def.evaluate_tick(ctx)
        out["tick_new_commit_s"] = time.perf_counter() - t
        assert second.cursor == str(int(first.cursor or -1) + 1), (first.cursor, second.cursor)
        out.update(_fleet_evaluations(defs, instance, table.name))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def _fleet_evaluations(defs, instance, table_name: str) -> dict[str, float | int]:
    """The table's health checks run, one fleet advisor tick, the automation conditions."""
    import datetime

    from dagster import AssetSelection, evaluate_automation_conditions, materialize

    from assets.automation import DEFAULT_SENSOR_NAME
    from assets.health_checks import health_check_keys

    out: dict[str, float | int] = {}
    keys = health_check_keys(table_name)
    checks_def = defs.resolve_asset_graph().assets_def_for_key(keys[0])  # the table's multi_asset_check
    t = time.perf_counter()
    checks = materialize([checks_def], instance=instance,  # the definitions bound its resource
                         selection=AssetSelection.checks(*keys))
    out["checks_run_s"] = time.perf_counter() - t
    assert checks.success, checks
    evaluated = {e.asset_check_key for e in checks.get_asset_check_evaluations()}
    assert evaluated == set(keys), (evaluated, keys)

    out.update(_advisor_and_automation(defs, instance))
    at = datetime.datetime.now(datetime.UTC)
    sensor = defs.resolve_sensor_def(DEFAULT_SENSOR_NAME)
    t = time.perf_counter()
    evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=at,
                                   asset_selection=sensor.asset_selection)  # type: ignore[attr-defined]
    out["automation_one_sensor_s"] = time.perf_counter() - t
    return out


def _advisor_and_automation(defs, instance) -> dict[str, float | int]:
    """One fleet advisor tick and the next (no table moved), the automation conditions of every
    maintenance asset (``evaluate_automation_conditions``)."""
    import datetime

    from dagster import AssetKey, build_sensor_context, evaluate_automation_conditions

    from sensors.advisor import FLEET_ADVISOR_SENSOR

    out: dict[str, float | int] = {}
    top = defs.get_repository_def().get_top_level_resources()
    advisor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
    said = _AdvisorLog()
    cursor: str | None = None
    ticks: list[tuple[float, int]] = []
    while len(ticks) < ADVISOR_TICKS:  # until a tick reaches every table (no table moves meanwhile)
        said.not_reached = 0
        t = time.perf_counter()
        with build_sensor_context(instance=instance, definitions=defs, cursor=cursor,
                                  resources={k: top[k] for k in advisor.required_resource_keys}) as ctx:
            ctx.log.addHandler(said)  # the tick's own logger (Dagster's InstigationLogger)
            advised = advisor.evaluate_tick(ctx)
        ticks.append((time.perf_counter() - t, said.not_reached))
        cursor = advised.cursor
        if len(ticks) == 1:
            out["advisor_requests"] = len(advised.run_requests or [])
        if said.not_reached == 0 and len(ticks) > 1:
            break
    out["advisor_tick_s"], first_left = ticks[0]
    out["advisor_reached_first"] = out["tables_advised"] = _partitions_or_tables(defs, instance)
    out["advisor_reached_first"] -= first_left
    out["advisor_tick_again_s"] = ticks[1][0]
    out["advisor_ticks_to_all"] = next((i + 1 for i, (_, left) in enumerate(ticks) if left == 0), -1)
    out["advisor_tick_max_s"] = max(seconds for seconds, _ in ticks)
    t = time.perf_counter()
    every = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=datetime.datetime.now(datetime.UTC))
    out["automation_all_s"] = time.perf_counter() - t
    out["automation_assets"] = sum(1 for r in every.results if isinstance(r.key, AssetKey))
    out["automation_requested"] = every.total_requested
    return out


class _AdvisorLog(logging.Handler):
    """The advisor's count of tables a tick did not reach, from its log line."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.not_reached = 0

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"(\d+) table\(s\) not evaluated within this tick", record.getMessage())
        if found:
            self.not_reached = int(found.group(1))


def _partitions_or_tables(defs, instance) -> int:
    """How many tables the advisor ranks: the discovered partitions, or the listed tables."""
    from delta_core.config.generated_names import DISCOVERED_PARTITIONS

    partitions = instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)
    return len(partitions) if partitions else sum(1 for s in defs.sensors if s.name.endswith("_delta_log_sensor"))


def _partition_evaluations(defs, table_name: str) -> dict[str, float | int]:
    """With discovered tables as partitions: the discovery sensor's first tick (every table a new
    partition), one table's health checks (one partition of ``discovered_checks``), the automation
    conditions of the partitioned assets over every partition (``evaluate_automation_conditions``, which
reads the partitions from the instance once per condition node), "autom.1" one tick of the automation
sensor as the code server evaluates it."""
    from dagster import build_sensor_context, instance_for_test

    from assets.automation import DEFAULT_SENSOR_NAME
    from assets.discovered import partition_tags
    from delta_core.config.generated_names import DISCOVERED_CHECKS_JOB, DISCOVERED_PARTITIONS
    from sensors.discovered_log import DISCOVERED_LOG_SENSOR
    from sensors.discovery import DISCOVERY_SENSOR

    out: dict[str, float | int] = {}
    top = defs.get_repository_def().get_top_level_resources()
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    with instance_for_test() as instance:
        t = time.perf_counter()
        with build_sensor_context(instance=instance, definitions=defs,
                                  resources={k: top[k] for k in sensor.required_resource_keys}) as ctx:
            found = sensor.evaluate_tick(ctx)
        out["tick_first_s"] = time.perf_counter() - t  # the discovery tick: walk and partition requests
        t = time.perf_counter()
        for request in found.dynamic_partitions_requests or ():
            instance.add_dynamic_partitions(DISCOVERED_PARTITIONS, list(request.partition_keys or ()))
        out["tick_new_commit_s"] = time.perf_counter() - t  # the partitions written to the instance
        t = time.perf_counter()
        checks = defs.resolve_job_def(DISCOVERED_CHECKS_JOB).execute_in_process(
            instance=instance, tags=partition_tags(table_name))
        out["checks_run_s"] = time.perf_counter() - t
        assert checks.success, checks
        out.update(_advisor_and_automation(defs, instance))
        # The automation sensor's tick as the code server evaluates it (its partition loading
        # reads the partitions once; dagster.evaluate_automation_conditions reads them per node).
        repository = defs.get_repository_def()
        t = time.perf_counter()
        repository.get_sensor_def(DEFAULT_SENSOR_NAME).evaluate_tick(
            build_sensor_context(instance=instance, repository_def=repository))
        out["automation_one_sensor_s"] = time.perf_counter() - t
        # last: the health figures it computes are shared through the instance (the advisor's too)
        log_sensor = defs.resolve_sensor_def(DISCOVERED_LOG_SENSOR)  # first tick: logs read for 40 s at most
        t = time.perf_counter()
        with build_sensor_context(instance=instance, definitions=defs,
                                  resources={k: top[k] for k in log_sensor.required_resource_keys}) as ctx:
            logged = log_sensor.evaluate_tick(ctx)
        out["log_tick_s"] = time.perf_counter() - t
        out["log_tick_tables"] = len(logged.asset_events)
    return out


def s3_lake_objects(prefix: str, start: int, stop: int) -> dict[str, bytes]:
    """The objects (key: body) of tiny tables ``start..stop-1`` under the key prefix ``prefix``
    (``area{i % 10}/t{i}``, every tenth one level deeper, ``area9/nested/t{i}``): a first commit
    (protocol, metaData, one add) and its data file; beside them, in each area, prefixes that
    hold no table (raw files, a ``_SUCCESS`` marker, a Parquet export) and a file at the top."""
    import io
    import uuid

    import pyarrow as pa
    import pyarrow.parquet as pq

    from delta_core.model.actions import Add, Metadata, Protocol, encode_actions

    data = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([0, 1], pa.int64())}), data)
    parquet = data.getvalue()
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    stats = json.dumps({"numRecords": 2, "minValues": {"id": 0}, "maxValues": {"id": 1}, "nullCount": {"id": 0}})
    now = int(time.time() * 1000)
    objects: dict[str, bytes] = {}
    for i in range(start, stop):
        table = f"{prefix}/area{i % 10}/{'nested/' if i % 10 == 9 else ''}t{i}"
        part = f"part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        objects[f"{table}/_delta_log/00000000000000000000.json"] = encode_actions([
            Protocol(1, 2), Metadata(id=str(uuid.uuid4()), schema_string=schema, created_time=now),
            Add(part, {}, len(parquet), now, True, stats=stats)])
        objects[f"{table}/{part}"] = parquet
    for k in range(10):
        objects[f"{prefix}/area{k}/landing/raw/dump.csv"] = b"id,name\n1,a\n"
        objects[f"{prefix}/area{k}/landing/_SUCCESS"] = b""
        objects[f"{prefix}/area{k}/exports/2024/part-0.parquet"] = parquet
    objects[f"{prefix}/README.md"] = b"the lake\n"
    return objects


def _measure_s3_load(config: str) -> dict[str, float | int]:
    """In a fresh process: the code location's load over the tables of ``config`` (``import
    definitions``: Dagster's imports, discovery, the checks of the listed tables, the build)."""
    import dagster  # noqa: F401  (Dagster's own import cost, apart from the load's)

    os.environ["DELTA_MAINTENANCE_TABLES"] = config
    started, cpu = time.perf_counter(), time.process_time()
    import definitions

    seconds, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    return {"seconds": seconds, "cpu_s": cpu_s, "jobs": len(definitions.defs.get_repository_def().get_all_jobs()),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _measure_s3_discovery(config: str) -> dict[str, float | int]:
    """In a fresh process: one discovery refresh as the code location does it (``load_config``)."""
    import resources.config as config_module

    started, cpu = time.perf_counter(), time.process_time()
    loaded = config_module.load_config(config)
    return {"tables": len(loaded.tables), "seconds": time.perf_counter() - started,
            "cpu_s": time.process_time() - cpu, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def s3_discovery(sizes: Sequence[int]) -> dict[int, float]:
    """A discovery refresh of each of ``sizes`` tables on the moto server, then another after 10
    new tables, then a load of the code location (``import definitions``) over those: tables
    found, seconds, CPU seconds of the process and of the server, HTTP requests the server
    answered, peak RSS of the process. Returns each size's first refresh, in seconds.

    The server runs in a child process with the sorted-index listing of ``bench_vacuum_s3``
    (stock moto scans every key of the bucket for each listing page; S3 does not), and the
    objects are put through its backend (``MotoChild.load``). Each refresh
    runs in a fresh process through ``resources.config.load_config``, the code location's reader;
    the load, in another, imports ``definitions`` (every table a partition, ``zorder`` on ``id``
    in the root's defaults: what the load checks against a table's schema, had it read one)."""
    import s3fs

    from benchmarks.bench_vacuum_s3 import start_moto

    moto, options = start_moto(indexed_listing=True)
    fs = s3fs.S3FileSystem(**options)
    work = Path(tempfile.mkdtemp(prefix="bench_fleet_s3_"))
    refreshed: dict[int, float] = {}
    try:
        print(f"{'tables':>7} {'found':>7} {'refresh':>9} {'CPU':>7} {'server':>7} {'requests':>9} {'RSS MB':>7}   "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for n in sizes:
            bucket = f"fleet-{n}"
            fs.mkdir(bucket)
            t = time.perf_counter()
            moto.load(bucket, s3_lake_objects("lake", 0, n))
            generated = time.perf_counter() - t
            config = work / f"tables-{n}.yaml"
            config.write_text(
                f"discover:\n  - root: s3://{bucket}/lake\n    defaults:\n      storage_options:\n"
                f"        key: testing\n        secret: testing\n"
                f'        client_kwargs: {{endpoint_url: "{moto.endpoint}"}}\n'
                f"      zorder: {{columns: [id]}}\n", encoding="utf-8")
            for added, label in ((0, f"generated in {generated:.1f} s"), (10, "after 10 new tables")):
                if added:
                    moto.load(bucket, s3_lake_objects("lake", n, n + added))
                before, server = moto.requests(), moto.cpu_seconds()
                r = _child(["--measure-s3-discovery", str(config)])
                requests, server = moto.requests() - before, moto.cpu_seconds() - server
                assert r["tables"] == n + added, r
                refreshed.setdefault(n, r["seconds"])
                print(f"{n + added:>7} {r['tables']:>7} {r['seconds']:>8.2f}s {r['cpu_s']:>6.2f}s {server:>6.2f}s "
                      f"{requests:>9} {r['peak_rss_mb']:>7.0f}   ({label}; load average {os.getloadavg()[0]:.1f})",
                      flush=True)
            before, server = moto.requests(), moto.cpu_seconds()
            r = _child(["--measure-s3-load", str(config)])
            requests, server = moto.requests() - before, moto.cpu_seconds() - server
            print(f"{n + 10:>7} {'':>7} {r['seconds']:>8.2f}s {r['cpu_s']:>6.2f}s {server:>6.2f}s {requests:>9} "
                  f"{r['peak_rss_mb']:>7.0f}   (the code location's load: import definitions; "
                  f"load average {os.getloadavg()[0]:.1f})", flush=True)
    finally:
        moto.close()
        shutil.rmtree(work, ignore_errors=True)
    return refreshed


def print_targets(figures: dict[int, dict[str, float]]) -> None:
    """Each size's figures against the targets at 10,000 tables (``TARGETS``), as ratios."""
    print("targets (held at 10,000 tables): figure / target, ratio")
    for n, r in sorted(figures.items()):
        said = []
        for key, what, target in TARGETS:
            if key in r:
                ratio = r[key] / target
                said.append(f"{what} {r[key]:.1f} / {target:g} = {ratio:.2f}x{'' if ratio <= 1 else ' MISSED'}")
        print(f"{n:>6}: " + "; ".join(said), flush=True)


def _child(args: list[str]) -> dict[str, float | int]:
    """The last line of ``python -m benchmarks.bench_fleet ARGS`` run from the repository, as JSON."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-m", "benchmarks.bench_fleet", *args],
                          cwd=REPO, env=env, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    parser.add_argument("--tables", default="2000,10000,20000", help="comma-separated sizes, ascending")
    parser.add_argument("--keep", action="store_true", help="keep the generated root")
    parser.add_argument("--s3-discovery", metavar="SIZES", help="comma-separated table counts: time a discovery "
                        "refresh on the S3-compatible server instead (s3_discovery)")
    parser.add_argument("--shape", choices=("partitions", "assets"), default="partitions",
                        help="fleet.discovered_as: one partition of the fleet's assets per table (the code "
                             "location's default), or each table its own assets (measure 100,500,2000 with assets)")
    parser.add_argument("--no-s3", action="store_true", help="leave out the S3 stage (s3_discovery)")
    parser.add_argument("--root", type=Path, help="generate the tables under this folder and keep them: a later "
                                                  "run with the same --root reuses those already written")
    parser.add_argument("--measure", metavar="CONFIG", help=argparse.SUPPRESS)  # the child process
    parser.add_argument("--measure-s3-discovery", metavar="CONFIG", help=argparse.SUPPRESS)  # its child process
    parser.add_argument("--measure-s3-load", metavar="CONFIG", help=argparse.SUPPRESS)  # its child process
    args, _unknown = parser.parse_known_args(argv)
    if args.measure:
        print(json.dumps(_measure(args.measure)))
        return 0
    if args.measure_s3_discovery:
        print(json.dumps(_measure_s3_discovery(args.measure_s3_discovery)))
        return 0
    if args.measure_s3_load:
        print(json.dumps(_measure_s3_load(args.measure_s3_load)))
        return 0
    if args.s3_discovery:
        refreshed = s3_discovery([int(s) for s in args.s3_discovery.split(",")])
        print_targets({n: {"s3_refresh_s": seconds} for n, seconds in refreshed.items()})
        return 0
    sizes = sorted(int(s) for s in args.tables.split(","))
    work = args.root or Path(tempfile.mkdtemp(prefix="bench_fleet_"))
    work.mkdir(parents=True, exist_ok=True)
    figures: dict[int, dict[str, float]] = {}
    try:
        config = write_config(work, shape=args.shape)
        made = _already_made(work / "lake")
        if made > sizes[0]:
            raise SystemExit(f"{work} holds {made} tables, more than {sizes[0]}: give a fresh --root or larger sizes")
        print(f"{'tables':>6} {'discover':>9} {'load':>7} {'resolve':>8} {'snapshot':>9} {'tick 1':>7} "
              f"{'tick 2':>7} {'checks':>7} {'advisor':>8} {'reached':>8} {'all in':>6} {'again':>6} {'max':>6} "
              f"{'autom.':>7} {'autom.1':>8} {'jobs':>5} {'sensors':>8} {'RSS MB':>7}", flush=True)
        for n in sizes:
            t = time.perf_counter()
            generate(work / "lake", made, n)
            made = max(made, n)
            generated = time.perf_counter() - t
            r = _child(["--measure", str(config)])
            assert r["tables"] == n, r
            figures[n] = {k: float(v) for k, v in r.items()}
            if "log_tick_s" in r:
                print(f"{n:>6} the discovered tables' log sensor's first tick: {r['log_tick_s']:.1f} s, "
                      f"{r['log_tick_tables']:.0f} tables observed", flush=True)
            print(f"{n:>6} {r['discover_s']:>8.2f}s {r['import_definitions_s']:>6.2f}s {r['resolve_s']:>7.2f}s "
                  f"{r['snapshot_s']:>8.2f}s {r['tick_first_s']:>6.3f}s {r['tick_new_commit_s']:>6.3f}s "
                  f"{r['checks_run_s']:>6.2f}s {r['advisor_tick_s']:>7.2f}s {r['advisor_reached_first']:>8} "
                  f"{r['advisor_ticks_to_all']:>6} {r['advisor_tick_again_s']:>5.2f}s {r['advisor_tick_max_s']:>5.1f}s "
                  f"{r['automation_all_s']:>6.2f}s "
                  f"{r['automation_one_sensor_s']:>7.2f}s {r['jobs']:>5} {r['sensors']:>8} {r['peak_rss_mb']:>7.0f}"
                  f"   (generated in {generated:.0f} s; import dagster {r['import_dagster_s']:.1f} s; "
                  f"load average {os.getloadavg()[0]:.1f})", flush=True)
        print("load: import definitions (discovery, check_tables, build_definitions); "
              + ("tick 1: the discovery sensor's first tick, tick 2: its partitions written to the instance; "
                 if args.shape == "partitions" else
                 "tick 1: a table's log sensor with no cursor, tick 2: after one new commit; ")
              + "checks: one table's health checks run; advisor: one fleet_advisor_sensor tick, reached: the tables "
              f"it evaluated, all in: the ticks until one reached every table (-1: not in {ADVISOR_TICKS}), again: "
              "the second tick, max: the longest; autom.: the automation conditions of every maintenance asset "
              "(evaluate_automation_conditions), autom.1: one automation sensor's tick. Dagster's sensor tick "
              "timeout: 60 s.", flush=True)
    finally:
        if args.keep or args.root:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if not args.no_s3:
        for n, seconds in s3_discovery(sizes).items():
            figures.setdefault(n, {})["s3_refresh_s"] = seconds
    print_targets(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
