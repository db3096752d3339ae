"""Credentials never travel inside pickled Spark task payloads nor reach a run's event log
(issue 14): payloads carry a table's storage options without its secrets, and executors
authenticate from their own environment (here the AWS_* variables tests/conftest.py sets
before Spark starts)."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest
from dagster import AssetKey, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.log.table import DeltaTable
from delta_core.maintenance.spark.tasks import tasks_frame
from delta_core.write.table_writes import append, create_table

pytestmark = [pytest.mark.s3, pytest.mark.spark]


def test_secrets_stay_out_of_task_payloads_and_the_event_log(spark, s3_server, s3_table_uri, s3_env_tables_yaml):
    secret = f"secret-{uuid.uuid4().hex}"  # moto accepts any key pair; the driver signs with this one
    options = {"key": "AKIDRIVERONLY", "secret": secret, "client_kwargs": {"endpoint_url": s3_server}}
    data = pa.table({"id": pa.array(range(40), pa.int64())})
    table = create_table(s3_table_uri, data.schema, storage_options=options,
                         properties={"delta.targetFileSize": str(data.slice(0, 5).nbytes)})
    append(table, data)
    files_before = table.snapshot().num_files
    assert files_before >= 4

    payloads = tasks_frame(spark, [table.storage, table.storage]).toArrow().column("payload").to_pylist()
    assert len(payloads) == 2
    assert all(secret.encode() not in p and b"AKIDRIVERONLY" not in p for p in payloads)
    assert all(s3_server.encode() in p for p in payloads)  # what is not a secret still travels

    config = s3_env_tables_yaml("s3t", s3_table_uri, key="AKIDRIVERONLY", secret=secret, sections="""
        compact: {target_size: 128MB}
        vacuum: false
        checkpoint: false
    """)
    with instance_for_test() as instance:
        result = materialize(build_definitions(config).assets, selection=[AssetKey(["s3t", "compact"])],
                             resources=build_resources(config), instance=instance)
        assert result.success
        records = instance.all_logs(result.run_id)
        run = instance.get_run_by_id(result.run_id)
    # The executors compacted the table with credentials from their own environment.
    assert DeltaTable(s3_table_uri, options).snapshot().num_files == 1
    assert len(records) > 5
    assert all(secret not in repr(r) for r in records) and secret not in repr(run)
