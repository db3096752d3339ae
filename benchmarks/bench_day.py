"""A simulated day of writers and automated maintenance on one table: rewrite amplification.

A fake clock runs a day in ``--ticks`` ticks of ``--tick-minutes`` (default 96 of 15 minutes).
Each tick:

1. the writer appends ``--rows`` rows (``delta_core``, in-commit timestamps on; each row an
   ``id`` the simulation counts from 0) and, every ``--delete-every`` ticks, deletes
   ``--delete-rows`` consecutive earlier ids as Delta Spark's DELETE does on a table with
   deletion vectors: the files stay, a vector hides the rows (PROTOCOL.md "Deletion Vectors");
2. the table's log sensor ticks, as the Dagster daemon would run it, and the runs it requests
   run (the health checks on each new version, a checkpoint when due);
3. the maintenance assets' automation conditions are evaluated at the tick's time
   (``dagster.evaluate_automation_conditions`` on a real instance, over the code location built
   from a tables.yaml with ``advisor: {mode: auto}`` and the default policy, compaction's target
   scaled to the day's data, purge on), and the assets they request are materialized on the
   local Spark session, as the automation sensor's run would.

When the day ends the writers stop, and automation goes on for up to ``--settle-ticks`` more ticks
(default 8: two hours) until every health check passes or says its target is unreachable: a check
may fail at any instant of a busy day (the last appends, a cool-down running); the target is that
automation brings the table back, and the amplification counts those runs too.

Everything follows the fake clock: the table's commits (their timestamps, retention, expiry:
``build_definitions(clock=...)``), Dagster's events and runs (hence the cool-downs: Dagster's
``freeze_time``) and the cron ticks (the evaluation time).

At the end it prints rewrite amplification (``delta_core.health.amplification``: data-file bytes
added by maintenance commits per byte added by the writers), the most times any row was rewritten
(each maintenance commit's added files read for their ids), the runs per operation with their
history rows (bytes read and written, core-seconds), the rows against the writer's own count, the
first and last commit times and the health checks (as the writers stop, and at the end).
**Target: amplification <= 2.0 over the day, every check passing or unreachable at the end, the rows intact, every commit inside the day**;
exit status 1 naming each target missed.

    python -m benchmarks.bench_day [--ticks 96] [--tick-minutes 15] [--rows 2000]
        [--delete-every 6] [--delete-rows 600] [--settle-ticks 8] [--target-size 1MB]
        [--spark-master local[2]] [--seed 1] [--target 2.0] [--keep DIR]
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import os
import pathlib
import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from benchmarks.harness import argument_parser, scratch_dir, warm_spark

TABLE = "day"
CONFIG_ENV_VAR = "DELTA_MAINTENANCE_TABLES"
START = dt.datetime(2026, 3, 4, tzinfo=dt.UTC)  # a Wednesday: the weekly vacuum cron does not fall in it
AMPLIFICATION_TARGET = 2.0
# Commits at one instant get in-commit timestamps 1 ms apart (each after the previous one): the
# day's last tick may end that many milliseconds past it.
ICT_STEPS = dt.timedelta(seconds=1)
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}  # Dagster's per-event lines off
SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int64()), ("v", pa.float64()), ("s", pa.string())])


@dataclasses.dataclass(frozen=True, slots=True)
class DayOptions:
    ticks: int = 96
    tick_minutes: float = 15.0
    rows: int = 2000  # appended per tick
    delete_every: int = 6  # ticks between deletes (0: none)
    delete_rows: int = 600  # consecutive ids per delete
    settle_ticks: int = 8  # the most ticks automation gets after the writers stop, to pass the checks
    target_size: str = "1MB"  # compaction's target: about a dozen ticks of appends per file
    spark_master: str = "local[2]"
    seed: int = 1
    target: float = AMPLIFICATION_TARGET
    keep: str | None = None


class SimClock:
    """The simulation's now: a ``delta_core`` clock (epoch ms) and a POSIX-seconds one."""

    def __init__(self, start: dt.datetime) -> None:
        self.now = start

    def millis(self) -> int:
        return int(self.now.timestamp() * 1000)

    def seconds(self) -> float:
        return self.now.timestamp()

    def advance(self, minutes: float) -> None:
        self.now += dt.timedelta(minutes=minutes)


