"""Discovered tables as partitions (``fleet: {discovered_as: partitions}``, the default): the definitions do not
grow with the tables, the discovery sensor adds and removes partitions, and a partition keeps what
a table's own assets do: one run maintains one table with its root's policy, eight health checks
per table, automation per partition (crons, windows, cool-downs, failing checks, the fleet
budget), on a real Dagster instance over real tables written by our writer in tmp dirs."""

from __future__ import annotations

import datetime
import pathlib

import pyarrow as pa
import pytest
from dagster import (
    AssetKey,
    AssetMaterialization,
    DagsterInstance,
    DagsterRunStatus,
    Definitions,
    ExecuteInProcessResult,
    build_sensor_context,
    evaluate_automation_conditions,
    instance_for_test,
)

from assets.discovered import DISCOVERED_TABLE_KEY, discovered_asset_key, discovered_check_keys, partition_tags
from definitions import build_definitions
from delta_core.config.generated_names import DISCOVERED_PARTITIONS
from delta_core.log.table import DeltaTable
from delta_core.write.table_writes import append, create_table
from resources.config import MaintenanceConfig
from sensors.discovery import DISCOVERY_SENSOR, apply_partition_requests
from tests.dagster.conftest import write_yaml

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
COMPACT, VACUUM = discovered_asset_key("compact"), discovered_asset_key("vacuum")
DAY = datetime.datetime(2026, 3, 4, tzinfo=datetime.UTC)


def make_table(path: pathlib.Path, *, appends: int = 1) -> DeltaTable:
    table = create_table(str(path), SCHEMA)
    for i in range(appends):
        append(table, pa.table({"id": [i], "day": ["2024-01-01"]}))
    return table


def yaml_text(*, fleet: str = "", windows: str = '["22:00-06:00"]') -> str:
    """Two roots, two policies: ``hot`` advised (failing checks request runs, inside its windows),
    ``cold`` on its crons alone (compact at 05:00)."""
    return f"""\
fleet: {{discovered_as: partitions{fleet}}}
history: {{uri: history}}
discover:
  - root: lake/hot
    defaults:
      compact: {{target_size: 64KiB}}
      zorder: {{columns: [id]}}
      vacuum: {{retention_hours: 200}}
      advisor: {{mode: auto, cooldown_minutes: 60, windows: {windows}}}
  - root: lake/cold
    defaults:
      compact: {{target_size: 64KiB, cron: "0 5 * * *"}}
      advisor: {{mode: schedule}}
"""


