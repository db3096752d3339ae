"""The checkpoint asset (with log cleanup) on tables it must not clean: an unknown writer
feature fails the run with the typed error and writes nothing; a table whose owner turned log
cleanup off gets its checkpoint but keeps every log file, and the UI says why."""

from __future__ import annotations

import json
import os
import pathlib
import time

from dagster import AssetKey, instance_for_test, materialize

from definitions import build_definitions, build_resources
from tests.core_write.conftest import listing

RUN_CONFIG = {"ops": {"events__checkpoint": {"config": {"cleanup_log": True}}}}


def _config(tables_yaml, uri: str):
    return tables_yaml(f"tables:\n  events:\n    uri: {uri}\n    checkpoint: {{interval: 5}}\n")


def _age_log(uri: str, days: float = 60) -> None:
    log_dir = pathlib.Path(uri) / "_delta_log"
    when = time.time() - days * 86400
    for p in log_dir.iterdir():
        os.utime(p, (when, when))


def _materialize_checkpoint(config):
    with instance_for_test() as instance:
        return materialize(build_definitions(config).assets, selection=[AssetKey(["events", "checkpoint"])],
                           resources=build_resources(config), instance=instance, run_config=RUN_CONFIG,
                           raise_on_error=False)


def test_checkpoint_asset_refuses_unknown_writer_feature(make_events_table, tables_yaml):
    table = make_events_table(rows=60, appends=2, days=1, delete_fraction=0,
                              properties={"delta.checkpointInterval": "1000"})
    version = table.latest_version() + 1
    protocol = {"minReaderVersion": 1, "minWriterVersion": 7,
                "writerFeatures": ["appendOnly", "invariants", "fooBarWriter"]}
    (pathlib.Path(table.uri) / "_delta_log" / f"{version:020d}.json").write_text(
        json.dumps({"commitInfo": {"timestamp": int(time.time() * 1000)}}) + "\n"
        + json.dumps({"protocol": protocol}) + "\n", encoding="utf-8")
    _age_log(table.uri)
    before = listing(table.uri)
    result = _materialize_checkpoint(_config(tables_yaml, table.uri))
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    error = failure.step_failure_data.error
    while error.cause is not None and error.cls_name != "UnsupportedWriterFeatureError":
        error = error.cause
    assert error.cls_name == "UnsupportedWriterFeatureError" and "fooBarWriter" in error.message
    assert listing(table.uri) == before


def test_checkpoint_asset_never_overrides_disabled_log_cleanup(make_events_table, tables_yaml):
    # version 5: five commits after version 0 reach the checkpoint interval (5), so the asset writes one
    table = make_events_table(rows=60, appends=5, days=1, delete_fraction=0, properties={
        "delta.checkpointInterval": "1000", "delta.enableExpiredLogCleanup": "false"})
    _age_log(table.uri)
    commits = sorted(p.name for p in (pathlib.Path(table.uri) / "_delta_log").glob("*.json"))
    result = _materialize_checkpoint(_config(tables_yaml, table.uri))
    assert result.success
    (mat,) = result.asset_materializations_for_node("events__checkpoint")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["checkpoint_version"] == table.latest_version() == table.last_checkpoint_version()
    assert meta["cleanup_log_files_deleted"] == 0
    assert "delta.enableExpiredLogCleanup=false" in meta["cleanup_log_skipped_reason"]
    assert "log cleanup: nothing deleted: " in meta["summary"]
    assert sorted(p.name for p in (pathlib.Path(table.uri) / "_delta_log").glob("*.json")) == commits