@dataclasses.dataclass(frozen=True, slots=True)
class DayResult:
    options: DayOptions
    seconds: float
    writer_bytes: int
    maintenance_bytes: int
    amplification: float | None
    max_rewrites: int  # the most times one row was rewritten
    rows_rewritten: int  # rows rewritten at least once
    rows_expected: int
    rows_read: int
    commit_times: tuple[dt.datetime, dt.datetime]  # the first and last commit's (in-commit timestamps)
    day: tuple[dt.datetime, dt.datetime]  # the simulated day
    runs: dict[str, int]  # maintenance runs materialized, per operation
    history: dict[str, dict[str, float]]  # per operation: the history rows' totals
    at_day_end: dict[str, str]  # check name -> "pass", "unreachable: reason" or "FAIL", as the writers stop
    settle_ticks: int  # ticks of automation after the writers stopped, until the checks passed
    checks: dict[str, str]  # the same, at the end

    @property
    def missed(self) -> list[str]:
        """The targets missed, each as a line to print."""
        out = []
        if self.amplification is None or self.amplification > self.options.target:
            out.append(f"rewrite amplification {self.amplification}x is over the target {self.options.target:g}x")
        if failing := _failing(self.checks):
            out.append(f"health at the end: {', '.join(failing)} failing after {self.settle_ticks} ticks without writes")
        if not self.day[0] <= self.commit_times[0] <= self.commit_times[1] <= self.day[1]:
            out.append(f"commit times {self.commit_times[0]} .. {self.commit_times[1]} leave the simulated day")
        if self.rows_read != self.rows_expected:
            out.append(f"rows: read {self.rows_read:,}, the writer left {self.rows_expected:,}")
        return out


def tables_yaml(uri: str, history: str, options: DayOptions) -> str:
    return f"""spark:
  master: {options.spark_master}
  conf: {{spark.sql.shuffle.partitions: "2", spark.ui.enabled: "false"}}
history:
  uri: {history}
tables:
  {TABLE}:
    uri: {uri}
    compact: {{target_size: {options.target_size}}}
    purge: true
    advisor: {{mode: auto}}
"""


class Writer:
    """The day's writer: appends with fresh ids, deletes earlier ids with deletion vectors."""

    def __init__(self, table: Any, seed: int) -> None:
        self.table = table
        self.rng = np.random.default_rng(seed)
        self.next_id = 0
        self.deleted: set[int] = set()

    def append(self, rows: int) -> None:
        from delta_core.write.table_writes import append

        ids = np.arange(self.next_id, self.next_id + rows, dtype=np.int64)
        payload = self.rng.integers(0, 2**63 - 1, size=rows, dtype=np.int64)
        append(self.table, pa.table({
            "id": ids, "k": ids % 1000, "v": self.rng.random(rows),
            "s": pa.array([f"{p:016x}{i:08d}" for p, i in zip(payload.tolist(), ids.tolist())])}, schema=SCHEMA))
        self.next_id += rows

    def delete(self, rows: int) -> int:
        """Delete ids ``[lo, lo + rows)`` of a random earlier stretch; the rows newly deleted."""
        from delta_core.log.deletion_vectors import read_deletion_vector
        from delta_core.write.transaction import Transaction
        from tests.dv_files import write_uuid_dv

        if self.next_id < rows:
            return 0
        lo = int(self.rng.integers(0, self.next_id - rows + 1))
        hi = lo + rows
        txn = Transaction(self.table, operation="DELETE",
                          operation_parameters={"predicate": json.dumps([f"id >= {lo} AND id < {hi}"])})
        actions: list[Any] = []
        newly = 0
        now = self.table.clock()
        for add in txn.snapshot.add_actions():
            stats = json.loads(add.stats or "{}")
            if stats.get("maxValues", {}).get("id", hi) < lo or stats.get("minValues", {}).get("id", lo) >= hi:
                continue
            ids = _file_ids(self.table.uri, add.path)
            hit = np.flatnonzero((ids >= lo) & (ids < hi))
            old = read_deletion_vector(self.table.storage, add.deletion_vector) if add.deletion_vector else None
            positions = sorted(set(hit.tolist()) | (set(old) if old is not None else set()))
            if not hit.size or (old is not None and len(positions) == len(old)):
                continue
            newly += len(positions) - (len(old) if old is not None else 0)
            (dv,) = write_uuid_dv(self.table.uri, [positions])
            actions += [add.to_remove(now, data_change=True),
                        dataclasses.replace(add, deletion_vector=dv, data_change=True, modification_time=now)]
        if actions:
            with txn:
                txn.add_actions(actions)
                txn.commit()
            self.deleted.update(range(lo, hi))
        return newly


