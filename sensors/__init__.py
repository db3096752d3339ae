"""Per-table log sensors: the cursor is the last Delta version seen.

A tick reads only the commits after the cursor (``DeltaTable.changes_since``), so its cost
depends on how many commits landed, not on the table's size. For those commits it

1. records the new version as an observation of ``<table>/delta_table`` (data version = the
   newest version that changed data, ``assets.data_version``) with the table's health, which
   makes assets depending on the table stale when data changed;
2. requests a checkpoint run when the versions since the last checkpoint reach the
   policy's interval;
3. requests a manifest run when manifests are on and files were added or removed;
4. requests a downstream refresh only when some commit changed data (an ``add``/``remove``
   with ``dataChange=true``); compact and zorder commit ``dataChange=false`` and do not;
5. requests the table's health checks (``<table>_checks``, ``assets.health_checks``).
6. for a discovered table, checks its policy (its root's ``defaults``) against its schema and
   names a misfit on the observation (``policy_misfit``, without health figures: they are
   judged by that policy) and in the tick's log: the load does not read discovered tables
   (``delta_core.config.table_checks``).

Run keys are ``<table>:<purpose>:v<version>``, so evaluating the same tick twice cannot start
a second run. The first tick (no cursor) starts watching at the current version: it observes
the table and requests its checks there too.

The sensor starts running (``DefaultSensorStatus.RUNNING``), so a new deployment observes every
table and shows its checks without anyone clicking Observe. What it starts by itself rewrites no
data: the checks read the log, checkpoints and manifests write log-sized files, and the
downstream refresh follows data changes. Data rewrites stay with schedules, the advisor and
automation.
"""


