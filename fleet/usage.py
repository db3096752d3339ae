"""What maintenance uses now across the fleet, read from the Dagster instance, and the budget
check the automation side calls (``budget_allows``).

A run counts as maintenance when its job is one of the maintenance jobs (a table's operation
and full-maintenance jobs, the ``all_tables_*`` jobs) or when it selects a maintenance asset
(runs Dagster's declarative automation launches carry an asset selection, not our job names).
Bytes rewritten are the ``bytes_removed`` metadata (``assets.metrics_view.BYTES_REMOVED_KEY``)
of the rewrite assets' materializations (compact, zorder, cluster, purge) over the last 24
hours: one batched read of the rewrite assets' records finds those whose latest materialization
falls in that day, and only they are queried (one query each), so a tick over thousands of
tables that rewrote little costs one query, not one per asset; a rewrite in progress counts with the estimate in its
``ESTIMATED_BYTES_TAG`` (set by the fleet advisor), as its materialization has not landed yet.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus, RunsFilter

from assets.automation import all_records
from assets.discovered import discovered_asset_key
from assets.maintenance import maintenance_asset_key
from assets.metrics_view import BYTES_REMOVED_KEY
from delta_core.config.generated_names import DISCOVERED_MAINTENANCE_JOB, discovered_job_name
from delta_core.health.priority import REWRITES
from fleet.budget import DAY_SECONDS, HOUR_SECONDS, FleetUsage, held_by
from jobs import ALL_TABLES_MAINTENANCE_JOB, all_tables_job_name, maintenance_job_name, operation_job_name
from resources.config import MaintenanceConfig, TableConfig

ESTIMATED_BYTES_TAG = "delta_maintenance/estimated_bytes"  # a requested run's rewrite estimate
IN_PROGRESS = (DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.MANAGED,
               DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING)


@dataclass(frozen=True, slots=True)
class FleetScope:
    """The jobs and assets that are maintenance, for the tables of one config."""

    jobs: frozenset[str]
    assets: frozenset[AssetKey]
    rewrite_assets: tuple[AssetKey, ...]

    def counts(self, job_name: str, asset_selection: Iterable[AssetKey] | None) -> bool:
        """Whether a run of ``job_name`` selecting ``asset_selection`` is a maintenance run."""
        return job_name in self.jobs or bool(asset_selection and self.assets.intersection(asset_selection))


def fleet_scope(tables: Iterable[TableConfig], *, partitioned: bool = False) -> FleetScope:
    """What counts as maintenance for ``tables``; ``partitioned`` (``fleet.discovered_as``): the
    discovered ones are partitions of the ``discovered_tables`` assets and run their jobs."""
    tables = tuple(tables)
    discovered = tuple(t for t in tables if partitioned and t.discovered_under is not None)
    if discovered:
        ops = {op for t in discovered for op in t.operations}
        listed = fleet_scope(t for t in tables if t.discovered_under is None)
        return FleetScope(
            jobs=listed.jobs | {DISCOVERED_MAINTENANCE_JOB, *map(discovered_job_name, ops)},
            assets=listed.assets | {discovered_asset_key(op) for op in ops},
            rewrite_assets=(*listed.rewrite_assets, *(discovered_asset_key(op) for op in sorted(ops) if op in REWRITES)))
    ops = {op for t in tables for op in t.operations}
    jobs = {maintenance_job_name(t.name) for t in tables} | {
        operation_job_name(t.name, op) for t in tables for op in t.operations}
    jobs |= {all_tables_job_name(op) for op in ops} | ({ALL_TABLES_MAINTENANCE_JOB} if tables else set())
    return FleetScope(
        jobs=frozenset(jobs),
        assets=frozenset(maintenance_asset_key(t.name, op) for t in tables for op in t.operations),
        rewrite_assets=tuple(maintenance_asset_key(t.name, op) for t in tables for op in t.operations
                             if op in REWRITES))


def rewritten_bytes(instance: DagsterInstance, key: AssetKey, *, since: float, until: float) -> list[tuple[float, int]]:
    """``(timestamp, bytes rewritten)`` of ``key``'s materializations between ``since`` and ``until``."""
    # every one, page by page: a discovered tables' asset rewrites one partition per table
    records = all_records(instance.fetch_materializations,
                          AssetRecordsFilter(asset_key=key, after_timestamp=since, before_timestamp=until))
    out = []
    for record in records:
        materialization = record.asset_materialization
        entry = materialization.metadata.get(BYTES_REMOVED_KEY) if materialization is not None else None
        if entry is not None and isinstance(entry.value, int):
            out.append((record.timestamp, entry.value))
    return out


def _materialized_since(instance: DagsterInstance, keys: Sequence[AssetKey], *, since: float) -> list[AssetKey]:
    """The assets of ``keys`` whose latest materialization is at or after ``since`` (one read)."""
    out = []
    for record in instance.get_asset_records(list(keys)) if keys else ():
        latest = record.asset_entry.last_materialization_record
        if latest is not None and latest.timestamp >= since:
            out.append(record.asset_entry.asset_key)
    return out


def fleet_usage(instance: DagsterInstance, scope: FleetScope, *, now: float) -> FleetUsage:
    """Maintenance runs in progress and bytes rewritten in the hour and day before ``now``."""
    running = [r.dagster_run for r in instance.get_run_records(filters=RunsFilter(statuses=list(IN_PROGRESS)))
               if scope.counts(r.dagster_run.job_name, r.dagster_run.asset_selection)]
    reserved = sum(int(r.tags.get(ESTIMATED_BYTES_TAG, "0")) for r in running)
    hour = day = reserved
    for key in _materialized_since(instance, scope.rewrite_assets, since=now - DAY_SECONDS):
        for timestamp, rewritten in rewritten_bytes(instance, key, since=now - DAY_SECONDS, until=now):
            day += rewritten
            hour += rewritten if timestamp >= now - HOUR_SECONDS else 0
    return FleetUsage(runs_in_progress=len(running), bytes_last_hour=hour, bytes_last_day=day)


def max_bytes_bound(table: TableConfig, operation: str) -> int | None:
    """The ``max_bytes`` bound of registry ``operation``'s tables.yaml section on ``table``
    (rewrites only; None: unbounded), which caps the run and its estimate alike."""
    policy = table.policy(operation)
    return getattr(policy.options, "max_bytes", None) if policy is not None else None


def budget_allows(instance: DagsterInstance, config: MaintenanceConfig, *, rewrite_bytes: int, now: float) -> bool:
    """Whether the fleet budget lets one more maintenance run, rewriting ``rewrite_bytes``, start
    at ``now`` (POSIX seconds): inside a window, under
    ``max_concurrent_runs`` and within the byte limits. The hook for automation conditions: and
    it with an asset's condition (an ``AutomationCondition`` evaluating it, or a sensor gating
    requests), so automated runs honour the limits the fleet advisor does. ``rewrite_bytes`` as
    the advisor estimates it: ``delta_core.health.priority.rewrite_bytes(recommendation,
    max_bytes=max_bytes_bound(table, operation))`` of a recommendation of the table's health report
    (``assets.health_view.table_health_report``); 0 for an operation that rewrites nothing."""
    usage = fleet_usage(instance, fleet_scope(config.tables), now=now)
    return held_by(config.fleet, usage, rewrite_bytes=rewrite_bytes, now=now) is None