def _file_ids(uri: str, path: str) -> np.ndarray:
    import pyarrow.parquet as pq

    return pq.read_table(pathlib.Path(uri) / unquote(path), columns=["id"]).column("id").to_numpy()


def rewrites_per_row(table: Any, ids: int) -> np.ndarray:
    """How many times each id was written by a maintenance commit: the ids of every data file a
    ``dataChange=false`` commit added (not a file its own commit re-adds with a new vector)."""
    from delta_core.model.actions import Add, Remove

    counts = np.zeros(ids, dtype=np.int64)
    for version in range(table.latest_version() + 1):
        actions = table.commit_actions(version)
        removed = {a.path for a in actions if isinstance(a, Remove)}
        for a in actions:
            if isinstance(a, Add) and not a.data_change and a.path not in removed:
                counts += np.bincount(_file_ids(table.uri, a.path), minlength=ids)[:ids]
    return counts


def _live_rows(uri: str) -> int:
    """The table's rows as delta-rs reads them (deletion vectors applied): an engine of its own."""
    import deltalake

    reader = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
    return int(pa.table(reader.execute("select count(*) as n from t").read_all()).column("n")[0].as_py())


def _import_definitions(config_path: pathlib.Path) -> None:
    """Import the code location with ``config_path`` as its config: ``import definitions`` builds
    the module's ``defs`` from ``$DELTA_MAINTENANCE_TABLES`` (set only meanwhile)."""
    before = os.environ.get(CONFIG_ENV_VAR)
    os.environ[CONFIG_ENV_VAR] = str(config_path)
    try:
        import definitions  # noqa: F401
    finally:
        if before is None:
            del os.environ[CONFIG_ENV_VAR]
        else:
            os.environ[CONFIG_ENV_VAR] = before


class Simulation:
    """The code location, its instance and the sensor and automation cursors, over one table."""

    def __init__(self, config_path: pathlib.Path, instance: Any, clock: SimClock) -> None:
        from resources.config import load_config

        _import_definitions(config_path)
        from definitions import build_definitions

        self.config = load_config(str(config_path))
        self.defs = build_definitions(self.config, clock=clock.seconds)
        self.instance = instance
        self.clock = clock
        self.table = self.config.table(TABLE)
        self.sensor_cursor: str | None = None
        self.automation_cursor: Any = None
        self.runs: Counter[str] = Counter()

    @contextlib.contextmanager
    def at_now(self) -> Iterator[None]:
        """Dagster's clock at the simulation's now (event and run timestamps)."""
        from dagster._core.test_utils import freeze_time

        with freeze_time(self.clock.now):
            yield

    def sensor_tick(self) -> None:
        """The table's log sensor, then the runs it requested (checks, checkpoint, ...)."""
        from dagster import build_sensor_context

        from sensors import sensor_name

        sensor = self.defs.resolve_sensor_def(sensor_name(TABLE))
        top = self.defs.get_repository_def().get_top_level_resources()
        with self.at_now(), build_sensor_context(cursor=self.sensor_cursor, instance=self.instance,
                                                 definitions=self.defs,
                                                 resources={k: top[k] for k in sensor.required_resource_keys}) as ctx:
            data = sensor.evaluate_tick(ctx)
            self.sensor_cursor = data.cursor
            for event in data.asset_events:
                self.instance.report_runless_asset_event(event)
            for request in data.run_requests:
                self._run(request.job_name, run_config=request.run_config, tags=request.tags,
                          asset_selection=request.asset_selection)

    def automation_tick(self) -> list[str]:
        """Evaluate the automation conditions now and materialize what they request."""
        from dagster import BetaWarning, evaluate_automation_conditions

        from assets.automation import TRIGGER_TAG
        from assets.maintenance import maintenance_asset_key
        from delta_core.config.generated_names import maintenance_job_name

        with self.at_now(), warnings.catch_warnings():
            warnings.simplefilter("ignore", BetaWarning)  # Dagster's own selection inside the evaluation
            result = evaluate_automation_conditions(defs=self.defs, instance=self.instance,
                                                    evaluation_time=self.clock.now, cursor=self.automation_cursor)
            self.automation_cursor = result.cursor
            requested = [op for op in self.table.operations
                         if result.get_requested_partitions(maintenance_asset_key(TABLE, op))]
            if requested:
                self._run(maintenance_job_name(TABLE), tags={TRIGGER_TAG: "automation"},
                          asset_selection=[maintenance_asset_key(TABLE, op) for op in requested])
                self.runs.update(requested)
        return requested

    def _run(self, job_name: str, *, run_config: Any = None, tags: Any = None, asset_selection: Any = None) -> None:
        job = self.defs.resolve_job_def(job_name)
        result = job.execute_in_process(instance=self.instance, run_config={**(run_config or {}), **QUIET}, tags=tags,
                                        asset_selection=asset_selection, raise_on_error=False)
        if not result.success:
            failures = [e.step_failure_data.error.message.strip()[:300] for e in result.get_step_failure_events()]
            print(f"  run of {job_name} failed: {'; '.join(failures)}", flush=True)

    def checks(self) -> dict[str, str]:
        """The table's health checks now: pass, unreachable (with the reason) or FAIL."""
        from delta_core.config.generated_names import checks_job_name

        with self.at_now():
            result = self.defs.resolve_job_def(checks_job_name(TABLE)).execute_in_process(instance=self.instance,
                                                                                          run_config=QUIET)
        verdicts = {}
        for e in result.get_asset_check_evaluations():
            reachable = e.metadata.get("reachable")
            if reachable is not None and reachable.value is False:
                verdicts[e.check_name] = f"unreachable: {e.metadata['unreachable_reason'].value}"
            else:
                verdicts[e.check_name] = "pass" if e.passed else "FAIL"
        return verdicts


