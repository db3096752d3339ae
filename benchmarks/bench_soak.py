"""Soak: our maintenance beside delta-rs writers on one live table, runs killed now and then.

For ``--minutes``, three delta-rs processes write a local table (``soak_writers``: an appender
committing every ``--append-interval`` seconds, a deleter and an updater rewriting earlier rows),
each keeping a ledger of what it committed. Meanwhile maintenance runs in a loop, one process
per run (``soak_run``): the table's maintenance job of the Dagster code location
(``build_definitions`` over a tables.yaml written for the table: compact, zorder, purge,
checkpoint, compact-log, vacuum with a one-minute retention), on a Dagster instance in a
temporary ``DAGSTER_HOME``, on local Spark (``local[1]``), with the operations its policy asks
for. With probability ``--kill-probability`` (0.15 by default: "now and then", yet 4 to 6 kills
in each 10-minute soak we ran, of 23 to 48 runs) a run is killed (SIGKILL of its process group: its
Spark JVM and Python workers too) at a random moment of its work; Dagster then records it as
failed, as its run monitoring would.

At the end the table's rows, read by delta-rs and by delta-kernel-rs, are compared with the
ledgers, and it prints:

- lost, duplicated, unexpected and changed rows per engine;
- runs succeeded, conflicted, killed and crashed, and the rewrite batches committed, retried and
  abandoned (with their reasons), from the runs' metrics records;
- p50/p95 run time and the worst commits-behind;
- rewrite amplification from the log at the end (``delta_core.health.amplification``: data-file
  bytes added by maintenance commits per byte added by the writers' commits), as ``bench_day``;
- wasted work (``soak_waste``): every data file maintenance wrote is witnessed as it appears,
  before anything deletes it, and each one no commit took is put down to its operation and
  cause. **The target figure is the issue's: rewritten bytes abandoned after a conflict per
  committed rewritten byte.** Orphans of the runs the soak itself killed are printed on their own
  line, beside it and not in it; failed steps' and unexplained files too.

Targets beside them: zero lost or duplicated rows, zero crashed runs, under 10% wasted
(abandoned) work. Exit status 1 when rows differ or a run crashed.

    python -m benchmarks.bench_soak [--minutes 3] [--kill-probability 0.15] [--seed 1] [--keep DIR]
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pathlib
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness import argument_parser
from benchmarks.soak_check import LogFigures, RowCheck, check_rows, log_figures, read_delta_rs, read_kernel
from benchmarks.soak_files import CommitFiles, FileWitness, log_files
from benchmarks.soak_waste import ABANDONED, CAUSES, FAILED, KILLED, UNEXPLAINED, RunSteps, WasteFigures, attribute
from benchmarks.soak_writers import WRITERS, WriterSettings, WriterStats, expected_rows, read_ledger, read_stats
from delta_core.health.amplification import Amplification, rewrite_amplification
from delta_core.storage import open_storage

REPO = pathlib.Path(__file__).resolve().parents[1]
TABLE = "soak"
WASTE_TARGET = 0.10
FIRST_KILL_HORIZON = 20.0  # seconds into a run a kill may land, until runs have been timed
END_GRACE = 300.0  # seconds a run still going at the end may take before it is killed
WRITER_JOIN_SECONDS = 60.0
LOG_TAIL_LINES = 15


@dataclass(frozen=True, slots=True)
class SoakOptions:
    minutes: float = 3.0
    kill_probability: float = 0.15
    seed: int = 1
    vacuum_mode: str = "full"
    rows_per_day: int = 100_000
    append_rows: int = 500
    append_interval: float = 0.2
    delete_interval: float = 3.0
    update_interval: float = 3.0
    retention_seconds: int = 60  # the table's deleted-file retention, and vacuum's
    warmup_seconds: float = 0.0  # the writers alone first, so maintenance meets a table with a past
    keep: str | None = None  # keep the work folder here (default: a temporary one, deleted)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One maintenance process, as the soak saw it."""

    run_id: str
    started_at: float  # time.time() when its process was started
    seconds: float  # whole process
    killed: bool
    exit_code: int
    result: dict[str, Any] | None  # soak_run's summary; None if it wrote none
    log_tail: str = ""  # the end of its output, kept when it ended without a summary and unkilled

    @property
    def failures(self) -> list[dict[str, Any]]:
        return self.result["failures"] if self.result else []

    @property
    def crashed(self) -> bool:
        """Ended by anything but our kill or a clean typed conflict."""
        if self.killed:
            return False
        return self.exit_code != 0 or self.result is None or any(not f["clean_conflict"] for f in self.failures)

    def _sum(self, name: str) -> int:
        return sum(s["metrics"].get(name) or 0 for s in self._steps())

    @property
    def batches_committed(self) -> int:
        return self._sum("batches_committed")

    @property
    def batches_retried(self) -> int:
        """Rewrite batches re-planned and retried after losing a conflict (each counted once)."""
        return self._sum("batches_retried")

    @property
    def batches_abandoned(self) -> int:
        return self._sum("batches_aborted")

    @property
    def abandoned_reasons(self) -> list[str]:
        return [r for s in self._steps() for r in s["metrics"].get("abandoned_reasons") or ()]

    def operations_with(self, *names: str) -> frozenset[str]:
        """The operations whose metrics count any of ``names`` (e.g. batches retried or aborted)."""
        return frozenset(op for op, s in (self.result or {}).get("steps", {}).items()
                         if any(s["metrics"].get(n) for n in names))

    @property
    def failed_operations(self) -> frozenset[str]:
        return frozenset(op for op, s in (self.result or {}).get("steps", {}).items() if s["status"] == "failed")

    @property
    def conflicted(self) -> bool:
        """Lost something to a concurrent writer: a batch retried or abandoned, or a step failed on a typed conflict."""
        return self.batches_retried + self.batches_abandoned > 0 or any(f["clean_conflict"] for f in self.failures)

    @property
    def committed(self) -> bool:
        return any(s["metrics"].get("versions") or s["metrics"].get("version") is not None for s in self._steps())

    def _steps(self) -> list[dict[str, Any]]:
        return list(self.result["steps"].values()) if self.result else []


