"""Asset jobs: per table (full maintenance, one per operation, downstream refresh, observation of
the table, its health checks) and across tables (all maintenance, one per operation).

Every maintenance job also selects the health checks of the tables it maintains
(``assets.health_checks``): they depend on the maintenance assets, so they run last and judge
what the run left. ``<table>_checks`` runs the checks alone (the log sensor requests it on each
new version).

Every job runs on the in-process executor by default: one process, one SparkSession for all
its steps, and steps in dependency order (compact before zorder before vacuum ...). Run config
can choose the multiprocess executor instead (``execution: {config: {multiprocess:
{max_concurrent: 4}}}``): steps of different tables then run in parallel processes, each with
its own Spark resource, which should point at a cluster or a Spark Connect server (README,
"Running on a cluster"). Job names follow the registry names (``<table>_compact``,
``all_tables_vacuum``). A table found by ``discover:`` has no jobs of its own: its runs are runs of
the fleet jobs that select its assets (``TableJobs``), so the job count does not grow with the fleet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from dagster import AssetCheckKey, AssetKey, AssetSelection, define_asset_job, multi_or_in_process_executor

from assets.discovered import DISCOVERED_TABLE_KEY, discovered_asset_key, partition_tags
from assets.downstream import daily_summary_key
from assets.health_checks import health_check_keys
from assets.maintenance import OPERATION_TAG, maintenance_asset_key
from assets.table import table_asset_key
from delta_core.config.generated_names import (
    ALL_TABLES_CHECKS_JOB,
    ALL_TABLES_MAINTENANCE_JOB,
    ALL_TABLES_OBSERVE_JOB,
    DISCOVERED_CHECKS_JOB,
    DISCOVERED_GROUP,
    DISCOVERED_MAINTENANCE_JOB,
    all_tables_job_name,
    checks_job_name,
    discovered_job_name,
    downstream_job_name,
    maintenance_job_name,
    observe_job_name,
    operation_job_name,
)
from delta_core.maintenance.operations import ONE_OFFS, OPERATIONS, operation
from resources.config import MaintenanceConfig, TableConfig

# What ``define_asset_job`` returns: Dagster 1.13 does not export that class publicly, and the
# code location imports public Dagster API only.
AssetJob: TypeAlias = Any

# multi_or_in_process_executor defaults to multiprocess; ours default to one process.
IN_PROCESS_RUN_CONFIG: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}


def downstream_keys(table: TableConfig) -> list[AssetKey]:
    keys = [daily_summary_key(table.name)] if table.downstream.daily_summary else []
    keys += [AssetKey(a.split("/")) for a in table.downstream.assets]
    return keys


@dataclass(frozen=True, slots=True)
class TableJobs:
    """The jobs that run a table's assets. A discovered table has none of its own: it shares the
    fleet jobs (``all_tables_<operation>``, ``all_tables_maintenance``, ``all_tables_observe``)
    and ``shared`` holds its assets in each, which every run of one of them for this table
    selects (``selection``). With thousands of tables, jobs per table would dominate the load
    of the code location: Dagster snapshots every job's run-config schema."""

    maintenance: AssetJob
    operations: dict[str, AssetJob]
    downstream: AssetJob | None
    observe: AssetJob | None  # None: a partition (its observations come from the log sensor)
    checks: AssetJob
    shared: Mapping[str, tuple[AssetKey, ...]] = field(default_factory=dict)
    shared_checks: tuple[AssetCheckKey, ...] = ()
    partition: str | None = None  # a discovered table as a partition: the partition its runs maintain

    @property
    def run_tags(self) -> dict[str, str]:
        """The tags every run for this table carries besides its own: its partition's, if any."""
        return partition_tags(self.partition) if self.partition is not None else {}

    def shares(self, job: AssetJob) -> bool:
        """Whether ``job`` runs other tables too (a fleet job, or a partitioned one): its runs for
        this table are told apart by their tags."""
        return job.name in self.shared or self.partition is not None

    def selection(self, job: AssetJob) -> list[AssetKey] | None:
        """The assets a run of ``job`` for this table selects; None: all of the job's (its own job)."""
        keys = self.shared.get(job.name)
        return list(keys) if keys is not None else None

    def check_selection(self, job: AssetJob) -> list[AssetCheckKey] | None:
        """The asset checks a run of ``job`` for this table selects: on a shared fleet job, the
        table's own health checks (a run selecting only its maintenance assets would run none);
        None: all of the job's."""
        return list(self.shared_checks) if job.name in self.shared else None


