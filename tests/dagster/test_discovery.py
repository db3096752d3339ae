"""``discover:`` in tables.yaml: the code location's loader, the command line's reader and a
discovered table's asset materialized in a real Dagster instance."""

from __future__ import annotations

import json
import pathlib

import pyarrow as pa
import pytest
from dagster import AssetKey, build_schedule_context, build_sensor_context, instance_for_test

from delta_core.cli.main import main
from delta_core.cli.policy import load_table_policy
from delta_core.log.table import DeltaTable
from delta_core.maintenance.operations import CHECKPOINT, COMPACT
from delta_core.maintenance.options import CompactOptions, VacuumOptions
from delta_core.write.table_writes import append, create_table
from resources.config import TableConfigError, load_config
from tests.dagster.conftest import write_yaml

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def make_table(path: pathlib.Path) -> DeltaTable:
    table = create_table(str(path), SCHEMA)
    for i in range(3):
        append(table, pa.table({"id": [i], "day": ["2024-01-01"]}))
    return table


@pytest.fixture()
def lake(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "lake"
    for rel in ("area0/orders", "area0/sub/deep", "area1/users", "scratch/tmp1"):
        make_table(root / rel)
    (root / "area1" / "landing").mkdir(parents=True)  # no _delta_log: never a table
    return root


DISCOVER = """\
fleet: {discovered_as: assets}  # each discovered table its own assets (the default: partitions)
discover:
  - root: lake
    exclude: ["scratch"]
    defaults:
      compact: {target_size: 64KiB, cron: "0 5 * * *"}
      vacuum: {retention_hours: 200}
      checkpoint: {interval: 7}
tables:
  area1__users:
    uri: lake/area1/users
    compact: {target_size: 1MiB}
"""


def test_discovered_tables_get_the_defaults_and_explicit_entries_win(lake: pathlib.Path) -> None:
    config = load_config(write_yaml(lake.parent / "tables.yaml", DISCOVER))
    by_name = {t.name: t for t in config.tables}
    assert sorted(by_name) == ["area0__orders", "area0__sub__deep", "area1__users"]
    deep = by_name["area0__sub__deep"]
    assert deep.uri == str(lake / "area0" / "sub" / "deep")
    assert (deep.options(CompactOptions).target_size, deep.policies[COMPACT.name].cron) == (64 * 1024, "0 5 * * *")
    assert deep.options(VacuumOptions).retention_hours == 200 and deep.policies[CHECKPOINT.name].interval == 7
    assert by_name["area1__users"].options(CompactOptions).target_size == 1024 * 1024  # the explicit entry


def test_explicit_entry_at_a_discovered_location_replaces_it(lake: pathlib.Path) -> None:
    text = DISCOVER.replace("area1__users:\n    uri: lake/area1/users", "users:\n    uri: lake/area1/users")
    config = load_config(write_yaml(lake.parent / "tables.yaml", text))
    assert sorted(t.name for t in config.tables) == ["area0__orders", "area0__sub__deep", "users"]


def test_duplicate_names_and_bad_roots_are_typed_errors(lake: pathlib.Path) -> None:
    make_table(lake / "area0__orders")
    with pytest.raises(TableConfigError, match=r"field 'discover'.*both get the name 'area0__orders'"):
        load_config(write_yaml(lake.parent / "tables.yaml", DISCOVER))
    assert load_config(write_yaml(lake.parent / "tables.yaml", "discover: [{root: missing}]\n")).tables == ()
    with pytest.raises(TableConfigError, match=r"field 'discover.0.defaults.compact': must be true, false or a mapping"):
        load_config(write_yaml(lake.parent / "tables.yaml", "discover: [{root: lake, defaults: {compact: 3}}]\n"))


def test_command_line_sees_discovered_tables(lake: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_yaml(lake.parent / "tables.yaml", DISCOVER)
    policy = load_table_policy(path, "area0__sub__deep")
    assert policy.uri == str(lake / "area0" / "sub" / "deep")
    assert policy.table.options(CompactOptions).target_size == 64 * 1024
    assert load_table_policy(path, "area1__users").table.options(CompactOptions).target_size == 1024 * 1024
    assert main(["health", "--config", str(path), "--table", "area0__orders", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == 3
    assert main(["health", "--config", str(path), "--table", "scratch__tmp1"]) == 2  # excluded
    assert "has no table 'scratch__tmp1'" in capsys.readouterr().err


def test_cli_refuses_a_discover_entry_of_the_wrong_shape(lake: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_yaml(lake.parent / "tables.yaml", "discover: [{root: lake, exclud: [x]}]\n")
    assert main(["health", "--config", str(path), "--table", "area0__orders"]) == 2
    assert "field 'discover.0.exclud': unknown field: did you mean 'exclude'?" in capsys.readouterr().err


def test_definitions_materialize_a_discovered_table(lake: pathlib.Path) -> None:
    """A discovered table has no jobs of its own: a run of the fleet's checkpoint job selects its asset."""
    from definitions import build_definitions

    config = load_config(write_yaml(lake.parent / "tables.yaml", DISCOVER))
    defs = build_definitions(config)
    names = {j.name for j in defs.get_repository_def().get_all_jobs()}
    assert "all_tables_checkpoint" in names and "all_tables_observe" in names
    assert not any(n.startswith("area0__") for n in names)  # the explicit table keeps its own jobs
    assert "area1__users_checkpoint" in names
    # and one resource for all of them (the listed table keeps its own)
    resources = set(defs.get_repository_def().get_top_level_resources())
    assert {"delta_discovered_tables", "delta_area1__users"} <= resources
    assert not any(r.startswith("delta_area0") for r in resources)
    key = AssetKey(["area0__sub__deep", "checkpoint"])
    job = defs.resolve_job_def("all_tables_checkpoint")
    with instance_for_test() as instance:
        result = job.execute_in_process(
            instance=instance, asset_selection=[key],
            # 3 commits, below the discovered defaults' interval 7: forced
            run_config={"ops": {"area0__sub__deep__checkpoint": {"config": {"force": True}}}})
        assert result.success
        event = instance.get_latest_materialization_event(key)
        assert event is not None and event.asset_materialization is not None
        assert event.asset_materialization.metadata["checkpoint_written"].value is True
        assert instance.get_latest_materialization_event(AssetKey(["area0__orders", "checkpoint"])) is None
    assert DeltaTable(str(lake / "area0" / "sub" / "deep")).last_checkpoint_version() == 3


def test_schedules_and_sensors_of_a_discovered_table_select_its_asset(lake: pathlib.Path) -> None:
    from definitions import build_definitions

    config = load_config(write_yaml(lake.parent / "tables.yaml", DISCOVER.replace("interval: 7", "interval: 2")))
    defs = build_definitions(config)
    schedule = defs.resolve_schedule_def("area0__orders_compact_schedule")
    assert schedule.job_name == "all_tables_compact" and schedule.cron_schedule == "0 5 * * *"
    with instance_for_test() as instance:
        (request,) = schedule.evaluate_tick(build_schedule_context(instance=instance)).run_requests
        assert request.asset_selection == [AssetKey(["area0__orders", "compact"])]
        assert request.tags["delta_maintenance/table"] == "area0__orders"
        sensor = defs.resolve_sensor_def("area0__orders_delta_log_sensor")
        resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
        with build_sensor_context(instance=instance, definitions=defs, resources=resources, cursor="0") as context:
            data = sensor.evaluate_tick(context)
    # 3 versions since no checkpoint, interval 2: the fleet's checkpoint job, this table's asset only
    (due,) = [r for r in data.run_requests if r.job_name == "all_tables_checkpoint"]
    assert due.asset_selection == [AssetKey(["area0__orders", "checkpoint"])]
    assert data.cursor == "3"


def test_a_new_table_appears_on_the_next_load(lake: pathlib.Path) -> None:
    path = write_yaml(lake.parent / "tables.yaml", DISCOVER)
    assert "area1__fresh" not in {t.name for t in load_config(path).tables}
    make_table(lake / "area1" / "fresh")
    assert "area1__fresh" in {t.name for t in load_config(path).tables}


def test_advisor_holds_back_per_table_on_a_shared_job(lake: pathlib.Path) -> None:
    """Discovered tables share all_tables_compact: a run in flight for one table holds back the
    fleet advisor's compaction of that table only (the run's table-operation tag), not of the others."""
    from definitions import build_definitions
    from sensors.advisor import FLEET_ADVISOR_SENSOR, TABLE_OPERATION_TAG

    text = DISCOVER.replace("      checkpoint: {interval: 7}\n", "      checkpoint: {interval: 7}\n      advisor: {mode: auto}\n")
    text = text.replace('cron: "0 5 * * *"}', 'cron: "0 5 * * *", min_input_files: 2}')  # a few files per table
    defs = build_definitions(load_config(write_yaml(lake.parent / "tables.yaml", text)))
    job = defs.resolve_job_def("all_tables_compact")

    def advised(instance, table: str) -> list:
        """The fleet advisor's compaction requests for ``table``."""
        sensor = defs.resolve_sensor_def(FLEET_ADVISOR_SENSOR)
        resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
        with build_sensor_context(instance=instance, definitions=defs, resources=resources) as context:
            return [r for r in sensor.evaluate_tick(context).run_requests
                    if r.tags[TABLE_OPERATION_TAG] == f"{table}.compact"]

    with instance_for_test() as instance:
        instance.create_run_for_job(job, asset_selection=frozenset({AssetKey(["area0__orders", "compact"])}),
                                    tags={TABLE_OPERATION_TAG: "area0__orders.compact"})
        assert [r.job_name for r in advised(instance, "area0__orders")] == []  # its compaction is queued
        (request,) = advised(instance, "area0__sub__deep")
        assert request.job_name == "all_tables_compact"
        assert request.asset_selection == [AssetKey(["area0__sub__deep", "compact"])]
        assert request.tags[TABLE_OPERATION_TAG] == "area0__sub__deep.compact"


def test_a_discovered_table_that_misfits_the_defaults_is_named_by_its_log_sensor_not_fatal(
        lake: pathlib.Path, caplog: pytest.LogCaptureFixture) -> None:
    """Each discovered table its own assets: the load does not read it, its log sensor's tick names
    the misfit on its observation; a listed table's misfit still refuses the load."""
    from definitions import build_definitions
    from sensors import POLICY_MISFIT_KEY, sensor_name

    create_table(str(lake / "area1" / "other"), pa.schema([("key", pa.string())]))
    text = DISCOVER.replace("      checkpoint: {interval: 7}\n", "      checkpoint: {interval: 7}\n      zorder: {columns: [id]}\n")
    with caplog.at_level("INFO", logger="delta_core.config.table_checks"):
        defs = build_definitions(load_config(write_yaml(lake.parent / "tables.yaml", text)))
    assert defs.resolve_assets_def(AssetKey(["area0__orders", "zorder"])) is not None
    assert "area1__other" not in caplog.text  # not read at load
    sensor = defs.resolve_sensor_def(sensor_name("area1__other"))
    resources = {k: defs.get_repository_def().get_top_level_resources()[k] for k in sensor.required_resource_keys}
    with instance_for_test() as instance, build_sensor_context(instance=instance, definitions=defs,
                                                               resources=resources) as context:
        (observation,) = sensor.evaluate_tick(context).asset_events
    said = observation.metadata[POLICY_MISFIT_KEY].value
    assert said.startswith("table 'area1__other': field 'zorder.columns': ") and "'id'" in said
    explicit = text.replace("area1__users:\n    uri: lake/area1/users", "area1__users:\n    uri: lake/area1/other\n"
                            "    zorder: {columns: [id]}")
    with pytest.raises(TableConfigError, match="area1__users"):
        build_definitions(load_config(write_yaml(lake.parent / "tables.yaml", explicit)))


@pytest.mark.parametrize("bad", ["file", "empty"])
def test_a_root_that_is_a_file_or_holds_no_table_is_reported_by_both_readers(
        lake: pathlib.Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    from definitions import build_definitions

    if bad == "file":
        (lake.parent / "bad").write_text("a file\n")
        said = f"discover root {lake.parent / 'bad'} is a file, not a directory"
    else:
        (lake.parent / "bad" / "landing").mkdir(parents=True)
        said = f"discover root {lake.parent / 'bad'} holds no Delta table"
    text = DISCOVER.replace("discover:\n", "discover:\n  - root: bad\n")
    path = write_yaml(lake.parent / "tables.yaml", text)
    with caplog.at_level("WARNING", logger="delta_core.log.discovery"):
        assert main(["health", "--config", str(path), "--table", "area0__orders", "--json"]) == 0
    assert said in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="delta_core.log.discovery"):
        defs = build_definitions(load_config(path))
    assert said in caplog.text and defs.resolve_assets_def(AssetKey(["area0__orders", "checkpoint"])) is not None