@dataclass(slots=True)
class SoakResult:
    options: SoakOptions
    work: pathlib.Path
    runs: list[RunRecord] = field(default_factory=list)
    writer_stats: dict[str, WriterStats | None] = field(default_factory=dict)
    writer_exit: dict[str, int | None] = field(default_factory=dict)
    rows_expected: int = 0
    checks: list[RowCheck] = field(default_factory=list)
    log: LogFigures | None = None
    waste: WasteFigures | None = None
    ledger_not_in_log: int = 0
    log_not_in_ledger: int = 0
    checkpoints: int = 0
    log_compactions: int = 0
    table_version: int = -1
    amplification: Amplification | None = None  # from the log at the end
    files_missed: int = 0
    seconds: float = 0.0

    @property
    def rows_equal(self) -> bool:
        return bool(self.checks) and all(c.equal for c in self.checks)

    @property
    def crashed(self) -> list[RunRecord]:
        return [r for r in self.runs if r.crashed]


def tables_yaml(uri: str, *, vacuum_mode: str, retention_seconds: int) -> str:
    """The soak table's policy; its vacuum retention is the table's (``WriterSettings.configuration``),
    below 168 hours, hence ``allow_short_retention``."""
    return f"""spark:
  master: local[1]
  conf: {{spark.sql.shuffle.partitions: "1", spark.ui.enabled: "false"}}
tables:
  {TABLE}:
    uri: {uri}
    # bounded rewrites (issue 30): small batches (a Z-order batch is one partition, a compaction
    # batch one bin of 256KB, a fifth of a partition of small files, so the deleter
    # and updater, rewriting one file of a random partition every 1.5 s, make fewer bins stale)
    # that commit on their own, retried when a writer wins a race, and the partitions written in
    # the last 6 s left for later: the appender's, and those the deleter or updater just rewrote.
    # They pick partitions at random, so a longer quiet window makes no conflict less likely, only
    # less work done: with half a minute, every partition was busy in every run of a 10-minute
    # soak and nothing was rewritten.
    compact: {{target_size: 256KB, batch_size: 256KB, max_batch_retries: 3, quiet_minutes: 0.1}}
    zorder: {{columns: [k, id], target_size: 1MB, batch_size: 256KB, max_batch_retries: 3, quiet_minutes: 0.1}}
    purge: true
    checkpoint: {{interval: 20}}
    compact_log: {{min_commits: 5}}
    vacuum: {{retention_hours: {retention_seconds / 3600!r}, allow_short_retention: true, mode: {vacuum_mode}}}
"""


