"""Issue 9 §6: a maintenance op that fails with a ``DeltaError`` logs its kind and message at
error level before failing the step (no Spark: vacuum's retention check fails first)."""

from __future__ import annotations

import pathlib

from dagster import AssetKey, instance_for_test, materialize

from definitions import build_definitions, build_resources


def test_failing_op_logs_the_typed_error(make_events_table, tables_yaml):
    table = make_events_table(rows=60, appends=2, days=1)
    config = tables_yaml(f"""
tables:
  events:
    uri: {pathlib.Path(table.uri)}
    vacuum: {{retention_hours: 168}}
""")
    with instance_for_test() as instance:
        result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", "vacuum"])],
                             resources=build_resources(config), instance=instance, raise_on_error=False,
                             run_config={"ops": {"events__vacuum": {"config": {"retention_hours": 1}}}})
        assert not result.success
        errors = [e for e in instance.all_logs(result.run_id)
                  if e.level == 40 and e.dagster_event is None]  # 40: logging.ERROR, user log lines
    (entry,) = errors
    assert entry.step_key == "events__vacuum"
    assert "RetentionTooShortError (retention_too_short)" in entry.user_message
    assert "deletedFileRetentionDuration" in entry.user_message
