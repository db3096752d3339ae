"""Declarative automation of the maintenance assets: each asset's ``AutomationCondition``, built
from its table's policy in tables.yaml, and the sensors that evaluate them.

A maintenance asset ``<table>/<operation>`` is requested when

    (its cron tick passed | a health check it fixes fails)      -- "due"
    & not in progress & inside the table's windows [& the fleet budget] & cooled down

- **cron tick**: the operation's ``cron`` (``OperationPolicy.cron``), UTC, once per tick
  (``cron_tick_passed(...).since_last_handled()``: a tick outside the windows waits for them);
- **a health check it fixes fails**: a check on ``<table>/delta_table`` named in
  ``checks_fixed_by(operation)`` (``delta_core.health.check_names``) whose latest result failed.
  Only with ``advisor: {mode: auto}``: a table left on ``schedule`` runs by its crons alone.
  A table whose log sensor is on leaves checkpoints to that sensor, as the advisor does;
- **not in progress**: no run that plans to materialize it is queued or running, whatever
  started it (this sensor, a schedule, the advisor, a person): one run per table-operation;
- **windows**: ``advisor.windows`` (UTC spans such as ``22:00-06:00``; none: any time);
- **fleet budget**: ``maintenance_condition(..., budget=...)`` is the one place a cross-table
  budget condition is and-ed in (absent: no budget);
- **cooled down**: no run of it materialized or failed within ``advisor.cooldown_minutes``
  (vacuum: at least ``vacuum_min_interval_hours``). While a check keeps failing, the operation
  runs at most once per cool-down.

Every sub-condition carries a label, so the UI's Automation tab says which one held a run back.
The cool-down and window conditions are Python (``AutomationCondition`` subclasses), so the
sensors evaluate in the code server (``use_user_code_server=True``), at most
``MAX_ASSETS_PER_SENSOR`` assets each: ``default_automation_condition_sensor`` and, past that
many assets, ``default_automation_condition_sensor_2`` and so on, whole tables per sensor.
"""

from __future__ import annotations

import functools
import operator
import warnings
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import ClassVar

from dagster import (
    AssetCheckKey,
    AssetKey,
    AssetRecordsFilter,
    AssetSelection,
    AutomationCondition,
    AutomationConditionSensorDefinition,
    AutomationContext,
    AutomationResult,
    BetaWarning,
    DagsterRunStatus,
    DefaultSensorStatus,
    EventLogRecord,
    EventRecordsResult,
    RunsFilter,
)

from assets.table import table_asset_key
from delta_core.config.records import DiscoverRoot, MaintenanceWindow
from delta_core.health.check_names import checks_fixed_by
from delta_core.maintenance.operations import CHECKPOINT
from resources.config import TableConfig

CRON_TIMEZONE = "UTC"  # the schedules' timezone too
DEFAULT_SENSOR_NAME = "default_automation_condition_sensor"
MAX_ASSETS_PER_SENSOR = 500  # Dagster's limit for a sensor evaluated in the code server
TRIGGER_TAG = "delta_maintenance/trigger"


class PredicateCondition(AutomationCondition):
    """A condition decided by ``holds`` for the whole candidate subset or none of it (an
    unpartitioned asset, or a fact that is the same for every partition, such as the time); a
    subclass that sets ``PER_PARTITION`` decides each partition of a partitioned asset
    (a discovered table: ``assets.discovered``) by ``holds_for``. ``name`` (with its parameters:
    part of the condition's id in the cursor), ``description`` and ``label`` are what the UI shows."""

    PER_PARTITION: ClassVar[bool] = False

    def __init__(self, name: str, *, description: str, label: str):
        self._name, self._description, self._label = name, description, label

    @property
    def name(self) -> str:
        return self._name

    @property
    def description(self) -> str:
        return self._description

    def get_label(self) -> str:
        return self._label

    def holds(self, context: AutomationContext) -> bool:
        raise NotImplementedError

    def holds_for(self, context: AutomationContext, partition_key: str) -> bool:
        """Whether the condition holds for one partition (``PER_PARTITION`` subclasses)."""
        raise NotImplementedError

    def holding(self, context: AutomationContext, partition_keys: set[str]) -> set[str]:
        """The partitions of ``partition_keys`` the condition holds for (one ``holds_for`` each;
        a subclass may read them all at once)."""
        return {k for k in partition_keys if self.holds_for(context, k)}

    def evaluate(self, context: AutomationContext) -> AutomationResult:
        subset = context.candidate_subset
        # An earlier operand of an AND that ruled the asset out leaves nothing to decide (no query).
        if subset.is_empty:
            return AutomationResult(context=context, true_subset=subset)
        if self.PER_PARTITION and subset.partitions_def is not None:
            keys = self.holding(context, set(subset.expensively_compute_partition_keys()))
            return AutomationResult(context=context, true_subset=subset.compute_intersection_with_partition_keys(keys))
        return AutomationResult(context=context,
                                true_subset=subset if self.holds(context) else context.get_empty_subset())