@pytest.fixture()
def lake(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "lake"
    for i in range(3):
        make_table(root / "hot" / f"h{i}", appends=12)  # 12 small files: small_files fails
        make_table(root / "cold" / f"c{i}")
    return root


@pytest.fixture()
def instance():
    with instance_for_test() as inst:
        yield inst


def load(lake: pathlib.Path, text: str) -> MaintenanceConfig:
    from resources.config import load_config

    return load_config(write_yaml(lake.parent / "tables.yaml", text))


def discover(defs: Definitions, instance: DagsterInstance) -> None:
    """One tick of the discovery sensor, its partition requests applied as the daemon does."""
    sensor = defs.resolve_sensor_def(DISCOVERY_SENSOR)
    top = defs.get_repository_def().get_top_level_resources()
    with build_sensor_context(instance=instance, definitions=defs,
                              resources={k: top[k] for k in sensor.required_resource_keys}) as context:
        result = sensor.evaluate_tick(context)
    apply_partition_requests(instance, result.dynamic_partitions_requests or ())


def requested(defs: Definitions, instance: DagsterInstance, at: datetime.datetime, cursor=None):
    result = evaluate_automation_conditions(defs=defs, instance=instance, evaluation_time=at, cursor=cursor)
    return ({(key.path[-1], p) for key in (COMPACT, VACUUM) for p in result.get_requested_partitions(key)},
            result.cursor)


def run_checks(defs: Definitions, instance: DagsterInstance, table: str) -> ExecuteInProcessResult:
    """The discovered tables' checks job for ``table`` (a run of one partition)."""
    result = defs.resolve_job_def("discovered_checks").execute_in_process(instance=instance, tags=partition_tags(table))
    assert result.success
    return result


def test_the_definitions_do_not_grow_with_the_tables(tmp_path: pathlib.Path, lake: pathlib.Path) -> None:
    small = build_definitions(load(lake, yaml_text()))
    for i in range(3, 40):
        make_table(lake / "cold" / f"c{i}")
    big = build_definitions(load(lake, yaml_text()))
    for defs in (small, big):
        graph = defs.resolve_asset_graph()
        assert {k for k in graph.get_all_asset_keys()} == {
            DISCOVERED_TABLE_KEY, COMPACT, VACUUM, *map(discovered_asset_key, ("zorder", "checkpoint")),
            AssetKey(["fleet", "report"])}
        assert set(graph.asset_check_keys) == set(discovered_check_keys())
    assert {j.name for j in small.resolve_all_job_defs()} == {j.name for j in big.resolve_all_job_defs()}
    assert len(list(small.resolve_all_job_defs())) == len(list(big.resolve_all_job_defs()))


def test_the_discovery_sensor_adds_and_removes_partitions(lake: pathlib.Path, instance: DagsterInstance) -> None:
    defs = build_definitions(load(lake, yaml_text()))
    discover(defs, instance)
    assert sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == ["c0", "c1", "c2", "h0", "h1", "h2"]
    make_table(lake / "cold" / "c9")  # a new table, no reload: the next tick adds it
    (lake / "hot" / "h2" / "_delta_log").rename(lake / "hot" / "h2" / "old_log")  # h2 is no table any more
    discover(defs, instance)
    assert sorted(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == ["c0", "c1", "c2", "c9", "h0", "h1"]


def test_one_run_maintains_one_table_with_its_roots_policy(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """A run of a discovered job for one partition maintains that table only, records its history
    row under the table's name and checks that table; an operation its root leaves off does nothing."""
    from delta_core.maintenance.history_table import read_rows

    config = load(lake, yaml_text())
    defs = build_definitions(config)
    discover(defs, instance)
    result = defs.resolve_job_def("discovered_checkpoint").execute_in_process(
        instance=instance, partition_key="c1", run_config={"ops": {"discovered_tables__checkpoint": {
            "config": {"force": True}}}})
    assert result.success
    assert DeltaTable(str(lake / "cold" / "c1")).last_checkpoint_version() == 1
    assert DeltaTable(str(lake / "cold" / "c0")).last_checkpoint_version() is None
    checkpoint = discovered_asset_key("checkpoint")
    (materialization,) = result.asset_materializations_for_node("discovered_tables__checkpoint")
    assert materialization.partition == "c1" and materialization.metadata["checkpoint_written"].value is True
    assert {(e.asset_check_key, e.partition) for e in result.get_asset_check_evaluations()} == {
        (key, "c1") for key in discovered_check_keys()}
    assert instance.get_latest_materialization_event(checkpoint).asset_materialization.partition == "c1"
    assert config.history is not None
    assert [(row.table_name, row.operation) for row in read_rows(config.history.location())] == [("c1", "checkpoint")]
    skipped = defs.resolve_job_def("discovered_zorder").execute_in_process(instance=instance, partition_key="c0")
    (nothing,) = skipped.asset_materializations_for_node("discovered_tables__zorder")
    assert "not enabled for c0" in nothing.metadata["summary_line"].value


@pytest.fixture()
def checked(lake: pathlib.Path, instance: DagsterInstance) -> Definitions:
    """The definitions, every table a partition, each table's health checks run once."""
    defs = build_definitions(load(lake, yaml_text()))
    discover(defs, instance)
    for name in ("h0", "h1", "h2", "c0"):
        run_checks(defs, instance, name)
    return defs


def test_failing_checks_request_per_partition_inside_the_roots_windows(checked: Definitions,
                                                                      instance: DagsterInstance) -> None:
    hot = {("compact", f"h{i}") for i in range(3)}  # small_files fails on each; c0 fails too, but cold is on crons
    assert requested(checked, instance, DAY.replace(hour=23, minute=30))[0] == hot
    assert requested(checked, instance, DAY.replace(hour=12))[0] == set()  # outside hot's windows


def test_each_roots_cron_holds_for_its_tables(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """Each root's cron for its own tables, a table found after the load (c9) too."""
    defs = build_definitions(load(lake, yaml_text()))
    make_table(lake / "cold" / "c9")
    discover(defs, instance)
    _, cursor = requested(defs, instance, DAY.replace(hour=4, minute=59))
    got, cursor = requested(defs, instance, DAY.replace(hour=5, minute=1), cursor)
    assert got == {("compact", f"c{i}") for i in (0, 1, 2, 9)}  # cold's 05:00; hot's compact is on 02:00
    assert requested(defs, instance, DAY.replace(hour=5, minute=3), cursor)[0] == set()  # handled


def test_cool_down_and_in_progress_hold_back_one_partition(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """h0 materialized, h1's run in progress, h2's run failed (its table moved away): each held
    back alone, h0 and h2 until their cool-down has passed."""
    defs = build_definitions(load(lake, yaml_text(windows="[]")))
    discover(defs, instance)
    for name in ("h0", "h1", "h2"):
        run_checks(defs, instance, name)
    instance.report_runless_asset_event(AssetMaterialization(asset_key=COMPACT, partition="h0"))
    instance.create_run_for_job(job_def=defs.resolve_job_def("discovered_compact"), asset_selection=frozenset({COMPACT}),
                                status=DagsterRunStatus.STARTED, tags=partition_tags("h1"))
    ran_at = datetime.datetime.fromtimestamp(instance.get_latest_materialization_event(COMPACT).timestamp,
                                             tz=datetime.UTC)
    assert requested(defs, instance, ran_at + datetime.timedelta(minutes=10))[0] == {("compact", "h2")}
    moved = lake / "hot" / "h2"
    moved.rename(lake / "hot_h2_moved")
    failed = defs.resolve_job_def("discovered_compact").execute_in_process(  # compact alone: its checks stay failed
        instance=instance, partition_key="h2", asset_selection=[COMPACT], raise_on_error=False)
    assert not failed.success
    (lake / "hot_h2_moved").rename(moved)
    failed_at = datetime.datetime.fromtimestamp(instance.get_run_record_by_id(failed.run_id).end_time, tz=datetime.UTC)
    assert requested(defs, instance, failed_at + datetime.timedelta(minutes=10))[0] == set()
    assert requested(defs, instance, failed_at + datetime.timedelta(minutes=61))[0] == {("compact", "h0"),
                                                                                        ("compact", "h2")}


def test_the_fleet_budget_holds_partitions_back(lake: pathlib.Path, instance: DagsterInstance) -> None:
    defs = build_definitions(load(lake, yaml_text(fleet=", max_concurrent_runs: 1")))
    discover(defs, instance)
    run_checks(defs, instance, "h0")
    at = DAY.replace(hour=23, minute=30)
    assert requested(defs, instance, at)[0] == {("compact", "h0")}
    instance.create_run_for_job(job_def=defs.resolve_job_def("discovered_vacuum"), status=DagsterRunStatus.STARTED,
                                asset_selection=frozenset({VACUUM}), tags=partition_tags("h2"))
    assert requested(defs, instance, at)[0] == set()  # one maintenance run in progress: the limit


def test_the_automation_sensor_requests_one_run_per_table(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """The sensor itself (evaluated as the code server does, the Python conditions included)
    requests the failing tables' partitions of compact only, as a backfill of one run per
    partition (the assets' backfill policy): one run per table and operation."""
    from assets.automation import DEFAULT_SENSOR_NAME

    defs = build_definitions(load(lake, yaml_text(windows="[]")))
    discover(defs, instance)
    for name in ("h0", "h2"):
        run_checks(defs, instance, name)
    repository = defs.get_repository_def()
    tick = repository.get_sensor_def(DEFAULT_SENSOR_NAME).evaluate_tick(
        build_sensor_context(instance=instance, repository_def=repository))
    (request,) = tick.run_requests
    assert request.tags["delta_maintenance/trigger"] == "automation"
    subset = request.asset_graph_subset
    assert subset is not None and set(subset.partitions_subsets_by_asset_key) == {COMPACT}
    assert set(subset.partitions_subsets_by_asset_key[COMPACT].get_partition_keys()) == {"h0", "h2"}
    policy = defs.resolve_assets_def(COMPACT).backfill_policy
    assert policy is not None and policy.max_partitions_per_run == 1


def test_a_few_hundred_tables_on_a_real_instance(tmp_path: pathlib.Path, instance: DagsterInstance) -> None:
    """240 tables written by our writer: one partition each, the same definitions as for three,
    each table's cron evaluated per partition, one table's checks and maintenance run alone."""
    lake = tmp_path / "lake"
    for i in range(240):
        make_table(lake / "cold" / f"c{i}")
    defs = build_definitions(load(lake, yaml_text()))
    assert len(list(defs.resolve_all_job_defs())) == len(list(build_definitions(load(lake, yaml_text()))
                                                             .resolve_all_job_defs()))
    discover(defs, instance)
    assert len(instance.get_dynamic_partitions(DISCOVERED_PARTITIONS)) == 240
    _, cursor = requested(defs, instance, DAY.replace(hour=4, minute=59))
    got, _ = requested(defs, instance, DAY.replace(hour=5, minute=1), cursor)
    assert got == {("compact", f"c{i}") for i in range(240)}
    evaluated = run_checks(defs, instance, "c117").get_asset_check_evaluations()
    assert {(e.asset_check_key, e.partition) for e in evaluated} == {(k, "c117") for k in discovered_check_keys()}
    result = defs.resolve_job_def("discovered_checkpoint").execute_in_process(
        instance=instance, partition_key="c3", run_config={"ops": {"discovered_tables__checkpoint": {
            "config": {"force": True}}}})
    assert result.success and DeltaTable(str(lake / "cold" / "c3")).last_checkpoint_version() == 1


def test_the_log_sensor_watches_every_partition(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """One sensor for every discovered table: each table's new version is observed on its
    partition, its checks requested for it alone, a checkpoint when due; the requests run as they are."""
    from assets.data_version import previous_observation
    from sensors.discovered_log import DISCOVERED_LOG_SENSOR, parse_partitions_cursor

    defs = build_definitions(load(lake, yaml_text().replace("advisor: {mode: schedule}",
                                                            "advisor: {mode: schedule}\n      checkpoint: {interval: 3}")))
    discover(defs, instance)
    sensor = defs.resolve_sensor_def(DISCOVERED_LOG_SENSOR)

    def tick(cursor: str | None):
        with build_sensor_context(instance=instance, definitions=defs, cursor=cursor,
                                  resources={"delta_discovered_tables": defs.get_repository_def()
                                             .get_top_level_resources()["delta_discovered_tables"]}) as context:
            return sensor.evaluate_tick(context)

    first = tick(None)
    assert {(r.job_name, r.tags["dagster/partition"]) for r in first.run_requests} == {
        ("discovered_checks", name) for name in ("c0", "c1", "c2", "h0", "h1", "h2")}
    assert {e.partition for e in first.asset_events} == {"c0", "c1", "c2", "h0", "h1", "h2"}
    for observation in first.asset_events:
        instance.report_runless_asset_event(observation)
    assert previous_observation(instance, DISCOVERED_TABLE_KEY, partition="h1").delta_version == 12
    assert parse_partitions_cursor(first.cursor)[0] == {"c0": 1, "c1": 1, "c2": 1, "h0": 12, "h1": 12, "h2": 12}
    for _ in range(2):
        append(DeltaTable(str(lake / "cold" / "c2")), pa.table({"id": [9], "day": ["2024-01-02"]}))
    second = tick(first.cursor)
    assert sorted((r.job_name, r.tags["dagster/partition"]) for r in second.run_requests) == [
        ("discovered_checkpoint", "c2"), ("discovered_checks", "c2")]  # 3 versions since none: interval 3
    assert [e.partition for e in second.asset_events] == ["c2"]
    for request in second.run_requests:
        ran = defs.resolve_job_def(request.job_name).execute_in_process(
            instance=instance, run_config=request.run_config, tags=request.tags)
        assert ran.success
    assert DeltaTable(str(lake / "cold" / "c2")).last_checkpoint_version() == 3


def test_the_advisor_ranks_the_advised_partitions(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """The fleet advisor covers the partitions whose root is advised (hot), each request one
    partition's run of the discovered job; a run in flight holds back its own table only."""
    from sensors.advisor import FLEET_ADVISOR_SENSOR, TABLE_OPERATION_TAG

    defs = build_definitions(load(lake, yaml_text(windows="[]")))
    discover(defs, instance)
    sensor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
    top = defs.get_repository_def().get_top_level_resources()

    def compactions() -> list:
        with build_sensor_context(instance=instance, definitions=defs,
                                  resources={k: top[k] for k in sensor.required_resource_keys}) as context:
            return [r for r in sensor.evaluate_tick(context).run_requests or () if r.job_name == "discovered_compact"]

    assert sorted(r.tags["dagster/partition"] for r in compactions()) == ["h0", "h1", "h2"]  # cold: not advised
    instance.create_run_for_job(defs.resolve_job_def("discovered_compact"), asset_selection=frozenset({COMPACT}),
                                tags={TABLE_OPERATION_TAG: "h0.compact", **partition_tags("h0")})
    requests = compactions()
    assert sorted(r.tags[TABLE_OPERATION_TAG] for r in requests) == ["h1.compact", "h2.compact"]
    assert all(r.asset_selection is None and set(r.run_config["ops"]) == {"discovered_tables__compact"}
               for r in requests)


def test_the_fleet_report_lists_every_partition(lake: pathlib.Path, instance: DagsterInstance) -> None:
    """The report covers the tables as partitions now (one added without a reload too): health
    and failing checks from each log, the last maintenance from the history or the partition's
    materialization, the next from the running automation and log sensors."""
    from dagster import materialize

    from fleet.report import FLEET_REPORT_KEY

    config = load(lake, yaml_text(windows="[]"))
    defs = build_definitions(config)
    make_table(lake / "cold" / "c7")  # after the load
    discover(defs, instance)
    instance.report_runless_asset_event(AssetMaterialization(asset_key=VACUUM, partition="h1"))
    resources = {"delta_discovered_tables": defs.get_repository_def().get_top_level_resources()[
        "delta_discovered_tables"]}
    result = materialize([a for a in defs.assets if getattr(a, "keys", None) == {FLEET_REPORT_KEY}],
                         resources=resources, instance=instance)
    (mat,) = result.asset_materializations_for_node("fleet__report")
    rows = {r.data["table"]: r.data for r in mat.metadata["report"].value.records}
    assert sorted(rows) == ["c0", "c1", "c2", "c7", "h0", "h1", "h2"]
    assert all(rows[f"h{i}"]["failing_checks"].startswith("small_files (") for i in range(3))
    assert rows["h1"]["last_maintenance"].startswith("vacuum 20") and rows["h0"]["last_maintenance"] == "never"
    # the log sensor runs by default, the automation sensor does not: checkpoints on commits only
    assert {row["next_maintenance"] for row in rows.values()} == {"on commits (checkpoint)"}


def test_downstream_in_a_roots_defaults_is_refused(lake: pathlib.Path) -> None:
    from resources.config import TableConfigError

    text = yaml_text().replace("advisor: {mode: schedule}", "advisor: {mode: schedule}\n"
                               "      downstream: {daily_summary: {date_column: day}}")
    with pytest.raises(TableConfigError, match="no downstream") as refused:
        load(lake, text)
    assert refused.value.field == "discover.1.defaults.downstream"


def test_partitions_are_the_default_shape(lake: pathlib.Path) -> None:
    """Without ``fleet.discovered_as`` the discovered tables are partitions; ``assets`` stays an option."""
    config = load(lake, yaml_text().replace("fleet: {discovered_as: partitions}\n", ""))
    assert config.fleet.partitioned
    keys = set(build_definitions(config).resolve_asset_graph().get_all_asset_keys())
    assert DISCOVERED_TABLE_KEY in keys and AssetKey(["h0", "compact"]) not in keys
    as_assets = build_definitions(load(lake, yaml_text().replace("partitions", "assets")))
    assert AssetKey(["h0", "compact"]) in set(as_assets.resolve_asset_graph().get_all_asset_keys())


def test_a_misfit_is_named_by_the_log_sensor_and_refused_by_the_run(lake: pathlib.Path, instance: DagsterInstance,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The load reads no discovered table (one whose log cannot be read loads silently); a table
    whose schema misfits its root's defaults (hot's zorder on ``id``) is named on its partition's
    observation and in the log sensor's tick, and its zorder run refuses it with the same message,
    writing nothing; the other tables are not held back (the advisor ranks them)."""
    from delta_core.config.table_checks import table_misfit
    from sensors import POLICY_MISFIT_KEY
    from sensors.advisor import FLEET_ADVISOR_SENSOR
    from sensors.discovered_log import DISCOVERED_LOG_SENSOR

    odd = create_table(str(lake / "hot" / "odd"), pa.schema([("key", pa.string())]))
    append(odd, pa.table({"key": ["a"]}))
    broken = lake / "hot" / "broken" / "_delta_log"
    broken.mkdir(parents=True)
    (broken / "00000000000000000000.json").write_text("not json\n")
    with caplog.at_level("INFO", logger="delta_core.config.table_checks"):
        config = load(lake, yaml_text())
        defs = build_definitions(config)
    assert caplog.records == []  # neither odd nor broken was read
    (broken / "00000000000000000000.json").unlink()
    broken.rmdir()
    discover(defs, instance)
    sensor = defs.resolve_sensor_def(DISCOVERED_LOG_SENSOR)
    top = defs.get_repository_def().get_top_level_resources()
    with build_sensor_context(instance=instance, definitions=defs,
                              resources={k: top[k] for k in sensor.required_resource_keys}) as context:
        tick = sensor.evaluate_tick(context)
    named = {e.partition: e.metadata[POLICY_MISFIT_KEY].value for e in tick.asset_events
             if POLICY_MISFIT_KEY in e.metadata}
    record = next(t for t in config.tables if t.name == "odd")
    misfit = table_misfit(record, DeltaTable(str(lake / "hot" / "odd")).protocol_and_metadata()[1])
    assert misfit is not None and (misfit.table, misfit.field) == ("odd", "zorder.columns")
    assert named == {"odd": str(misfit)} and "'id'" in str(misfit)
    refused = defs.resolve_job_def("discovered_zorder").execute_in_process(
        instance=instance, partition_key="odd", raise_on_error=False)
    assert not refused.success
    (failure,) = refused.get_step_failure_events()
    error = failure.step_failure_data.error
    assert error is not None and error.cause is not None  # the step's error, caused by ours
    assert error.cause.message.strip() == f"delta_core.config.records.TableConfigError: {misfit}"
    assert DeltaTable(str(lake / "hot" / "odd")).latest_version() == 1
    fits = defs.resolve_job_def("discovered_zorder").execute_in_process(instance=instance, partition_key="c0")
    assert fits.success  # cold leaves zorder off: nothing done, nothing refused
    advisor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
    with build_sensor_context(instance=instance, definitions=defs,
                              resources={k: top[k] for k in advisor.required_resource_keys}) as context:
        advised = advisor.evaluate_tick(context)  # odd is held back, the other advised tables ranked
    assert sorted(r.tags["dagster/partition"] for r in advised.run_requests if r.job_name == "discovered_compact") \
        == ["h0", "h1", "h2"]