def _history_totals(config: Any) -> dict[str, dict[str, float]]:
    from delta_core.maintenance.history_table import read_rows

    totals: dict[str, dict[str, float]] = {}
    for row in read_rows(config.history.location(), table=TABLE):
        t = totals.setdefault(row.operation, Counter())
        t["runs"] += 1
        t["bytes_read"] += row.bytes_read
        t["bytes_written"] += row.bytes_written
        t["core_seconds"] += row.core_seconds
    return totals


def run_day(options: DayOptions) -> DayResult:
    from dagster import DagsterInstance

    from delta_core.health.amplification import rewrite_amplification
    from delta_core.write.table_writes import create_table

    started = time.perf_counter()
    warm_spark(options.spark_master, "bench_day")
    # In memory: SQLite's commit per event costs more than the maintenance it records on a busy disk.
    with scratch_dir("bench_day_") as work, DagsterInstance.ephemeral() as instance:
        root = pathlib.Path(options.keep or work)
        root.mkdir(parents=True, exist_ok=True)
        uri = str(root / TABLE)
        clock = SimClock(START)
        table = create_table(uri, SCHEMA, clock=clock.millis, properties={
            "delta.enableDeletionVectors": "true", "delta.enableInCommitTimestamps": "true"})
        config_path = root / "tables.yaml"
        config_path.write_text(tables_yaml(uri, str(root / "history"), options), encoding="utf-8")
        sim = Simulation(config_path, instance, clock)
        writer = Writer(table, options.seed)
        for tick in range(options.ticks):
            clock.advance(options.tick_minutes)
            writer.append(options.rows)
            due = options.delete_every and tick % options.delete_every == options.delete_every - 1
            deleted = writer.delete(options.delete_rows) if due else 0
            sim.sensor_tick()
            _tick_line(clock, table, sim.automation_tick(), deleted)
        sim.sensor_tick()  # the last versions, as the daemon would see them
        at_day_end = sim.checks()
        checks, settle_ticks = at_day_end, 0
        # The writers stop; automation goes on, tick by tick, until the checks pass (or say unreachable).
        while _failing(checks) and settle_ticks < options.settle_ticks:
            clock.advance(options.tick_minutes)
            settle_ticks += 1
            sim.sensor_tick()
            _tick_line(clock, table, sim.automation_tick(), 0)
            checks = sim.checks()
        amp = rewrite_amplification(table.storage)
        counts = rewrites_per_row(table, writer.next_id)
        times = [dt.datetime.fromtimestamp(c.timestamp / 1000, dt.UTC) for c in table.history()]
        return DayResult(
            options=options, seconds=time.perf_counter() - started, writer_bytes=amp.writer_bytes,
            maintenance_bytes=amp.maintenance_bytes, amplification=amp.ratio, max_rewrites=int(counts.max(initial=0)),
            rows_rewritten=int(np.count_nonzero(counts)), rows_expected=writer.next_id - len(writer.deleted),
            rows_read=_live_rows(uri), commit_times=(min(times), max(times)), day=(START, clock.now + ICT_STEPS),
            runs=dict(sim.runs), history=_history_totals(sim.config), at_day_end=at_day_end, settle_ticks=settle_ticks,
            checks=checks)


