"""Demo: create a small-file Delta table, run its full maintenance job, print before/after.

    python -m demo [--root DIR] [--rows N] [--appends N] [--days N]

The table goes to ``DIR/demo_data/events`` (DIR defaults to the repository), the Dagster
instance to ``$DAGSTER_HOME`` or ``DIR/.dagster_home``; its runs then show in the UI started
with the same ``DAGSTER_HOME``. Run it from the repository root (``scripts/demo.sh`` does): the
code location it drives (``definitions``, ``assets``, ...) is imported from there, not installed.

It starts five runs, in this process, and names each: it observes the table and runs its health
checks (as the log sensor does on its first tick), refreshes the downstream ``daily_summary``
from it, runs the full maintenance job (which runs the checks again after its steps), and
observes the table again: the data version has not moved, so the summary stays in sync. It
prints each check's status before and after maintenance. It then does the same for the small
tables under ``DIR/demo_data/lake``, which tables.yaml discovers as partitions of the
``discovered_tables`` assets: a discovery sensor tick adds their partitions, and each table gets
a run of its checks and one of its full maintenance (a run per partition); the fleet report over
every table ends it. The table's writer leaves checkpoints to maintenance (``delta.checkpointInterval``
``WRITER_CHECKPOINT_INTERVAL``), so the job's checkpoint step finds one due by tables.yaml's
interval and writes it.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import sys
import time

from delta_core.maintenance.operations import CHECKPOINT, VACUUM

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
TABLE_NAME = "events"
TABLE_DIR = pathlib.Path("demo_data") / TABLE_NAME
LAKE_DIR = pathlib.Path("demo_data") / "lake"  # tables.yaml discovers every table under it
# The lake's small-file tables (path under the root, days): discovered as area0__orders, ...
LAKE_TABLES = (("area0/orders", 2), ("area0/customers", 1), ("area1/clicks", 3))
LAKE_ROWS, LAKE_APPENDS = 3000, 15
DEMO_MAX_ADVISED_RUNS = 2  # advisor runs in progress at once, across tables
DEMO_SPARK_POOL_LIMIT = 1  # Spark steps at once (local[*]): the pools' default limit
# The demo's writer checkpoints this rarely, as writers that leave checkpoints to a maintenance
# job do; tables.yaml's checkpoint.interval (10) then makes the job's checkpoint step due.
WRITER_CHECKPOINT_INTERVAL = 1000
QUIET_RUN_CONFIG = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m demo", description=__doc__.splitlines()[0])
    p.add_argument("--root", type=pathlib.Path, default=REPO_ROOT,
                   help="folder for demo_data/ and .dagster_home/ (default: the repository)")
    p.add_argument("--rows", type=int, default=40_000, help="rows to write (default 40000)")
    p.add_argument("--appends", type=int, default=60,
                   help="append commits; each writes one small file per day (default 60)")
    p.add_argument("--days", type=int, default=5, help="days = partitions (default 5)")
    p.add_argument("--delete-fraction", type=float, default=0.1,
                   help="share of files removed by DELETE commits (default 0.1)")
    p.add_argument("--vacuum-retention-hours", type=float, default=0.0,
                   help="vacuum retention for the demo run (default 0: delete every unreferenced "
                        "file now; tables.yaml keeps the safe 168 hours for scheduled runs)")
    a = p.parse_args(argv)
    if a.rows < a.appends or a.appends < 1 or a.days < 1:
        p.error("need --appends >= 1, --days >= 1 and --rows >= --appends")
    return a


def _prepare_config(root: pathlib.Path) -> pathlib.Path:
    """The tables.yaml the demo uses: the repository's, or a copy beside ``root``'s table."""
    source = REPO_ROOT / "tables.yaml"
    if root.resolve() == REPO_ROOT:
        return source
    target = root / "tables.yaml"
    shutil.copyfile(source, target)
    return target


def _ensure_instance(home: pathlib.Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    instance_yaml = home / "dagster.yaml"
    if not instance_yaml.exists():
        # A new instance bounds the advisor's runs with Dagster's run queue (sensors.advisor), and
        # the Spark steps to one at a time: each local[*] step takes every core (docs/automation.md, "The Spark pool").
        import yaml

        from sensors.advisor import advisor_run_limits

        limits = advisor_run_limits(max_concurrent_runs=DEMO_MAX_ADVISED_RUNS)
        limits["pools"] = {"default_limit": DEMO_SPARK_POOL_LIMIT}
        instance_yaml.write_text(yaml.safe_dump({"concurrency": limits}, sort_keys=False), encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)


def short_retention_notice(retention_hours: float, table_hours: float) -> str | None:
    """What the demo prints when its vacuum retention is below the table's: it then opts in
    (``force``), as tables.yaml would need ``allow_short_retention: true``."""
    if retention_hours >= table_hours:
        return None
    return (f"Note: this run vacuums with a SHORT retention ({retention_hours:g} hours, below the table's "
            f"{table_hours:g} hours),\n  opting in with force=True: safe only because nothing else reads or "
            "writes the demo table.\n  Scheduled runs keep tables.yaml's retention; a shorter one there needs "
            "allow_short_retention: true.")


def _line(label: str, before: str, after: str) -> str:
    return f"  {label:<22}{before:>16}  ->  {after:<16}"


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    root = args.root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    table_path = root / TABLE_DIR
    home = pathlib.Path(os.environ.get("DAGSTER_HOME") or root / ".dagster_home").resolve()
    _ensure_instance(home)
    config_path = _prepare_config(root)
    os.environ["DELTA_MAINTENANCE_TABLES"] = str(config_path)

    from dagster import DagsterInstance

    from assets.maintenance import maintenance_asset_key
    from assets.metadata import FileStats, human_bytes
    from definitions import build_definitions
    from delta_core.model.table_properties import CHECKPOINT_INTERVAL
    from demo.table import build_demo_table
    from jobs import checks_job_name, downstream_job_name, maintenance_job_name, observe_job_name
    from resources.config import load_config
    from schedules import op_run_config

    if table_path.exists():
        shutil.rmtree(table_path)
    t0 = time.monotonic()
    print(f"Creating {table_path} ({args.rows} rows, {args.appends} appends x {args.days} days) ...",
          flush=True)
    table = build_demo_table(table_path, name=TABLE_NAME, rows=args.rows, appends=args.appends,
                             days=args.days, delete_fraction=args.delete_fraction,
                             properties={CHECKPOINT_INTERVAL: str(WRITER_CHECKPOINT_INTERVAL)})
    before = FileStats.of(table.snapshot())
    lake_created = _build_lake(root / LAKE_DIR)
    config = load_config(config_path)
    policy = config.table(TABLE_NAME)
    checkpoint = table.last_checkpoint_version()
    print(f"  created in {time.monotonic() - t0:.1f} s: version {before.version}, "
          f"{before.num_files} files, {human_bytes(before.total_bytes)}, "
          f"{'no checkpoint' if checkpoint is None else f'last checkpoint at version {checkpoint}'}: its writer "
          f"checkpoints\n  every {WRITER_CHECKPOINT_INTERVAL} commits ({CHECKPOINT_INTERVAL}), maintenance "
          f"every {policy.policies[CHECKPOINT.name].interval} (tables.yaml checkpoint.interval)", flush=True)
    print(lake_created, flush=True)

    defs = build_definitions(config)
    vacuum = defs.resolve_assets_def(maintenance_asset_key(TABLE_NAME, VACUUM.name))
    notice = short_retention_notice(args.vacuum_retention_hours,
                                    table.snapshot().properties.deleted_file_retention.total_seconds() / 3600.0)
    if notice is not None:
        print(notice, flush=True)
    instance = DagsterInstance.get()
    print(f"\nRuns started in the Dagster instance {home} (in this process):", flush=True)

    observe_job = observe_job_name(TABLE_NAME)
    observed = _run(defs, instance, observe_job, lambda result, _: _observation_text(result))
    if not observed.success:
        return 1
    checked = _run(defs, instance, checks_job_name(TABLE_NAME), lambda result, _: _checks_text(result))
    if not checked.success:
        return 1
    refreshed = _run(defs, instance, downstream_job_name(TABLE_NAME), lambda result, _: _summary_text(result))
    if not refreshed.success:
        return 1
    job_name = maintenance_job_name(TABLE_NAME)
    result = _run(defs, instance, job_name, lambda _, seconds: f"{', '.join(policy.operations)} in {seconds:.1f} s",
                  op_run_config(vacuum, {"retention_hours": args.vacuum_retention_hours, "force": notice is not None}))
    if not result.success:
        return 1
    observed_after = _run(defs, instance, observe_job,
                          lambda result, _: _observation_text(result, previous=_observation(observed)))
    if not observed_after.success:
        return 1

    after = FileStats.of(table.snapshot())
    print()
    print(f"Delta maintenance of '{TABLE_NAME}' — before / after")
    print(_line("Delta version", str(before.version), str(after.version)))
    print(_line("live files", str(before.num_files), str(after.num_files)))
    print(_line("total size", human_bytes(before.total_bytes), human_bytes(after.total_bytes)))
    print(_line("median file size", human_bytes(before.median_file_bytes), human_bytes(after.median_file_bytes)))
    print(_line("partitions", str(before.num_partitions), str(after.num_partitions)))
    print()
    print(f"Health checks of {TABLE_NAME}/delta_table, before -> after {job_name}:")
    for line in _check_lines({c: v for (_, c), v in _check_statuses(checked).items()},
                             {c: v for (_, c), v in _check_statuses(result).items()}):
        print(line)
    print()
    print(f"Per step of {job_name}:")
    for op in policy.operations:
        node = defs.resolve_assets_def(maintenance_asset_key(TABLE_NAME, op)).node_def.name
        for mat in result.asset_materializations_for_node(node):
            print(f"  {op:<11} " + _step_line(mat.metadata))
    print()
    lake = [t.name for t in config.tables if t.discovered_under is not None]
    if lake and not _maintain_lake(defs, instance, config, lake):
        return 1
    tables_env = "" if config_path == REPO_ROOT / "tables.yaml" else f" DELTA_MAINTENANCE_TABLES={config_path}"
    print(f"Dagster UI:  source .venv/bin/activate; DAGSTER_HOME={home}{tables_env} \\")
    print("             dg dev -h 127.0.0.1 -p 3000")
    print(f"             then open http://127.0.0.1:3000/locations/delta_maintenance/asset-groups/{TABLE_NAME}")
    return 0


def _build_lake(lake: pathlib.Path) -> str:
    """The discovered tables: small-file tables under ``lake`` (and a folder that is no table);
    the line to print about them."""
    from demo.table import build_demo_table

    if lake.exists():
        shutil.rmtree(lake)
    for path, days in LAKE_TABLES:
        build_demo_table(lake / path, name=path.replace("/", "__"), rows=LAKE_ROWS, appends=LAKE_APPENDS,
                         days=days, delete_fraction=0.0)
    (lake / "area1" / "staging").mkdir(parents=True)  # no _delta_log: never a table
    (lake / "area1" / "staging" / "notes.txt").write_text("not a Delta table\n", encoding="utf-8")
    return f"Created {len(LAKE_TABLES)} small-file tables under {lake} (tables.yaml discovers them)"


def _maintain_lake(defs, instance, config, lake: list[str]) -> bool:
    """The discovered tables, partitions of the ``discovered_tables`` assets: a tick of the discovery
    sensor adds a partition per table (as the daemon does); then per table, a run of one partition
    each, its health checks (``discovered_checks``) and its full maintenance
    (``discovered_maintenance``, which checks it again last); then the fleet report over every
    table, printed."""
    from dagster import AddDynamicPartitionsRequest, build_sensor_context

    from delta_core.config.generated_names import DISCOVERED_PARTITIONS
    from fleet.report import FLEET_REPORT_JOB, report_text
    from sensors.discovery import DISCOVERY_SENSOR, apply_partition_requests

    print(f"Discovered tables under {LAKE_DIR}: one partition each of discovered_tables/*, one run per table:",
          flush=True)
    with build_sensor_context(instance=instance, definitions=defs) as context:
        tick = defs.resolve_sensor_def(DISCOVERY_SENSOR).evaluate_tick(context)
    requests = tick.dynamic_partitions_requests or ()
    apply_partition_requests(instance, requests)
    added = sum(len(r.partition_keys) for r in requests if isinstance(r, AddDynamicPartitionsRequest))
    print(f"  {DISCOVERY_SENSOR:<26} tick: {added} partitions added, now "
          f"{', '.join(sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)))}", flush=True)
    before: dict[tuple[str, str], tuple[str, str]] = {}
    after: dict[tuple[str, str], tuple[str, str]] = {}
    for name in lake:
        checked, maintained = _maintain_partition(defs, instance, name, config.table(name).operations)
        if not (checked.success and maintained.success):
            return False
        before |= _check_statuses(checked)
        after |= _check_statuses(maintained)
    print("  Health checks, before -> after discovered_maintenance:")
    for name in lake:
        mine = sorted(check for table, check in before if table == name)
        changed = [f"{c} {before[name, c][0]} -> {after[name, c][0]}" for c in mine
                   if before[name, c][0] != "pass" or after[name, c][0] != "pass"]
        print(f"    {name:<18} {', '.join(changed) or 'all pass'}; {len(mine) - len(changed)} other checks pass")
    report = _run(defs, instance, FLEET_REPORT_JOB, lambda _, seconds: f"in {seconds:.1f} s")
    if not report.success:
        return False
    (materialization,) = [e.materialization for e in report.get_asset_materialization_events()]
    print("Fleet report (asset fleet/report):")
    print(report_text(materialization.metadata["report"].value.records))
    print()
    return True


def _maintain_partition(defs, instance, name: str, operations: tuple[str, ...]):
    """The runs of one discovered table (its partition): its checks, then its full maintenance."""
    from assets.discovered import partition_tags
    from jobs import DISCOVERED_CHECKS_JOB, DISCOVERED_MAINTENANCE_JOB

    checked = _run(defs, instance, DISCOVERED_CHECKS_JOB, lambda result, _: f"{name}: {_checks_text(result)}",
                   tags=partition_tags(name))
    if not checked.success:
        return checked, checked
    return checked, _run(defs, instance, DISCOVERED_MAINTENANCE_JOB,
                         lambda _, seconds: f"{name}: {', '.join(operations)} in {seconds:.1f} s", partition_key=name)


def _run(defs, instance, job_name: str, describe, run_config: dict | None = None, *,
         partition_key: str | None = None, tags: dict[str, str] | None = None):
    """Run ``job_name`` in this process (of one partition, by ``partition_key`` or by ``tags`` for a
    job of checks alone, as a sensor's run of a discovered table's job is), printing one line: the
    job, its run id (as the UI shortens it), the outcome and ``describe(result, seconds)``; after a
    failure, the failed steps' errors instead."""
    print(f"  {job_name:<26} ", end="", flush=True)
    started = time.monotonic()
    result = defs.resolve_job_def(job_name).execute_in_process(
        instance=instance, run_config=(run_config or {}) | QUIET_RUN_CONFIG, raise_on_error=False,
        partition_key=partition_key, tags=tags)
    if result.success:
        print(f"{result.run_id[:8]}  succeeded  {describe(result, time.monotonic() - started)}", flush=True)
        return result
    print(f"{result.run_id[:8]}  FAILED", flush=True)
    for event in result.get_step_failure_events():
        print(f"    step {event.step_key} failed: {event.event_specific_data.error.message.strip()}")
    return result


