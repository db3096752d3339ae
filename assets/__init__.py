"""Asset factories: the table's observable asset, its maintenance assets, example downstream."""

from assets.downstream import build_daily_summary_asset, daily_summary_key
from assets.maintenance import build_maintenance_assets, maintenance_asset_key
from assets.table import build_table_asset, table_asset_key

__all__ = [
    "build_daily_summary_asset",
    "build_maintenance_assets",
    "build_table_asset",
    "daily_summary_key",
    "maintenance_asset_key",
    "table_asset_key",
]
