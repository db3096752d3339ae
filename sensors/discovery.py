"""The discovery sensor of discovered tables as partitions (``fleet.discovered_as: partitions``,
``assets.discovered``): each tick walks the ``discover:`` roots again (``delta_core.log.discovery``)
and adds a partition of ``discovered_tables`` for each table found that has none and deletes the
partition of each table no root holds any more, so a new table is maintained without a code change
or a reload of the location. It runs by default: it writes partitions, never a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInstance,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from assets.discovered import DISCOVERED_TABLES
from delta_core.config.generated_names import DISCOVERED_PARTITIONS
from resources.config import TableConfig
from resources.delta_table import DiscoveredTables

DISCOVERY_SENSOR = "discovered_tables_sensor"
DISCOVERY_INTERVAL_SECONDS = 300


def build_discovery_sensor(find: Callable[[], Sequence[TableConfig]], tables: DiscoveredTables, *,
                           interval_seconds: int = DISCOVERY_INTERVAL_SECONDS) -> SensorDefinition:
    """The sensor keeping the partitions equal to the tables ``find`` returns (the roots walked
    now); ``tables``, the records runs and conditions look partitions up in, is refreshed too."""

    @sensor(name=DISCOVERY_SENSOR, minimum_interval_seconds=interval_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            description="Walks the discover: roots of tables.yaml and keeps one partition of discovered_tables "
                        "per table found: adds the new tables, removes those gone.")
    def _discovery(context: SensorEvaluationContext) -> SensorResult:
        found = find()
        tables.refresh(found)
        names = {t.name for t in found}
        known = set(context.instance.get_dynamic_partitions(DISCOVERED_PARTITIONS))
        added, removed = sorted(names - known), sorted(known - names)
        requests: list[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest] = []
        if added:
            requests.append(DISCOVERED_TABLES.build_add_request(added))
        if removed:
            requests.append(DISCOVERED_TABLES.build_delete_request(removed))
        if not requests:
            return SensorResult(skip_reason=f"{len(names)} discovered tables, none new or gone")
        context.log.info(f"{len(added)} table(s) added ({', '.join(added[:10])}), {len(removed)} removed "
                         f"({', '.join(removed[:10])})")
        return SensorResult(dynamic_partitions_requests=requests)

    return _discovery


def apply_partition_requests(instance: DagsterInstance,
                             requests: Sequence[AddDynamicPartitionsRequest | DeleteDynamicPartitionsRequest]) -> None:
    """Apply a tick's partition requests to ``instance``, as the daemon does after a tick: for a
    tick evaluated in a process of its own (the demo)."""
    for request in requests:
        if isinstance(request, AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