def _observation(result):
    (observation,) = [e.asset_observation_data.asset_observation for e in result.get_asset_observation_events()]
    return observation


def _observation_text(result, *, previous=None) -> str:
    """``<table>/delta_table``'s Delta and data versions; after the ``previous`` observation,
    whether the data version moved (assets computed from it are then unsynced)."""
    observation = _observation(result)
    text = (f"{observation.asset_key.to_user_string()} at version {observation.metadata['delta_version'].value}, "
            "data version ")
    if previous is None:
        return text + observation.data_version
    if observation.data_version == previous.data_version:
        return text + f"still {observation.data_version}: daily_summary in sync"
    return text + f"{observation.data_version}: assets computed from it are unsynced"


def _check_statuses(result) -> dict[tuple[str, str], tuple[str, str]]:
    """Each check evaluation of a run by (table, check): ``pass``/``WARN``/``ERROR`` and the
    recommended operation; a discovered table is its check's partition."""
    return {(e.partition or e.asset_key.path[0], e.check_name): ("pass" if e.passed else e.severity.value,
                                                  str(e.metadata["recommended_operation"].value))
            for e in result.get_asset_check_evaluations()}


def _checks_text(result) -> str:
    statuses = _check_statuses(result)
    several = len({table for table, _ in statuses}) > 1
    failing = [f"{f'{table}.' if several else ''}{name} {status}"
               for (table, name), (status, _) in statuses.items() if status != "pass"]
    return f"{len(failing)} of {len(result.get_asset_check_evaluations())} checks fail: {', '.join(failing) or 'none'}"


def _check_lines(before: dict[str, tuple[str, str]], after: dict[str, tuple[str, str]]) -> list[str]:
    """One line per check that failed before or after (with the operation it asked for), then
    how many passed both times."""
    lines = [f"  {name:<19}{status:>6}  ->  {after[name][0]:<6}" + (f"  ({op})" if op != "none" else "")
             for name, (status, op) in before.items() if status != "pass" or after[name][0] != "pass"]
    calm = len(before) - len(lines)
    return lines + ([f"  {calm} other checks pass before and after"] if calm else [])


def _summary_text(result) -> str:
    (materialization,) = [e.materialization for e in result.get_asset_materialization_events()]
    meta = materialization.metadata
    return (f"{materialization.asset_key.to_user_string()}: {meta['total_rows'].value:,} rows over "
            f"{meta['days'].value} days, from version {meta['source_delta_version'].value}")


def _step_line(metadata) -> str:
    """The step's one summary line, as the command line prints it (``report.summary_line``)."""
    from assets.maintenance import SUMMARY_LINE_KEY

    return str(metadata[SUMMARY_LINE_KEY].value)


if __name__ == "__main__":
    sys.exit(main())
