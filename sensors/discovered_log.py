"""One log sensor for every discovered table as a partition (``fleet.discovered_as: partitions``):
each tick does for each partition (table) what a listed table's own log sensor does (``sensors.
table_tick``: observe each new version, request its health checks and a checkpoint or manifest
when due), with the discovered jobs and the partition's tags.

The cursor maps each table to the last version seen, plus where the next tick starts: a tick
stops reading logs after ``TICK_BUDGET_SECONDS`` (Dagster's sensor timeout is 60 s) and the next
takes up the tables after the last one it read, so every table is read in turn however many there
are. A table whose root turns its log sensor off (``sensor: {enabled: false}``) is skipped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping

from dagster import (
    AssetObservation,
    AssetsDefinition,
    DefaultSensorStatus,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from delta_core.config.generated_names import DISCOVERED_PARTITIONS
from delta_core.errors import ConfigError, NotADeltaTableError
from jobs import AssetJob, partition_jobs
from resources.delta_table import DiscoveredTables
from sensors import table_tick

DISCOVERED_LOG_SENSOR = "discovered_tables_delta_log_sensor"
TICK_BUDGET_SECONDS = 40.0
_NEXT = "next"  # the cursor's entry naming the table the next tick starts at


def parse_partitions_cursor(cursor: str | None) -> tuple[dict[str, int], str | None]:
    """(each table's last version seen, the table the tick starts at) from the sensor's cursor."""
    if not cursor:
        return {}, None
    try:
        raw = json.loads(cursor)
    except json.JSONDecodeError:
        raw = None
    versions = raw.get("versions") if isinstance(raw, dict) else None
    if not isinstance(versions, dict) or not all(isinstance(v, int) for v in versions.values()):
        raise ConfigError(f"discovered tables' log sensor cursor {cursor[:80]!r} is not a mapping of table to version; "
                          "clear the sensor's cursor in the UI to start watching from the latest versions")
    start = raw.get(_NEXT)
    return versions, start if isinstance(start, str) else None


def build_discovered_log_sensor(tables: DiscoveredTables, jobs: Mapping[str, AssetJob],
                                assets_by_op: Mapping[str, AssetsDefinition], *, interval_seconds: int,
                                clock: Callable[[], float] = time.monotonic,
                                tick_budget_seconds: float = TICK_BUDGET_SECONDS) -> SensorDefinition:
    """The sensor over the partitions of ``discovered_tables`` (``tables`` gives each its record
    and its resource), launching the discovered ``jobs`` whose assets are ``assets_by_op``."""

    @sensor(name=DISCOVERED_LOG_SENSOR, jobs=list(jobs.values()), minimum_interval_seconds=interval_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            description="Watches the _delta_log of every discovered table (one partition each): records each new "
                        "version, requests its health checks and checkpoint/manifest runs when due.")
    def _sensor(context: SensorEvaluationContext) -> SensorResult:
        seen, start = parse_partitions_cursor(context.cursor)
        names = sorted(context.instance.get_dynamic_partitions(DISCOVERED_PARTITIONS))
        first = next((i for i, name in enumerate(names) if start is not None and name >= start), 0)
        order = names[first:] + names[:first]
        stop_at = clock() + tick_budget_seconds
        requests: list[RunRequest] = []
        observations: list[AssetObservation] = []
        versions = {name: seen[name] for name in names if name in seen}  # a removed table's entry goes
        resume: str | None = None
        for name in order:
            if clock() >= stop_at:
                resume = name
                break
            try:
                table = tables.record(name)
            except ConfigError as gone:
                context.log.info(str(gone))
                continue
            if not table.sensor.enabled:
                continue
            try:
                tick = table_tick(context, table, partition_jobs(table, jobs), assets_by_op,
                                  tables.table(name).open(), seen.get(name))
            except NotADeltaTableError as missing:  # removed since it was discovered
                context.log.info(f"{name}: {missing}")
                continue
            if tick.cursor is not None:
                versions[name] = tick.cursor
            requests.extend(tick.requests)
            if tick.observation is not None:
                observations.append(tick.observation)
        cursor = json.dumps({"versions": versions, _NEXT: resume}, sort_keys=True)
        if not requests and not observations:
            return SensorResult(skip_reason=f"no new commits in {len(names)} discovered tables", cursor=cursor)
        return SensorResult(run_requests=requests, asset_events=observations, cursor=cursor)

    return _sensor