def _failing(checks: dict[str, str]) -> list[str]:
    return [name for name, verdict in checks.items() if verdict == "FAIL"]


def _tick_line(clock: SimClock, table: Any, requested: list[str], deleted: int) -> None:
    """A line for a tick that did anything but append."""
    if requested or deleted:
        done = [f"deleted {deleted} rows"] if deleted else []
        done += [f"automation ran {', '.join(requested)}"] if requested else []
        print(f"  {clock.now:%d %H:%M} v{table.latest_version()}: {', '.join(done)}", flush=True)


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def print_report(r: DayResult) -> None:
    o = r.options
    print(f"\nday of {o.ticks} ticks of {o.tick_minutes:g} min: {o.rows:,} rows appended per tick, "
          f"{o.delete_rows} deleted every {o.delete_every} ticks; compaction target {o.target_size}; "
          f"{r.seconds:.0f} s of wall time")
    print(f"rewrite amplification: {r.amplification}x ({_mb(r.maintenance_bytes)} added by maintenance commits / "
          f"{_mb(r.writer_bytes)} added by the writer; target <= {o.target:g}x)")
    print(f"times a row was rewritten: at most {r.max_rewrites}; {r.rows_rewritten:,} rows rewritten at least once")
    print("automated runs: " + (", ".join(f"{op} {n}" for op, n in sorted(r.runs.items())) or "none"))
    for op, t in sorted(r.history.items()):
        print(f"  history {op}: {int(t['runs'])} rows, read {_mb(t['bytes_read'])}, wrote {_mb(t['bytes_written'])}, "
              f"{t['core_seconds']:.1f} core-s")
    print(f"rows: delta-rs reads {r.rows_read:,}, the writer left {r.rows_expected:,}; commits from "
          f"{r.commit_times[0]:%d %H:%M} to {r.commit_times[1]:%d %H:%M} (in-commit timestamps; day {START:%d})")
    print("health as the writers stopped: " + (", ".join(f"{name} FAIL" for name in _failing(r.at_day_end))
                                                or "every check passes or is unreachable"))
    print(f"health at the end, after {r.settle_ticks} ticks of automation without writes: "
          + "; ".join(f"{name} {verdict}" for name, verdict in r.checks.items()))


def parse_args(argv: Sequence[str] | None) -> DayOptions:
    parser = argument_parser(__doc__)
    d = DayOptions()
    parser.add_argument("--ticks", type=int, default=d.ticks)
    parser.add_argument("--tick-minutes", type=float, default=d.tick_minutes)
    parser.add_argument("--rows", type=int, default=d.rows, help="rows appended per tick")
    parser.add_argument("--delete-every", type=int, default=d.delete_every, help="ticks between deletes (0: none)")
    parser.add_argument("--delete-rows", type=int, default=d.delete_rows, help="consecutive ids per delete")
    parser.add_argument("--settle-ticks", type=int, default=d.settle_ticks,
                        help="the most ticks of automation after the writers stop, for the checks to pass")
    parser.add_argument("--target-size", default=d.target_size, help="compaction's target file size")
    parser.add_argument("--spark-master", default=d.spark_master)
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--target", type=float, default=d.target, help="the most rewrite amplification allowed")
    parser.add_argument("--keep", default=None, help="build the table in this folder and keep it")
    a = parser.parse_args(argv)
    return DayOptions(ticks=a.ticks, tick_minutes=a.tick_minutes, rows=a.rows, delete_every=a.delete_every,
                      delete_rows=a.delete_rows, settle_ticks=a.settle_ticks, target_size=a.target_size, spark_master=a.spark_master,
                      seed=a.seed, target=a.target, keep=a.keep)


def finish(result: DayResult) -> int:
    """Print the report and each target missed; the exit status (1: a target missed)."""
    print_report(result)
    for line in result.missed:
        print(f"TARGET MISSED: {line}", file=sys.stderr)
    return 1 if result.missed else 0


def main(argv: Sequence[str] | None = None) -> int:
    return finish(run_day(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