import itertools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dagster import (
    AssetObservation,
    AssetsDefinition,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.discovered import DISCOVERED_TABLE_KEY
from assets.maintenance import TABLE_TAG
from assets.table import observe_table, table_asset_key
from delta_core.config.table_checks import table_misfit
from delta_core.errors import ConfigError, LogGapError, NotADeltaTableError
from delta_core.log.commit_summary import CommitSummary
from delta_core.maintenance.operations import CHECKPOINT, MANIFEST
from delta_core.model.actions import Action
from delta_core.write.checkpoint_cadence import checkpoint_due, versions_since_checkpoint
from fleet.usage import FleetScope
from jobs import TableJobs
from resources import resource_key_of, table_resource
from resources.config import FleetPolicy, TableConfig, TableConfigError
from schedules import op_run_config, policy_run_config
from sensors.advisor import AdvisedPartitions, AdvisedTable, build_fleet_advisor_sensor

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

TRIGGER_TAG = "delta_maintenance/trigger"
VERSION_TAG = "delta_maintenance/version"
POLICY_MISFIT_KEY = "policy_misfit"  # a discovered table's observation: its policy's misfit with its schema
# The asset-event tag that carries a data version: the documented ``data_version`` field of
# Dagster's external-asset REST API is stored under this key, and staleness is computed from it.
# A sensor cannot return an ``ObserveResult(data_version=...)`` and Dagster exports no public
# constant for the key (only a private ``dagster._core`` one), so the key is spelled here.
DATA_VERSION_TAG = "dagster/data_version"


def sensor_name(table_name: str) -> str:
    return f"{table_name}_delta_log_sensor"


@dataclass(frozen=True, slots=True)
class CommitBatch:
    """What a run of consecutive commits did, as far as the sensor cares."""

    first_version: int
    last_version: int
    commits: int
    file_commits: int  # commits adding or removing files (any dataChange)
    data_change_commits: int  # commits with an add/remove that has dataChange=true
    operations: tuple[str, ...]

    @classmethod
    def of(cls, commits: Sequence[tuple[int, Sequence[Action]]]) -> "CommitBatch":
        summaries = [CommitSummary.from_actions(v, actions) for v, actions in commits]
        return cls(first_version=commits[0][0], last_version=commits[-1][0], commits=len(commits),
                   file_commits=sum(s.has_file_actions for s in summaries),
                   data_change_commits=sum(s.changes_data for s in summaries),
                   operations=tuple(s.operation or "UNKNOWN" for s in summaries))

    @classmethod
    def unknown(cls, first_version: int, last_version: int) -> "CommitBatch":
        """Commits that could not be read (log cleaned up): assume everything changed."""
        n = max(0, last_version - first_version + 1)
        return cls(first_version=first_version, last_version=last_version, commits=n,
                   file_commits=n, data_change_commits=n, operations=("UNKNOWN",))


def parse_cursor(cursor: str | None) -> int | None:
    if cursor is None or cursor == "":
        return None
    try:
        version = int(cursor)
    except ValueError:
        raise ConfigError(f"sensor cursor {cursor!r} is not a Delta version; reset the sensor's "
                          "cursor in the UI (or clear it) to start watching from the latest version") from None
    if version < -1:
        raise ConfigError(f"sensor cursor {cursor!r} must be -1 or a Delta version")
    return version


def _run_key(table: str, purpose: str, version: int) -> str:
    return f"{table}:{purpose}:v{version}"


def _tags(table: str, trigger: str, version: int) -> dict[str, str]:
    return {TABLE_TAG: table, TRIGGER_TAG: trigger, VERSION_TAG: str(version)}


def _misfit(context: SensorEvaluationContext, table: TableConfig, dt: "DeltaTable",
            version: int) -> TableConfigError | None:
    """A discovered table's policy misfit with its schema at ``version``, said in the tick's log."""
    misfit = table_misfit(table, dt.protocol_and_metadata(version)[1])
    if misfit is not None:
        context.log.warning(f"discovered table {table.name} (root {table.discovered_under}): {misfit}; "
                            "its runs of that operation refuse it, and its health is not computed until it fits")
    return misfit


@dataclass(frozen=True, slots=True)
class TableTick:
    """What one tick of a table's log sensor decided: the runs to request, the version to resume
    after, and the observation of the table (none when nothing moved: ``skip_reason``)."""

    requests: list[RunRequest]
    cursor: int | None
    observation: AssetObservation | None = None
    skip_reason: str | None = None


def table_tick(context: SensorEvaluationContext, table: TableConfig, jobs: TableJobs,
               assets_by_op: Mapping[str, AssetsDefinition], dt: "DeltaTable", seen: int | None) -> TableTick:
    """One tick of ``table``'s log sensor after version ``seen`` (None: the first tick): the
    module docstring's requests, each of ``jobs`` (a partition's carry its tags), and the
    observation of its table asset (a discovered table's: its partition)."""
    checkpoint_job = jobs.operations.get(CHECKPOINT.name)
    manifest_job = jobs.operations.get(MANIFEST.name)
    interval = table.policies[CHECKPOINT.name].interval
    if seen is None:
        try:
            latest = dt.latest_version()
        except NotADeltaTableError as missing:
            return TableTick([], None, skip_reason=f"{table.name}: {missing}")
        batch = None
    else:
        try:
            commits = list(itertools.islice(dt.changes_since(seen), table.sensor.max_commits_per_tick))
        except LogGapError as gap:
            # Commits after the cursor were cleaned up: resynchronise at the latest
            # version and assume files and data changed.
            context.log.warning(f"{table.name}: {gap}; resuming at the latest version")
            latest = dt.latest_version()
            commits = []
            batch = CommitBatch.unknown(seen + 1, latest)
        else:
            if not commits:
                return TableTick([], seen, skip_reason=f"no commits after version {seen}")
            batch = CommitBatch.of(commits)
            latest = batch.last_version

    last_checkpoint = dt.last_checkpoint_version()
    requests: list[RunRequest] = []
    if checkpoint_job is not None and checkpoint_due(versions_since_checkpoint(latest, last_checkpoint), interval):
        requests.append(RunRequest(
            run_key=_run_key(table.name, CHECKPOINT.name, latest),
            job_name=checkpoint_job.name,
            asset_selection=jobs.selection(checkpoint_job),
            asset_check_keys=jobs.check_selection(checkpoint_job),
            # due by this sensor's interval: the run writes it whatever the table's own says
            run_config=op_run_config(assets_by_op[CHECKPOINT.name],
                                     policy_run_config(table, CHECKPOINT.name) | {"force": True}),
            tags=_tags(table.name, "checkpoint_due", latest) | jobs.run_tags,
        ))
    if batch is not None and manifest_job is not None and batch.file_commits:
        requests.append(RunRequest(
            run_key=_run_key(table.name, MANIFEST.name, latest),
            job_name=manifest_job.name,
            asset_selection=jobs.selection(manifest_job),
            asset_check_keys=jobs.check_selection(manifest_job),
            run_config=op_run_config(assets_by_op[MANIFEST.name], policy_run_config(table, MANIFEST.name)),
            tags=_tags(table.name, "files_changed", latest) | jobs.run_tags,
        ))
    if batch is not None and jobs.downstream is not None and batch.data_change_commits:
        requests.append(RunRequest(
            run_key=_run_key(table.name, "downstream", latest),
            job_name=jobs.downstream.name,
            asset_selection=jobs.selection(jobs.downstream),
            tags=_tags(table.name, "data_changed", latest),
        ))
    requests.append(RunRequest(run_key=_run_key(table.name, "checks", latest), job_name=jobs.checks.name,
                               asset_selection=jobs.selection(jobs.checks),
                               asset_check_keys=jobs.check_selection(jobs.checks),
                               tags=_tags(table.name, "new_version", latest) | jobs.run_tags))

    # Commits the batch already read are not read again to find the data version.
    known = ({v: CommitSummary.from_actions(v, actions).changes_data for v, actions in commits}
             if batch is not None else None)
    key = DISCOVERED_TABLE_KEY if jobs.partition is not None else table_asset_key(table.name)
    misfit = _misfit(context, table, dt, latest) if table.discovered_under is not None else None
    data_version, metadata = observe_table(dt, table, context.instance, latest=latest,
                                           last_checkpoint=last_checkpoint,
                                           operation=batch.operations[-1] if batch else None,
                                           timestamp_ms=None, known=known, key=key, partition=jobs.partition,
                                           health=misfit is None)
    if misfit is not None:
        metadata[POLICY_MISFIT_KEY] = MetadataValue.text(str(misfit))
    if batch is not None:
        metadata.update({
            "new_commits": MetadataValue.int(batch.commits),
            "data_change_commits": MetadataValue.int(batch.data_change_commits),
            "operations": MetadataValue.text(", ".join(sorted(set(batch.operations)))),
        })
    observation = AssetObservation(asset_key=key, partition=jobs.partition, metadata=metadata,
                                   tags={DATA_VERSION_TAG: data_version.value})
    return TableTick(requests, latest, observation)


def build_table_sensor(table: TableConfig, jobs: TableJobs,
                       assets_by_op: dict[str, AssetsDefinition]) -> SensorDefinition | None:
    """The table's log sensor, or None when the policy turns it off.

    With no checkpoint, manifest or downstream job to start it still records each new version.
    """
    targets = [j for j in (jobs.operations.get(CHECKPOINT.name), jobs.operations.get(MANIFEST.name), jobs.downstream,
                           jobs.checks) if j is not None]
    if not table.sensor.enabled:
        return None

    @sensor(
        name=sensor_name(table.name),
        jobs=targets or None,
        minimum_interval_seconds=table.sensor.interval_seconds,
        required_resource_keys={resource_key_of(table)},
        default_status=DefaultSensorStatus.RUNNING,
        description=(f"Watches `{table.name}`'s _delta_log: records each new version, requests its health "
                     "checks, checkpoint/manifest runs when due and downstream refreshes on data changes."),
    )
    def _sensor(context: SensorEvaluationContext) -> SensorResult:
        dt = table_resource(context.resources, table).open()
        tick = table_tick(context, table, jobs, assets_by_op, dt, parse_cursor(context.cursor))
        if tick.observation is None:
            return SensorResult(skip_reason=tick.skip_reason,
                                cursor=str(tick.cursor) if tick.cursor is not None else None)
        return SensorResult(run_requests=tick.requests, cursor=str(tick.cursor), asset_events=[tick.observation])

    return _sensor


def build_sensors(tables: Sequence[AdvisedTable], fleet: FleetPolicy, scope: FleetScope, *,
                  clock: Callable[[], float] = time.time,
                  partitions: AdvisedPartitions | None = None) -> list[SensorDefinition]:
    """Each table's log sensor and, when some table has ``advisor.mode: auto`` (or ``partitions``,
    discovered tables as partitions, are advised), the fleet advisor (``sensors.advisor``) over
    them, within the ``fleet`` budget over what ``scope`` counts as maintenance
    (``fleet.usage.fleet_scope``), its now read from ``clock``."""
    out = [s for table, jobs, assets_by_op in tables
           if (s := build_table_sensor(table, jobs, assets_by_op)) is not None]
    advisor = build_fleet_advisor_sensor(tables, fleet, scope, clock=clock, partitions=partitions)
    return out + ([advisor] if advisor is not None else [])
