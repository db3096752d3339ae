"""An example downstream asset: rows per day of a managed table, refreshed on data changes.

It shows the end-to-end path a user asset takes: it depends on ``<table>/delta_table``, reads
a snapshot through ``delta_core`` and the data files with pyarrow, and is re-run by the table's
log sensor only after commits with ``dataChange=true`` (not after compaction or z-order).
"""


import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from dagster import AssetExecutionContext, AssetKey, MaterializeResult, MetadataValue, asset

from assets.metadata import summary_markdown
from assets.table import table_asset_key
from delta_core.config.generated_names import DAILY_SUMMARY_ASSET_NAME, downstream_group
from resources import resource_key_of, table_resource
from resources.config import TableConfig


def daily_summary_key(table_name: str) -> AssetKey:
    return AssetKey([table_name, DAILY_SUMMARY_ASSET_NAME])


def rows_per_day(snapshot, date_column: str) -> pa.Table:
    """``(day, rows)`` over the snapshot's live files, read with pyarrow."""
    from delta_core.model.partition_values import url_decode_path

    if date_column in snapshot.partition_columns:
        typed = snapshot.partition_values_typed().select(["path", date_column])
        counts = snapshot.file_columns("path", "num_records").join(typed, "path")
        grouped = counts.group_by(date_column).aggregate([("num_records", "sum")])
        grouped = pa.table({"day": grouped.column(date_column), "rows": grouped.column("num_records_sum")})
    else:
        storage = snapshot.storage
        pieces = []
        for path in snapshot.file_paths:
            with storage.open_input(url_decode_path(path)) as f:
                pieces.append(pq.read_table(f, columns=[date_column]))
        data = pa.concat_tables(pieces) if pieces else pa.table({date_column: pa.array([], pa.date32())})
        day = pc.cast(data.column(date_column), pa.date32()) if pa.types.is_timestamp(
            data.schema.field(date_column).type) else data.column(date_column)
        grouped = pa.table({"day": day, "one": pa.repeat(1, len(day))}) if len(day) else pa.table(
            {"day": day, "one": pa.array([], pa.int64())})
        grouped = grouped.group_by("day").aggregate([("one", "count")])
        grouped = pa.table({"day": grouped.column("day"), "rows": grouped.column("one_count")})
    return grouped.sort_by("day")


def build_daily_summary_asset(table: TableConfig):
    """``<table>/daily_summary``: rows per ``date_column`` value, as UI metadata."""
    assert table.downstream.daily_summary is not None
    date_column = table.downstream.daily_summary.date_column
    resource_key = resource_key_of(table)

    @asset(
        key=daily_summary_key(table.name),
        group_name=downstream_group(table.name),
        deps=[table_asset_key(table.name)],
        kinds={"python", "pyarrow"},
        required_resource_keys={resource_key},
        description=f"Example downstream asset: rows per `{date_column}` in `{table.name}`; "
                    "refreshed by the table's log sensor after data-changing commits.",
    )
    def _asset(context: AssetExecutionContext) -> MaterializeResult:
        snapshot = table_resource(context.resources, table).open().snapshot()
        daily = rows_per_day(snapshot, date_column)
        days = [str(d) for d in daily.column("day").to_pylist()]
        rows = [int(r or 0) for r in daily.column("rows").to_pylist()]
        total = sum(rows)
        table_md = ["| day | rows |", "|---|---:|"] + [f"| {d} | {r} |" for d, r in zip(days, rows)]
        return MaterializeResult(metadata={
            "source_delta_version": MetadataValue.int(snapshot.version),
            "days": MetadataValue.int(len(days)),
            "total_rows": MetadataValue.int(total),
            "rows_per_day": MetadataValue.json(dict(zip(days, rows))),
            "summary": MetadataValue.md(summary_markdown(
                f"Rows per day in {table.name} (version {snapshot.version})",
                [f"{total} rows over {len(days)} days"], table_md)),
        })

    return _asset