def _percentile(values: Sequence[float], q: float) -> float:
    ys = sorted(values)
    return ys[min(len(ys) - 1, round(q * (len(ys) - 1)))] if ys else float("nan")


class MaintenanceLoop:
    """Runs ``soak_run`` processes one after another and kills some of them."""

    def __init__(self, work: pathlib.Path, config: pathlib.Path, home: pathlib.Path, options: SoakOptions) -> None:
        self._work, self._config, self._home = work, config, home
        self._runs_dir = work / "runs"
        self._runs_dir.mkdir()
        self._rng = random.Random(options.seed)
        self._kill_probability = options.kill_probability
        self._env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                     "DAGSTER_HOME": str(home), "DELTA_MAINTENANCE_TABLES": str(config)}
        self._env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        self.records: list[RunRecord] = []

    def _horizon(self) -> float:
        done = [r.result["seconds"] for r in self.records if r.result]
        return _percentile(done, 0.95) if done else FIRST_KILL_HORIZON

    def run_once(self, *, deadline: float) -> RunRecord:
        """One run; killed at a random moment of its work if chosen, or when still going ``END_GRACE``
        seconds past ``deadline``."""
        run_id = str(uuid.uuid4())
        kill_after = self._rng.uniform(0, self._horizon()) if self._rng.random() < self._kill_probability else None
        started_at = time.time()
        started = time.monotonic()
        with (self._runs_dir / f"{run_id}.log").open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.soak_run", str(self._config), TABLE, run_id, str(self._runs_dir)],
                cwd=REPO, env=self._env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        marker = self._runs_dir / f"{run_id}.started"
        work_began: float | None = None
        killed = False
        while proc.poll() is None:
            now = time.monotonic()
            if work_began is None and marker.exists():
                work_began = now
            late = now > deadline + END_GRACE
            if late or (kill_after is not None and work_began is not None and now - work_began >= kill_after):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:  # the whole group ended on its own meanwhile
                    continue
                killed = proc.wait() == -signal.SIGKILL  # not if it had just ended by itself
                break
            time.sleep(0.05)
        seconds = time.monotonic() - started
        if killed:
            self._record_killed(run_id)
        result_path = self._runs_dir / f"{run_id}.json"
        result = None if killed or not result_path.exists() else _load_json(result_path)
        tail = ""
        if result is None and not killed:
            lines = (self._runs_dir / f"{run_id}.log").read_text(errors="replace").splitlines()
            tail = "\n".join(lines[-LOG_TAIL_LINES:])
        record = RunRecord(run_id, started_at, seconds, killed, proc.returncode, result, tail)
        self.records.append(record)
        return record

    def run_steps(self) -> list[RunSteps]:
        """Every run's step starts as the Dagster instance recorded them (a killed run's too),
        with the operations that retried or abandoned a batch and those that failed."""
        from dagster import DagsterEventType, DagsterInstance

        out = []
        with DagsterInstance.from_config(str(self._home)) as instance:
            for r in self.records:
                starts = tuple(sorted((e.timestamp, (e.step_key or "").rpartition("__")[2])
                                      for e in instance.all_logs(r.run_id, of_type=DagsterEventType.STEP_START)))
                out.append(RunSteps(r.run_id, r.started_at, r.killed, starts,
                                    conflicted=r.operations_with("batches_retried", "batches_aborted"),
                                    failed=r.failed_operations))
        return out

    def _record_killed(self, run_id: str) -> None:
        """Mark the killed run failed in the instance (Dagster's run monitoring would), if it got that far."""
        from dagster import DagsterInstance

        with DagsterInstance.from_config(str(self._home)) as instance:
            run = instance.get_run_by_id(run_id)
            if run is not None and not run.is_finished:
                instance.report_run_failed(run, "SIGKILLed with its process group by the soak")