def _job(name: str, selection: AssetSelection, description: str) -> AssetJob:
    return define_asset_job(name, selection=selection, executor_def=multi_or_in_process_executor,
                            config=IN_PROCESS_RUN_CONFIG, description=description)


def _checks_of(*tables: TableConfig) -> AssetSelection:
    """The health checks of ``tables``' assets (they run after the maintenance a job selects)."""
    return AssetSelection.checks_for_assets(*(table_asset_key(t.name) for t in tables))


def build_table_jobs(table: TableConfig, fleet: Mapping[str, AssetJob] | None = None) -> TableJobs:
    """The table's jobs; a discovered table's are the ``fleet`` jobs (``build_cross_table_jobs``)."""
    if table.discovered_under is not None and fleet is not None:
        return _shared_jobs(table, fleet)
    # one-offs (restore) are launched by hand with their options: never part of a full run
    one_offs = [op.name for op in ONE_OFFS if (policy := table.policy(op.name)) is not None and policy.enabled]
    checks = _checks_of(table)
    maintenance = _job(
        maintenance_job_name(table.name),
        ((AssetSelection.groups(table.name) & AssetSelection.kind("delta"))
         - AssetSelection.assets(*(maintenance_asset_key(table.name, op) for op in one_offs))) | checks,
        f"Full maintenance of `{table.name}`: {', '.join(table.operations)}, then its health checks.",
    )
    operations = {
        op: _job(operation_job_name(table.name, op),
                 AssetSelection.assets(maintenance_asset_key(table.name, op)) | checks,
                 f"{operation(op).title} of `{table.name}`" + (
                     " (launched by hand with its options in the run config)." if op in one_offs else "."))
        for op in (*table.operations, *one_offs)
    }
    downstream = _downstream_job(table)
    # What the log sensor records on each new version, on demand (the demo runs it; so can a person).
    observe = _job(observe_job_name(table.name), AssetSelection.assets(table_asset_key(table.name)),
                   f"Observe `{table.name}`: record its Delta version, data version and health.")
    checks_job = _job(checks_job_name(table.name), checks,
                      f"Check `{table.name}`'s health from its log: the asset checks of its table asset.")
    return TableJobs(maintenance=maintenance, operations=operations, downstream=downstream, observe=observe,
                     checks=checks_job)


def _downstream_job(table: TableConfig) -> AssetJob | None:
    keys = downstream_keys(table)
    return _job(downstream_job_name(table.name), AssetSelection.assets(*keys),
                f"Refresh assets downstream of `{table.name}` after data changes.") if keys else None


def _shared_jobs(table: TableConfig, fleet: Mapping[str, AssetJob]) -> TableJobs:
    """A discovered table's jobs: the fleet's, each run selecting this table's assets only. Its
    one-offs (restore) are launched from the asset in the catalog, with their options."""
    operations = {op: fleet[all_tables_job_name(op)] for op in table.operations}
    keys: dict[str, tuple[AssetKey, ...]] = {op: (maintenance_asset_key(table.name, op),) for op in table.operations}
    shared: dict[str, tuple[AssetKey, ...]] = {all_tables_job_name(op): keys[op] for op in table.operations}
    shared[ALL_TABLES_MAINTENANCE_JOB] = tuple(k for op in table.operations for k in keys[op])
    shared[ALL_TABLES_OBSERVE_JOB] = (table_asset_key(table.name),)
    shared[ALL_TABLES_CHECKS_JOB] = ()
    return TableJobs(maintenance=fleet[ALL_TABLES_MAINTENANCE_JOB], operations=operations,
                     downstream=_downstream_job(table), observe=fleet[ALL_TABLES_OBSERVE_JOB],
                     checks=fleet[ALL_TABLES_CHECKS_JOB], shared=shared, shared_checks=health_check_keys(table.name))


