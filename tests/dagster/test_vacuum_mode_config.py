"""``vacuum: {mode: lite|full}`` in tables.yaml reaches the vacuum options; anything else is refused."""

from __future__ import annotations

import pytest

from delta_core.maintenance.options import VacuumOptions
from resources.config import TableConfigError, load_config
from tests.dagster.conftest import write_yaml


def test_mode_reaches_the_vacuum_options_and_unknown_modes_are_refused(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", "tables:\n  t:\n    uri: /x\n"
                                                            "    vacuum: {mode: lite}\n"
                                                            "  u:\n    uri: /y\n"))
    assert cfg.table("t").options(VacuumOptions).mode == "lite"
    assert cfg.table("u").options(VacuumOptions).mode == "full"
    path = write_yaml(tmp_path / "tables.yaml", "tables:\n  t:\n    uri: /x\n    vacuum: {mode: quick}\n")
    with pytest.raises(TableConfigError) as err:
        load_config(path)
    assert (err.value.table, err.value.field) == ("t", "vacuum.mode")
