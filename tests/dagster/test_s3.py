"""A table on the S3-compatible moto server, credentials only in environment variables:
the checkpoint asset, the log sensor and the health checks work through the resource's EnvVar-backed options."""

from __future__ import annotations

import pytest
from dagster import AssetKey, build_sensor_context, instance_for_test, materialize

from definitions import build_definitions, build_resources
from delta_core.write.table_writes import append, create_table
from demo.data import PARTITION_COLUMNS, SCHEMA, event_batch
from resources import DeltaTableResource

pytestmark = pytest.mark.s3


def test_s3_table_with_env_secrets(s3_storage_options, s3_table_uri, deltalake_s3_options, s3_env_tables_yaml):
    table = create_table(s3_table_uri, SCHEMA, partition_columns=PARTITION_COLUMNS,
                         storage_options=s3_storage_options,
                         properties={"delta.checkpointInterval": "1000"})
    for i in range(3):
        append(table, event_batch(40, days=2, seed=i))
    config = s3_env_tables_yaml("s3events", s3_table_uri, key="testing", secret="testing", sections="""
        compact: false
        vacuum: false
        checkpoint: {interval: 3}
    """)
    # the YAML holds no secret; the resource holds only the variable names until run time
    assert "testing" not in repr(DeltaTableResource.from_table_config(config.table("s3events")).storage_options)

    with instance_for_test() as instance:
        defs = build_definitions(config)
        sensor = defs.resolve_sensor_def("s3events_delta_log_sensor")
        resources = {"delta_s3events": build_resources(config)["delta_s3events"]}
        with build_sensor_context(cursor="0", instance=instance, resources=resources) as context:
            tick = sensor.evaluate_tick(context)
        assert tick.cursor == "3"
        assert [(r.job_name, r.run_key) for r in tick.run_requests] == [
            ("s3events_checkpoint", "s3events:checkpoint:v3"), ("s3events_checks", "s3events:checks:v3")]
        # the health checks read the log over S3 with the same options: checkpoint due (3 >= 3)
        checks = defs.resolve_job_def("s3events_checks").execute_in_process(instance=instance)
        verdicts = {e.check_name: e.passed for e in checks.get_asset_check_evaluations()}
        assert len(verdicts) == 8 and verdicts["checkpoint_due"] is False and verdicts["protocol_supported"]

        result = materialize(build_definitions(config).assets, selection=[AssetKey(["s3events", "checkpoint"])],
                             resources=build_resources(config), instance=instance)
        assert result.success
    assert table.last_checkpoint_version() == 3

    from deltalake import DeltaTable as RsTable

    rs = RsTable(s3_table_uri, storage_options=deltalake_s3_options)
    assert rs.version() == 3 and rs.to_pyarrow_table().num_rows == 120
