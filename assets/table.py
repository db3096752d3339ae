"""The table itself as an observable asset whose data version is the newest Delta version
that changed data (``assets.data_version``: maintenance commits do not move it).

User assets depend on ``<table>/delta_table``; the table's log sensor records a new
observation whenever commits land, so Dagster marks downstream assets stale when data changed
and the sensor can refresh them. Observing by hand from the UI reads the log tail
(``_last_checkpoint``, the newest commit and the commits since the last observation); on a new
version the observation also carries the table's health (``assets.health_view``), which
Dagster plots over time.
"""


import warnings
from typing import TYPE_CHECKING

from dagster import (
    AssetKey,
    BetaWarning,
    DagsterInstance,
    DataVersion,
    MetadataValue,
    ObserveResult,
    observable_source_asset,
)

from assets.data_version import DELTA_VERSION_KEY, data_change_version, previous_observation
from assets.health_view import health_cache, health_metadata, table_health_report
from delta_core.config.generated_names import TABLE_ASSET_NAME
from resources import resource_key_of, table_resource
from resources.config import TableConfig

if TYPE_CHECKING:
    from delta_core.log.table import DeltaTable

def table_asset_key(table_name: str) -> AssetKey:
    return AssetKey([table_name, TABLE_ASSET_NAME])


def table_observation_metadata(version: int, *, last_checkpoint: int | None,
                               operation: str | None, timestamp_ms: int | None) -> dict[str, MetadataValue]:
    meta: dict[str, MetadataValue] = {
        DELTA_VERSION_KEY: MetadataValue.int(version),
        "last_checkpoint_version": MetadataValue.text("none") if last_checkpoint is None
        else MetadataValue.int(last_checkpoint),
    }
    if operation:
        meta["last_operation"] = MetadataValue.text(operation)
    if timestamp_ms is not None:
        meta["last_commit_timestamp"] = MetadataValue.timestamp(timestamp_ms / 1000.0)
    return meta


def observe_table(dt: "DeltaTable", table: TableConfig, instance: DagsterInstance, *, latest: int, last_checkpoint: int | None,
                  operation: str | None, timestamp_ms: int | None, known: dict[int, bool] | None = None,
                  key: AssetKey | None = None, partition: str | None = None,
                  health: bool = True) -> tuple[DataVersion, dict[str, MetadataValue]]:
    """The data version and metadata of one observation of ``table`` at Delta version ``latest``:
    health figures only when the version is new since the previous observation (cheap when
    nothing happened) and ``health`` (False: the policy misfits the table, so the figures it
    judges by cannot be computed). ``known``: versions already read and whether they changed
    data; ``key`` and ``partition``: the asset observed (default: the table's own, unpartitioned)."""
    previous = previous_observation(instance, key or table_asset_key(table.name), partition=partition)
    data_version = data_change_version(dt, latest, previous=previous, known=known)
    meta = table_observation_metadata(latest, last_checkpoint=last_checkpoint,
                                      operation=operation, timestamp_ms=timestamp_ms)
    meta["data_change_version"] = MetadataValue.int(data_version)
    if health and (previous is None or previous.delta_version != latest):
        meta.update(health_metadata(table_health_report(dt, table, cache=health_cache(instance))))
    return DataVersion(str(data_version)), meta


def build_table_asset(table: TableConfig):
    """The observable source asset ``<table>/delta_table`` (group = table name)."""
    resource_key = resource_key_of(table)

    def _observe(context) -> ObserveResult:
        dt = table_resource(context.resources, table).open()
        latest = dt.history(limit=1)
        if latest:
            version, ts = latest[0].version, latest[0].timestamp
            operation = latest[0].commit_info.get("operation")
        else:
            version, ts, operation = dt.latest_version(), None, None
        data_version, meta = observe_table(dt, table, context.instance, latest=version,
                                           last_checkpoint=dt.last_checkpoint_version(),
                                           operation=operation, timestamp_ms=ts)
        return ObserveResult(data_version=data_version, metadata=meta)

    # observable_source_asset is marked beta; it is the API for an observed external asset.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return observable_source_asset(
            key=table_asset_key(table.name),
            group_name=table.name,
            description=table.description or f"The Delta table `{table.name}`; its data version is the newest version that changed data.",
            required_resource_keys={resource_key},
            tags={"delta_maintenance/table": table.name},
        )(_observe)
