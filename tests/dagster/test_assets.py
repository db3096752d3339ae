"""Each maintenance asset materialized on a real table with the real local Spark session;
the table is checked afterwards with delta_core and with delta-rs (``deltalake``)."""

from __future__ import annotations

import pathlib

import pytest
from dagster import AssetKey, DagsterInstance, instance_for_test, materialize

from definitions import build_definitions, build_resources
from resources.config import MaintenanceConfig

pytestmark = pytest.mark.spark

ROWS = 1200


def _yaml(uri: pathlib.Path, policy: str = "") -> str:
    return f"""
tables:
  events:
    uri: {uri}
    compact: {{target_size: 64KB}}
    zorder: {{columns: [user_id, amount], target_size: 12KB}}
    vacuum: {{retention_hours: 168}}
    checkpoint: {{interval: 5}}
    manifest: {{enabled: true}}
    downstream: {{daily_summary: {{date_column: event_date}}}}
{policy}
"""


@pytest.fixture()
def setup(make_events_table, tables_yaml, spark):
    table = make_events_table(rows=ROWS, properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    with instance_for_test() as instance:
        yield table, config, instance


def _materialize(config: MaintenanceConfig, instance: DagsterInstance, op: str, run_config=None):
    result = materialize(build_definitions(config).assets, selection=[AssetKey(["events", op])], resources=build_resources(config),
                         instance=instance, run_config=run_config or {})
    assert result.success
    (mat,) = result.asset_materializations_for_node(f"events__{op}")
    return {k: v.value for k, v in mat.metadata.items()}


def _rows_via_deltalake(uri: str) -> tuple[int, int, int]:
    from deltalake import DeltaTable as RsTable

    rs = RsTable(uri)
    return rs.version(), len(rs.file_uris()), rs.to_pyarrow_table().num_rows


def _expected_rows(table) -> int:
    return table.snapshot().num_records


def test_compaction_asset_dry_run_config_plans_only(setup):
    """Issue 27: every rewrite asset takes dry_run from its (registry-generated) config."""
    table, config, instance = setup
    before = table.snapshot()
    meta = _materialize(config, instance, "compact", {"ops": {"events__compact": {"config": {"dry_run": True}}}})
    assert table.snapshot().version == before.version  # nothing committed
    assert meta["dry_run"] is True and meta["committed_version"] == "none"  # null shows as "none"
    assert meta["files_removed"] > 0 and "dry run, nothing written" in meta["summary"]


def test_compaction_asset(setup):
    table, config, instance = setup
    before = table.snapshot()
    rows = _expected_rows(table)
    meta = _materialize(config, instance, "compact")

    after = table.snapshot()
    assert after.version > before.version
    assert after.num_files < before.num_files
    assert after.num_records == rows
    assert {a.commit_info.get("operation") for a in table.history(limit=1)} == {"OPTIMIZE"}
    assert (meta["version_before"], meta["version_after"]) == (before.version, after.version)
    assert (meta["files_before"], meta["files_after"]) == (before.num_files, after.num_files)
    assert meta["files_removed"] > meta["files_added"] > 0
    assert meta["bytes_before"] > 0 and meta["bytes_after"] > 0
    assert meta["size_before"].endswith("iB") and meta["size_after"].endswith("iB")  # sizes a person reads
    assert meta["partitions_compacted"] == 3
    assert meta["duration_seconds"] >= 0
    dist = meta["file_size_distribution"]
    assert sum(r.data["files_before"] for r in dist.records) == before.num_files
    summary = meta["summary"]
    assert "Compaction of events" in summary and "http" not in summary and "](" not in summary

    version, files, rs_rows = _rows_via_deltalake(table.uri)
    assert (version, files, rs_rows) == (after.version, after.num_files, rows)


def test_zorder_asset_improves_skipping(setup):
    table, config, instance = setup
    rows = _expected_rows(table)
    meta = _materialize(config, instance, "zorder")
    after = table.snapshot()
    assert table.history(limit=1)[0].commit_info.get("operation") == "OPTIMIZE"
    assert meta["columns"] == "user_id, amount"
    assert meta["skipped_file_ratio_after"] > meta["skipped_file_ratio_before"]
    assert after.num_records == rows
    assert _rows_via_deltalake(table.uri) == (after.version, after.num_files, rows)


def test_checkpoint_asset(setup):
    table, config, instance = setup
    assert table.last_checkpoint_version() is None
    meta = _materialize(config, instance, "checkpoint")
    latest = table.latest_version()
    assert table.last_checkpoint_version() == latest == meta["checkpoint_version"]
    assert meta["checkpoint_version_before"] == "none"
    assert (pathlib.Path(table.uri) / "_delta_log" / f"{latest:020d}.checkpoint.parquet").exists()
    assert _rows_via_deltalake(table.uri)[0] == latest
    assert "duration_seconds" in meta and "Checkpoint of events" in meta["summary"]

    again = _materialize(config, instance, "checkpoint",
                         {"ops": {"events__checkpoint": {"config": {"cleanup_log": True}}}})
    assert again["checkpoint_version_before"] == latest
    assert again["cleanup_log_files_deleted"] == 0  # every commit is younger than the log retention
    assert (pathlib.Path(table.uri) / "_delta_log" / f"{0:020d}.json").exists()


def test_checkpoint_asset_writes_the_version_asked_for(setup):
    """A ``version`` given at launch is checkpointed, due or not, as the command line does."""
    table, config, instance = setup
    latest = table.latest_version()
    assert latest > 0 and table.last_checkpoint_version() is None
    meta = _materialize(config, instance, "checkpoint", {"ops": {"events__checkpoint": {"config": {"version": 0}}}})
    assert meta["checkpoint_written"] is True and meta["checkpoint_version"] == 0
    assert (pathlib.Path(table.uri) / "_delta_log" / f"{0:020d}.checkpoint.parquet").exists()
    assert not (pathlib.Path(table.uri) / "_delta_log" / f"{latest:020d}.checkpoint.parquet").exists()
    assert meta["summary_line"].startswith("Checkpoint: checkpoint written at version 0 (")


def test_manifest_asset(setup):
    table, config, instance = setup
    meta = _materialize(config, instance, "manifest")
    root = pathlib.Path(table.uri)
    manifests = sorted((root / "_symlink_format_manifest").rglob("manifest"))
    assert len(manifests) == meta["manifests_written"] == 3
    listed = [line for m in manifests for line in m.read_text().splitlines() if line]
    assert len(listed) == table.snapshot().num_files
    assert all(pathlib.Path(u.removeprefix("file://")).exists() for u in listed)
    from deltalake import DeltaTable as RsTable

    assert sorted(pathlib.Path(u.removeprefix("file://")).resolve() for u in listed) == sorted(
        pathlib.Path(u.removeprefix("file://")).resolve() for u in RsTable(table.uri).file_uris())


def test_vacuum_asset_after_compaction(setup):
    table, config, instance = setup
    rows = _expected_rows(table)
    _materialize(config, instance, "compact")
    root = pathlib.Path(table.uri)
    on_disk = {p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}
    live = {root / p for p in table.snapshot().file_paths}
    assert len(on_disk) > len(live)

    dry = _materialize(config, instance, "vacuum",
                       {"ops": {"events__vacuum": {"config": {"retention_hours": 0, "force": True,
                                                              "dry_run": True}}}})
    assert dry["files_removed"] == 0 and dry["num_files_to_delete"] == len(on_disk - live)
    meta = _materialize(config, instance, "vacuum",
                        {"ops": {"events__vacuum": {"config": {"retention_hours": 0, "force": True}}}})
    assert meta["files_removed"] == meta["num_deleted_files"] == len(on_disk - live)
    assert meta["summary_line"].startswith(f"Vacuum: deleted {len(on_disk - live)} of ")
    remaining = {p for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}
    assert {p.resolve() for p in remaining} == {p.resolve() for p in live}
    assert table.snapshot().num_records == rows
    assert _rows_via_deltalake(table.uri)[2] == rows


def test_vacuum_refuses_short_retention_without_force(setup):
    table, config, instance = setup
    result = materialize(build_definitions(config).assets,
                         selection=[AssetKey(["events", "vacuum"])], resources=build_resources(config),
                         instance=instance, raise_on_error=False,
                         run_config={"ops": {"events__vacuum": {"config": {"retention_hours": 1}}}})
    assert not result.success
    (failure,) = [e for e in result.all_events if e.is_step_failure]
    cause = failure.event_specific_data.error.cause
    assert cause.cls_name == "RetentionTooShortError"
    assert "retention" in cause.message.lower()


def test_full_maintenance_job_and_downstream(setup):
    table, config, instance = setup
    rows = _expected_rows(table)
    defs = build_definitions(config)
    result = defs.resolve_job_def("events_maintenance").execute_in_process(instance=instance)
    assert result.success
    steps = [e.step_key for e in result.all_events if e.is_step_success]
    # the table's health checks judge what the maintenance left, in the same run (assets.health_checks)
    assert steps == ["events__compact", "events__zorder", "events__vacuum", "events__checkpoint",
                     "events__manifest", "events_health_checks"]
    assert table.last_checkpoint_version() == table.latest_version()

    summary = defs.resolve_job_def("events_downstream_refresh").execute_in_process(instance=instance)
    assert summary.success
    (mat,) = summary.asset_materializations_for_node("events__daily_summary")
    assert mat.metadata["total_rows"].value == rows
    assert mat.metadata["days"].value == 3
    assert _rows_via_deltalake(table.uri)[2] == rows


def test_table_asset_observation_data_version_is_delta_version(setup):
    from dagster._core.definitions.observe import observe

    table, config, instance = setup
    source = [a for a in build_definitions(config).assets if getattr(a, "key", None) == AssetKey(["events", "delta_table"])]
    result = observe(source, instance=instance, resources=build_resources(config))
    assert result.success
    record = instance.get_latest_data_version_record(AssetKey(["events", "delta_table"]))
    assert record is not None
    assert record.asset_observation.data_version == str(table.latest_version())


def test_compact_log_asset(make_events_table, tables_yaml, spark):
    table = make_events_table(rows=ROWS, properties={"delta.checkpointInterval": "1000"})
    config = tables_yaml(_yaml(pathlib.Path(table.uri), "    compact_log: {min_commits: 3}"))
    latest = table.latest_version()
    with instance_for_test() as instance:
        meta = _materialize(config, instance, "compact_log")
    assert (meta["start_version"], meta["end_version"], meta["commits_compacted"]) == (0, latest, latest + 1)
    name = f"{0:020d}.{latest:020d}.compacted.json"
    assert (pathlib.Path(table.uri) / "_delta_log" / name).exists()
    assert [f.name for f in table.snapshot().log_segment.replay_files] == [name]
    assert "Log compaction of events" in meta["summary"]
    assert _rows_via_deltalake(table.uri) == (latest, table.snapshot().num_files, table.snapshot().num_records)


def test_checkpoint_asset_writes_sidecars_on_spark(make_events_table, tables_yaml, spark):
    from delta_core.model.actions import Protocol
    from delta_core.write.transaction import Transaction
    from tests.kernel_oracle import kernel_rows

    table = make_events_table(rows=ROWS, properties={"delta.checkpointInterval": "1000"})
    assert table.snapshot().protocol.min_writer_version == 2  # the demo table: appendOnly, invariants
    txn = Transaction(table, operation="UPGRADE PROTOCOL")
    txn.add_action(Protocol(3, 7, ("v2Checkpoint",), ("appendOnly", "invariants", "v2Checkpoint")))
    txn.commit()
    config = tables_yaml(_yaml(pathlib.Path(table.uri)))
    files = table.snapshot().num_files
    kernel_before = kernel_rows(table.uri)
    with instance_for_test() as instance:
        meta = _materialize(config, instance, "checkpoint",
                            {"ops": {"events__checkpoint": {"config": {"sidecar_threshold": 10}}}})
    assert meta["sidecars"] >= files // 10
    sidecars = list((pathlib.Path(table.uri) / "_delta_log" / "_sidecars").iterdir())
    assert len(sidecars) == meta["sidecars"]
    assert table.snapshot().log_segment.checkpoint_files[0].uuid is not None
    version = table.snapshot().log_segment.checkpoint_version
    for v in range(version):  # delta-kernel-rs reads through the sidecars, the commits before gone
        table.storage.delete(f"_delta_log/{v:020d}.json")
    assert kernel_rows(table.uri) == kernel_before
