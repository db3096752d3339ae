"""``compact: {max_deleted_rows_ratio: ...}`` in tables.yaml (compaction_plan's deleted-rows rule)."""

from __future__ import annotations

import pytest

from delta_core.maintenance.options import DEFAULT_MAX_DELETED_ROWS_RATIO, CompactOptions
from resources.config import TableConfigError, load_config
from tests.dagster.conftest import write_yaml


def test_ratio_reaches_the_compact_options(tmp_path):
    cfg = load_config(write_yaml(tmp_path / "tables.yaml", "tables:\n  t:\n    uri: /x\n"
                                                            "    compact: {max_deleted_rows_ratio: 0.2}\n"
                                                            "  u:\n    uri: /y\n"))
    assert cfg.table("t").options(CompactOptions) == CompactOptions(max_deleted_rows_ratio=0.2)
    assert cfg.table("u").options(CompactOptions).max_deleted_rows_ratio == DEFAULT_MAX_DELETED_ROWS_RATIO == 0.05


@pytest.mark.parametrize("value", ["1.5", "-0.1", "lots"])
def test_ratio_outside_0_1_names_the_field(tmp_path, value):
    path = write_yaml(tmp_path / "tables.yaml", f"tables:\n  t:\n    uri: /x\n    compact: {{max_deleted_rows_ratio: {value}}}\n")
    with pytest.raises(TableConfigError) as err:
        load_config(path)
    assert (err.value.table, err.value.field) == ("t", "compact.max_deleted_rows_ratio")