class CooledDown(PredicateCondition):
    """True when the asset's (a partitioned asset: the partition's) latest run ended
    (materialized or failed) at least ``minutes`` before the evaluation, or it never ran."""

    PER_PARTITION = True

    def __init__(self, minutes: float):
        super().__init__(f"cooled_down({minutes:g} min)",
                         description=f"No run of this asset materialized or failed in the last {minutes:g} minutes.",
                         label=f"cooled down: no run in the last {minutes:g} min")
        self.minutes = minutes

    def holds(self, context: AutomationContext) -> bool:
        instance = context.asset_graph_view.instance
        key = context.key
        assert isinstance(key, AssetKey)  # a maintenance asset's condition
        ended: list[float] = []
        if (materialized := instance.get_latest_materialization_event(key)) is not None:
            ended.append(materialized.timestamp)  # also one reported outside a run
        # The latest run that planned the asset, whether it materialized it or failed (SQLite
        # storage keeps no failure events on the asset, so the run's end is the record).
        if (planned := instance.get_latest_planned_materialization_info(key)) is not None:
            record = instance.get_run_record_by_id(planned.run_id)
            if record is not None and record.end_time is not None:
                ended.append(record.end_time)
        return not ended or context.evaluation_time.timestamp() - max(ended) >= self.minutes * 60.0

    def holding(self, context: AutomationContext, partition_keys: set[str]) -> set[str]:
        """The partitions with no materialization, and no run planning them that ended, within the
        cool-down: a few reads for every partition (a cron tick makes thousands due at once), not
        some per partition. A run planned more than ``RUN_LOOKBACK_SECONDS`` before the cool-down
        began is not looked at."""
        instance = context.asset_graph_view.instance
        key = context.key
        assert isinstance(key, AssetKey)
        since = context.evaluation_time.timestamp() - self.minutes * 60.0
        recent = {r.partition_key for r in all_records(instance.fetch_materializations,
                                                    AssetRecordsFilter(asset_key=key, after_timestamp=since))}
        ended = {r.dagster_run.run_id for r in instance.get_run_records(filters=RunsFilter(
            updated_after=datetime.fromtimestamp(since, UTC), statuses=list(_ENDED)))
                 if r.end_time is not None and r.end_time >= since}
        if ended:
            planned = all_records(instance.fetch_planned_materializations,
                               AssetRecordsFilter(asset_key=key, after_timestamp=since - RUN_LOOKBACK_SECONDS))
            recent |= {r.partition_key for r in planned if r.run_id in ended}
        return partition_keys - recent


RUN_LOOKBACK_SECONDS = 24 * 3600.0  # how long before a cool-down a run still ending in it may have started
_ENDED = (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)
_PAGE = 1000


def all_records(fetch: Callable[..., EventRecordsResult], records_filter: AssetRecordsFilter) -> list[EventLogRecord]:
    """Every record ``fetch`` (an instance's ``fetch_*materializations``) finds, page by page."""
    out: list[EventLogRecord] = []
    cursor = None
    while True:
        page = fetch(records_filter, limit=_PAGE, cursor=cursor)
        out.extend(page.records)
        if not page.has_more:
            return out
        cursor = page.cursor


class UnderRoot(PredicateCondition):
    """True for the partitions (discovered tables, ``assets.discovered``) found under the discover
    root ``root``, whose policy (its ``defaults``) the rest of the condition applies;
    ``root_of``: a partition key's root (None: no such table now)."""

    PER_PARTITION = True

    def __init__(self, root: str, root_of: Callable[[str], str | None]):
        super().__init__(f"under_root({root})", description=f"The table was discovered under {root}.",
                         label=f"a table under {root}")
        self.root, self._root_of = root, root_of

    def holds(self, context: AutomationContext) -> bool:
        return False  # only partitions are tables

    def holds_for(self, context: AutomationContext, partition_key: str) -> bool:
        return self._root_of(partition_key) == self.root


class InsideWindows(PredicateCondition):
    """True when the evaluation time (UTC) falls inside one of ``windows``."""

    def __init__(self, windows: Sequence[MaintenanceWindow]):
        spans = ", ".join(map(str, windows))
        super().__init__(f"inside_windows({spans})",
                         description=f"The time is inside one of the maintenance windows {spans} (UTC).",
                         label=f"inside the maintenance windows {spans} UTC")
        self.windows = tuple(windows)

    def holds(self, context: AutomationContext) -> bool:
        now = context.evaluation_time.astimezone(UTC)
        return any(w.contains(now.hour * 60 + now.minute) for w in self.windows)


class CheckNamed(PredicateCondition):
    """True for an asset check whose name is one of ``names`` (evaluated on check keys).

    ``any_checks_match(...).allow(AssetSelection.checks(...))`` would say the same, but in
    Dagster 1.13 ``allow`` intersects the asset node's own set of check keys in place, so on a
    long-lived asset graph (the code server's) one operation's selection hides the checks from
    the next; naming the checks inside the operand leaves the graph untouched."""

    def __init__(self, names: Sequence[str]):
        listed = ", ".join(names)
        super().__init__(f"check_named({listed})", description=f"The check is one of {listed}.",
                         label=f"one of {listed}")
        self.names = tuple(names)

    def holds(self, context: AutomationContext) -> bool:
        return isinstance(context.key, AssetCheckKey) and context.key.name in self.names


