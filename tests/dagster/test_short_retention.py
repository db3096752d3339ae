"""Issue 13 §14: a vacuum retention below the table's can be written in tables.yaml only with
``allow_short_retention: true`` — below the protocol's default (7 days) the file alone is
refused; below a table's longer ``delta.deletedFileRetentionDuration`` the definitions refuse
it at load, writing nothing. The demo says when its own run uses a short retention."""

from __future__ import annotations

import pathlib

import pyarrow as pa
import pytest
from dagster import build_schedule_context

from definitions import build_definitions
from delta_core.maintenance.options import VacuumOptions
from delta_core.write.table_writes import append, create_table
from demo.__main__ import short_retention_notice
from resources.config import TableConfigError
from tests.core_write.conftest import listing


def _table(root: pathlib.Path, retention: str) -> str:
    t = create_table(str(root), pa.schema([("id", pa.int64())]),
                     properties={"delta.deletedFileRetentionDuration": retention})
    append(t, pa.table({"id": [1, 2]}))
    return str(root)


def test_retention_below_the_default_needs_the_opt_in(tables_yaml, tmp_path):
    with pytest.raises(TableConfigError) as err:
        tables_yaml(f"tables:\n  t: {{uri: {tmp_path / 'x'}, vacuum: {{retention_hours: 1}}}}\n")
    assert err.value.table == "t" and err.value.field == "vacuum.retention_hours"
    assert "below the default deleted file retention (168 hours)" in str(err.value)
    assert "allow_short_retention: true" in str(err.value)

    config = tables_yaml(f"tables:\n  t: {{uri: {tmp_path / 'x'}, "
                         "vacuum: {retention_hours: 1, allow_short_retention: true}}\n")
    options = config.table("t").options(VacuumOptions)
    assert options.retention_hours == 1.0 and options.force
    # the opt-in reaches the scheduled run as the vacuum asset's force flag
    defs = build_definitions(config)
    schedule = defs.resolve_schedule_def("t_vacuum_schedule")
    request = schedule.evaluate_tick(build_schedule_context()).run_requests[0]
    assert request.run_config["ops"]["t__vacuum"]["config"] == {"retention_hours": 1.0, "dry_run": False,
                                                                "force": True, "mode": "full"}


def test_retention_below_the_tables_own_is_refused_at_load(tables_yaml, tmp_path):
    uri = _table(tmp_path / "t", "interval 30 days")
    before = listing(uri)
    # 200 hours is above the default 168 but below this table's 720
    config = tables_yaml(f"tables:\n  t: {{uri: {uri}, vacuum: {{retention_hours: 200}}}}\n")
    with pytest.raises(TableConfigError) as err:
        build_definitions(config)
    assert err.value.table == "t" and err.value.field == "vacuum.retention_hours"
    assert "below the table's deleted file retention (720 hours)" in str(err.value)
    assert listing(uri) == before

    opted = tables_yaml(f"tables:\n  t: {{uri: {uri}, vacuum: {{retention_hours: 200, "
                        "allow_short_retention: true}}\n")
    assert build_definitions(opted).resolve_job_def("t_vacuum").name == "t_vacuum"
    assert listing(uri) == before


def test_demo_says_when_it_uses_a_short_retention():
    notice = short_retention_notice(0.0, 168.0)
    assert notice is not None and "SHORT retention (0 hours, below the table's 168 hours)" in notice
    assert short_retention_notice(168.0, 168.0) is None
