"""The names the code location generates are the ones ``delta_core.config.generated_names`` spells,
so the reader can refuse a table whose names would clash: every job, resource, group and asset
key of real Definitions is among them, and clashing tables are refused naming the table."""

from __future__ import annotations

import pyarrow as pa
import pytest

from definitions import build_definitions
from delta_core.config.generated_names import collision, location_names, table_names
from delta_core.write.table_writes import create_table


def test_every_generated_name_of_the_definitions_is_spelled_in_one_place(tmp_path, tables_yaml):
    lake = tmp_path / "lake"
    create_table(str(lake / "area0" / "orders"), pa.schema([("id", pa.int64())]))
    config = tables_yaml(f"""
tables:
  events:
    uri: {tmp_path / "events"}
    zorder: {{columns: [a]}}
    manifest: true
    compact_log: true
    purge: true
    analyze: true
    cluster: true
    downstream: {{daily_summary: {{date_column: d}}}}
fleet: {{discovered_as: assets}}
discover: [{{root: {lake}}}]
""")
    assert [(t.name, t.discovered_under is not None) for t in config.tables] == [("events", False),
                                                                                 ("area0__orders", True)]
    defs = build_definitions(config)
    graph = defs.resolve_asset_graph()
    generated = {("job", j.name) for j in defs.resolve_all_job_defs() if not j.name.startswith("__")}
    generated |= {("resource", key) for key in defs.resources or {}}
    keys = list(graph.get_all_asset_keys())
    generated |= {("asset key", "/".join(k.path)) for k in keys}
    generated |= {("group", graph.get(k).group_name) for k in keys}
    spelled = location_names() | table_names("events", discovered=False) | table_names("area0__orders",
                                                                                           discovered=True)
    assert generated - spelled == set()
    assert {kind for kind, _ in generated} == {"job", "resource", "asset key", "group"}


@pytest.mark.parametrize("tables, table, words", [
    ([("all_tables", False)], "all_tables", "job 'all_tables_analyze'"),
    ([("discovered_tables", False)], "discovered_tables", "resource 'delta_discovered_tables'"),
    ([("fleet", True)], "fleet", "group 'fleet'"),  # a directory `fleet` under a discover root
    ([("a", False), ("a_downstream", True)], "a_downstream", "already table 'a''s"),
])
def test_clashing_tables_are_named(tables, table, words):
    clash = collision(tables)
    assert clash is not None and clash[0] == table and words in clash[1]


def test_names_that_do_not_clash_pass():
    assert collision([("events", False), ("orders", True), ("all", False), ("tables_all", False)]) is None


def test_discovered_partitions_generate_only_the_locations_names(tmp_path, tables_yaml):
    """With discovered tables as partitions, every name of the definitions is the location's own
    or a listed table's, however many tables are found; a listed table may not take one."""
    lake = tmp_path / "lake"
    for i in range(3):
        create_table(str(lake / f"t{i}"), pa.schema([("id", pa.int64())]))
    config = tables_yaml(f"""
fleet: {{discovered_as: partitions}}
tables:
  events: {{uri: {tmp_path / "events"}}}
discover: [{{root: {lake}, defaults: {{zorder: {{columns: [id]}}, manifest: true, purge: true}}}}]
""")
    defs = build_definitions(config)
    graph = defs.resolve_asset_graph()
    generated = {("job", j.name) for j in defs.resolve_all_job_defs() if not j.name.startswith("__")}
    generated |= {("resource", key) for key in defs.resources or {}}
    keys = list(graph.get_all_asset_keys())
    generated |= {("asset key", "/".join(k.path)) for k in keys} | {("group", graph.get(k).group_name) for k in keys}
    assert generated - (location_names(partitioned=True) | table_names("events", discovered=False)) == set()
    assert table_names("t0", discovered=True, partitioned=True) == set()
    clash = collision([("discovered", False)], partitioned=True)  # its job discovered_compact
    assert clash is not None and "job 'discovered_analyze'" in clash[1] and "code location's own" in clash[1]
    assert collision([("discovered", False)]) is None  # no such job without partitions
