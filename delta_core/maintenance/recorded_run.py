"""A run of a registry operation, recorded in the maintenance history (``history_table``).

Every front end runs an operation through ``run_recorded``: the command line and each maintenance
asset (so every Dagster job, schedule, sensor, automation and advisor run, and the demo's). It runs
the entry (``Operation.run``) and appends one row, for a failed run too (status FAILED, its error
kind), then returns the report or re-raises the run's own error. Writing the row never changes
the run's outcome: a failure to write it is logged as a warning. Runs on the history table itself
are not recorded (its own commitInfo holds them), so maintaining it adds no rows to maintain.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from delta_core.errors import DeltaError
from delta_core.maintenance.cpu_time import cpu_seconds
from delta_core.maintenance.history_records import FAILED, SUCCEEDED, TRIGGERS, HistoryLocation, HistoryRow

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable
    from delta_core.maintenance.operations import Operation
    from delta_core.maintenance.report import Report
    from delta_core.maintenance.runs import SparkFactory

log = logging.getLogger(__name__)
Score = Callable[["DeltaTable"], int]  # the table's health score, from its log


@dataclass(frozen=True, slots=True)
class RunOrigin:
    """Who started a run and where it is recorded (``history`` None: not recorded)."""

    trigger: str  # one of ``history_records.TRIGGERS``
    history: HistoryLocation | None = None
    table_name: str | None = None  # the table's name in tables.yaml, when it has one
    dagster_run_id: str | None = None
    score: Score | None = None  # health before and after; None: not scored

    def __post_init__(self) -> None:
        if self.trigger not in TRIGGERS:
            raise ValueError(f"trigger {self.trigger!r} is not one of {', '.join(TRIGGERS)}")


def run_recorded(op: Operation, table: DeltaTable, options: Any, spark: SparkFactory | None, *,
                 origin: RunOrigin) -> Report:
    """``op.run(table, options, spark)``, with one history row appended afterwards (unless
    ``origin.history`` is None or is ``table`` itself)."""
    history = origin.history
    if history is None or history.holds(table.uri):
        return op.run(table, options, spark)
    start, cpu = _now(table), cpu_seconds()
    before, note = _score(origin.score, table, "before")
    try:
        report = op.run(table, options, spark)
    except BaseException as exc:
        row = _row(op, table, origin, start, cpu, status=FAILED, before=before,
                   note=note or "the run failed: no score after", error=exc)
        _append(history, row)
        raise
    after, note_after = _score(origin.score, table, "after")
    _append(history, _row(op, table, origin, start, cpu, status=SUCCEEDED, before=before, after=after,
                          note=note or note_after, report=report))
    return report


def _now(table: DeltaTable) -> dt.datetime:
    """The table's now (its clock: the commits' time), as the row's start and end times."""
    return dt.datetime.fromtimestamp(table.clock() / 1000, dt.UTC)


def _score(score: Score | None, table: DeltaTable, when: str) -> tuple[int | None, str | None]:
    if score is None:
        return None, "not scored: no health policy was given to this run"
    try:
        return score(table), None
    except DeltaError as exc:  # the log could not be read: the run itself will say why
        return None, f"no score {when}: {exc.kind}"


def _row(op: Operation, table: DeltaTable, origin: RunOrigin, start: dt.datetime, cpu: float, *, status: str,
         before: int | None, note: str | None, after: int | None = None, report: Report | None = None,
         error: BaseException | None = None) -> HistoryRow:
    read = (report.num_removed_files, report.removed_bytes) if report is not None and op.rewrites_data else (0, 0)
    return HistoryRow(
        start_time=start, end_time=_now(table), table_name=origin.table_name, table_uri=table.uri,
        operation=op.name, status=status, trigger=origin.trigger, dagster_run_id=origin.dagster_run_id,
        version=report.version if report is not None else None,
        files_read=read[0], bytes_read=read[1],
        files_written=report.num_added_files if report is not None else 0,
        bytes_written=report.added_bytes if report is not None else 0,
        health_before=before, health_after=after, health_note=note,
        error_kind=None if error is None else getattr(error, "kind", type(error).__name__),
        error_message=None if error is None else str(error)[:2000],
        core_seconds=round(cpu_seconds() - cpu, 3),
        operation_metrics=_metrics(report.to_dict()) if report is not None else {})


def _metrics(values: dict[str, Any]) -> dict[str, str]:
    """The report's fields as text: scalars as written, the rest as JSON."""
    return {k: v if isinstance(v, str) else json.dumps(v, default=str, sort_keys=True) for k, v in values.items()
            if v is not None}


def _append(history: HistoryLocation, row: HistoryRow) -> None:
    """Append ``row``; a failure is a warning, never the run's outcome."""
    from delta_core.maintenance.history_table import append_rows  # deferred: pyarrow

    try:
        append_rows(history, [row])
    # Any failure (a store that refuses, an fsspec scheme not installed, ...): the record of a run
    # must not replace the run's own outcome, whatever went wrong with the record.
    except Exception as exc:  # noqa: BLE001
        log.warning("maintenance history %s: could not record %s of %s (%s): %s", history.uri, row.operation,
                    row.table_uri, row.status, exc)
