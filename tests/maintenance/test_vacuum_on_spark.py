"""Vacuum with a Spark session lists the table's top-level directories as Spark tasks (issue 14:
executors list and delete; the driver plans): the listing equals the thread pool's, and only
the unreferenced old files go."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pytest

from delta_core.maintenance.spark.vacuum import list_table_files, vacuum
from delta_core.maintenance.vacuum_plan import LISTING_SCHEMA
from tests.maintenance.conftest import make_table

pytestmark = pytest.mark.spark


def test_listing_and_deletes_as_spark_tasks(spark, table_uri):
    table = make_table(table_uri, appends=3, rows=10)
    old = time.time() - 30 * 24 * 3600
    orphans = ["region=eu/orphan-1.parquet", "region=us/deep/orphan-2.parquet", "region=us/orphan-3.parquet"]
    for key in orphans:
        path = os.path.join(table_uri, key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as fh:
            fh.write(b"PAR1")
        os.utime(path, (old, old))

    def rows(batches):
        listing = pa.Table.from_batches(list(batches), schema=LISTING_SCHEMA)
        return sorted(zip(*(listing.column(c).to_pylist() for c in ("key", "size", "modification_time"))))

    on_spark = rows(list_table_files(table.storage, ["region"], spark=lambda: spark))  # a factory, as the CLI passes
    assert on_spark == rows(list_table_files(table.storage, ["region"]))
    assert set(orphans) <= {k for k, _, _ in on_spark}

    live = sorted(a.path for a in table.snapshot().add_actions())
    metrics = vacuum(table, spark=spark)
    assert metrics.num_deleted_files == len(orphans)
    assert not any(os.path.exists(os.path.join(table_uri, k)) for k in orphans)
    assert all(os.path.exists(os.path.join(table_uri, p)) for p in live)