def failing_checks(table: TableConfig, operation: str) -> tuple[str, ...]:
    """The checks on the table's asset whose failure requests ``operation`` (none unless the
    table's advisor is ``auto``; none for checkpoints while the table's log sensor requests them)."""
    if not table.advisor.auto or (operation == CHECKPOINT.name and table.sensor.enabled):
        return ()
    return checks_fixed_by(operation)


def maintenance_condition(table: TableConfig, operation: str, *, budget: AutomationCondition | None = None,
                          checked: AssetKey | None = None, label: str | None = None) -> AutomationCondition | None:
    """The automation condition of ``<table>/<operation>`` (module docstring); None when its
    policy gives it no trigger (no cron, no health check), i.e. it is never automated.
    ``budget``: the fleet budget's condition, and-ed in before the cool-down; ``checked``: the
    asset whose health checks it watches (default: the table's own); ``label``: the UI's."""
    policy = table.policy(operation)
    triggers: list[AutomationCondition] = []
    if policy is not None and policy.cron is not None:
        tick: AutomationCondition[AssetKey | AssetCheckKey] = AutomationCondition.cron_tick_passed(
            policy.cron, CRON_TIMEZONE)
        # since_last_handled: a tick the other conditions hold back stays due until it is requested
        triggers.append(tick.since_last_handled().with_label(f"cron tick {policy.cron} ({CRON_TIMEZONE}) passed"))
    if checks := failing_checks(table, operation):
        failing = AutomationCondition.any_checks_match(CheckNamed(checks) & AutomationCondition.check_failed())
        triggers.append(AutomationCondition.asset_matches(checked or table_asset_key(table.name), failing).with_label(
            f"a health check it fixes fails ({', '.join(checks)})"))
    if not triggers:
        return None
    due = triggers[0] if len(triggers) == 1 else (triggers[0] | triggers[1]).with_label("due")
    condition = due & (~AutomationCondition.in_progress()).with_label("not in progress")
    if table.advisor.windows:
        condition = condition & InsideWindows(table.advisor.windows)
    if budget is not None:
        condition = condition & budget
    condition = condition & CooledDown(table.advisor.cooldown_minutes_for(operation))
    return condition.with_label(label or f"{operation} of {table.name}: due and allowed")


def discovered_condition(roots: Sequence[DiscoverRoot], operation: str, *, root_of: Callable[[str], str | None],
                         checked: AssetKey, budget: Callable[[TableConfig], AutomationCondition | None]
                         ) -> AutomationCondition | None:
    """The condition of the partitioned ``discovered_tables/<operation>`` (``assets.discovered``):
    for each discover root, its tables (``UnderRoot``, by ``root_of``) under the condition its
    ``defaults`` give a table (``maintenance_condition``, with ``budget(defaults)`` and the health
    checks of ``checked``), each decided per partition; None when no root automates it. Its
    size grows with the roots, not the tables."""
    branches = []
    for root in roots:
        condition = maintenance_condition(root.template, operation, budget=budget(root.template), checked=checked,
                                          label=f"{operation} of a table under {root.rule.root}: due and allowed")
        if condition is not None:
            branches.append(UnderRoot(root.rule.root, root_of) & condition)
    if not branches:
        return None
    return functools.reduce(operator.or_, branches)


def build_automation_sensors(asset_keys_by_table: Sequence[Sequence[AssetKey]]) -> list[AutomationConditionSensorDefinition]:
    """The sensors that evaluate the maintenance assets' conditions: whole tables per sensor,
    at most ``MAX_ASSETS_PER_SENSOR`` assets each. They start stopped (README, "Automation")."""
    chunks: list[list[AssetKey]] = []
    for keys in asset_keys_by_table:
        if not keys:
            continue
        if not chunks or len(chunks[-1]) + len(keys) > MAX_ASSETS_PER_SENSOR:
            chunks.append([])
        chunks[-1].extend(keys)
    # use_user_code_server is marked beta; it is the API that evaluates Python conditions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return [AutomationConditionSensorDefinition(
            DEFAULT_SENSOR_NAME if i == 0 else f"{DEFAULT_SENSOR_NAME}_{i + 1}",
            target=AssetSelection.assets(*keys),
            use_user_code_server=True,  # the cool-down and window conditions are Python
            default_status=DefaultSensorStatus.STOPPED,
            run_tags={TRIGGER_TAG: "automation"},
            description=("Requests the maintenance assets whose automation condition holds: cron tick or failing "
                         "health check, not in progress, inside the windows, cooled down (tables.yaml policy)."),
        ) for i, keys in enumerate(chunks)]

