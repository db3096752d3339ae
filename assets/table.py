"""The table itself as an observable asset whose data version is the Delta table version.

User assets depend on ``<table>/delta_table``; the table's log sensor records a new
observation (data version = latest Delta version) whenever commits land, so Dagster marks
downstream assets stale and the sensor can refresh them. Observing by hand from the UI reads
only the log tail (``_last_checkpoint`` and the newest commit), never the file list.
"""


import warnings

from dagster import AssetKey, BetaWarning, DataVersion, MetadataValue, ObserveResult, observable_source_asset

from resources import table_resource_key
from resources.config import TableConfig

TABLE_ASSET_NAME = "delta_table"


def table_asset_key(table_name: str) -> AssetKey:
    return AssetKey([table_name, TABLE_ASSET_NAME])


def table_observation_metadata(version: int, *, last_checkpoint: int | None,
                               operation: str | None, timestamp_ms: int | None) -> dict[str, MetadataValue]:
    meta: dict[str, MetadataValue] = {
        "delta_version": MetadataValue.int(version),
        "last_checkpoint_version": MetadataValue.text("none") if last_checkpoint is None
        else MetadataValue.int(last_checkpoint),
    }
    if operation:
        meta["last_operation"] = MetadataValue.text(operation)
    if timestamp_ms is not None:
        meta["last_commit_timestamp"] = MetadataValue.timestamp(timestamp_ms / 1000.0)
    return meta


def build_table_asset(table: TableConfig):
    """The observable source asset ``<table>/delta_table`` (group = table name)."""
    resource_key = table_resource_key(table.name)

    def _observe(context) -> ObserveResult:
        dt = getattr(context.resources, resource_key).open()
        latest = dt.history(limit=1)
        if latest:
            version, ts = latest[0].version, latest[0].timestamp
            operation = latest[0].commit_info.get("operation")
        else:
            version, ts, operation = dt.latest_version(), None, None
        meta = table_observation_metadata(version, last_checkpoint=dt.last_checkpoint_version(),
                                          operation=operation, timestamp_ms=ts)
        return ObserveResult(data_version=DataVersion(str(version)), metadata=meta)

    # observable_source_asset is marked beta; it is the API for an observed external asset.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        return observable_source_asset(
            key=table_asset_key(table.name),
            group_name=table.name,
            description=table.description or f"The Delta table `{table.name}`; its data version is the Delta version.",
            required_resource_keys={resource_key},
            tags={"delta_maintenance/table": table.name},
        )(_observe)
