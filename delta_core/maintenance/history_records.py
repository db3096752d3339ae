"""The records of the maintenance history: where its table lives and one row of it.

``HistoryLocation`` is tables.yaml's ``history`` (or ``$DELTA_MAINTENANCE_HISTORY`` for the
command line without ``--config``); ``HistoryRow`` is one run of one registry operation on one
table, the columns of ``history_table.HISTORY_SCHEMA``. No pyarrow here: the command line
imports it while building its parser.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from delta_core.model.path_identity import local_os_path

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

HISTORY_ENV_VAR = "DELTA_MAINTENANCE_HISTORY"  # the history table's URI for the CLI without --config
SUCCEEDED, FAILED = "SUCCEEDED", "FAILED"
# Who started a run: the command line, a Dagster job launched by hand, a schedule, the log
# sensor, the automation sensor (declarative automation) or the fleet advisor.
TRIGGERS = ("cli", "job", "schedule", "sensor", "automation", "advisor")


@dataclass(frozen=True, slots=True)
class HistoryLocation:
    """Where the history table lives (tables.yaml ``history``, or ``$DELTA_MAINTENANCE_HISTORY``)."""

    uri: str
    storage_options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def holds(self, uri: str) -> bool:
        """Whether ``uri`` names this table (local paths compared resolved, URIs without a trailing /)."""
        return same_location(self.uri, uri)

    def open(self) -> DeltaTable:
        from delta_core.log.table import DeltaTable  # deferred: the read path loads pyarrow

        return DeltaTable(self.uri, dict(self.storage_options) or None)


def location_key(uri: str) -> str:
    """One spelling per table location: a local root's resolved OS path, else the URI without a
    trailing slash."""
    local = local_os_path(uri)
    return os.path.realpath(local) if local is not None else uri.rstrip("/")


def same_location(a: str, b: str) -> bool:
    """Whether two table roots name one location (``location_key``)."""
    return location_key(a) == location_key(b)


def location_from_env() -> HistoryLocation | None:
    """The history table named by ``$DELTA_MAINTENANCE_HISTORY``; None when unset or empty."""
    uri = os.environ.get(HISTORY_ENV_VAR, "").strip()
    return HistoryLocation(uri) if uri else None


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One run of one operation on one table."""

    start_time: dt.datetime  # aware, UTC
    end_time: dt.datetime
    table_name: str | None
    table_uri: str
    operation: str
    status: str
    trigger: str
    dagster_run_id: str | None = None
    version: int | None = None
    # A rewrite's inputs: the data files its committed batches removed, and their sizes. Compaction
    # and purge read each of them once, whole; Z-order and clustering read them twice (the
    # clustering columns to sample, then whole). Not counted: deletion-vector files, a batch's
    # inputs read again after a conflict re-planned it, and the inputs of a batch abandoned.
    files_read: int = 0
    bytes_read: int = 0
    # The data files its committed batches added, and their sizes (as the commits' add actions).
    files_written: int = 0
    bytes_written: int = 0
    health_before: int | None = None
    health_after: int | None = None
    health_note: str | None = None
    error_kind: str | None = None
    error_message: str | None = None
    # CPU seconds (user + system) of the run: the process that ran it and its descendants, so a
    # local Spark's JVM and Python workers too, not a cluster's executors (``cpu_time``).
    core_seconds: float = 0.0
    operation_metrics: Mapping[str, str] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["start_time"], out["end_time"] = self.start_time.isoformat(), self.end_time.isoformat()
        out["operation_metrics"] = dict(self.operation_metrics)
        return out