def build_cross_table_jobs(config: MaintenanceConfig) -> dict[str, AssetJob]:
    """The fleet jobs by name: all maintenance, one per operation and, when tables are discovered,
    the observation of every discovered table (their own observe jobs). With discovered tables as
    partitions (``fleet.discovered_as``) these jobs serve the listed tables only: a job's assets
    share one partitioning (``build_discovered_jobs``)."""
    tables = [t for t in config.tables if not (config.fleet.partitioned and t.discovered_under is not None)]
    jobs = {ALL_TABLES_MAINTENANCE_JOB: _job(ALL_TABLES_MAINTENANCE_JOB,
                                             (AssetSelection.kind("delta") - AssetSelection.groups(DISCOVERED_GROUP))
                                             | _checks_of(*tables),
                                             "Full maintenance of every managed table, then their health checks.")
            } if tables else {}
    for op in OPERATIONS:
        with_op = [t for t in tables if op.name in t.operations]
        if with_op:
            jobs[all_tables_job_name(op.name)] = _job(
                all_tables_job_name(op.name),
                (AssetSelection.tag(OPERATION_TAG, op.name) - AssetSelection.groups(DISCOVERED_GROUP))
                | _checks_of(*with_op),
                f"{op.name} of every managed table that enables it, then their health checks.")
    discovered = [t for t in tables if t.discovered_under is not None]
    if discovered:
        jobs[ALL_TABLES_OBSERVE_JOB] = _job(ALL_TABLES_OBSERVE_JOB,
                                            AssetSelection.assets(*(table_asset_key(t.name) for t in discovered)),
                                            "Observe discovered tables (a run selects one): Delta version, "
                                            "data version and health.")
        jobs[ALL_TABLES_CHECKS_JOB] = _job(ALL_TABLES_CHECKS_JOB, _checks_of(*discovered),
                                           "Check discovered tables' health from their logs (a run selects one "
                                           "table's checks).")
    return jobs


def partition_jobs(table: TableConfig, jobs: Mapping[str, AssetJob]) -> TableJobs:
    """The jobs of a discovered table as a partition: the ``build_discovered_jobs`` of its operations."""
    return TableJobs(maintenance=jobs[DISCOVERED_MAINTENANCE_JOB],
                     operations={op: jobs[discovered_job_name(op)] for op in table.operations},
                     downstream=None, observe=None, checks=jobs[DISCOVERED_CHECKS_JOB], partition=table.name)


def build_discovered_jobs(operations: Sequence[str]) -> dict[str, AssetJob]:
    """The jobs over the discovered tables' partitions (``assets.discovered``): full maintenance,
    one per operation of ``operations`` and the health checks; a run is one partition (table)."""
    checks = AssetSelection.checks_for_assets(DISCOVERED_TABLE_KEY)
    one_offs = [op.name for op in ONE_OFFS if op.name in operations]
    maintained = [op for op in operations if op not in one_offs]
    jobs = {DISCOVERED_MAINTENANCE_JOB: _job(
        DISCOVERED_MAINTENANCE_JOB, AssetSelection.assets(*map(discovered_asset_key, maintained)) | checks,
        f"Full maintenance of one discovered table (the run's partition): {', '.join(maintained)}, then its "
        "health checks.")}
    for op in operations:
        jobs[discovered_job_name(op)] = _job(
            discovered_job_name(op), AssetSelection.assets(discovered_asset_key(op)) | checks,
            f"{operation(op).title} of one discovered table (the run's partition), then its health checks.")
    jobs[DISCOVERED_CHECKS_JOB] = _job(DISCOVERED_CHECKS_JOB, checks,
                                       "Check one discovered table's health (the run's partition) from its log.")
    return jobs
