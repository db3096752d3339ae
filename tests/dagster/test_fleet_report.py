"""The fleet report's next maintenance comes from the schedules and sensors running in the
instance, started and stopped as the UI does (a workspace over the code location); its report is
a Dagster table; its last maintenance and bytes written come from the maintenance history."""

from __future__ import annotations

import datetime
import os
import pathlib
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from dagster import AssetKey, TableMetadataValue, instance_for_test, materialize
from dagster._core.test_utils import in_process_test_workspace
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from deltalake import write_deltalake

from definitions import build_definitions, build_resources
from fleet.report import FLEET_REPORT_KEY, REPORT_SCHEMA, report_text
from sensors import sensor_name
from sensors.advisor import FLEET_ADVISOR_SENSOR
from tests.dagster.conftest import REPO_ROOT, write_yaml

THURSDAY = datetime.datetime(2026, 11, 26, 23, 17, tzinfo=datetime.UTC).timestamp()


@pytest.fixture()
def config_path(tmp_path: pathlib.Path) -> pathlib.Path:
    for name in ("a", "b"):
        for i in range(3):
            write_deltalake(str(tmp_path / name), pa.table({"id": pa.array([i], pa.int64())}), mode="append")
    path = write_yaml(tmp_path / "tables.yaml", """\
        history: {uri: runs}
        tables:
          a:
            uri: a
            compact: {cron: "0 2 * * *"}
            vacuum: {cron: "0 3 * * 0"}
            advisor: {mode: auto}
          b:
            uri: b
            manifest: true
        """)
    return path


def _report(config_path: pathlib.Path, instance, *, now: float = THURSDAY) -> dict[str, dict]:
    from resources.config import load_config

    config = load_config(config_path)
    defs = build_definitions(config, clock=lambda: now)
    result = materialize([a for a in defs.assets if getattr(a, "keys", None) == {FLEET_REPORT_KEY}],
                         resources=build_resources(config), instance=instance)
    (mat,) = result.asset_materializations_for_node("fleet__report")
    table = mat.metadata["report"]
    assert isinstance(table, TableMetadataValue) and table.schema == REPORT_SCHEMA
    assert report_text(table.records).splitlines()[0].startswith("table | health | failing_checks")
    return {r.data["table"]: r.data for r in table.records}


def test_next_maintenance_follows_what_runs(config_path: pathlib.Path) -> None:
    with instance_for_test() as instance:
        # as loaded: every schedule and the advisor stopped; the log sensors run by default
        rows = _report(config_path, instance)
        assert rows["a"]["next_maintenance"] == "on commits (checkpoint)"
        assert rows["b"]["next_maintenance"] == "on commits (checkpoint, manifest)"

        # the code location of this tables.yaml, as `dg dev` loads one
        location = config_path.parent / "location.py"
        location.write_text("from definitions import build_definitions\nfrom resources.config import load_config\n"
                            f"defs = build_definitions(load_config({str(config_path)!r}))\n", encoding="utf-8")
        origin = LoadableTargetOrigin(python_file=str(location), working_directory=str(REPO_ROOT))
        with in_process_test_workspace(instance, origin) as workspace:
            (repo,) = next(iter(workspace.get_code_location_entries().values())).code_location.get_repositories().values()
            for table in ("a", "b"):
                log_sensor = repo.get_sensor(sensor_name(table))
                instance.stop_sensor(log_sensor.get_remote_origin_id(), log_sensor.selector_id, log_sensor)
            rows = _report(config_path, instance)
            assert rows["a"]["next_maintenance"] == rows["b"]["next_maintenance"] == "nothing scheduled"

            instance.start_schedule(repo.get_schedule("a_vacuum_schedule"))  # Sundays 03:00
            instance.start_sensor(repo.get_sensor(FLEET_ADVISOR_SENSOR))
            rows = _report(config_path, instance)
            assert rows["a"]["next_maintenance"] == "vacuum 2026-11-29 03:00 UTC; on health"
            assert rows["b"]["next_maintenance"] == "nothing scheduled"  # not advised, no schedule

            instance.start_schedule(repo.get_schedule("a_compact_schedule"))  # daily 02:00: sooner
            instance.stop_sensor(repo.get_sensor(FLEET_ADVISOR_SENSOR).get_remote_origin_id(),
                                 repo.get_sensor(FLEET_ADVISOR_SENSOR).selector_id,
                                 repo.get_sensor(FLEET_ADVISOR_SENSOR))
            rows = _report(config_path, instance)
            assert rows["a"]["next_maintenance"] == "compact 2026-11-27 02:00 UTC"


def test_last_maintenance_and_bytes_come_from_the_history(config_path: pathlib.Path) -> None:
    from resources.config import load_config

    config = load_config(config_path)
    with instance_for_test() as instance:
        assert materialize(build_definitions(config).assets, selection=[AssetKey(["b", "checkpoint"])],
                           resources=build_resources(config), instance=instance,
                           run_config={"ops": {"b__checkpoint": {"config": {"force": True}}}}).success
        rows = _report(config_path, instance, now=time.time())
    assert rows["b"]["last_maintenance"].startswith("checkpoint SUCCEEDED 20") and rows["b"]["last_maintenance"].endswith(
        "(job)")
    assert rows["a"]["last_maintenance"] == "never"
    assert rows["a"]["written_24h"] == "0 B"
    assert rows["b"]["written_24h"] != "0 B"


def test_a_cli_run_given_the_uri_counts_for_its_table(config_path: pathlib.Path) -> None:
    # the CLI without --config records the run by URI only; the report names it after tables.yaml's entry
    env = {**os.environ, "DELTA_MAINTENANCE_HISTORY": str(config_path.parent / "runs")}
    subprocess.run([sys.executable, "-m", "delta_core", "checkpoint", str(config_path.parent / "a"), "--force"],
                   check=True, capture_output=True, env=env, cwd=REPO_ROOT)
    with instance_for_test() as instance:
        rows = _report(config_path, instance, now=time.time())
    assert rows["a"]["last_maintenance"].startswith("checkpoint SUCCEEDED 20")
    assert rows["a"]["last_maintenance"].endswith("(cli)") and rows["b"]["last_maintenance"] == "never"
