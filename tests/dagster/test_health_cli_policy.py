"""``delta-core health --config/--table`` judges a table as the UI and the advisor do (issue 27):
for the same version and tables.yaml, the same score, parts and recommendations."""

from __future__ import annotations

import json

from assets.health_view import table_health_report
from delta_core.cli.main import main
from delta_core.log.table import DeltaTable


def test_health_with_the_policy_equals_the_code_locations(make_events_table, tables_yaml, tmp_path, capsys):
    table = make_events_table(rows=600, appends=8, days=2, delete_fraction=0.2)
    config = tables_yaml(f"""
        tables:
          events:
            uri: {table.uri}
            compact: {{target_size: 64KB, min_file_size: 32KB}}
            zorder: {{columns: [user_id]}}
            checkpoint: {{interval: 3}}
            advisor: {{compact_small_file_ratio: 0.9, compact_min_small_files: 1000, purge_deleted_rows_ratio: 0.01,
                      vacuum_min_reclaimable_bytes: 1MB}}
        """)
    ui = table_health_report(DeltaTable(table.uri), config.table("events")).to_dict()
    assert main(["health", "--config", str(tmp_path / "tables.yaml"), "--table", "events", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert (cli["version"], cli["score"]) == (ui["version"], ui["score"])
    assert cli["score_parts"] == ui["score_parts"] and cli["recommendations"] == ui["recommendations"]
    assert cli["metrics"]["columns"] == ["user_id"] and cli["metrics"]["target_file_size"] == 64_000
    # the defaults judge otherwise: the policy is what makes them agree
    assert main(["health", table.uri, "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert (plain["score"], plain["recommendations"]) != (cli["score"], cli["recommendations"])