def _load_json(path: pathlib.Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _ledger_gaps(settings: WriterSettings, commits: list[CommitFiles]) -> tuple[int, int]:
    """Ledgered commits the log lacks, and writer commits in the log no ledger holds (by the
    commitInfo ``soak`` tag each writer call carries). A delete or update of no row may commit
    nothing, so those are never missing."""
    ledgered: Counter[str] = Counter()
    changed: Counter[str] = Counter()
    for kind, name, tag in (("append", "appender", "{lo}-{hi}"), ("delete", "deleter", "{lo}-{hi}"),
                            ("update", "updater", "{lo}-{hi}={value}")):
        for e in read_ledger(settings, name):
            key = f"{kind} {tag.format(**e)}"
            ledgered[key] += 1
            if e.get("deleted", e.get("updated", 1)) != 0:
                changed[key] += 1
    logged = Counter(c.tag for c in commits if c.tag)
    return sum((changed - logged).values()), sum((logged - ledgered).values())


def _wait_for_table(uri: str, writers: dict[str, Any], timeout: float = 120.0) -> None:
    log = pathlib.Path(uri, "_delta_log", f"{0:020d}.json")
    deadline = time.monotonic() + timeout
    while not log.exists():
        if time.monotonic() > deadline or not writers["appender"].is_alive():
            raise RuntimeError(f"the appender did not create {uri} within {timeout:.0f} s")
        time.sleep(0.1)


def run_soak(options: SoakOptions) -> SoakResult:
    """The soak, end to end; the work folder is kept only with ``options.keep``."""
    from delta_core import ENGINE_INFO

    work = pathlib.Path(options.keep or tempfile.mkdtemp(prefix="bench_soak_")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    uri = str(work / TABLE)
    os.makedirs(uri)
    home = work / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    config = work / "tables.yaml"
    config.write_text(tables_yaml(uri, vacuum_mode=options.vacuum_mode, retention_seconds=options.retention_seconds), encoding="utf-8")
    settings = WriterSettings(uri=uri, work=str(work), rows_per_day=options.rows_per_day,
                              append_rows=options.append_rows, append_interval=options.append_interval,
                              delete_interval=options.delete_interval, update_interval=options.update_interval,
                              seed=options.seed, retention_seconds=options.retention_seconds)
    result = SoakResult(options=options, work=work)
    witness = FileWitness(uri, str(work / "witnessed"))
    ctx = multiprocessing.get_context("spawn")  # never fork: deltalake hangs in a forked child
    stop = ctx.Event()
    high_water = ctx.Value("q", 0)
    writers = {name: ctx.Process(target=target, args=(settings, stop, high_water), name=f"soak-{name}")
               for name, target in WRITERS.items()}
    loop = MaintenanceLoop(work, config, home, options)
    began = time.monotonic()
    try:
        for proc in writers.values():
            proc.start()
        _wait_for_table(uri, writers)
        time.sleep(options.warmup_seconds)
        deadline = time.monotonic() + options.minutes * 60
        while time.monotonic() < deadline:
            record = loop.run_once(deadline=deadline)
            print(f"  run {len(loop.records):>3}: {_run_line(record)}", flush=True)
    finally:
        stop.set()
        for name, proc in writers.items():
            proc.join(WRITER_JOIN_SECONDS)
            if proc.is_alive():
                proc.kill()
                proc.join()
            result.writer_exit[name] = proc.exitcode
        seen = witness.close()
    result.seconds = time.monotonic() - began
    result.runs = loop.records
    result.files_missed = witness.missed + witness.overflows
    result.writer_stats = {name: read_stats(settings, name) for name in WRITERS}

    expected = expected_rows(settings)
    result.rows_expected = expected.num_rows
    result.checks = [check_rows("delta-rs", read_delta_rs(uri), expected),
                     check_rows("delta-kernel-rs", read_kernel(uri), expected)]
    commits = log_files(uri)
    result.table_version = commits[-1].version
    result.log = log_figures(commits, seen, engine_prefix=ENGINE_INFO.partition("/")[0] + "/")
    result.waste = attribute(result.log.maintenance_files, loop.run_steps())
    result.ledger_not_in_log, result.log_not_in_ledger = _ledger_gaps(settings, commits)
    log_dir = pathlib.Path(uri, "_delta_log")
    result.checkpoints = len(list(log_dir.glob("*.checkpoint*.parquet")))
    result.log_compactions = len(list(log_dir.glob("*.compacted.json")))
    result.amplification = rewrite_amplification(open_storage(uri))
    if options.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _run_line(r: RunRecord) -> str:
    if r.killed:
        return f"killed after {r.seconds:.1f} s"
    if r.result is None:
        return f"CRASHED (exit {r.exit_code}, no result) after {r.seconds:.1f} s"
    steps = ", ".join(f"{op} {s['status']}" for op, s in r.result["steps"].items())
    notes = [f"{r.batches_retried} batch(es) retried"] if r.batches_retried else []
    notes += [f"{r.batches_abandoned} batch(es) abandoned"] if r.batches_abandoned else []
    notes += [f"{f['step']} failed: {f['classes'][-1]}" for f in r.failures]
    return f"{'CRASHED ' if r.crashed else ''}{r.seconds:.1f} s: {steps}" + (f" ({'; '.join(notes)})" if notes else "")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def print_report(result: SoakResult) -> None:
    o, runs, log = result.options, result.runs, result.log
    print(f"\nsoak of {result.seconds / 60:.1f} min (asked {o.minutes:g}), seed {o.seed}, kill probability "
          f"{o.kill_probability:g}, vacuum {o.vacuum_mode}; table at version {result.table_version}")
    writers = []
    for name, stats in result.writer_stats.items():
        if stats is None:
            writers.append(f"{name} ENDED WITHOUT STATS (exit {result.writer_exit.get(name)})")
            continue
        writers.append(f"{name} {stats.commits} commits ({stats.conflicts} refused on a conflict, "
                       f"{stats.errors} errors)")
    print("writers (delta-rs): " + "; ".join(writers))
    for name, stats in result.writer_stats.items():
        for kind, samples in (("refused", stats.conflict_samples if stats else []),
                              ("error", stats.error_samples if stats else [])):
            for sample in samples:
                print(f"  {name} {kind}: {sample}")
    print(f"ledgers against the log's commitInfo tags: {result.ledger_not_in_log} ledgered commits missing "
          f"from the log, {result.log_not_in_ledger} writer commits not ledgered")
    print(f"rows: ledgers say {result.rows_expected:,}")
    for c in result.checks:
        print(f"  {c.engine:<16} read {c.rows:,}: lost {c.lost}, duplicated {c.duplicated}, unexpected "
              f"{c.unexpected}, changed {c.changed}  -> {'EQUAL' if c.equal else 'DIFFERENT'}")
    print("  target: zero lost or duplicated rows, both engines equal to the ledgers")
    done = [r for r in runs if not r.killed]
    print(f"maintenance runs: {len(runs)} started; {sum(1 for r in runs if r.result and r.result['success'])} "
          f"succeeded, {sum(1 for r in runs if r.conflicted)} conflicted (a batch retried or abandoned, or a typed "
          f"conflict), {sum(1 for r in runs if r.batches_retried)} retried a batch, {sum(1 for r in runs if r.killed)} "
          f"killed by the soak, {len(result.crashed)} crashed (target 0); "
          f"{sum(1 for r in runs if r.committed)} committed a version")
    reasons = Counter(reason.partition(": ")[2] or reason for r in runs for reason in r.abandoned_reasons)
    print(f"  rewrite batches (from the runs' metrics): {sum(r.batches_committed for r in runs)} committed, "
          f"{sum(r.batches_retried for r in runs)} retried after losing a conflict, "
          f"{sum(r.batches_abandoned for r in runs)} abandoned"
          + (" (" + ", ".join(f"{n}x {why}" for why, n in reasons.most_common()) + ")" if reasons else ""))
    ops: Counter[str] = Counter(op for r in runs if r.result for op in r.result["operations"])
    print("  operations asked by the policy: " + ", ".join(f"{op} {n}" for op, n in ops.items()))
    dagster = [r.result["seconds"] for r in done if r.result]
    print(f"  run time of completed runs: whole process p50 {_percentile([r.seconds for r in done], 0.5):.1f} s, "
          f"p95 {_percentile([r.seconds for r in done], 0.95):.1f} s; Dagster run p50 "
          f"{_percentile(dagster, 0.5):.1f} s, p95 {_percentile(dagster, 0.95):.1f} s")
    for r in result.crashed:
        for f in r.failures or [{"step": "-", "classes": [f"exit {r.exit_code}"], "message": "no result written"}]:
            print(f"  CRASHED run {r.run_id[:8]}: {f['step']}: {' <- '.join(f['classes'])}: {f['message'][:400]}")
        if r.log_tail:
            print("    " + r.log_tail.replace("\n", "\n    "))
    if log is None:
        return
    print("maintenance commits: " + (", ".join(f"{op} {n}" for op, n in sorted(log.maintenance_commits.items()))
                                     or "none") + f"; checkpoints {result.checkpoints}, log compaction files "
          f"{result.log_compactions}; writer commits {log.writer_commits}")
    if result.waste is not None:
        print_waste(result.waste)
    print(f"  log: {_mb(log.rewritten_bytes)} added by maintenance commits; writers' own orphans "
          f"{_mb(log.writer_orphan_bytes)}" + (f", unattributed {_mb(log.unattributed_bytes)}" if log.unattributed_bytes
                                               else "")
          + (f"; {result.files_missed} files not witnessed" if result.files_missed else ""))
    if (amp := result.amplification) is not None:
        print(f"rewrite amplification (from the log at the end): {amp.ratio}x: {_mb(amp.maintenance_bytes)} of data "
              f"files added by maintenance commits per {_mb(amp.writer_bytes)} added by the writers' commits "
              f"(versions {amp.first_version}-{amp.last_version})")
    print(f"worst commits-behind: {log.worst_behind} commits landed between the version a maintenance commit "
          f"read and its own ({log.worst_behind_operation or '-'}); longest stretch without a maintenance rewrite "
          f"(OPTIMIZE, REORG): {log.longest_unrewritten} commits")


_CAUSE_TEXT = {
    ABANDONED: "abandoned after losing a conflict (batches abandoned, attempts re-planned)",
    KILLED: "orphans of runs the soak killed (its own SIGKILL; vacuum takes them)",
    FAILED: "failed steps (not killed)",
    UNEXPLAINED: "unexplained (target 0)",
}


def print_waste(waste: WasteFigures) -> None:
    """Bytes maintenance wrote that no commit took, by cause and operation (``soak_waste``)."""
    def by_op(cause: str) -> str:
        parts = [f"{op} {_mb(waste.bytes[cause, op])} ({waste.files[cause, op]} files)"
                 for op in waste.operations() if waste.files[cause, op]]
        return ", ".join(parts) or "none"

    print(f"maintenance-written data files: {_mb(waste.committed_bytes)} committed ("
          + ", ".join(f"{op} {_mb(n)}" for op, n in sorted(waste.committed.items())) + "); never committed:")
    for cause in CAUSES:
        print(f"  {_CAUSE_TEXT.get(cause, cause)}: {_mb(waste.cause_bytes(cause))} in {waste.cause_files(cause)} "
              f"files: {by_op(cause)}")
    ratio = f"{waste.abandoned_ratio:.1%}" if waste.committed_bytes else "undefined: nothing rewritten was committed"
    print(f"wasted work (issue 30: rewritten bytes abandoned, per committed rewritten byte): "
          f"{_mb(waste.cause_bytes(ABANDONED))} / {_mb(waste.committed_bytes)} = {ratio} (target < {WASTE_TARGET:.0%})")
    if waste.committed_bytes:
        print(f"  beside it, not in it: killed runs' orphans {_mb(waste.cause_bytes(KILLED))} = "
              f"{waste.cause_bytes(KILLED) / waste.committed_bytes:.1%} of committed; every uncommitted byte "
              f"{waste.uncommitted_ratio:.1%} of committed")


_FLAGS = {  # option: help; each flag's default is SoakOptions'
    "minutes": "soak length in minutes (the closing figures need at least 10)",
    "kill_probability": "share of maintenance runs killed",
    "seed": "seed of the kills and of the deleter's and updater's id ranges",
    "append_interval": "seconds between appends",
    "delete_interval": "seconds between deletes",
    "update_interval": "seconds between updates",
    "retention_seconds": "the table's deleted-file retention, and vacuum's",
    "warmup_seconds": "seconds the writers run alone before maintenance starts",
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argument_parser(__doc__)
    defaults = SoakOptions()
    for name, text in _FLAGS.items():
        default = getattr(defaults, name)
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(default), default=default,
                            help=f"{text} (default {default:g})")
    parser.add_argument("--vacuum-mode", choices=("full", "lite"), default=defaults.vacuum_mode)
    parser.add_argument("--keep", metavar="DIR", help="keep the table, ledgers, run logs and Dagster home in DIR")
    args, _unknown = parser.parse_known_args(argv)
    options = SoakOptions(vacuum_mode=args.vacuum_mode, keep=args.keep, **{name: getattr(args, name) for name in _FLAGS})
    result = run_soak(options)
    print_report(result)
    if args.keep:
        print(f"kept in {result.work}")
    return 0 if result.rows_equal and not result.crashed else 1


if __name__ == "__main__":
    raise SystemExit(main())
